"""Drives the range board in headless Chromium over WebDriver (selenium + Debian's chromedriver)
for tests/suite/board_browser.rs, which owns the daemon and the vehicles.

    board_browser.py check URL AXE_JS SCREENSHOT_PNG
    board_browser.py bench URL VEHICLES SECONDS      (benches/board_page.rs)

A line protocol: this script prints one JSON object per line (a `phase` and what it saw) when a
phase's condition holds in the page, then waits for a line on stdin (the test has changed the
world: a vehicle went quiet, the daemon stopped, ...) before it awaits the next one. Every wait
polls the DOM with a deadline (WebDriverWait); a condition that never holds prints
{"phase": "timeout", ...} and exits 1.

In the page, a probe records two things with performance.now(): every message on its own
EventSource('/events') and every change of a vehicle element's data-state (MutationObserver).
The time from SSE event to changed element is the second minus the first.
"""

import json
import os
import sys
import time

from selenium import webdriver
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.support.ui import WebDriverWait

# Six beating vehicles and one configured ([gap] vehicles) that is never heard.
BEATING = 6
NEVER_SYSID = 7
QUIET_SYSID = 4
WAIT_S = 15

PROBE = """
if (!window.__probe) {
  const probe = { events: [], changes: [] };
  window.__probe = probe;
  const source = new EventSource('/events');
  source.onmessage = (m) => {
    try {
      const e = JSON.parse(m.data);
      if (e.kind === 'telemetry_gap') {
        probe.events.push({ t: performance.now(), wall: Date.now(), sysid: e.sysid, state: e.state,
          utc: e.utc, last_recv_utc: e.last_recv_utc });
      }
    } catch (err) { /* not ours to judge */ }
  };
  new MutationObserver((records) => {
    const t = performance.now();
    for (const r of records) {
      if (r.attributeName === 'data-state' && r.target.dataset.sysid) {
        probe.changes.push({ t, wall: Date.now(), sysid: Number(r.target.dataset.sysid),
          state: r.target.dataset.state });
      }
    }
  }).observe(document.getElementById('vehicles'), { subtree: true, attributes: true,
    attributeFilter: ['data-state'] });
}
return true;
"""

VEHICLE_STATES = """
return [...document.querySelectorAll('#vehicles [data-sysid]')].map((li) => ({
  sysid: Number(li.dataset.sysid), state: li.dataset.state,
  name: li.querySelector('.name') ? li.querySelector('.name').textContent : null,
  text: li.innerText }));
"""


def say(phase, **what):
    print(json.dumps({"phase": phase, **what}), flush=True)


def next_step():
    line = sys.stdin.readline()
    if not line:
        sys.exit(0)


def browser():
    options = Options()
    options.binary_location = "/usr/bin/chromium"
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1600,1250",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-default-apps",
        "--disable-sync",
        "--force-color-profile=srgb",
        "--hide-scrollbars",
    ):
        options.add_argument(flag)
    # Every request the page makes, from the DevTools Network domain.
    options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    # Debian's chromedriver, named: selenium must not look one up (or download one).
    return webdriver.Chrome(options=options, service=Service("/usr/bin/chromedriver"))


class Page:
    def __init__(self, driver):
        self.driver = driver
        self.urls = set()

    def drain_network_log(self):
        for entry in self.driver.get_log("performance"):
            message = json.loads(entry["message"])["message"]
            if message.get("method") == "Network.requestWillBeSent":
                self.urls.add(message["params"]["request"]["url"])

    def await_(self, what, condition, timeout=WAIT_S):
        try:
            return WebDriverWait(self.driver, timeout, poll_frequency=0.05).until(
                lambda d: condition()
            )
        except TimeoutException:
            say("timeout", waiting_for=what, vehicles=self.vehicles(), connection=self.connection())
            sys.exit(1)

    def vehicles(self):
        return self.driver.execute_script(VEHICLE_STATES)

    def connection(self):
        return self.driver.execute_script(
            "const c = document.querySelector('[data-connection]');"
            "return c ? c.dataset.connection : null;"
        )

    def state_of(self, sysid):
        return next((v["state"] for v in self.vehicles() if v["sysid"] == sysid), None)

    def all_ok(self):
        """The beating vehicles all ok and the never-heard one `never`."""
        vs = self.vehicles()
        ok = len(vs) == BEATING + 1 and all(
            v["state"] == ("never" if v["sysid"] == NEVER_SYSID else "ok") for v in vs)
        return vs if ok else None

    def probe(self):
        return self.driver.execute_script("return window.__probe;")

    def event_to_element(self, sysid, event_state, dom_state):
        """The probe's first `telemetry_gap` event (sysid, event_state) and the element's first
        change to dom_state around it (the page's own stream may get the event a little before
        the probe's: then the time is negative). None until both are there."""
        p = self.probe()
        event = next((e for e in p["events"] if e["sysid"] == sysid and e["state"] == event_state), None)
        if event is None:
            return None
        change = next((c for c in p["changes"]
                       if c["sysid"] == sysid and c["state"] == dom_state and c["t"] >= event["t"] - 2000), None)
        if change is None:
            return None
        return {"event": event, "change": change, "ms": change["t"] - event["t"]}

    def axe(self, source):
        self.driver.execute_script(source + "\nreturn typeof axe;")
        result = self.driver.execute_async_script(
            """
const done = arguments[arguments.length - 1];
axe.run(document, { resultTypes: ['violations'] })
  .then((r) => done(r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.length, targets: v.nodes.slice(0, 3).map((n) => n.target) }))))
  .catch((e) => done({ error: String(e) }));
"""
        )
        return result


def check(url, axe_path, screenshot):
    axe_source = open(axe_path, encoding="utf-8").read()
    driver = browser()
    driver.set_script_timeout(60)
    page = Page(driver)
    try:
        driver.execute_cdp_cmd("Network.enable", {})
        driver.get(url)
        page.await_("the board's vehicle list", lambda: driver.execute_script(
            "return !!document.getElementById('vehicles');"))
        driver.execute_script(PROBE)
        vs = page.await_("six vehicles ok, one never heard", page.all_ok)
        page.await_("data-connection live", lambda: page.connection() == "live")
        say("six_ok", vehicles=vs, connection=page.connection())

        next_step()  # sysid QUIET_SYSID has gone quiet
        page.await_("the quiet vehicle in gap", lambda: page.state_of(QUIET_SYSID) == "gap")
        timing = page.await_("the probe's gap open and its element change",
                             lambda: page.event_to_element(QUIET_SYSID, "open", "gap"))
        first = page.vehicles()[0]
        # Keyboard: G focuses the first vehicle in gap, E the events list.
        ActionChains(driver).send_keys("g").perform()
        focus_g = driver.execute_script("return document.activeElement.dataset.sysid || null;")
        ActionChains(driver).send_keys("e").perform()
        focus_e = driver.execute_script("return document.activeElement.id || null;")
        driver.execute_script("document.activeElement.blur();")
        violations_gap = page.axe(axe_source)
        say("gap", timing=timing, first=first, vehicles=page.vehicles(), axe=violations_gap,
            keys={"g": focus_g, "e": focus_e})

        next_step()  # heartbeats resumed
        page.await_("the vehicle ok again", lambda: page.state_of(QUIET_SYSID) == "ok")
        timing = page.await_("the probe's gap closed and its element change",
                             lambda: page.event_to_element(QUIET_SYSID, "closed", "ok"))
        say("ok_again", timing=timing, vehicles=page.vehicles())

        next_step()  # sysid 5 on both radios, a SiK radio on radio1, a second sender on sysid 6
        card = "#vehicles [data-sysid='%d']"
        text_of = lambda selector: driver.execute_script(
            "const e = document.querySelector(arguments[0]); return e ? e.innerText : null;", selector)
        page.await_("sysid 5's delivery on both radios and together",
                    lambda: "together" in (text_of(card % 5 + " .delivery") or ""))
        page.await_("the SiK radio in the links table",
                    lambda: text_of("#links [data-radio='51/68']") is not None)
        page.await_("sysid 6's conflict", lambda: text_of(card % 6 + " [data-conflict='open']") is not None)
        attr_of = lambda selector, name: driver.execute_script(
            "const e = document.querySelector(arguments[0]);"
            "return e ? e.getAttribute(arguments[1]) : null;", selector, name)
        # Issue 42: two aircraft near sysid 3, one within the proximity thresholds.
        page.await_("sysid 3's traffic: one within the thresholds, one beyond", lambda:
                    attr_of(card % 3, "data-traffic") == "proximity"
                    and (text_of(card % 3 + " .traffic-list") or "").count("\n") >= 1)
        near = driver.execute_script(
            "return [...document.querySelectorAll(arguments[0])].map("
            "(li) => `${li.dataset.track}:${li.dataset.proximity}`).join(' ');",
            card % 3 + " .traffic-list [data-proximity='open']")
        # Copies are counted as each link's batch comes: for a moment after radio2's copy of a
        # frame is taken and before radio1's (read up to a window later), radio1 trails by that
        # frame. So the figures reported are the first that show radio1's full delivery (the
        # test fails if they never do), not whichever the board shows at this instant.
        full = ("radio2", "radio1 100.0 %", "together 100.0 %")
        delivery = page.await_("sysid 5's delivery with radio1 and together at 100 %", lambda: (
            lambda text: text if all(part in text for part in full) else None)(
                text_of(card % 5 + " .delivery") or ""))
        say("redundancy", delivery=delivery,
            radio=text_of("#links [data-radio='51/68']"),
            conflict=text_of(card % 6 + " [data-conflict='open']"),
            reasons=attr_of(card % 6 + " [data-conflict='open']", "data-reasons"),
            delivery_unreliable=attr_of(card % 6 + " .delivery", "data-unreliable"),
            loss=text_of(card % 6 + " .loss"),
            traffic_state=attr_of(card % 3, "data-traffic"), near=near,
            traffic=text_of(card % 3 + " .traffic-list"),
            plan=attr_of(card % 3 + " .plan", "aria-label"))

        # radio2 no longer carries sysid 5, sysid 3's position stream stops, sysid 4 is quiet
        next_step()
        page.await_("sysid 5's link gap on radio2",
                    lambda: text_of(card % 5 + " [data-link-gap='radio2']") is not None)
        page.await_("sysid 3's stream stopped",
                    lambda: text_of(card % 3 + " [data-stream-state]") is not None)
        page.await_("sysid 4 in gap again", lambda: page.state_of(QUIET_SYSID) == "gap")
        # The wall as docs/http.md shows it (FOXBORNE_BOARD_SCREENSHOT=docs/board.png): a vehicle in
        # gap, one never heard, a link gap, two senders on one id, a stream stopped, a radio.
        driver.save_screenshot(screenshot)
        say("link_gap", text=text_of(card % 5 + " [data-link-gap='radio2']"), state=page.state_of(5),
            stream=text_of(card % 3 + " [data-stream-state]"),
            stream_state=attr_of(card % 3 + " [data-stream-state]", "data-stream-state"),
            stream_vehicle_state=page.state_of(3), quiet_state=page.state_of(QUIET_SYSID),
            conflict=text_of(card % 6 + " [data-conflict='open']"),
            summary=text_of("#summary"), axe=page.axe(axe_source))

        next_step()  # radio2 carries sysid 5 again, the stream resumes, sysid 4 beats, one sender
        alerts = ("return document.querySelectorAll('#vehicles [data-link-gap], "
                  "#vehicles [data-conflict], #vehicles [data-stream-state]').length;")
        events = "return [...document.querySelectorAll('#events li')].map((li) => li.innerText);"
        closes = ("Heard again on radio2", "One sender again on system id 6", "GLOBAL_POSITION_INT from system 3 back to")
        # The conflict closes 10 s after the second sender's last heartbeat.
        page.await_("no link gap, conflict or stream left on a card",
                    lambda: driver.execute_script(alerts) == 0, timeout=30)
        page.await_("every close in the events list", lambda: all(
            any(c in e for e in driver.execute_script(events)) for c in closes))
        vs = page.await_("six vehicles ok, one never heard", page.all_ok)
        say("all_clear", vehicles=vs, alerts=driver.execute_script(alerts),
            delivery_unreliable=attr_of(card % 6 + " .delivery", "data-unreliable"),
            events=driver.execute_script(events))

        next_step()  # the daemon has stopped
        stopped = time.monotonic()
        page.await_("data-connection lost", lambda: page.connection() == "lost")
        lost_after_ms = (time.monotonic() - stopped) * 1000
        banner = driver.execute_script(
            "const l = document.getElementById('lost'); "
            "return l.hidden ? null : l.innerText;")
        violations_lost = page.axe(axe_source)
        say("lost", after_ms=lost_after_ms, banner=banner, axe=violations_lost)

        next_step()  # the daemon is back on the same port
        restarted = time.monotonic()
        page.await_("data-connection live again", lambda: page.connection() == "live", timeout=30)
        vs = page.await_("six vehicles ok again, one never heard", page.all_ok, timeout=30)
        say("live_again", after_ms=(time.monotonic() - restarted) * 1000, vehicles=vs,
            banner_hidden=driver.execute_script("return document.getElementById('lost').hidden;"))

        page.drain_network_log()
        say("network", urls=sorted(page.urls))
    finally:
        driver.quit()


def descendants(pid):
    """pid and every process under it (chromedriver -> chromium -> its renderers, GPU, ...)."""
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
        except OSError:
            pass
    return found


def cpu_seconds(pids):
    """utime + stime of each process, by its kind (renderer, gpu-process, ... or browser)."""
    tick = os.sysconf("SC_CLK_TCK")
    by_kind = {}
    for p in pids:
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{p}/cmdline", "rb") as f:
                cmdline = f.read().split(b"\0")
        except OSError:
            continue
        # Chromium rewrites its children's command lines into one space-separated title.
        words = b" ".join(cmdline).split()
        kind = "chromedriver" if words and b"chromedriver" in words[0] else "browser"
        for word in words:
            if word.startswith(b"--type="):
                kind = word[7:].decode()
        by_kind[kind] = by_kind.get(kind, 0.0) + (int(fields[11]) + int(fields[12])) / tick
    return by_kind


def bench(url, vehicles, seconds):
    driver = browser()
    page = Page(driver)
    try:
        driver.get(url)
        page.await_("the board's vehicle list", lambda: driver.execute_script(
            "return !!document.getElementById('vehicles');"))
        driver.execute_script(PROBE)
        page.await_(f"{vehicles} vehicles", lambda: len(page.vehicles()) >= vehicles, timeout=60)
        driver.execute_cdp_cmd("Performance.enable", {"timeDomain": "threadTicks"})
        pids = descendants(driver.service.process.pid)

        def metrics():
            m = driver.execute_cdp_cmd("Performance.getMetrics", {})["metrics"]
            return {x["name"]: x["value"] for x in m}

        before_m, before_cpu, t0 = metrics(), cpu_seconds(pids), time.monotonic()
        before_stats = driver.execute_script("return { ...window.foxborneBoard.stats, eventToDom: [] };")
        driver.execute_script("window.__probe.events = []; window.__probe.changes = [];")
        # The measurement window: a duration, not a synchronisation.
        time.sleep(seconds)
        after_m, after_cpu, wall = metrics(), cpu_seconds(pids), time.monotonic() - t0
        stats = driver.execute_script("return window.foxborneBoard.stats;")
        p = page.probe()
        timings = []
        for e in p["events"]:
            want = "gap" if e["state"] == "open" else "ok"
            c = next((c for c in p["changes"] if c["sysid"] == e["sysid"] and c["state"] == want
                      and c["t"] >= e["t"] - 2000), None)
            timings.append(None if c is None else c["t"] - e["t"])
        say("bench", wall_s=wall,
            cpu_s={k: after_cpu.get(k, 0) - before_cpu.get(k, 0) for k in after_cpu},
            main_thread_s={k: after_m[k] - before_m[k] for k in
                           ("TaskDuration", "ScriptDuration", "LayoutDuration", "RecalcStyleDuration")},
            renders=stats["renders"] - before_stats["renders"],
            render_ms=stats["renderMs"] - before_stats["renderMs"],
            snapshots=stats["snapshots"] - before_stats["snapshots"],
            events=stats["events"] - before_stats["events"],
            event_to_element_ms=timings,
            vehicles=len(page.vehicles()), dom_nodes=after_m.get("Nodes"),
            js_heap_mb=after_m.get("JSHeapUsedSize", 0) / 1e6)
    finally:
        driver.quit()


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    if mode == "check" and len(sys.argv) == 5:
        check(sys.argv[2], sys.argv[3], sys.argv[4])
    elif mode == "bench" and len(sys.argv) == 5:
        bench(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]))
    else:
        sys.exit(__doc__)

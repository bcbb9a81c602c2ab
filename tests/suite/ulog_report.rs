//! `ulog report`: runs on every corpus log, writes one self-contained HTML file (nothing
//! fetched), and renders in headless Chromium (the screenshot is decoded and must not be blank).
//!
//! Chromium is Debian's `chromium` (or `$FOXBORNE_CHROMIUM`). Without the browser kit the
//! browser test is ignored, with the reason in the summary (the build script looks), unless
//! `FOXBORNE_REQUIRE_BROWSER=1`, when it fails.

use crate::common;

use std::path::Path;
use std::process::Command;

fn scratch(name: &str) -> common::Scratch {
    common::scratch(name)
}

fn report(log: &Path, out: &Path) -> std::process::Output {
    Command::new(common::binary())
        .args(["ulog", "report"])
        .arg(log)
        .arg("--out")
        .arg(out)
        .output()
        .unwrap()
}

/// Everything that would make a browser fetch something.
const FETCHES: [&str; 7] = [
    "<script", "<link", "<img", "<iframe", "src=", "url(", "@import",
];

#[test]
#[cfg_attr(foxborne_no_corpus, ignore = "needs the corpus (README)")]
fn report_runs_on_every_corpus_log_and_fetches_nothing() {
    let dir = scratch("corpus");
    for log in common::corpus_logs() {
        let name = log.file_stem().unwrap().to_string_lossy().to_string();
        let out = dir.join(format!("{name}.html"));
        let run = report(&log, &out);
        assert_eq!(
            run.status.code(),
            Some(0),
            "{name}: {}",
            String::from_utf8_lossy(&run.stderr)
        );
        let html = std::fs::read_to_string(&out).unwrap();
        assert!(html.starts_with("<!DOCTYPE html>"), "{name}");
        assert!(html.ends_with("</html>\n"), "{name}");
        for needle in FETCHES {
            assert!(!html.contains(needle), "{name}: {needle}");
        }
        // The only URL is the SVG namespace.
        let urls = html.matches("http").count();
        assert_eq!(
            urls,
            html.matches("http://www.w3.org/2000/svg").count(),
            "{name}"
        );
        assert!(html.contains("<h2>Summary</h2>") && html.contains("<h2>Findings</h2>"));
        assert!(html.contains("<svg"), "{name}: at least one plot");
    }
}

#[test]
#[cfg_attr(foxborne_no_corpus, ignore = "needs the corpus (README)")]
fn report_shows_status_anchor_plots_markers_and_evidence_commands() {
    let small = common::corpus_log("pyulog_sample_log_small.ulg");
    let log = common::corpus_log("pyulog_sample.ulg");
    let dir = scratch("content");
    let out = dir.join("small.html");
    assert_eq!(report(&small, &out).status.code(), Some(0));
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(html.contains(r#"<span class="status complete">complete</span>"#));
    // UTC start from the GPS anchor.
    assert!(html.contains("2021-04-21T"), "UTC start");
    assert!(html.contains("GPS time from vehicle_gps_position, 32 fixes"));
    for panel in [
        "Altitude (m)",
        "Roll (deg)",
        "Pitch (deg)",
        "Yaw (deg)",
        "Battery voltage (V)",
        "Battery current (A)",
        "GPS fix and satellites",
        "CPU load (%)",
        "Vibration",
    ] {
        assert!(
            html.contains(&format!("aria-label=\"{panel}\"")),
            "plot {panel}"
        );
    }
    assert!(html.contains("aria-label=\"Track\""), "position track");
    // The outlier finding, with the command that shows its sample.
    assert!(html.contains("timestamp_outlier"));
    assert!(
        html.contains("foxborne-receiver ulog record"),
        "evidence command"
    );

    // The dropout of pyulog_sample.ulg is a marker.
    let out = dir.join("r.html");
    assert_eq!(report(&log, &out).status.code(), Some(0));
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(html.contains("dropout of"), "dropout marker");

    // A quarantined log: status and reason, exit 3, still a report.
    let bytes = std::fs::read(&log).unwrap();
    let cut = dir.join("cut.ulg");
    std::fs::write(&cut, &bytes[..bytes.len() / 2 + 3]).unwrap();
    let out = dir.join("cut.html");
    assert_eq!(report(&cut, &out).status.code(), Some(3));
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(html.contains("status quarantined"));
    assert!(html.contains("ulog record") && html.contains("--offset"));
}

/// Chromium's screenshot of `html` at 1400 x `height`, decoded.
fn screenshot(browser: &Path, html: &Path, dir: &Path, height: u32) -> (Vec<u8>, Vec<[u8; 3]>) {
    let shot = dir.join(format!(
        "{}.png",
        html.file_stem().unwrap().to_string_lossy()
    ));
    let profile = dir.join("profile");
    let run = common::browser::screenshot(browser, html, &shot, &profile, (1400, height));
    assert!(
        shot.is_file(),
        "no screenshot of {}: {}",
        html.display(),
        String::from_utf8_lossy(&run.stderr)
    );
    let png = std::fs::read(&shot).unwrap();
    let (w, h, pixels) = common::browser::decode_png(&png);
    assert_eq!((w, h), (1400, height as usize));
    (png, pixels)
}

/// The page is not blank, and its plots are drawn in colour.
fn assert_rendered(name: &str, pixels: &[[u8; 3]]) {
    let white = |p: &[u8; 3]| p.iter().all(|c| *c >= 245);
    let inked = pixels.iter().filter(|p| !white(p)).count();
    let share = inked as f64 / pixels.len() as f64;
    assert!(
        share > 0.03,
        "{name}: the page looks blank: {share:.4} of pixels not white"
    );
    // Plot lines in colour, not just black text: the palette's blue is there.
    let blue = pixels
        .iter()
        .filter(|p| p[2] > 150 && p[0] < 90 && p[1] > 90 && p[1] < 160)
        .count();
    assert!(blue > 300, "{name}: no plot line pixels ({blue})");
}

/// Every corpus log's report, events and rules included, rendered by headless Chromium. With
/// `FOXBORNE_ULOG_SCREENSHOT=docs/ulog-report.png`, the report of flightreview_ekf_failure.ulg
/// is kept there (docs/ulog.md's picture).
#[test]
#[cfg_attr(
    any(foxborne_no_browser, foxborne_no_corpus),
    ignore = "needs the browser kit and the corpus (README)"
)]
fn report_renders_in_headless_chromium() {
    let logs = common::corpus_logs();
    let browser = common::browser::chromium();
    let dir = scratch("browser");
    for log in &logs {
        let name = log.file_stem().unwrap().to_string_lossy().to_string();
        let html = dir.join(format!("{name}.html"));
        assert_eq!(report(log, &html).status.code(), Some(0), "{name}");
        let text = std::fs::read_to_string(&html).unwrap();
        assert!(text.contains("<h2>Rules</h2>"), "{name}: rules table");
        assert!(
            text.contains("<h2>PX4 events</h2>"),
            "{name}: events section"
        );
        // The yulelog files have no plots to draw: only the logs with data are judged by pixels.
        if !name.starts_with("yulelog") {
            assert!(
                text.contains("<figcaption class=\"note\">read: "),
                "{name}: what each plot read"
            );
            let (_, pixels) = screenshot(&browser, &html, &dir, 2400);
            assert_rendered(&name, &pixels);
        }
    }
    // docs/ulog.md's report: the failsafe and the sensor failure on the time axis, over the band.
    let html = dir.join("flightreview_ekf_failure.html");
    let text = std::fs::read_to_string(&html).unwrap();
    assert!(
        text.contains(">Failsafe warning: Attitude failure detected</text>"),
        "failsafe label"
    );
    assert!(
        text.contains(">Accelerometer sensor #0 failure: Timeout</text>"),
        "sensor failure label"
    );
    assert!(
        text.matches("class=\"mode-strip\"").count() >= 3 * 10,
        "the band on every plot"
    );
    let (png, pixels) = screenshot(&browser, &html, &dir, 2400);
    // The state band's Manual red and Position green strips are drawn.
    let strip = |r: u8, g: u8, b: u8| {
        pixels
            .iter()
            .filter(|p| p[0].abs_diff(r) < 40 && p[1].abs_diff(g) < 40 && p[2].abs_diff(b) < 40)
            .count()
    };
    assert!(strip(0xd9, 0x40, 0x40) > 1000, "manual strip");
    assert!(strip(0x40, 0xd9, 0x66) > 1000, "position strip");
    if let Some(keep) = std::env::var_os("FOXBORNE_ULOG_SCREENSHOT") {
        let keep = Path::new(env!("CARGO_MANIFEST_DIR")).join(keep);
        std::fs::write(&keep, png).unwrap();
        eprintln!("kept {}", keep.display());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

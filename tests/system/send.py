"""Frames for the system test, built by pymavlink (an independent MAVLink implementation).

Each frame is a MAVLink 2 HEARTBEAT whose custom_mode is its number (0, 1, 2, ...), so the
receive log says exactly which frames arrived; the receipt's `fields` carry it.

  send.py udp PORT COUNT RATE SYSID [--until FILE]   send COUNT frames (or until FILE exists)
                                                     at RATE frames/s; prints how many went
  send.py file PATH COUNT SYSID                      write COUNT frames to PATH (for a pty)
"""
import os
import socket
import sys
import time

from pymavlink.dialects.v20 import common as mavlink


def frames(sysid, count):
    """Yields the frames one at a time: packing two million up front took longer than the
    system test waits for the first twenty thousand to arrive."""
    mav = mavlink.MAVLink(None, srcSystem=sysid, srcComponent=1)
    for n in range(count):
        msg = mavlink.MAVLink_heartbeat_message(2, 3, 0, n, 4, 3)
        yield msg.pack(mav)
        mav.seq = (mav.seq + 1) % 256


def udp(port, count, rate, sysid, until=None):
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    built = frames(sysid, count)
    start = time.perf_counter()
    sent = 0
    while sent < count:
        if until and os.path.exists(until):
            break
        due = int((time.perf_counter() - start) * rate) + 1
        while sent < min(due, count):
            sock.sendto(next(built), ("127.0.0.1", port))
            sent += 1
        time.sleep(0.0005)
    took = time.perf_counter() - start
    # The achieved rate goes to stderr: a loaded machine may pack slower than RATE.
    print(f"sent {sent} in {took:.1f} s ({sent / took if took else 0:.0f} frames/s)", file=sys.stderr)
    print(sent)


def main():
    mode = sys.argv[1]
    if mode == "udp":
        until = sys.argv[7] if len(sys.argv) > 7 and sys.argv[6] == "--until" else None
        udp(int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), until)
    elif mode == "file":
        with open(sys.argv[2], "wb") as f:
            for frame in frames(int(sys.argv[4]), int(sys.argv[3])):
                f.write(frame)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()

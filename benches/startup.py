#!/usr/bin/env python3
"""Whole-process cost of short commands, side by side: wall time, CPU (user + system, from
wait4's rusage) and minor page faults, each command run ROUNDS times in turn with the others
(so the machine's noise falls on all of them alike). Its use (issue 44): what a ULog ingest of
a log of a few KB costs beside ulog_cpp's reader, where both are mostly process start-up.

    benches/startup.py [--rounds N] NAME=COMMAND [NAME=COMMAND ...]

COMMAND is split on spaces; its stdout goes to /dev/null. Example (BENCHMARKS.md, "Start-up"):

    benches/startup.py --rounds 600 \\
        ours="target/release/foxborne-receiver ulog ingest LOG --out /dev/shm/o" \\
        ulog_cpp="target/refs/build-ulog/ulog_cpp_parse LOG"
"""
import argparse
import os
import statistics
import sys
import time


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("commands", nargs="+", metavar="NAME=COMMAND")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    commands = []
    for spec in args.commands:
        name, sep, command = spec.partition("=")
        argv = command.split()
        if not sep or not name or not argv:
            parser.error(f"not NAME=COMMAND: {spec!r}")
        if not os.access(argv[0], os.X_OK):
            parser.error(f"{name}: {argv[0]} is not an executable file")
        commands.append((name, argv))

    samples = {name: ([], [], []) for name, _ in commands}
    devnull = [(os.POSIX_SPAWN_OPEN, 1, "/dev/null", os.O_WRONLY, 0)]
    for _ in range(args.rounds):
        for name, argv in commands:
            started = time.perf_counter()
            pid = os.posix_spawn(argv[0], argv, os.environ, file_actions=devnull)
            _, status, usage = os.wait4(pid, 0)
            wall = time.perf_counter() - started
            if os.waitstatus_to_exitcode(status) != 0:
                sys.exit(f"{name}: {' '.join(argv)} exited with {os.waitstatus_to_exitcode(status)}")
            walls, cpus, faults = samples[name]
            walls.append(wall * 1e3)
            cpus.append((usage.ru_utime + usage.ru_stime) * 1e3)
            faults.append(usage.ru_minflt)

    print(f"{args.rounds} rounds, the commands in turn; medians (quartiles)")
    print("| command | wall ms | CPU ms | minor page faults |")
    print("| --- | ---: | ---: | ---: |")
    for name, _ in commands:
        cells = []
        for values in samples[name]:
            q1, q2, q3 = statistics.quantiles(values, n=4)
            cells.append(f"{q2:.2f} ({q1:.2f} to {q3:.2f})" if isinstance(values[0], float)
                         else f"{q2:.0f}")
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()

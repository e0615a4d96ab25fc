#!/usr/bin/env python3
"""Plant a CPU stall: a SCHED_FIFO busy loop above cyclictest's priority, LENGTH ms every PERIOD s.

    scripts/plant_stall.py --cpu 0 --length-ms 5 --period-s 2 --priority 99 --count 3

A real preemption of the measured thread, not a doctored log: cyclictest (at -p95, pinned to the
same CPU) wakes up late by up to LENGTH ms while the loop runs. Needs root (SCHED_FIFO). Used to
capture the stalled -v logs in tests/data/cyclictest/ab-verbose/ (its README has the commands).
"""

from __future__ import annotations

import argparse
import os
import time


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cpu", type=int, required=True)
    p.add_argument("--length-ms", type=float, default=5.0)
    p.add_argument("--period-s", type=float, default=2.0)
    p.add_argument("--priority", type=int, default=99)
    p.add_argument("--count", type=int, required=True, help="how many stalls, then exit")
    p.add_argument("--first-s", type=float, default=1.0, help="delay before the first stall")
    a = p.parse_args()
    os.sched_setaffinity(0, {a.cpu})
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(a.priority))
    start = time.monotonic() + a.first_s
    for k in range(a.count):
        # Sleeping at this priority costs nothing; only the spin below holds the CPU.
        time.sleep(max(0.0, start + k * a.period_s - time.monotonic()))
        end = time.monotonic() + a.length_ms / 1000
        while time.monotonic() < end:
            pass


if __name__ == "__main__":
    main()

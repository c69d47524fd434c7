"""Timing a process with its peak memory, for the benchmarks that compare processes
(folder_bench.py, validate_bench.py)."""

import subprocess
import time


def timed(argv, timeout=None, exits=(0,)):
    """(wall seconds, peak RSS in MB) of one run of argv, whose exit status must be one of
    `exits`; None when it outlives `timeout` seconds (it is stopped)."""
    started = time.perf_counter()
    try:
        out = subprocess.run(["/usr/bin/time", "-f", "%M", *argv], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    seconds = time.perf_counter() - started
    if out.returncode not in exits:
        raise SystemExit(f"{argv} failed ({out.returncode}): {out.stderr[-2000:]}")
    return seconds, int(out.stderr.strip().splitlines()[-1]) / 1024

"""The `orrery validate` benchmark (issue 22): the process a user runs, on one large generated
blueprint and on its variants, against Python's json.load of each file in the same run. Driven
by scripts/bench_validate.sh.

    python validate_bench.py OUT_DIR GEN_BLUEPRINT ORRERY_BIN [--before OLD_ORRERY_BIN]
        [--tasks N] [--runs R] [--json-runs J] [--timeout S]

The files (gen_blueprint, N tasks):

  plain     the benchmark blueprint of scripts/bench.sh
  produced  the same with 87.5% of the tasks reading a session parameter the start task
            writes: the baseline of `warned` (no more warnings than plain)
  warned    the same, the parameter written by no task: one warning per reading task
  minified  `warned` on one line

For each binary (the build before a change too when given) and file: the median wall time of R
runs of `orrery validate --format json FILE` (output discarded) and its peak RSS
(/usr/bin/time -f %M), the median of J json.load runs in this process, and the ratios. A run
that takes longer than the timeout is reported as such. Results: OUT_DIR/validate.json and the
table OUT_DIR/validate.md (also printed).
"""

import argparse
import json
import os
import statistics
import subprocess
import time

from peak import timed

VARIANTS = {
    "plain": [],
    "produced": ["--session-inputs", "0.875", "--produced"],
    "warned": ["--session-inputs", "0.875"],
}


def json_load(path, runs):
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        with open(path) as f:
            json.load(f)
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def count_diagnostics(orrery, path):
    out = subprocess.run([orrery, "validate", "--format", "json", path], capture_output=True, text=True)
    return len(json.loads(out.stdout)[0]["diagnostics"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("gen")
    ap.add_argument("orrery")
    ap.add_argument("--before")
    ap.add_argument("--tasks", type=int, default=100000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json-runs", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=120)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    files = {}
    for name, flags in VARIANTS.items():
        files[name] = os.path.join(args.out, f"validate_{name}_{args.tasks}.json")
        subprocess.run([args.gen, str(args.tasks), files[name], *flags], check=True, capture_output=True)
    files["minified"] = os.path.join(args.out, f"validate_minified_{args.tasks}.json")
    with open(files["warned"]) as f, open(files["minified"], "w") as g:
        json.dump(json.load(f), g, separators=(",", ":"), ensure_ascii=False)

    results = {"tasks": args.tasks, "runs": args.runs, "files": {}}
    binaries = [("after", args.orrery)] + ([("before", args.before)] if args.before else [])
    for name, path in files.items():
        entry = {
            "mb": os.path.getsize(path) / 1e6,
            "diagnostics": count_diagnostics(args.orrery, path),
            "json_load_s": json_load(path, args.json_runs),
        }
        # The builds' runs taken in turns, so that what else the machine does falls on both.
        samples = {label: [] for label, _ in binaries}
        for _ in range(args.runs):
            for label, binary in binaries:
                if samples[label] is None:
                    continue
                # Exit 1: the file has errors (a report all the same).
                sample = timed([binary, "validate", "--format", "json", path], args.timeout, exits=(0, 1))
                samples[label] = None if sample is None else samples[label] + [sample]
        for label, taken in samples.items():
            entry[label] = None if taken is None else {
                "seconds": statistics.median(s for s, _ in taken),
                "peak_mb": statistics.median(m for _, m in taken),
            }
        results["files"][name] = entry
    with open(os.path.join(args.out, "validate.json"), "w") as f:
        json.dump(results, f, indent=2)

    lines = [
        f"`orrery validate --format json` of generated {args.tasks}-task blueprints (median of {args.runs} runs; "
        f"a run past {args.timeout:.0f} s is stopped) against Python's json.load of the same file (median of "
        f"{args.json_runs}).",
        "",
        "| file | MB | diagnostics | build | wall | / json.load | peak RSS | / file size | / its baseline |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    baseline = {"warned": "produced", "minified": "produced"}
    for name, entry in results["files"].items():
        for label, _ in binaries:
            m = entry[label]
            if m is None:
                lines.append(f"| {name} | {entry['mb']:.0f} | {entry['diagnostics']} | {label} | over {args.timeout:.0f} s | | | | |")
                continue
            base = results["files"].get(baseline.get(name, ""), {}).get(label)
            versus = f"{m['seconds'] / base['seconds']:.2f}x {baseline[name]}" if base else ""
            lines.append(
                f"| {name} | {entry['mb']:.0f} | {entry['diagnostics']} | {label} | {m['seconds']:.2f} s "
                f"| {m['seconds'] / entry['json_load_s']:.2f}x ({entry['json_load_s']:.2f} s) | {m['peak_mb']:.0f} MB "
                f"| {m['peak_mb'] / entry['mb']:.1f}x | {versus} |"
            )
    table = "\n".join(lines) + "\n"
    with open(os.path.join(args.out, "validate.md"), "w") as f:
        f.write(table)
    print(table)


if __name__ == "__main__":
    main()

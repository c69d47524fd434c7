"""The folder benchmark (issue 22): what the other blueprint files of a folder cost a blueprint
that calls none of them. Driven by scripts/bench_folder.sh.

    python folder_bench.py OUT_DIR GEN_BLUEPRINT ORRERY_BIN [--before OLD_ORRERY_BIN] [--runs R]
        [--sizes 50000,20000,...]

It writes OUT_DIR/alone/one.json (start -> one `shell.run` of `true` -> end) and the same file in
OUT_DIR/crowded/ beside generated blueprints of the given sizes (gen_blueprint, seeds 1, 2, ...),
then times (wall clock), for each binary (the build before the change too when given, in the same run), the
median of R runs of each command with its peak RSS (/usr/bin/time -f %M):

  run       orrery run one.json (a fresh store each time)
  check     orrery job validate_blueprint {"file": one.json, "text": ...}: the editor's check of
            its blueprint in its folder (one process: nothing remembered from an earlier check)
  run calls orrery run calls.json, whose one composite calls one.json: the folder is searched
            for the blueprint with that id

in the lone folder (the baseline) and the crowded one. Results: OUT_DIR/folder.json and the table
OUT_DIR/folder.md (also printed).
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile

from peak import timed

def three_tasks(blueprint_id, middle):
    """start -> `middle` (a task's type and params) -> end."""
    return {
        "id": blueprint_id,
        "name": blueprint_id,
        "version": "1.0",
        "tasks": [
            {"id": "start", "type": "system.start"},
            {"id": "work", **middle, "depends_on": [{"id": "start"}]},
            {"id": "end", "type": "system.end", "depends_on": [{"id": "work"}]},
        ],
    }


ONE = three_tasks("one", {"type": "shell.run", "params": [{"name": "command", "value": "true"}]})
CALLS = three_tasks("calls", {"type": "system.composite", "params": [{"name": "blueprint", "value": {"static": "one"}}]})


COMMANDS = ("run", "check", "run calls")


def measure(orrery, folder, runs):
    one = os.path.join(folder, "one.json")
    text = open(one).read()
    figures = {}
    for name in COMMANDS:
        samples = []
        for _ in range(runs):
            with tempfile.TemporaryDirectory() as scratch:
                db = os.path.join(scratch, "orrery.db")
                if name == "run":
                    argv = [orrery, "run", "--db", db, one]
                elif name == "run calls":
                    argv = [orrery, "run", "--db", db, os.path.join(folder, "calls.json")]
                else:
                    argv = [orrery, "job", "--db", db, "validate_blueprint", json.dumps({"file": one, "text": text})]
                samples.append(timed(argv))
        figures[name] = {
            "seconds": statistics.median(s for s, _ in samples),
            "peak_mb": statistics.median(m for _, m in samples),
        }
    return figures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("gen")
    ap.add_argument("orrery")
    ap.add_argument("--before")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--sizes", default="50000,20000,10000,10000")
    args = ap.parse_args()

    alone, crowded = os.path.join(args.out, "alone"), os.path.join(args.out, "crowded")
    for folder in (alone, crowded):
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        for blueprint in (ONE, CALLS):
            with open(os.path.join(folder, f"{blueprint['id']}.json"), "w") as f:
                json.dump(blueprint, f, indent=2)
    for seed, size in enumerate(args.sizes.split(","), start=1):
        subprocess.run([args.gen, size, os.path.join(crowded, f"bp_{size}_{seed}.json"), "--seed", str(seed)],
                       check=True, capture_output=True)
    others = sum(os.path.getsize(os.path.join(crowded, f)) for f in os.listdir(crowded) if f.startswith("bp_"))

    binaries = [("after", args.orrery)] + ([("before", args.before)] if args.before else [])
    results = {"others_mb": others / 1e6, "files": len(os.listdir(crowded)) - 2, "runs": args.runs}
    for label, binary in binaries:
        results[label] = {"alone": measure(binary, alone, args.runs), "crowded": measure(binary, crowded, args.runs)}
    with open(os.path.join(args.out, "folder.json"), "w") as f:
        json.dump(results, f, indent=2)

    lines = [
        f"One-task blueprint alone in its folder, and beside {results['files']} other blueprint files "
        f"({results['others_mb']:.0f} MB) it does not call; median of {args.runs} runs each.",
        "",
        "| command | build | alone | beside the others | ratio | peak alone | peak beside | ratio |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name in COMMANDS:
        for label, _ in binaries:
            a, c = results[label]["alone"][name], results[label]["crowded"][name]
            lines.append(
                f"| {name} | {label} | {a['seconds']:.3f} s | {c['seconds']:.3f} s | {c['seconds'] / a['seconds']:.1f}x "
                f"| {a['peak_mb']:.0f} MB | {c['peak_mb']:.0f} MB | {c['peak_mb'] / a['peak_mb']:.1f}x |"
            )
    table = "\n".join(lines) + "\n"
    with open(os.path.join(args.out, "folder.md"), "w") as f:
        f.write(table)
    print(table)


if __name__ == "__main__":
    main()

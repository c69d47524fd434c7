"""Builds the benchmark table from the JSON files scripts/bench.sh leaves in target/bench.

    python report.py OUT_DIR SIZE... > table   (also writes OUT_DIR/report.md)
"""

import json
import os
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def main(out_dir, sizes):
    rows = []
    for n in sizes:
        o = load(os.path.join(out_dir, f"orrery_{n}.json"))
        p_path = os.path.join(out_dir, f"python_{n}.json")
        p = load(p_path) if os.path.exists(p_path) else None
        t = o["timings"]
        rows.append(
            {
                "tasks": o["tasks"],
                "mb": o["bytes"] / 1e6,
                "orrery": t["read_load_validate"]["median_ms"],
                "orrery_min": t["read_load_validate"]["min_ms"],
                "orrery_runs": t["read_load_validate"]["runs"],
                "load": t["load"]["median_ms"],
                "validate": t["validate"]["median_ms"],
                "json": p["json_load_median_ms"] if p else None,
                "json_min": p["json_load_min_ms"] if p else None,
                "json_runs": p["json_load_runs"] if p else 0,
                "ref": p["reference_median_ms"] if p else None,
                "ref_runs": p["reference_runs"] if p else 0,
                "ref_wanted": p["reference_runs_wanted"] if p else 0,
            }
        )

    def fmt(x, spec=".1f"):
        return "n/a" if x is None else format(x, spec)

    def ratio(a, b):
        return None if a is None or b is None or b == 0 else a / b

    header = [
        "tasks",
        "file MB",
        "Orrery ms",
        "load ms",
        "validate ms",
        "py json.load ms",
        "reference ms",
        "ref runs",
        "json.load/Orrery",
        "reference/Orrery",
        "Orrery ms/1k tasks",
        "validate ms/1k tasks",
    ]
    lines = []
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "|".join("---:" for _ in header) + "|")
    for r in rows:
        cells = [
            str(r["tasks"]),
            fmt(r["mb"]),
            fmt(r["orrery"]),
            fmt(r["load"]),
            fmt(r["validate"]),
            fmt(r["json"]),
            fmt(r["ref"], ".0f"),
            f'{r["ref_runs"]}/{r["ref_wanted"]}' if r["ref"] is not None else "skipped",
            fmt(ratio(r["json"], r["orrery"]), ".2f") + ("x" if r["json"] is not None else ""),
            fmt(ratio(r["ref"], r["orrery"]), ".1f") + ("x" if r["ref"] is not None else ""),
            fmt(r["orrery"] / (r["tasks"] / 1000), ".2f"),
            fmt(r["validate"] / (r["tasks"] / 1000), ".2f"),
        ]
        lines.append("| " + " | ".join(cells) + " |")

    notes = [
        "",
        "Orrery ms = read the file + `orrery_blueprint::load` + `validate_encoded` (empty library), "
        "median of " + ", ".join(f"{r['orrery_runs']} ({r['tasks']})" for r in rows) + " runs (tasks) of the release binary "
        "after a warm-up; load ms and validate ms are the two halves timed on their own (text in memory / "
        "blueprint already loaded).",
        "py json.load ms = `json.load` of the same file inside Python (time.perf_counter), median. "
        "reference ms = json.load -> BlueprintSerializer.from_dict (Blueprint.__init__: validate() + scopes) "
        "-> check_dataflow(), antikythera-sdk 0.5.1 (no JSON-schema check), median of 'ref runs' (done/wanted; fewer "
        "when over the time budget).",
        "",
        "Targets:",
    ]
    for r in rows:
        faster = r["json"] is not None and r["orrery"] < r["json"]
        fifty = r["ref"] is not None and r["ref"] / r["orrery"] >= 50
        vs_ref = (
            "not measured"
            if r["ref"] is None
            else f"{'yes' if fifty else 'NO'} ({fmt(ratio(r['ref'], r['orrery']), '.1f')}x)"
        )
        vs_json = (
            "not measured"
            if r["json"] is None
            else f"{'yes' if faster else 'NO'} ({fmt(ratio(r['json'], r['orrery']), '.2f')}x)"
        )
        notes.append(
            f"- {r['tasks']} tasks: Orrery faster than json.load: {vs_json}; >= 50x faster than the reference: {vs_ref}"
        )
    big = [r for r in rows if r["tasks"] >= 10000]
    if len(big) >= 2:
        lo, hi = big[0], big[-1]
        growth = (hi["orrery"] / hi["tasks"]) / (lo["orrery"] / lo["tasks"])
        vgrowth = (hi["validate"] / hi["tasks"]) / (lo["validate"] / lo["tasks"])
        notes.append(
            f"- linear growth: Orrery ms per task at {hi['tasks']} / at {lo['tasks']} = {growth:.2f} "
            f"(validate alone {vgrowth:.2f}); 1.00 is perfectly linear"
            f" -> {'linear' if growth <= 1.5 and vgrowth <= 1.5 else 'NOT linear'} (threshold 1.5)"
        )
    text = "\n".join(lines + notes) + "\n"
    with open(os.path.join(out_dir, "report.md"), "w") as f:
        f.write("# Orrery blueprint validation benchmark\n\n" + text)
    sys.stdout.write(text)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    main(sys.argv[1], [int(x) for x in sys.argv[2:]])

"""Measure the cpu preset's candidate scales (``convnorm_lab.experiments.cpu_scale``) one after
another on one thread, and store the table with the row its rule chooses.

Each finished row is appended to ``WORK/rows.jsonl`` with the commit that measured it, so a
second start goes on where the first stopped (a row of another commit is refused). When every
candidate is measured, the table is written to ``--output`` with its provenance. Run it from a
clean checkout::

    nice -n 5 python scripts/measure_cpu_scale.py --work /work/runs/i50/cpu-scale \\
        --output results/cpu-scale/cpu-scale.json
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict
from pathlib import Path

from convnorm_lab.data import find_cifar
from convnorm_lab.experiments import cpu_scale
from convnorm_lab.training import provenance, save_results
from convnorm_lab.training.results import git_commit

#: the experiment and preset its provenance names
EXPERIMENT, PRESET = "cpu-scale", "airbench-cpu"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--work", required=True, help="folder for the rows measured so far")
    parser.add_argument("--output", required=True, help="the table's file")
    args = parser.parse_args(argv)
    commit, work = git_commit(), Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    done_file = work / "rows.jsonl"
    rows = [json.loads(line) for line in done_file.read_text().splitlines()] if done_file.exists() else []
    if any(row["git_commit"] != commit for row in rows):
        raise SystemExit(f"{done_file} holds rows of another commit than {commit}: move it away to measure anew")
    start = time.perf_counter()
    for candidate in cpu_scale.CANDIDATES:
        if any(row["candidate"] == asdict(candidate) for row in rows):
            continue
        print(f"measuring {candidate}", flush=True)
        row = {"candidate": asdict(candidate), **cpu_scale.measure(candidate, args.data_dir), "git_commit": commit}
        print(json.dumps(row), flush=True)
        rows.append(row)
        with done_file.open("a") as handle:
            handle.write(json.dumps(row) + "\n")
    table = [{k: v for k, v in row.items() if k not in ("candidate", "git_commit")} for row in rows]
    chosen = cpu_scale.choose(table)
    block = {**provenance(EXPERIMENT, PRESET, cpu_scale.SCALE_SEED, find_cifar("cifar10", args.data_dir).description,
                          time.perf_counter() - start, "cpu"),
             "rule": {"min_accuracy": cpu_scale.MIN_ACCURACY, "max_minutes": cpu_scale.MAX_MINUTES,
                      "tie": cpu_scale.TIE},
             "recipe": cpu_scale.CPU_RECIPE, "threads": 1}
    save_results(args.output, block, {"rows": table, "chosen": chosen})
    print("chosen:", chosen)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Measure one round of the cpu preset's candidate scales (``convnorm_lab.experiments.cpu_scale``)
on one thread each, and store the round's table with the row its rule chooses.

Each finished row is appended to a file of ``WORK`` with the commit that measured it, so a
second start goes on where the first stopped (a row of another commit is refused). ``--part
K/N`` measures every N-th candidate from the K-th (counted from 0), so that N processes share
a round, one thread each; whichever finds every candidate measured writes the table to
``--output`` with its provenance. Run it from a clean checkout::

    nice -n 5 python scripts/measure_cpu_scale.py --round 2 --part 0/2 --work /work/runs/i50/cpu-scale-2 \\
        --output results/cpu-scale/cpu-scale-round2.json
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


def part(text: str) -> tuple[int, int]:
    """``"K/N"`` as (K, N), with 0 <= K < N."""
    try:
        k, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--part must be K/N, got {text!r}") from None
    if not 0 <= k < n:
        raise argparse.ArgumentTypeError(f"--part K/N needs 0 <= K < N, got {text!r}")
    return k, n


def measured(work: Path, commit: str) -> list[dict]:
    """Every row measured so far in ``work``, refusing rows of another commit."""
    rows = [json.loads(line) for path in sorted(work.glob("rows*.jsonl")) for line in path.read_text().splitlines()]
    if any(row["git_commit"] != commit for row in rows):
        raise SystemExit(f"{work} holds rows of another commit than {commit}: move them away to measure anew")
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--round", type=int, required=True, choices=sorted(cpu_scale.ROUNDS))
    parser.add_argument("--part", type=part, default=(0, 1), help="K/N: this process's share of the round")
    parser.add_argument("--work", required=True, help="folder for the rows measured so far")
    parser.add_argument("--output", required=True, help="the table's file")
    args = parser.parse_args(argv)
    commit, work, (k, n) = git_commit(), Path(args.work), args.part
    work.mkdir(parents=True, exist_ok=True)
    candidates = cpu_scale.ROUNDS[args.round]
    start = time.perf_counter()
    for candidate in candidates[k::n]:
        if any(row["candidate"] == asdict(candidate) for row in measured(work, commit)):
            continue
        print(f"measuring {candidate}", flush=True)
        row = {"candidate": asdict(candidate), **cpu_scale.measure(candidate, args.data_dir), "git_commit": commit}
        print(json.dumps(row), flush=True)
        with (work / f"rows-{k}of{n}.jsonl").open("a") as handle:
            handle.write(json.dumps(row) + "\n")
    by_candidate = {json.dumps(row["candidate"]): row for row in measured(work, commit)}
    if any(json.dumps(asdict(c)) not in by_candidate for c in candidates):
        print("the round's other candidates are still being measured; the last part to finish writes the table")
        return 0
    table = [{k: v for k, v in by_candidate[json.dumps(asdict(c))].items() if k not in ("candidate", "git_commit")}
             for c in candidates]
    chosen = cpu_scale.RULES[args.round](table)
    block = {**provenance(EXPERIMENT, PRESET, cpu_scale.SCALE_SEED, find_cifar("cifar10", args.data_dir).description,
                          time.perf_counter() - start, "cpu"),
             "round": args.round,
             "rule": {"name": cpu_scale.RULES[args.round].__name__, "min_accuracy": cpu_scale.MIN_ACCURACY,
                      "max_minutes": cpu_scale.MAX_MINUTES, "tie": cpu_scale.TIE},
             "recipe": cpu_scale.CPU_RECIPE, "threads": 1}
    save_results(args.output, block, {"rows": table, "chosen": chosen})
    print("chosen:", chosen)
    return 0


if __name__ == "__main__":
    sys.exit(main())

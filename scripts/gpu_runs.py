"""Train the runs of several experiments and seeds on one GPU, several processes at once.

    python scripts/gpu_runs.py --preset short-schedule --jobs 12 --stop-after 1500 \
        generalization:0-3 ablation:0-2 convergence:0-3

Each ``EXPERIMENT:SEEDS`` (``0-3`` or ``0,2``) asks for every run of that experiment and
seed not yet stored (``python -m convnorm.experiments NAME --list-runs``); runs with one
run key are one training. Runs start in the order given (experiment by experiment, seed
by seed; ConvNorm networks, the slowest, first within a seed), each as its own process
(``--run``, ``--cuda-graph``, ``--resume``), at most ``--jobs`` at a time; none starts
after ``--stop-after`` seconds. When all have ended, every experiment and seed whose
runs are all stored gets its result file. ``<output>/gpu_runs_status.json`` says, all
along, which runs finished, failed or are still to train; logs go to ``--logs``.

    python scripts/gpu_runs.py --status            # what is recorded and what remains

``--status`` prints, for every experiment and each of the seeds it needs
(``EXPERIMENTS[name].seeds``), whether its result file exists and how many of its
trainings are stored, as a Markdown table, and trains nothing.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from convnorm.data import CifarNotFoundError
from convnorm.experiments import EXPERIMENTS, planned_runs, result_path, run_experiment, run_record_path
from convnorm.experiments.runners import check_trains


def parse_request(text: str) -> tuple[str, list[int]]:
    name, _, seeds = text.partition(":")
    if not seeds:
        raise argparse.ArgumentTypeError(f"{text!r}: expected EXPERIMENT:SEEDS, e.g. generalization:0-3")
    if "-" in seeds:
        first, last = seeds.split("-")
        return name, list(range(int(first), int(last) + 1))
    return name, [int(s) for s in seeds.split(",")]


def status_table(preset: str, output: Path, data_dir: str | None = None) -> str:
    """A Markdown table: per experiment, the seeds with a result file and the trainings
    stored against those planned (over the seeds it needs)."""
    lines = ["| experiment | seeds needed | result files | trainings stored / planned |", "| --- | --- | --- | --- |"]
    for name, experiment in EXPERIMENTS.items():
        seeds = range(experiment.seeds)
        done = [seed for seed in seeds if result_path(name, preset, seed, output).exists()]
        runs = [(seed, key) for seed in seeds for _, key in planned_runs(name, preset, data_dir, output, seed)]
        stored = sum(run_record_path(key, preset, seed, output).exists() for seed, key in runs)
        files = ", ".join(f"seed {s}" for s in done) or "none"
        lines.append(f"| {name} | {experiment.seeds} | {files} | {stored} / {len(runs)} |")
    return "\n".join(lines)


def planned_queue(requests: list[tuple[str, list[int]]], preset: str, output: Path,
                  data_dir: str | None) -> list[dict]:
    """One job per training still to store, in the order asked (ConvNorm networks, the
    slowest, first within an experiment and seed); a training two requests share is one job."""
    queue, seen = [], set()
    for name, seeds in requests:
        for seed in seeds:
            runs = planned_runs(name, preset, data_dir, output, seed, missing=True)  # refuses an unknown name
            check_trains(name)
            runs.sort(key=lambda run: "convnorm" not in run[1])  # a stable sort
            for run, key in runs:
                if (seed, key) not in seen:
                    seen.add((seed, key))
                    queue.append({"experiment": name, "seed": seed, "run": run, "key": key})
    return queue


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("requests", nargs="*", type=parse_request, metavar="EXPERIMENT:SEEDS")
    parser.add_argument("--status", action="store_true", help="print what is recorded and what remains, and exit")
    parser.add_argument("--preset", default="short-schedule")
    parser.add_argument("--output", default="results")
    parser.add_argument("--data-dir", default=None, help="directory holding CIFAR (default: $CONVNORM_DATA_DIR)")
    parser.add_argument("--logs", default="/tmp/gpu-runs-logs")
    parser.add_argument("--jobs", type=int, default=8)
    parser.add_argument("--stop-after", type=float, default=float("inf"), help="seconds; start no run after it")
    parser.add_argument("--no-cuda-graph", action="store_true")
    args = parser.parse_args(argv)
    output, logs = Path(args.output) / args.preset, Path(args.logs)
    if not args.status and not args.requests:
        parser.error("name at least one EXPERIMENT:SEEDS (or --status)")
    try:  # the data and the names are checked before anything starts
        if args.status:
            print(status_table(args.preset, output, args.data_dir))
            return 0
        queue = planned_queue(args.requests, args.preset, output, args.data_dir)
    except (CifarNotFoundError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    logs.mkdir(parents=True, exist_ok=True)
    start = time.time()
    print(f"{len(queue)} runs to train", flush=True)

    status = {"preset": args.preset, "queued": [dict(q) for q in queue], "finished": [], "failed": [],
              "not_started": []}
    status_path = output / "gpu_runs_status.json"
    running: list[tuple[subprocess.Popen, dict, float]] = []

    def write_status():
        status_path.parent.mkdir(parents=True, exist_ok=True)
        status["running"] = [job for _, job, _ in running]
        status["elapsed_s"] = round(time.time() - start, 1)
        status_path.write_text(json.dumps(status, indent=1))

    while queue or running:
        for proc, job, began in list(running):
            if proc.poll() is not None:
                running.remove((proc, job, began))
                job = {**job, "exit": proc.returncode, "wall_s": round(time.time() - began, 1)}
                status["finished" if proc.returncode == 0 else "failed"].append(job)
                print(f"[{time.time() - start:7.1f}s] {job['experiment']} seed {job['seed']} {job['run']}: "
                      f"exit {proc.returncode} after {job['wall_s']} s", flush=True)
        while queue and len(running) < args.jobs and time.time() - start < args.stop_after:
            job = queue.pop(0)
            log = open(logs / f"{job['experiment']}-seed{job['seed']}-{job['key']}.log", "w")
            command = [sys.executable, "-m", "convnorm.experiments", job["experiment"], "--preset", args.preset,
                       "--seed", str(job["seed"]), "--run", job["run"], "--output", str(output),
                       "--resume", "--no-progress"] + ([] if args.no_cuda_graph else ["--cuda-graph"]) \
                + ([] if args.data_dir is None else ["--data-dir", args.data_dir])
            running.append((subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT), job, time.time()))
        if queue and time.time() - start >= args.stop_after:
            status["not_started"] += queue
            queue = []
        write_status()
        time.sleep(2)

    for name, seeds in args.requests:
        for seed in seeds:
            payload = run_experiment(name, args.preset, args.data_dir, output, seed, progress=False, only=[])
            print(f"{name} seed {seed}: " + (f"wrote {payload['path']}" if payload["path"] else
                                              f"runs still to train: {', '.join(payload['skipped'])}"), flush=True)
    write_status()
    return 0


if __name__ == "__main__":
    sys.exit(main())

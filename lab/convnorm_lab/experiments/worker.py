"""A training worker for the GPU launcher (``scripts/gpu_runs.py``): one process that
trains the runs sent to it, one after another, so that the cost of starting Python,
CUDA and the data is paid once per worker rather than once per training.

It reads one job a line on standard input (JSON: ``experiment``, ``preset``, ``seed``,
``run``, ``output``, ``data_dir``, ``cuda_graph``, ``filter``: ConvNorm's spatial filter on
the GPU, or None for the package's rule,
:meth:`~convnorm.functional.ComputationPolicy.filtering`) and answers each with one line on
standard output: the job with ``ok`` and the run key of what it trained (``key``: a job
planned before its network's rate was chosen is keyed only now) or, on failure, ``error``;
training logs go to
standard error. A training is stored (its run record written whole, in one rename) only
when it finishes, so a worker killed mid-training leaves nothing half-done.

    python -m convnorm_lab.experiments.worker < jobs.jsonl
"""
from __future__ import annotations

import json
import logging
import sys
import time

from convnorm.functional import current_policy, use_policy

from .runners import run_experiment


def serve(lines, answer) -> None:
    """Train the job of each line of ``lines``; ``answer(dict)`` each outcome."""
    for line in lines:
        if not line.strip():
            continue
        job = json.loads(line)
        start = time.perf_counter()
        policy = current_policy().filtering(job["filter"], "cuda") if job.get("filter") else current_policy()
        try:
            with use_policy(policy):
                payload = run_experiment(job["experiment"], job["preset"], job.get("data_dir"), job["output"],
                                         job["seed"], resume=True, progress=False, only=[job["run"]],
                                         cuda_graph=job.get("cuda_graph", False))
            outcome = {"ok": True, "runs_missing": payload["skipped"], "key": payload["keys"].get(job["run"])}
        except Exception as error:  # one failed training must not end the worker
            outcome = {"ok": False, "error": f"{type(error).__name__}: {error}"}
        answer({**job, **outcome, "wall_s": round(time.perf_counter() - start, 1)})


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    serve(sys.stdin, lambda outcome: print(json.dumps(outcome), flush=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())

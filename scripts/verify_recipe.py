"""Train the BN network of a preset once, at the recipe's own rate, and store its run record:
the check that the recipe brings BN to the accuracy it is chosen for (the airbench preset's:
93.5 % mean on the official test images) without waiting for a GPU.

The training checkpoints after every epoch under ``--checkpoints`` and resumes from there when
started again (``convnorm_lab.training.Trainer``); each epoch is logged to ``--log``. Run it
from a clean checkout, so that the record names a commit::

    nice -n 5 python scripts/verify_recipe.py --preset airbench --seed 0 --output results/airbench \\
        --checkpoints /work/runs/i50/verify --log /work/runs/i50/verify/log.txt
"""
from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

import torch

from convnorm_lab.experiments import get_preset
from convnorm_lab.experiments.context import Context
from convnorm_lab.models.normalizations import BN

#: the experiment the record's provenance names
EXPERIMENT = "recipe-check"


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="airbench")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--output", required=True, help="the results folder of the preset (run records go under runs/)")
    parser.add_argument("--checkpoints", required=True, help="where the per-epoch checkpoint is kept")
    parser.add_argument("--log", default=None, help="a file for one line an epoch (default: standard error)")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.log:
        Path(args.log).parent.mkdir(parents=True, exist_ok=True)
    logging.basicConfig(filename=args.log, level=logging.INFO, format="%(asctime)s %(message)s")
    preset = get_preset(args.preset)
    ctx = Context(EXPERIMENT, preset, args.data_dir, Path(args.output), args.seed, resume=True, progress=False,
                  device=torch.device("cpu"), checkpoints=Path(args.checkpoints))
    record = ctx.train(f"cifar10-{BN}", BN, ctx.splits("cifar10"), reduction=1)
    logging.info("done: %s", record["summary"])
    print(record["summary"])
    return record


if __name__ == "__main__":
    sys.exit(0 if main()["summary"] else 1)

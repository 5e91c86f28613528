"""The cpu preset's scale, chosen by measurement: width x training images x epochs of the
airbench network (:class:`~convnorm_lab.models.nets.AirbenchNet`) against BN's accuracy on
the official test images and the minutes a training takes on one thread.

Each candidate of a round (:data:`ROUNDS`) trains the BN network once with the cpu recipe
(:data:`~convnorm_lab.experiments.presets.CPU_RECIPE`) on a balanced subset of the training images, on the data and
initialization of :data:`SCALE_SEED`, a seed that no record reports (so the reported seeds
play no part in choosing the scale), and evaluates it on all 10,000 official test images
after every epoch. Its time is the processor time of the one thread that trains it
(``time.process_time``), which other work on a shared machine barely changes, and the wall
time beside it.

The rule of round 1 (:func:`choose`), fixed before its first measurement:

* a candidate *qualifies* if BN's test accuracy at its best validation epoch is at least
  :data:`MIN_ACCURACY` and its training takes at most :data:`MAX_MINUTES` of one thread;
* of those, the one with the highest accuracy is chosen, the closest to the paper's regime;
  accuracies within :data:`TIE` count as equal, and then the fastest is chosen (the records
  are many trainings, each network's several times).

Why these numbers: the issue's goal, BN at 85 % or more on the official test images in at
most 3 minutes of one thread, is where the networks are trained well enough for the paper's
comparisons to mean something and the records (dozens of trainings a seed, ConvNorm's about
three times BN's time) fit the days a CPU session has. The tie is one test image in a
thousand, well below the seed-to-seed spread, so that noise does not buy minutes.

Amendment (2026-12-07, after round 1 and before round 2): no candidate of round 1
qualified. Its processor seconds over its image steps put one training step of the
network at width 16 at about 1.6 ms an image on this machine's thread, evaluations
included, so three minutes buy about 110,000 image steps, and round 1's 150,000 reached
80.3 %, its best 300,000 82.8 %. Within three minutes 85 % is out of this network's reach
here. The accuracy is the goal kept, since below it the comparisons test little; the
minutes give way. Round 2 (:data:`ROUNDS`) measures wider and longer candidates, and its
rule (:func:`choose_accurate`) takes the fastest candidate that reaches
:data:`MIN_ACCURACY`, with its minutes reported against :data:`MAX_MINUTES`. It reads
round 2's rows only.
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass

import torch

from ..data import prepare_cifar
from ..models import build_model
from ..models.normalizations import BN
from ..training import TrainConfig, Trainer, seed_everything
from .presets import CPU_BATCH, CPU_RECIPE

#: the seed of every measurement: none of the records' seeds (0, 1, 2, ...) nor the
#: learning-rate rule's
SCALE_SEED = 1000
#: validation images of every candidate (they choose the epoch whose test accuracy counts)
VAL_IMAGES = 1000
#: the qualifying accuracy (a fraction) of BN on the official test images
MIN_ACCURACY = 0.85
#: the qualifying processor minutes of one BN training on one thread
MAX_MINUTES = 3.0
#: accuracies closer than this (a fraction) count as equal
TIE = 0.001


@dataclass(frozen=True)
class Candidate:
    """A scale: the network's first width, the training images and the epochs."""

    width: int
    images: int
    epochs: int


#: the candidates of each round, in the order measured. Round 1: around the issue's measured
#: point (width 16, 25,000 images, 10 epochs, 88 % in 140 s without evaluations), fewer
#: images and epochs first, since the 10,000 test images evaluated after every epoch add
#: about a minute. Round 2 (see the amendment): width and epochs rather than images, which
#: gained nothing from 20,000 to 25,000 in round 1, cheapest first.
ROUNDS = {
    1: (Candidate(16, 15_000, 10), Candidate(16, 20_000, 10), Candidate(16, 25_000, 10), Candidate(16, 20_000, 8),
        Candidate(24, 15_000, 8)),
    2: (Candidate(16, 25_000, 16), Candidate(24, 25_000, 12), Candidate(32, 20_000, 10), Candidate(32, 25_000, 12)),
}

def measure(candidate: Candidate, data_dir: str | None = None, progress: bool = False) -> dict:
    """Train BN at ``candidate`` on one thread and return its row: the candidate, BN's test
    accuracy at its best validation epoch and at the last, and the processor and wall
    seconds of the training (data preparation excluded)."""
    torch.set_num_threads(1)
    splits = prepare_cifar("cifar10", data_dir, seed=SCALE_SEED, max_train=candidate.images, max_val=VAL_IMAGES)
    seed_everything(SCALE_SEED)
    model = build_model("airbench", BN, width=candidate.width)
    config = TrainConfig(epochs=candidate.epochs, seed=SCALE_SEED, channels_last=True, **CPU_RECIPE)
    trainer = Trainer(model, splits.loaders(CPU_BATCH, seed=SCALE_SEED), config, progress=progress, device="cpu")
    cpu, wall = time.process_time(), time.perf_counter()
    summary = trainer.fit().summary()
    return {**asdict(candidate), "n_test": splits.info["n_test"], "test_acc": summary["test_acc_at_best_val"],
            "final_test_acc": summary["final_test_acc"], "cpu_s": time.process_time() - cpu,
            "wall_s": time.perf_counter() - wall}


def qualifies(row: dict) -> bool:
    return row["test_acc"] >= MIN_ACCURACY and row["cpu_s"] <= MAX_MINUTES * 60


def choose(rows: list[dict]) -> dict | None:
    """Round 1's chosen row (see the module), None if none qualifies."""
    eligible = [row for row in rows if qualifies(row)]
    if not eligible:
        return None
    best = max(row["test_acc"] for row in eligible)
    return min((row for row in eligible if row["test_acc"] >= best - TIE), key=lambda row: row["cpu_s"])


def choose_accurate(rows: list[dict]) -> dict | None:
    """Round 2's chosen row (see the module's amendment): the fastest that reaches
    :data:`MIN_ACCURACY`, None if none does."""
    accurate = [row for row in rows if row["test_acc"] >= MIN_ACCURACY]
    return min(accurate, key=lambda row: row["cpu_s"]) if accurate else None


#: each round's rule
RULES = {1: choose, 2: choose_accurate}

"""The learning-rate rule: every network's rate chosen on validation data, by one rule.

A preset's recipe has one base rate, set where the recipe comes from: on networks with
BatchNorm, whose scale invariance makes them tolerant of it. A network without BatchNorm
may need a lower one. So that no network is held to a rate tuned for another, and no
network is tuned more than another, every normalization at a preset goes through the same
trials: with ``r`` each of the preset's ``lr_reductions`` (:class:`~convnorm_lab.experiments.presets.Preset`),
the network is trained at

.. math::  \\eta_r = \\frac{\\eta_{\\text{base}}}{d \\, r},

where :math:`d` is its normalization's own divisor (ONI's 10, the paper's footnote; 1
otherwise), on the data and initialization of seed :data:`TRIAL_SEED`, with the standard
training of the preset (clean labels, the preset's training set), and its best validation
accuracy :math:`a_r` is read. The rule (:func:`choose`) keeps :math:`r = 1` unless the best
trial beats it by more than :data:`MARGIN`:

.. math::  r^\\star = \\begin{cases} \\arg\\max_r a_r & \\text{if } \\max_r a_r > a_1 + m, \\\\
           1 & \\text{otherwise,} \\end{cases}

a training that diverged counting as no accuracy at all, and a gain of exactly :math:`m`
not more than it. The chosen :math:`\\eta_{r^\\star}`
then trains that network in every experiment and every seed of the preset, and the trials
are stored as ordinary run records (the trial at :math:`r = 1` *is* the standard training
of seed 0), so the choice can be read again from them at any time.

Why a margin: one seed's validation accuracy moves by a few points from seed to seed, so
an argmax alone would change a network's rate for one seed's luck; a rate changes only for
a gain larger than that spread.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from fractions import Fraction

#: the seed whose data and initialization the trials use
TRIAL_SEED = 0
#: the gain in best validation accuracy (a fraction) by which a lower rate must beat the
#: network's own before it is chosen: about the largest seed-to-seed standard deviation of
#: a network's best validation accuracy at the ``cpu`` scale (the vanilla network's, about
#: five points), so that a rate changes for a gain larger than one seed's luck
MARGIN = 0.05
#: gains are compared to this many decimals: an accuracy is a count of validation images
#: over their number, so a gain that equals the margin in images must not exceed it by a
#: rounding error
DECIMALS = 9
#: the provenance's name for the trainings of the trials
TRIALS = "learning-rate"


def trial_run(norm: str, reduction: int | Fraction) -> str:
    """The run name of the trial of ``norm`` at its rate divided by ``reduction``:
    ``"trial-lr/3-convnorm"``, or multiplied by its inverse where it steps up: ``"trial-lr*3-convnorm"``."""
    if reduction >= 1:
        return f"trial-lr/{reduction}-{norm}"
    return f"trial-lr*{1 / Fraction(reduction)}-{norm}"


def choose(accuracies: Mapping[int, float | None], margin: float = MARGIN) -> int:
    """The reduction the previous scale's rule (:data:`PREVIOUS_SCALE`, with ``margin``)
    chooses from each trial's best validation accuracy (``accuracies[r]``, None for a
    training that diverged).

    Raises:
        ValueError: without a trial at reduction 1, the network's own rate.
    """
    return replace(PREVIOUS_SCALE, margin=margin).choose(accuracies)


def trial_accuracy(record: dict) -> float | None:
    """A trial's best validation accuracy, None if it diverged."""
    return None if record["diverged"] else record["summary"]["best_val_acc"]


#: twice chance: a training whose test accuracy never reaches this many times 1/K failed to
#: train (the book's definition, ``convnorm_book.results.records.failure``, reads it)
FAILURE_MULTIPLE = 2


def failed(record: dict, num_classes: int = 10) -> bool:
    """Whether a training failed to train: its loss diverged, or its test accuracy never
    reached :data:`FAILURE_MULTIPLE` / K at any epoch."""
    if record.get("diverged"):
        return True
    accuracies = (record.get("history") or {}).get("test_acc") or []
    return bool(accuracies) and max(accuracies) < FAILURE_MULTIPLE / num_classes


@dataclass(frozen=True)
class Rule:
    r"""A learning-rate rule, declared whole: the ``grid`` of reductions tried (the network's
    rate divided by each; a reduction below 1 steps the rate up), the ``margin`` a trial must
    beat the network's own rate by, the ``trial_seed`` whose data and initialization the
    trials use, and whether a trial that failed to train (:func:`failed`, not only one that
    diverged) counts as no accuracy (``failures_count``); ``reports_no_trial_seed``: no
    experiment reports a training at the trial seed (a run there is refused).

    :meth:`choose` keeps the network's own rate unless the best trial beats it by more than
    the margin; among trials of the same best accuracy the one nearest the own rate (in steps
    of the grid) wins, and of two equally near the larger rate.
    """

    grid: tuple[int | Fraction, ...]
    margin: float
    trial_seed: int
    failures_count: bool
    reports_no_trial_seed: bool = False

    def __post_init__(self):
        if 1 not in self.grid or list(self.grid) != sorted(set(self.grid)) or min(self.grid) <= 0:
            raise ValueError(f"a rule's grid must be increasing positive reductions including 1, got {self.grid!r}")

    def accuracy(self, record: dict, num_classes: int = 10) -> float | None:
        """A trial's best validation accuracy, None where it counts as no accuracy."""
        if record["diverged"] or (self.failures_count and failed(record, num_classes)):
            return None
        return record["summary"]["best_val_acc"]

    def choose(self, accuracies: Mapping[int | Fraction, float | None]) -> int | Fraction:
        """The reduction chosen from each trial's accuracy (None: no accuracy)."""
        if 1 not in accuracies:
            raise ValueError(f"the trials must include reduction 1 (the network's own rate), got {sorted(accuracies)}")
        trained = {r: round(a, DECIMALS) for r, a in accuracies.items() if a is not None}
        if not trained:
            return 1
        top = max(trained.values())
        best = min((r for r, a in trained.items() if a == top), key=lambda r: (abs(math.log(r)), r))
        own = trained.get(1)
        return best if own is None or round(top - own, DECIMALS) > self.margin else 1


#: the rule of the previous scale's records (the six-conv network, protocol 3): the
#: divisors of the preset's ``lr_reductions``, the margin :data:`MARGIN`, seed
#: :data:`TRIAL_SEED`, only divergence counting as no accuracy. It was fixed after most of
#: its trials had run; it stays so that those records read as they were chosen.
PREVIOUS_SCALE = Rule(grid=(1, 3, 10), margin=MARGIN, trial_seed=TRIAL_SEED, failures_count=False)

#: The rule of the airbench presets, committed before any of its trials:
#:
#: * **grid** ``(1/3, 1, 3)``: the rate times 3, itself, and a third. It steps up as well as
#:   down, so that no network is tried in one direction only; the step, about half a decade,
#:   is the one the previous grid took, and it is large enough for a trial to differ from the
#:   own rate by more than the seed-to-seed spread. (ONI's own rate is already a tenth, its
#:   declared divisor.)
#: * **margin** two points of validation accuracy: the binomial standard error of a
#:   difference of two accuracies near 85 % on the cpu scale's 1,000 validation images is
#:   about 1.6 points; a rate changes only for a gain beyond that, not for one seed's luck,
#:   and a gain of exactly the margin (in images) is not more than it.
#: * **ties** go to the trial nearest the own rate, then to the larger rate: of trials that
#:   cannot be told apart, the smallest departure from the recipe.
#: * **failures** count as no accuracy: a trial that diverged or never reached twice chance
#:   on the test images (the book's definition) cannot be chosen, and a network whose own
#:   rate failed takes the best trial that trained, however small its accuracy.
#: * **seed** 100, which no record reports (the reported seeds are 0, 1, 2, ...): the seed
#:   that chooses a rate is not one whose accuracy is then reported at it.
DECLARED = Rule(grid=(Fraction(1, 3), 1, 3), margin=0.02, trial_seed=100, failures_count=True,
                reports_no_trial_seed=True)

#: the rules by the name a preset gives (``Preset.lr_rule``)
RULES = {"previous-scale": PREVIOUS_SCALE, "declared": DECLARED}

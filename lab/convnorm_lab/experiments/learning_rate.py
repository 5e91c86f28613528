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

from collections.abc import Mapping

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


def trial_run(norm: str, reduction: int) -> str:
    """The run name of the trial of ``norm`` at its rate divided by ``reduction``:
    ``"trial-lr/3-convnorm"``."""
    return f"trial-lr/{reduction}-{norm}"


def choose(accuracies: Mapping[int, float | None], margin: float = MARGIN) -> int:
    """The reduction the rule chooses from each trial's best validation accuracy
    (``accuracies[r]``, None for a training that diverged).

    Raises:
        ValueError: without a trial at reduction 1, the network's own rate.
    """
    if 1 not in accuracies:
        raise ValueError(f"the trials must include reduction 1 (the network's own rate), got {sorted(accuracies)}")
    trained = {r: a for r, a in accuracies.items() if a is not None}
    if not trained:
        return 1
    best = max(sorted(trained), key=lambda r: trained[r])  # the larger rate on a tie
    own = accuracies[1]
    return best if own is None or round(trained[best] - own, DECIMALS) > margin else 1


def trial_accuracy(record: dict) -> float | None:
    """A trial's best validation accuracy, None if it diverged."""
    return None if record["diverged"] else record["summary"]["best_val_acc"]

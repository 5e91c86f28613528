r"""Whether a scale can test a claim of the paper, and why: the one rule of Part IV.

A scale tests a claim only where the paper's effect could show in it. Both readers of the
rule ask it here: the plan, which asks seeds only for endpoints the scale can test
(:mod:`~convnorm_book.results.endpoints`), and the glance table and the chapters, which say
"cannot be tested at this scale" where it fails (:mod:`~convnorm_book.results.glance`).
Three claims have a limit of scale (:func:`scope`):

* **convergence**: the speed-up :math:`S` (:class:`~convnorm_book.results.quantities.SpeedUp`)
  compares the images BN needs to reach its best accuracy within the paper's budget with
  those ConvNorm+BN needs. ConvNorm+BN needs at least one epoch, so a seed's :math:`S` is at
  most :math:`\log_2 e_{\mathrm{BN}}`, with :math:`e_{\mathrm{BN}}` the epoch at which BN
  first reaches that accuracy (counted in epochs of equal images). The mean of :math:`S`
  over the seeds, which the test reads, can then reach the paper's :math:`S` only where the
  mean of that bound exceeds it. Where records of the scale exist, :math:`e_{\mathrm{BN}}`
  is read from them; else it is the last epoch within the paper's budget, the most the
  schedule allows.
* **data scarcity**: a fraction means different images at different scales, so the subset is
  compared by its absolute number of training images with the paper's. The paper's gap of
  ConvNorm+BN over BN grows as its subsets shrink (its Table 7, which
  :func:`scarcity_gap_grows` reads), so on more images than the paper's subset of the same
  fraction its own trend expects less than its number. Below its smallest subset it measured
  nothing, and there the trend cannot go on: with no images both networks sit at chance and
  the gap is zero. The scale tests the claim where its subset holds no more images than the
  paper's of the same fraction and no fewer than the paper's smallest.
* **label noise**: the paper's gap is a regularizer's: overparameterized networks memorize
  wrong labels, and normalizing the weights holds that back (its Section 4.1). A network's
  training accuracy on the noisy labels exceeds the share of labels still correct,
  :math:`1 - r(K-1)/K` at noise rate :math:`r` with :math:`K` classes (:func:`correct_share`),
  only once it fits wrong labels, and climbs towards 100 % as it memorizes them; a network at
  chance stays far below that share. The scale tests the claim where at least one of the two
  networks, on the mean over its stored seeds, climbs above it: below it, the networks have not
  even fitted the correct labels, and the paper's gap has nothing to act on. Where the scale has
  no records yet, that is not known until they are trained, and the seeds are planned.

Records add two conditions (:func:`of_records`): the measure must be the paper's (a SimBA
attack of another length counts other queries), and the interval must be narrower than the
paper's effect, its half-width below :math:`|d_{\mathrm{paper}}|` (:func:`precision`): were
the true effect the paper's, the interval would then leave zero out. A time is the paper's
only on the kind of device it ran on, a GPU (:func:`timing`).

A smoke preset (``<name>-smoke``) rehearses the plan of the preset it shrinks, so its limits
are that preset's (where it runs the endpoint at all).
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from convnorm_lab.experiments import get_preset
from convnorm_lab.experiments.catalog import CONVERGENCE, DATA_SCARCITY, LABEL_NOISE
from convnorm_lab.experiments.experiment import TRAINING_SPLIT, training_images

from . import sizes
from .claims import Endpoint
from .paper_values import paper_leads
from .quantities import SpeedUp
from .records import Records, classes, is_complete, load_result_files, lookup
from .stats import Paired, collect
from .words import percent

#: what a row or a chapter says where a scale cannot test a claim
NOT_TESTABLE = "cannot be tested at this scale"


@dataclass(frozen=True)
class Scope:
    """Whether a scale can test a claim (``None``: not known until trained) and why."""

    testable: bool | None
    reason: str

    @property
    def answer(self) -> str:
        """``"yes"``, ``"no"`` or ``"not known until trained"``, then the reason."""
        word = {True: "yes", False: "no", None: "not known until trained"}[self.testable]
        return f"{word}: {self.reason}"


def complete_records(experiment: str, preset: str, root: str | Path | None = None) -> Records | None:
    """The complete result files of ``experiment`` at ``preset``, or ``None`` where there are none."""
    files = tuple(f for f in load_result_files(experiment, preset, root) if is_complete(f))
    return Records(experiment, preset, files) if files else None


def scope(endpoint: Endpoint, preset: str, paper_values: dict, root: str | Path | None = None) -> Scope:
    """Whether ``preset`` can test ``endpoint`` at the paper's effect (see the module)."""
    if not endpoint.runs_at(get_preset(preset)):
        return Scope(False, f"{preset} does not run it")
    preset = preset.removesuffix("-smoke")
    if endpoint.experiment == CONVERGENCE.name:
        return _convergence(endpoint, preset, paper_values, root)
    if endpoint.experiment == DATA_SCARCITY.name:
        return _scarcity(endpoint, preset, paper_values)
    if endpoint.experiment == LABEL_NOISE.name:
        return _noise(endpoint, preset, root)
    return Scope(True, "no limit of scale applies")


def precision(c: Paired) -> Scope:
    """Whether the interval of ``c`` can resolve the paper's effect: its half-width below
    :math:`|d_{\\mathrm{paper}}|`."""
    if c.interval is None or c.paper is None:
        return Scope(False, "no interval to set beside the paper's number")
    unit = f" {c.unit}" if c.unit else ""
    half = (c.interval[1] - c.interval[0]) / 2
    if half >= abs(c.paper):
        return Scope(False, f"the interval's half-width, {half:.{sizes.places(c)}f}{unit}, exceeds the paper's "
                            f"effect, {abs(c.paper):.{sizes.paper_places(c.paper)}f}{unit}")
    return Scope(True, "the interval is narrower than the paper's effect")


def of_records(c: Paired, limit: Scope | None = None, measure: str | None = None) -> Scope:
    """Whether records giving ``c`` test the claim: the first condition that fails of the
    measure (``measure``: why ours is not the paper's), the scale's ``limit`` (:func:`scope`)
    and the interval's :func:`precision`."""
    if measure is not None:
        return Scope(False, measure)
    if limit is not None and limit.testable is False:
        return limit
    return precision(c)


def timing(devices: Iterable[str]) -> Scope:
    """Whether timings on ``devices`` (their names) can be set beside the paper's, made on GPUs."""
    if all("cpu" in device.lower() for device in devices):
        return Scope(False, "timed on a CPU only, the paper on GPUs")
    return Scope(True, "timed on a GPU, as the paper")


def epoch_images(preset: str) -> int:
    """The images of one training epoch at ``preset`` (whole minibatches)."""
    settings = get_preset(preset)
    return math.ceil(training_images(settings) / settings.batch_size) * settings.batch_size


def speed_up_bounds(endpoint: Endpoint, records: Records, budget: int) -> list[float]:
    """The largest speed-up each seed of ``records`` can give
    (:meth:`~convnorm_book.results.quantities.SpeedUp.bound`), for every seed whose BN training
    has a history."""
    path = records.schema.record_path(endpoint.group_at(records.settings), endpoint.b)
    trainings = (lookup(file.results, path) for file in records.files)
    return [SpeedUp.bound(bn, budget) for bn in trainings
            if bn is not None and (bn.get("history") or {}).get("test_acc")]


def _convergence(endpoint: Endpoint, preset: str, paper_values: dict, root: str | Path | None) -> Scope:
    effect = endpoint.paper_effect(paper_values, root)
    budget = SpeedUp.budget(paper_values)
    records = complete_records(endpoint.experiment, preset, root)
    bounds = speed_up_bounds(endpoint, records, budget) if records else []
    if bounds:
        bound = sum(bounds) / len(bounds)
        low, high = min(bounds), max(bounds)
        values = f"{low:.2f}" if f"{low:.2f}" == f"{high:.2f}" else f"{low:.2f} to {high:.2f}"
        basis = f"{values} doublings (mean {bound:.2f}, {len(bounds)} seeds)"
    else:
        epochs = min(get_preset(preset).epochs, budget // epoch_images(preset))
        bound = math.log2(max(epochs, 1))
        basis = f"{bound:.2f} doublings (the schedule's last epoch within the paper's budget, {epochs})"
    above = bound > effect
    return Scope(above, f"S attains at most log₂ of the epoch at which BN peaks: {basis}, "
                        f"{'above' if above else 'not above'} the paper's {effect:.2f}")


def scarcity_gap_grows(paper_values: dict, a: str, b: str) -> bool:
    """Whether the paper's ``a`` − ``b`` grows as its training subsets shrink (its Table 7)."""
    leads = paper_leads(paper_values, DATA_SCARCITY.name, a, b)
    ordered = [leads[key] for key in sorted(leads, key=_fraction)]
    return all(smaller >= larger for smaller, larger in zip(ordered, ordered[1:]))


def _fraction(column: str) -> float:
    return float(column.rstrip("%")) / 100


def _scarcity(endpoint: Endpoint, preset: str, paper_values: dict) -> Scope:
    fraction = float(endpoint.group_at(get_preset(preset)))
    ours = round(fraction * training_images(get_preset(preset)))
    paper = round(float(endpoint.group) * TRAINING_SPLIT)
    smallest = round(min(map(_fraction, paper_leads(paper_values, DATA_SCARCITY.name, endpoint.a, endpoint.b)))
                     * TRAINING_SPLIT)
    grows = scarcity_gap_grows(paper_values, endpoint.a, endpoint.b)
    if not grows:
        why = "the paper's gap does not grow as its subsets shrink, so no other number of images stands in for its"
    elif ours > paper:
        why = "more images than the paper's, where its own trend expects a smaller gap"
    elif ours < smallest:
        why = "fewer than its smallest subset" + (f" ({smallest:,})" if smallest != paper else "") \
              + ", below which it measured nothing"
    else:
        why = "within the paper's subsets, at or below its number"
    testable = grows and smallest <= ours <= paper
    return Scope(testable, f"{ours:,} training images, the paper's {paper:,}: {why}")


def correct_share(rate: float, k: int) -> float:
    r"""The share of labels still correct under symmetric noise at ``rate`` among ``k`` classes,
    :math:`1 - r(K-1)/K`: a flipped label lands on any of the other :math:`K-1` classes or
    back on its own."""
    return 1 - rate * (k - 1) / k


def _noise(endpoint: Endpoint, preset: str, root: str | Path | None) -> Scope:
    records = complete_records(endpoint.experiment, preset, root)
    group = endpoint.group_at(get_preset(preset))
    share = 100 * correct_share(float(group), classes((group,)))
    rate = percent(float(group))
    paths = [] if records is None else [records.schema.record_path(group, m) for m in (endpoint.a, endpoint.b)]
    trained = [path for path in paths if any(lookup(file.results, path) is not None for file in records.files)]
    if not trained:
        return Scope(None, f"whether either network fits wrong labels at {rate} noise")
    top = max(collect(records, path + ("summary", "final_train_acc"), 100, accuracy=True).mean for path in trained)
    fits = top > share
    return Scope(fits, f"at {rate} noise, training accuracy at most {top:.0f} % with {share:.0f} % of the labels "
                       f"correct: {'a network' if fits else 'neither network'} fits wrong labels, the regime where "
                       "the paper's gap arises")

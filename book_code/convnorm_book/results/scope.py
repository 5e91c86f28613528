r"""Whether a scale can test a primary endpoint at the paper's effect, and why.

A plan asks seeds for the power to find the paper's effect. That is meaningful only where
the scale can show an effect of that size; where it cannot, the endpoint needs no seeds
there. Three endpoints have such a limit:

* **convergence**: the speed-up :math:`S` (:class:`~convnorm_book.results.quantities.SpeedUp`)
  compares the images BN needs to reach its best accuracy within the paper's budget with
  those ConvNorm+BN needs. ConvNorm+BN needs at least one epoch, so a seed's :math:`S` is at
  most :math:`\log_2 e_{\mathrm{BN}}`, with :math:`e_{\mathrm{BN}}` the epoch at which BN
  first reaches that accuracy (counted in epochs of equal images). The scale tests the
  paper's :math:`S` only where that bound, averaged over the seeds, exceeds it. Where records
  of the scale exist, :math:`e_{\mathrm{BN}}` is read from them; else it is the last epoch
  within the paper's budget, the most the schedule allows.
* **data scarcity**: a fraction means different images at different scales, so the subset is
  compared by its absolute number of training images with the paper's (its 10 % of 45,000
  is 4,500). The paper's gap of ConvNorm+BN over BN grows as its subsets shrink (its Table 7,
  which :func:`scarcity_gap_grows` reads), so its effect at 4,500 images is no more than the
  one to expect with fewer: the scale tests it where its subset holds at most the paper's
  number of images.
* **label noise**: at a noise rate where both networks sit at chance, no difference can show.
  "At chance" is the book's failure rule (:func:`~convnorm_book.results.records.failure`:
  never above twice chance, or diverged), in every stored seed of both networks; where the
  scale has no records yet, it is not known until they are trained, and the seeds are planned.

The other endpoints (the channel condition number of trained layers) have no such limit. A
smoke preset (``<name>-smoke``) rehearses the plan of the preset it shrinks, so its limits are
that preset's (where it runs the endpoint at all).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from convnorm_lab.experiments import get_preset
from convnorm_lab.experiments.catalog import CONVERGENCE, DATA_SCARCITY, LABEL_NOISE
from convnorm_lab.experiments.experiment import TRAINING_SPLIT

from .claims import Endpoint
from .paper_values import paper_leads
from .quantities import SpeedUp
from .records import Records, classes, failure, is_complete, load_result_files, lookup


@dataclass(frozen=True)
class Scope:
    """Whether a scale can test an endpoint (``None``: not known until trained) and why."""

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


def epoch_images(preset: str) -> int:
    """The images of one training epoch at ``preset`` (whole minibatches)."""
    settings = get_preset(preset)
    images = min(settings.max_train or TRAINING_SPLIT, TRAINING_SPLIT)
    return math.ceil(images / settings.batch_size) * settings.batch_size


def _convergence(endpoint: Endpoint, preset: str, paper_values: dict, root: str | Path | None) -> Scope:
    effect = endpoint.paper_effect(paper_values, root)
    budget = SpeedUp.budget(paper_values)
    records = complete_records(endpoint.experiment, preset, root)
    group = endpoint.group_at(get_preset(preset))
    bounds = []
    for file in records.files if records else ():
        bn = lookup(file.results, records.schema.record_path(group, endpoint.b))
        if bn is not None and (bn.get("history") or {}).get("test_acc"):
            bounds.append(speed_up_bound(bn, budget))
    if bounds:
        bound, basis = sum(bounds) / len(bounds), f"BN's best epoch in {len(bounds)} seeds' records"
    else:
        epochs = min(get_preset(preset).epochs, budget // epoch_images(preset))
        bound, basis = math.log2(max(epochs, 1)), f"the schedule's last epoch within the paper's budget, {epochs}"
    return Scope(bound > effect, f"S attains at most log2 of BN's best epoch, {bound:.2f} doublings ({basis}), "
                                 f"{'above' if bound > effect else 'not above'} the paper's {effect:.2f}")


def speed_up_bound(bn: dict, budget: int) -> float:
    """:math:`\\log_2 e_{\\mathrm{BN}}` of one BN training record: the images it had seen when it
    first reached its best test accuracy within ``budget`` images, over those of its first epoch."""
    seen = [steps * bn["batch_size"] for steps in bn["history"]["steps"]]
    accuracies = bn["history"]["test_acc"]
    within = [acc for acc, images in zip(accuracies, seen) if images <= budget]
    level = max(within or accuracies)
    first = next(images for acc, images in zip(accuracies, seen) if acc >= level)
    return math.log2(first / seen[0])


def scarcity_gap_grows(paper_values: dict, a: str, b: str) -> bool:
    """Whether the paper's ``a`` − ``b`` grows as its training subsets shrink (its Table 7)."""
    leads = paper_leads(paper_values, DATA_SCARCITY.name, a, b)
    ordered = [leads[key] for key in sorted(leads, key=lambda k: float(k.rstrip("%")))]
    return all(smaller >= larger for smaller, larger in zip(ordered, ordered[1:]))


def _scarcity(endpoint: Endpoint, preset: str, paper_values: dict) -> Scope:
    fraction = float(endpoint.group_at(get_preset(preset)))
    ours = round(fraction * min(get_preset(preset).max_train or TRAINING_SPLIT, TRAINING_SPLIT))
    paper = round(float(endpoint.group) * TRAINING_SPLIT)
    grows = scarcity_gap_grows(paper_values, endpoint.a, endpoint.b)
    testable = ours <= paper and grows
    return Scope(testable, f"{ours:,} training images against the paper's {paper:,}"
                 + ("" if grows else "; the paper's gap does not grow as its subsets shrink")
                 + ("" if ours <= paper else ": more images than the paper's, where its gap is smaller"))


def _noise(endpoint: Endpoint, preset: str, root: str | Path | None) -> Scope:
    records = complete_records(endpoint.experiment, preset, root)
    group = endpoint.group_at(get_preset(preset))
    rate = f"{float(group):.0%}"
    trainings = [] if records is None else [
        lookup(file.results, records.schema.record_path(group, m)) for file in records.files
        for m in (endpoint.a, endpoint.b)]
    trainings = [t for t in trainings if t is not None]
    if not trainings:
        return Scope(None, f"whether the networks sit at chance at {rate} noise")
    failed = sum(failure(t, classes((group,))) is not None for t in trainings)
    return Scope(failed < len(trainings), f"at {rate} noise {failed} of {len(trainings)} stored trainings of the "
                                          "two networks sit at chance (the failure rule)")

"""The learning-rate rule as the records show it: per network, the best validation accuracy
of each of its trials and the rate the rule chose
(:mod:`convnorm_lab.experiments.learning_rate`).

A result file made under the rule names, in its provenance (``choices["lr_rule"]``), the
run record of every trial of each network it trained and the reduction chosen; the trials
are read from those run records, so that what a chapter shows is what chose the rates.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from convnorm_lab.experiments import EXPERIMENTS, run_record_path
from convnorm_lab.experiments.learning_rate import TRIAL_SEED, choose, trial_accuracy

from .records import RecordError, Records, read_record, results_dir, stored


@dataclass(frozen=True)
class Trials:
    """One network's trials: its rate at each reduction, the best validation accuracy each
    reached (None: diverged), the reduction the rule chose, and each trial's history (its
    metrics after every epoch, as the trainer records them)."""

    norm: str
    reductions: tuple[int, ...]
    rates: tuple[float, ...]
    accuracies: tuple[float | None, ...]
    chosen: int
    histories: tuple[dict, ...] = ()

    @property
    def rate(self) -> float:
        """The rate the rule chose."""
        return self.rates[self.reductions.index(self.chosen)]

    @property
    def gain(self) -> float | None:
        """How much the chosen rate's best validation accuracy exceeds the network's own
        rate's (0 where it kept its own; None where a trial diverged)."""
        own, best = self.accuracies[0], self.accuracies[self.reductions.index(self.chosen)]
        return None if own is None or best is None else best - own


def trials(sources: Sequence[Records], root=None) -> list[Trials]:
    """The trials of every network the result files of ``sources`` trained, each network
    once, in the order first met.

    Raises:
        RecordError: for a result file made without the rule (its provenance names no
            trials), or a chosen reduction that the stored trials do not give.
    """
    found: dict[str, Trials] = {}
    for records in sources:
        folder = results_dir(root) / records.preset
        for file in records.files:
            rule = file.provenance.get("choices", {}).get("lr_rule")
            if rule is None:
                raise RecordError(f"{file.path}: made without the learning-rate rule (no trials named)")
            for norm, entry in rule.items():
                if norm in found:
                    continue
                stored = {int(r): read_record(run_record_path(key, records.preset, TRIAL_SEED, folder)).results
                          for r, key in entry["trials"].items()}
                reductions = tuple(sorted(stored))
                accuracies = tuple(trial_accuracy(stored[r]) for r in reductions)
                if choose(dict(zip(reductions, accuracies))) != entry["chosen"]:
                    raise RecordError(f"{file.path}: the rule chose {entry['chosen']} for {norm}, which its stored "
                                      "trials do not give")
                found[norm] = Trials(norm, reductions, tuple(stored[r]["lr"] for r in reductions), accuracies,
                                     entry["chosen"], tuple(stored[r]["history"] for r in reductions))
    return list(found.values())


def stored_trials(root=None) -> list[Trials]:
    """The trials of every network the stored records of the training experiments trained
    (:func:`~convnorm_book.results.records.stored`)."""
    return trials([stored(name, root) for name, experiment in EXPERIMENTS.items() if experiment.trains], root)

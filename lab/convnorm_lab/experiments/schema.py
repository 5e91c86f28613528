"""What each experiment's result file holds, declared once beside the code that writes it.

An experiment's ``results`` are nested dicts: optionally one level of *groups* (the
values of a preset setting the experiment repeats over: data sets, noise rates,
training fractions, networks), then one *record* per *method* (a normalization key
such as ``"convnorm+bn"``). A :class:`ResultSchema` names the methods, the numbers
(:class:`Measure`) read from each record, and where the paper reports the same number
(its key among the paper's tables, ``results/paper_reference_values.json``, and which of
the table's axes are the methods, the groups and the measures). Whatever displays results reads these
declarations instead of restating keys, and a test runs every experiment at the
``smoke`` preset and checks that each declared path exists in what it wrote
(:func:`declared_paths`).
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace

from ..models.normalizations import BN, CONVNORM, CONVNORM_BN, NONE, Norm
from .presets import Preset

#: keys of every training history (one entry per epoch)
HISTORY_KEYS = ("epoch", "steps", "lr", "train_loss", "train_acc", "val_loss", "val_acc", "test_loss", "test_acc",
                "epoch_time")
#: keys of every training summary (the paper's model selection and the maximum over epochs)
SUMMARY_KEYS = ("best_val_epoch", "best_val_acc", "test_acc_at_best_val", "max_test_acc", "final_test_acc",
                "final_train_acc")



@dataclass(frozen=True)
class Measure:
    """One number of a method's record.

    ``path`` leads to it below the record; ``percent``: stored as a fraction, shown in
    percent (the paper's unit). ``paper`` is where the paper reports it: the name of
    the row or column of the paper's table when the measures are one of its axes, else a
    description of the paper's metric (e.g. its maximum test accuracy); ``None`` when
    the paper has no such number. ``each`` names a preset setting whose values fill the
    ``{}`` of ``name``, ``path`` and ``paper`` (PGD-k for every k of the preset); each
    measure so made keeps that setting's name in ``from_setting``. ``analysis``: a number
    about the trained network (an attack's queries or success rate, a condition number),
    which a network that failed to train cannot give, as opposed to an accuracy, which it
    can (low).
    """

    name: str
    path: tuple[str, ...]
    label: str
    percent: bool = False
    paper: str | None = None
    each: str | None = None
    from_setting: str | None = None
    analysis: bool = False

    def expand(self, preset: Preset) -> tuple[Measure, ...]:
        """The measure itself, or one per value of the setting ``each``."""
        if self.each is None:
            return (self,)
        return tuple(Measure(self.name.format(v), tuple(p.format(v) for p in self.path), self.label.format(v),
                             self.percent, None if self.paper is None else self.paper.format(v),
                             from_setting=self.each, analysis=self.analysis)
                     for v in getattr(preset, self.each))


@dataclass(frozen=True)
class Grouping:
    """The level of groups: the preset ``setting`` listing them (each key is the value
    written with ``:g``, or as given for names), how a reader calls it (``label``),
    whether the values are fractions the paper writes in percent ("20%"), and ``info``:
    paths below a group, besides its methods (e.g. the measured flip rate)."""

    setting: str
    label: str
    percent: bool = False
    info: tuple[tuple[str, ...], ...] = ()

    def keys(self, preset: Preset) -> tuple[str, ...]:
        return tuple(v if isinstance(v, str) else f"{v:g}" for v in getattr(preset, self.setting))

    def paper_name(self, key: str) -> str:
        """The group as the paper's table names it ("20%" for the key "0.2")."""
        return f"{float(key) * 100:g}%" if self.percent else key


@dataclass(frozen=True)
class ResultSchema:
    """The shape of one experiment's results and where the paper reports the same numbers.

    ``methods``: the method keys, or the name of the preset setting that lists them;
    ``paper_names``: each method's name in the paper (absent: not in its tables; a
    ``(row, column)`` pair when the paper spreads the methods over both axes, as its
    ablation table does); ``paper_table``: the key of the paper's table of the same
    numbers, in ``paper_reference_values.json``; ``layout``: what that table's rows and
    columns are (``"method"``, ``"group"`` or ``"measure"``);
    ``history``: each record holds a training history and summary; ``details``: further
    paths below a record that the book reads; ``layers``: keys of each entry of a
    record's ``"layers"`` list; ``labels``: a reader's name of each method key that is
    not a normalization's key (:class:`~convnorm_lab.models.normalizations.Norm` names those).
    """

    methods: tuple[str, ...] | str
    measures: tuple[Measure, ...]
    group: Grouping | None = None
    paper_names: Mapping[str, str | tuple[str, str]] = field(default_factory=dict)
    paper_table: str | None = None
    layout: tuple[str, str] = ("method", "group")
    history: bool = True
    details: tuple[tuple[str, ...], ...] = ()
    layers: tuple[str, ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict)

    def label(self, method: str) -> str:
        """A reader's name of ``method``: its declared label, else its normalization's."""
        return self.labels[method] if method in self.labels else Norm(method).label

    def method_keys(self, preset: Preset) -> tuple[str, ...]:
        return getattr(preset, self.methods) if isinstance(self.methods, str) else self.methods

    def group_keys(self, preset: Preset) -> tuple[str | None, ...]:
        return (None,) if self.group is None else self.group.keys(preset)

    def measures_at(self, preset: Preset) -> tuple[Measure, ...]:
        return tuple(m for measure in self.measures for m in measure.expand(preset))

    def measure(self, name: str, preset: Preset) -> Measure:
        for m in self.measures_at(preset):
            if m.name == name:
                return m
        raise ValueError(f"measure must be one of {[m.name for m in self.measures_at(preset)]}, got {name!r}")

    def record_path(self, group: str | None, method: str) -> tuple[str, ...]:
        """Where a method's record lies in the results."""
        return (method,) if group is None else (group, method)

    def path(self, group: str | None, method: str, measure: Measure) -> tuple[str, ...]:
        return self.record_path(group, method) + measure.path

    def paper_cell(self, group: str | None, method: str, measure: Measure) -> tuple[str, str] | None:
        """``(row, column)`` of the paper's number in its table (:attr:`paper_table`), or
        ``None`` where the paper reports none (no table, an unnamed method or group, a
        measure the paper does not report)."""
        if self.paper_table is None or measure.paper is None or method not in self.paper_names:
            return None
        if self.layout == ("method", "method"):
            return tuple(self.paper_names[method])
        names = {"method": self.paper_names[method], "measure": measure.paper,
                 "group": None if self.group is None or group is None else self.group.paper_name(group)}
        row, column = (names[axis] for axis in self.layout)
        return None if row is None or column is None else (row, column)


def declared_paths(schema: ResultSchema, preset: Preset) -> Iterator[tuple[str | int, ...]]:
    """Every key path the schema declares for ``preset``'s results (checked by the tests
    against what each experiment writes at the smoke preset)."""
    for group in schema.group_keys(preset):
        if schema.group is not None:
            for info in schema.group.info:
                yield (group,) + info
        for method in schema.method_keys(preset):
            record = schema.record_path(group, method)
            for measure in schema.measures_at(preset):
                yield record + measure.path
            for detail in schema.details:
                yield record + detail
            if schema.history:
                yield from (record + ("history", key) for key in HISTORY_KEYS)
                yield from (record + ("summary", key) for key in SUMMARY_KEYS)
            yield from (record + ("layers", 0, key) for key in schema.layers)


#: the paper's model selection: the test accuracy of the epoch with the best validation accuracy
TEST_ACC = Measure("test_acc", ("summary", "test_acc_at_best_val"), "test accuracy at the best validation epoch",
                   percent=True, paper="test accuracy")
#: the same number where the paper's table reports others
ACCURACY = replace(TEST_ACC, paper=None)
#: what every training record states of its settings
CONFIG = (("lr",), ("epochs",), ("milestones",), ("augment",), ("weight_decay",), ("affine",), ("diverged",))
#: the four networks of the paper's training tables: vanilla, BN, ConvNorm, ConvNorm+BN
BASIC = (NONE, BN, CONVNORM, CONVNORM_BN)
#: the paper's names of the four networks of its training tables
BASIC_NAMES = {norm: norm.label for norm in BASIC}


def method_names(methods: tuple[Norm, ...]) -> dict[Norm, str]:
    """Each method as the paper's tables of baselines name it: its method's label, without
    the BatchNorm that may follow it (``"ONI"`` for ONI+BN)."""
    return {method: method.base.label for method in methods}

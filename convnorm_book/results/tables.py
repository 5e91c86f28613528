"""Tables of stored results beside the paper's values, read through each experiment's schema.

Which numbers an experiment has and where the paper reports them is declared once, in
:mod:`convnorm.experiments.schema`; the tables here only follow those declarations.
Accuracies are stored as fractions and shown, like the paper's, in percent.
"""
from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from convnorm.experiments import EXPERIMENTS, PRESETS, protocol_deviations
from convnorm.experiments.schema import Measure, ResultSchema

from .records import PROTOCOL_CHANGES, Records, caveats, changes_missing, load_runs, paper_scale, scale
from .stats import CONTRADICTED, INCONCLUSIVE, SUPPORTED, Paired, collect, paired

#: display names of the harness's normalization keys
METHOD_LABELS = {
    "none": "vanilla", "bn": "BN", "convnorm": "ConvNorm", "convnorm+bn": "ConvNorm+BN",
    "sn": "SN", "oni": "ONI", "ocnn": "OCNN", "sn+bn": "SN+BN", "oni+bn": "ONI+BN", "ocnn+bn": "OCNN+BN",
    "cayley": "Cayley", "convnorm+bn, affine=on": "ConvNorm+BN, affine kernel",
    "convnorm, affine=on": "ConvNorm, affine kernel", "convnorm+bn, affine=off": "ConvNorm+BN, no affine kernel",
    "convnorm, affine=off": "ConvNorm, no affine kernel",
}


#: what each experiment's table shows
TITLES = {
    "convergence": "Accuracy (%) after the last epoch, without augmentation, weight decay or learning-rate decay",
    "generalization": "Test accuracy (%) under the standard protocol",
    "ablation": "Test accuracy (%) of ConvNorm with and without its affine kernel and a following BatchNorm",
    "adversarial": "Accuracy (%) after free adversarial training, clean and under attack",
    "simba": "SimBA black-box attack on networks without BatchNorm",
    "label-noise": "Accuracy (%) under symmetric label noise",
    "data-scarcity": "Test accuracy (%) after training on class-balanced subsets",
    "conditioning": "Layer condition-number ratio ρ against the vanilla network",
    "runtime": "Training time of a ResNet18",
}
#: display names of group keys that are not rates
GROUP_NAMES = {"cifar10": "CIFAR-10", "cifar100": "CIFAR-100", "imagenet": "ImageNet", "small": "six-conv network",
               "resnet18": "ResNet18", "vgg16": "VGG16"}
#: a history metric in a reader's words
METRIC_NAMES = {"test_acc": "test accuracy", "train_acc": "training accuracy", "train_loss": "training loss",
                "val_acc": "validation accuracy"}


def group_name(schema: ResultSchema, key: str) -> str:
    """A reader's name for a group key ("20%" for the noise rate "0.2", "CIFAR-10")."""
    return schema.group.paper_name(key) if schema.group.percent else GROUP_NAMES.get(key, key)


def method_label(method: str) -> str:
    """A reader's name for a method key (unknown keys are returned as given)."""
    return METHOD_LABELS.get(method, method)


def scale_name(records: Records) -> str:
    """``"reduced scale"`` (a smaller network and data), ``"short schedule"`` (the
    paper's networks and data, fewer epochs) or ``"full scale"``, from the recorded preset."""
    settings = records.settings
    if not settings.reduced:
        return "full scale"
    return "reduced scale" if settings.arch is not None else "short schedule"


def number(value: float | None, like: float | None = None) -> str:
    """``value`` with the decimals suited to ``like`` (default: itself): two; none from
    100 up; three significant digits below 0.1."""
    if value is None or not math.isfinite(value):
        return "—"
    size = abs(value if like is None else like)
    if size >= 100:
        return f"{value:,.0f}"
    return f"{value:.2f}" if size >= 0.1 or size == 0 else f"{value:.3g}"


def mean_std(mean: float, std: float | None) -> str:
    """``mean ± std``, both with the decimals suited to the mean."""
    return number(mean) + ("" if std is None else f" ± {number(std, like=mean)}")


def _as_printed(value: float) -> str:
    """A number of the paper as it prints it: two decimals unless it has more."""
    return f"{value:.2f}" if round(value, 2) == value and value != int(value) else f"{value:g}"


def paper_text(cell) -> str:
    """A reference cell: ``[mean, std]`` as ``mean ± std``, a number, or "not reported"."""
    mean, std = (cell if isinstance(cell, (list, tuple)) else (cell, None))
    if mean is None:
        return "not reported"
    return _as_printed(mean) + ("" if std is None else f" ± {_as_printed(std)}")


def paper_mean(cell) -> float | None:
    """The mean of a reference cell (``[mean, std]`` or a number), ``None`` if absent."""
    value = cell[0] if isinstance(cell, (list, tuple)) else cell
    return None if value is None else float(value)


def reference_cell(table: dict, row: str, column: str):
    """The paper's cell at ``row``/``column`` of a reference table.

    Raises:
        ValueError: if the row or the column is not in the table.
    """
    if row not in table["rows"]:
        raise ValueError(f"row {row!r} not in reference table {table['label']!r} (rows: {list(table['rows'])})")
    if column not in table["columns"]:
        raise ValueError(f"column {column!r} not in reference table {table['label']!r} "
                         f"(columns: {table['columns']})")
    return table["rows"][row][table["columns"].index(column)]


def paper_value(reference: dict, experiment: str, method: str, measure: Measure, group: str | None = None):
    """The paper's cell for ``method`` and ``measure`` (in ``group``), or ``None`` where
    the paper reports no such number.

    Raises:
        ValueError: if the schema names a row or column the paper's table lacks.
    """
    schema = EXPERIMENTS[experiment].schema
    cell = schema.paper_cell(group, method, measure)
    if cell is None:
        return None
    table = reference["tables"][schema.reference]
    # a rate or an attack strength the paper did not run (they come from the preset) has no
    # value; any other name missing from the table is an error in the schema
    for axis, name, names in zip(schema.layout, cell, (table["rows"], table["columns"])):
        if name not in names and (axis == "group" or (axis == "measure" and measure.from_setting)):
            return None
    return reference_cell(table, *cell)


def paper_difference(reference: dict, experiment: str, a: str, b: str, measure: Measure,
                     group: str | None = None) -> float | None:
    """The paper's ``mean(a) - mean(b)``, or ``None`` unless it reports both."""
    values = [paper_mean(paper_value(reference, experiment, m, measure, group)) for m in (a, b)]
    return None if None in values else values[0] - values[1]


def paper_leads(reference: dict, experiment: str, a: str, b: str) -> dict[str, float]:
    """The paper's ``a - b`` in every group its table has (e.g. each noise rate) and
    reports both in, keyed by the paper's name of the group; for tables of methods
    against groups.

    Raises:
        ValueError: if the experiment's reference table is not laid out by method and group.
    """
    schema = EXPERIMENTS[experiment].schema
    if set(schema.layout) != {"method", "group"}:
        raise ValueError(f"experiment {experiment!r}: its reference table is not one of methods against groups")
    table = reference["tables"][schema.reference]
    groups = table["columns"] if schema.layout[1] == "group" else list(table["rows"])

    def mean(method, group):
        names = (schema.paper_names[method], group)
        return paper_mean(reference_cell(table, *(names if schema.layout[0] == "method" else names[::-1])))

    pairs = {group: (mean(a, group), mean(b, group)) for group in groups}
    return {group: x - y for group, (x, y) in pairs.items() if x is not None and y is not None}


def compare(records: Records, reference: dict | None, a: str, b: str, measure: str = "test_acc",
            group: str | None = None, claim: int | None = None, context: str | None = None) -> Paired:
    """The paired comparison ``a - b`` of one measure (in one group), with the paper's
    difference where it reports both; the claimed sign is the paper's unless ``claim``
    gives one (for a claim the paper states without a number). ``context`` says where
    it was measured (default: the group's name)."""
    schema, settings = records.schema, records.settings
    chosen = schema.measure(measure, settings)
    paper = None if reference is None else paper_difference(reference, records.experiment, a, b, chosen, group)
    if context is None:
        context = "" if group is None else group_name(schema, group)
    return paired(records, schema.path(group, a, chosen), schema.path(group, b, chosen), method_label(a),
                  method_label(b), 100.0 if chosen.percent else 1.0, paper, claim,
                  "points" if chosen.percent else "", context)


def compare_history(records: Records, a: str, b: str, metric: str, epoch: int, group: str | None = None,
                    claim: int | None = None) -> Paired:
    """The paired comparison ``a - b`` of ``history[metric]`` after epoch ``epoch``
    (counted from 1; accuracies in percentage points)."""
    schema = records.schema
    path = lambda method: schema.record_path(group, method) + ("history", metric, epoch - 1)  # noqa: E731
    percent = metric.endswith("_acc")
    context = (f"{group_name(schema, group)}, " if group is not None else "") + \
        f"{METRIC_NAMES.get(metric, metric)}, epoch {epoch}"
    return paired(records, path(a), path(b), method_label(a), method_label(b), 100.0 if percent else 1.0,
                  claim=claim, unit="points" if percent else "", context=context)


@dataclass
class Table:
    """A table for the page: a title, columns, rows of text, notes below."""

    title: str
    columns: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        table = [self.columns] + self.rows
        widths = [max(len(row[i]) for row in table) for i in range(len(self.columns))]
        lines = [self.title] + ["  ".join(c.ljust(w) for c, w in zip(row, widths)) for row in table]
        return "\n".join(lines + self.notes)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{html.escape(c)}</th>" for c in self.columns)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in self.rows)
        notes = "".join(f"<p><small>{html.escape(n)}</small></p>" for n in self.notes)
        return (f"<p><b>{html.escape(self.title)}</b></p><table><thead><tr>{head}</tr></thead>"
                f"<tbody>{body}</tbody></table>{notes}")

    def column(self, name: str) -> list[str]:
        return [row[self.columns.index(name)] for row in self.rows]


def describe(records: Records) -> str:
    """``"ours, reduced scale: <network, data, schedule>; 3 seeds"``: a title line."""
    n = len(records.runs)
    return (f"ours, {scale_name(records)}: {scale(records.settings, records.experiment)}; "
            f"{n} seed{'s' if n != 1 else ''}")


def about(records: Records, reference: dict | None = None) -> str:
    """Markdown for a reader: the scale of our records beside the paper's, and the
    caveats (:func:`~convnorm_book.results.records.caveats`) as a list."""
    n = len(records.runs)
    text = (f"**Our records** ({scale_name(records)}, {n} seed{'s' if n != 1 else ''}): "
            f"{scale(records.settings, records.experiment)}. **The paper**: {paper_scale(records.experiment)}")
    if reference is not None and records.schema.reference is not None:
        text += f" ({reference['tables'][records.schema.reference]['label'].split(' (')[0]})"
    notes = caveats(records)
    return text + "." + "".join(f"\n- {note}" for note in notes)


def verdicts(comparisons: Sequence[Paired]) -> str:
    """Markdown: the comparisons grouped by verdict (those with a claimed sign only)."""
    lines = []
    for verdict in (SUPPORTED, CONTRADICTED, INCONCLUSIVE):
        chosen = [c.label for c in comparisons if c.claimed_sign is not None and c.verdict == verdict]
        if chosen:
            lines.append(f"- **{verdict.capitalize()}** at our scale ({len(chosen)}): " + "; ".join(chosen) + ".")
    return "\n".join(lines)


def scale_notes(records: Records, reference: dict | None) -> list[str]:
    """Two lines naming the scale of our runs and of the paper's."""
    n = len(records.runs)
    data = f"{records.data}; " if records.schema.history else ""
    notes = [f"Ours ({scale_name(records)}): {scale(records.settings, records.experiment)}; {data}"
             f"{n} seed{'s' if n != 1 else ''}" + ("; mean ± sample standard deviation over the seeds." if n > 1 else ".")]
    schema = records.schema
    if reference is not None and schema.reference is not None:
        table = reference["tables"][schema.reference]
        notes.append(f"Paper ({table['label']}): {paper_scale(records.experiment)}; the official CIFAR files; "
                     f"{table['setting']}.")
    return notes


def _ours(records: Records, path: Sequence[str], measure: Measure) -> str:
    stats = collect(records, path, 100.0 if measure.percent else 1.0)
    if not stats.values:
        return "diverged" if stats.missing else "—"
    return mean_std(stats.mean, stats.std if stats.n > 1 else None) + \
        (f" ({stats.missing} diverged)" if stats.missing else "")


def _unit(measure: Measure) -> str:
    return measure.label + (" (%)" if measure.percent else "")


def experiment_table(records: Records, reference: dict | None = None,
                     measures: Sequence[str] | None = None, methods: Sequence[str] | None = None) -> Table:
    """Our numbers (mean ± std over seeds) beside the paper's, one row per (group,)
    method (and measure, where the paper's table has one row or column per measure).

    ``measures`` / ``methods`` restrict the table to those names (default: all the
    schema declares for the records' preset).
    """
    schema, settings = records.schema, records.settings
    chosen = [m for m in schema.measures_at(settings) if measures is None or m.name in measures]
    methods = list(methods or schema.method_keys(settings))
    measure_rows = "measure" in schema.layout
    keys = ([schema.group.label] if schema.group else []) + ["method"] + (["quantity"] if measure_rows else [])
    ours = ["ours"] if measure_rows else [f"ours: {_unit(m)}" for m in chosen]
    rows = []
    for group in schema.group_keys(settings):
        for method in methods:
            named = ([group_name(schema, group)] if schema.group else []) + [method_label(method)]
            per_row = [[m] for m in chosen] if measure_rows else [chosen]
            for row_measures in per_row:
                cells = [_ours(records, schema.path(group, method, m), m) for m in row_measures]
                paper = [paper_value(reference, records.experiment, method, m, group)
                         for m in row_measures] if reference is not None else []
                shown = next((paper_text(p) for p in paper if p is not None), "—")
                rows.append(named + ([_unit(row_measures[0])] if measure_rows else []) + cells + [shown])
    paper_measure = next((m for m in chosen if m.paper), None)
    paper_column = "paper" + ("" if measure_rows or paper_measure is None else f": {paper_measure.paper}")
    title = TITLES[records.experiment]
    if reference is not None and schema.reference is not None:
        title += f", beside the paper's {reference['tables'][schema.reference]['label'].split(' (')[0]}"
    return Table(title, keys + ours + [paper_column], rows, scale_notes(records, reference))


def signed(value: float) -> str:
    """:func:`number` with its sign (a true minus sign)."""
    return ("+" if value >= 0 else "−") + number(abs(value), like=value)


def comparisons_table(comparisons: Sequence[Paired], title: str) -> Table:
    """One row per paired comparison: our mean difference and its 95 % t-interval, the
    paper's difference (or the sign it claims), and the verdict at our scale."""
    rows = []
    for c in comparisons:
        interval = "—" if c.interval is None else f"{signed(c.interval[0])} to {signed(c.interval[1])}"
        if c.paper is not None:
            paper = signed(c.paper)
        else:
            paper = {1: "claims > 0", -1: "claims < 0", None: "—"}[c.claimed_sign]
        rows.append([c.label, signed(c.mean), interval, paper, c.verdict if c.claimed_sign is not None else "—"])
    units = {c.unit for c in comparisons}
    unit = f" ({units.pop()})" if len(units) == 1 and "" not in units else ""
    columns = ["comparison", f"ours: mean difference{unit}", "ours: 95 % interval", "the paper",
               "verdict at our scale"]
    notes = ["Differences are paired by seed; the interval is the t-interval over the seeds. Supported: the "
             "interval lies on the paper's side of zero; contradicted: on the other side; inconclusive: it "
             "contains zero."]
    return Table(title, columns, rows, notes)


def paper_table(reference: dict, name: str, title: str) -> Table:
    """A table of the paper's values alone (for results this book does not reproduce)."""
    table = reference["tables"][name]
    rows = [[GROUP_NAMES.get(row, row)] + [paper_text(cell) for cell in cells] for row, cells in table["rows"].items()]
    return Table(title, [""] + list(table["columns"]), rows, [f"Paper ({table['label']}): {table['setting']}."])


def presets_table(names: Sequence[str] = ("cpu", "short-schedule", "paper")) -> Table:
    """The settings of the presets side by side."""
    shown = ("arch", "width", "epochs", "milestones", "adv_epochs", "batch_size", "max_train",
             "max_val", "max_test", "attack_samples", "simba_samples", "simba_iters", "noise_rates", "fractions",
             "datasets", "convergence_archs", "robust_norms")
    settings = [PRESETS[name].as_dict() for name in names]

    def text(value):
        if value is None:
            return "the paper's"
        return ", ".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)

    rows = [[key] + [text(s[key]) for s in settings] for key in shown]
    return Table("The presets", ["setting"] + list(names), rows)


def deviations_table(name: str) -> Table:
    """:func:`convnorm.experiments.protocol_deviations` of preset ``name`` as a table."""
    rows = [[r["setting"], r["paper"], r["here"], r["source"]] for r in protocol_deviations(name)]
    return Table(f"Protocol deviations of the {name} preset", ["setting", "the paper", "here", "source"], rows)


def inventory_table(presets: Sequence[str] = ("short-schedule", "cpu", "paper"), root=None) -> Table:
    """What is stored, per experiment and preset: the seeds, the device, the code
    commit, the wall time per seed and the copy of the data, read from the files."""
    rows = []
    for experiment in EXPERIMENTS:
        for preset in presets:
            runs = load_runs(experiment, preset, root)
            if not runs:
                rows.append([experiment, preset, "none stored", "", "", "", ""])
                continue
            stored = Records(experiment, preset, tuple(runs))
            commits = ", ".join(dict.fromkeys(run.provenance["git_commit"][:8] for run in runs))
            minutes = ", ".join(f"{run.provenance['wall_time_s'] / 60:.1f}" for run in runs)
            rows.append([experiment, preset, ", ".join(map(str, stored.seeds)), stored.devices, commits, minutes,
                         stored.data if stored.schema.history else "—"])
    return Table("Stored records", ["experiment", "preset", "seeds", "ran on", "code commit",
                                    "wall time per seed (min)", "data"], rows)


def changes_table(presets: Sequence[str] = ("short-schedule", "cpu"), root=None) -> Table:
    """The corrections made to the experiments, and which stored record sets predate them."""
    rows = []
    for change in PROTOCOL_CHANGES:
        older = []
        for experiment in change.experiments:
            for preset in presets:
                runs = load_runs(experiment, preset, root)
                if runs:
                    missing = changes_missing(Records(experiment, preset, tuple(runs)))
                    older += ([f"{experiment} ({preset}): cannot tell"] if missing is None else
                              [f"{experiment} ({preset})"] if change in missing else [])
        rows.append([change.commit, change.now, change.before, "; ".join(older) or "none"])
    return Table("Corrections to the experiments", ["commit", "now", "before", "stored records made before it"],
                 rows)


def schema_table() -> Table:
    """What each experiment's records hold and where the paper reports the same numbers
    (:mod:`convnorm.experiments.schema`)."""
    rows = []
    for name, experiment in EXPERIMENTS.items():
        schema = experiment.schema
        methods = f"preset setting {schema.methods}" if isinstance(schema.methods, str) else " | ".join(schema.methods)
        group = "—" if schema.group is None else f"{schema.group.label} (preset setting {schema.group.setting})"
        measures = "; ".join(f"{m.name}: {'/'.join(m.path)}" + (f" [{m.each}]" if m.each else "") for m in schema.measures)
        axes = ("the methods spread over rows and columns" if schema.layout == ("method", "method") else
                f"rows: {schema.layout[0]}s, columns: {schema.layout[1]}s")
        reference = "—" if schema.reference is None else f"{schema.reference} ({axes})"
        rows.append([name, methods, group, measures, reference])
    return Table("What each experiment writes", ["experiment", "methods", "groups", "measures (path below a method's "
                                                 "record)", "the paper's table"], rows)

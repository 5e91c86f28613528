"""Tables of stored results beside the paper's values, read through each experiment's schema.

Which numbers an experiment has and where the paper reports them is declared once, in
:mod:`convnorm.experiments.schema`; the tables here only follow those declarations.
Accuracies are stored as fractions and shown, like the paper's, in percent.
"""
from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass, field

from convnorm.experiments import EXPERIMENTS
from convnorm.experiments.schema import Measure

from .claims import CLAIMS, DIFFERENCE, PARITY
from .records import Records, Run, caveats, paper_scale, scale
from .reference import paper_difference, paper_value
from .stats import CONTRADICTED, INCONCLUSIVE, SUPPORTED, Paired, collect, paired
from .verdicts import Chapter, Verdict, shared_label, short_facets, varying
from .words import GROUP_NAMES, METRIC_NAMES, group_name, listing, method_label, number, scale_name, signed  # noqa: F401


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


def _group_context(records: Records, group: str | None) -> str:
    """The group's name where the records have more than one group, else nothing."""
    several = len(records.schema.group_keys(records.settings)) > 1
    return group_name(records.schema, group) if group is not None and several else ""


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
        context = _group_context(records, group)
    return paired(records, schema.path(group, a, chosen), schema.path(group, b, chosen), method_label(a),
                  method_label(b), 100.0 if chosen.percent else 1.0, paper, claim,
                  "points" if chosen.percent else "", context)


def compare_history(records: Records, a: str, b: str, metric: str, epoch: int, group: str | None = None,
                    claim: int | None = None) -> Paired:
    """The paired comparison ``a - b`` of ``history[metric]`` after epoch ``epoch``
    (counted from 1; accuracies in percentage points)."""
    schema = records.schema
    path_a, path_b = (schema.record_path(group, m) + ("history", metric, epoch - 1) for m in (a, b))
    percent = metric.endswith("_acc")
    context = ", ".join(filter(None, (_group_context(records, group), METRIC_NAMES.get(metric, metric),
                                       f"epoch {epoch}")))
    return paired(records, path_a, path_b, method_label(a), method_label(b), 100.0 if percent else 1.0,
                  claim=claim, unit="points" if percent else "", context=context)


def _html_lines(text: str) -> str:
    return "<br>".join(html.escape(line) for line in text.split("\n"))


@dataclass
class Table:
    """A table for the page: a title, columns, rows of text (a cell may hold several
    lines), notes below."""

    title: str
    columns: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)

    def __post_init__(self):
        for i, row in enumerate(self.rows):
            if len(row) != len(self.columns):
                raise ValueError(f"{self.title!r}: row {i} has {len(row)} cells for {len(self.columns)} columns")
            if not all(isinstance(cell, str) for cell in row):
                raise TypeError(f"{self.title!r}: row {i} holds a cell that is not text: {row!r}")

    def __str__(self) -> str:
        table = [[cell.split("\n") for cell in row] for row in [self.columns] + self.rows]
        widths = [max(len(line) for row in table for line in row[i]) for i in range(len(self.columns))]
        lines = [self.title]
        for row in table:  # a cell of several lines makes its row that tall
            height = max(len(cell) for cell in row)
            lines += ["  ".join((cell[k] if k < len(cell) else "").ljust(w) for cell, w in zip(row, widths)).rstrip()
                      for k in range(height)]
        return "\n".join(lines + self.notes)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        cell = 'style="padding: 2px 12px 2px 0; text-align: left; vertical-align: top"'
        head = "".join(f"<th {cell}>{_html_lines(c)}</th>" for c in self.columns)
        body = "".join("<tr>" + "".join(f"<td {cell}>{_html_lines(c)}</td>" for c in row) + "</tr>"
                       for row in self.rows)
        notes = "".join(f"<p><small>{html.escape(n)}</small></p>" for n in self.notes)
        return (f"<p><b>{html.escape(self.title)}</b></p><table><thead><tr>{head}</tr></thead>"
                f"<tbody>{body}</tbody></table>{notes}")

    def column(self, name: str) -> list[str]:
        return [row[self.columns.index(name)] for row in self.rows]


def _seeds(records: Records) -> str:
    n = len(records.runs)
    return f"{n} seed{'s' if n != 1 else ''}"


def describe(records: Records) -> str:
    """``"ours, reduced scale: <network, data, schedule>; 3 seeds"``: a title line."""
    return f"ours, {scale_name(records)}: {scale(records.settings, records.experiment)}; {_seeds(records)}"


def about(records: Records, reference: dict | None = None) -> str:
    """Markdown for a reader: the scale of our records beside the paper's, and the
    caveats (:func:`~convnorm_book.results.records.caveats`) as a list."""
    text = (f"**Our records** ({scale_name(records)}, {_seeds(records)}): "
            f"{scale(records.settings, records.experiment)}. **The paper**: {paper_scale(records.experiment)}")
    if reference is not None and records.schema.reference is not None:
        text += f" ({reference['tables'][records.schema.reference]['label']})"
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
    """Lines naming the scale of our runs and of the paper's, and the paper's names of our
    methods where they differ (the paper's SN is our SN+BN)."""
    data = f"{records.data}; " if records.schema.history else f"timed on {records.devices}; "
    spread = "; mean ± sample standard deviation over the seeds." if len(records.runs) > 1 else "."
    notes = [f"Ours ({scale_name(records)}): {scale(records.settings, records.experiment)}; {data}{_seeds(records)}"
             + spread]
    schema = records.schema
    if reference is not None and schema.reference is not None:
        table = reference["tables"][schema.reference]
        notes.append(f"The paper ({table['label']}): {paper_scale(records.experiment)}; the official CIFAR files; "
                     f"{table['setting']}.")
        renamed = {name: method_label(m) for m, name in schema.paper_names.items()
                   if isinstance(name, str) and name != method_label(m) and m in schema.method_keys(records.settings)}
        if renamed:
            notes.append(f"The paper's {listing(renamed)} {'is' if len(renamed) == 1 else 'are'} our "
                         f"{listing(renamed.values())}.")
    return notes


def _ours(records: Records, path: Sequence[str], measure: Measure) -> str:
    stats = collect(records, path, 100.0 if measure.percent else 1.0)
    if not stats.values:
        return stats.diverged_note or "—"
    shown = mean_std(stats.mean, stats.std if stats.n > 1 else None)
    return shown + (f" ({stats.diverged_note})" if stats.diverged else "")


def _unit(measure: Measure) -> str:
    return measure.label + (" (%)" if measure.percent else "")


def experiment_table(records: Records, reference: dict | None = None,
                     measures: Sequence[str] | None = None, methods: Sequence[str] | None = None) -> Table:
    """Our numbers (mean ± std over seeds, diverged runs left out and counted) beside the
    paper's, one row per (group,) method (and measure, where the paper's table has one
    row or column per measure); below it, the scale of both and what a reader must know
    before comparing them (:func:`~convnorm_book.results.records.caveats`).

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
    title = EXPERIMENTS[records.experiment].title
    if reference is not None and schema.reference is not None:
        title += f", beside the paper's {reference['tables'][schema.reference]['label']}"
    return Table(title, keys + ours + [paper_column], rows, scale_notes(records, reference) + caveats(records))


def _head(measure: Measure) -> str:
    """A measure's label as a short column head: "FGSM" for "accuracy under FGSM",
    "clean" for "clean accuracy"."""
    label = measure.label
    return "clean" if label == "clean accuracy" else label.removeprefix("accuracy under ")


def grid(records: Records, reference: dict | None = None, measure: str | None = None,
         measures: Sequence[str] | None = None) -> Table:
    """Our numbers beside the paper's as a compact grid: one row per method, one column
    per group (noise rate, training fraction) of ``measure`` (default: the first measure
    the paper reports) where the records have several groups, else one column per
    measure (``measures``, default all: the adversarial study as methods × attacks).
    Each cell: our mean ± standard deviation over the seeds that finished (the diverged
    ones counted), and the paper's value below it; below the grid, the scale of both and
    the caveats (:func:`~convnorm_book.results.records.caveats`)."""
    schema, settings = records.schema, records.settings
    groups = schema.group_keys(settings)
    declared = schema.measures_at(settings)
    if len(groups) > 1:
        chosen = schema.measure(measure, settings) if measure else next((m for m in declared if m.paper), declared[0])
        columns = [(g, chosen) for g in groups]
        heads = [group_name(schema, g) for g in groups]
        title = f"{EXPERIMENTS[records.experiment].title}: {chosen.label}"
    else:
        picked = [m for m in declared if measures is None or m.name in measures]
        columns = [(groups[0], m) for m in picked]
        title = EXPERIMENTS[records.experiment].title
        heads = [_head(m) + (" (%)" if m.percent and "(%)" not in title else "") for m in picked]
    if reference is not None and schema.reference is not None:
        title += f", beside the paper's {reference['tables'][schema.reference]['label']}"
    rows = []
    for method in schema.method_keys(settings):
        cells = []
        for group, m in columns:
            paper = None if reference is None else paper_value(reference, records.experiment, method, m, group)
            cells.append(_ours(records, schema.path(group, method, m), m)
                         + ("" if paper is None else f"\npaper {paper_text(paper)}"))
        rows.append([method_label(method)] + cells)
    return Table(title, ["method"] + heads, rows, scale_notes(records, reference) + caveats(records))


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


def paper_table(reference: dict, name: str, title: str, skip: Sequence[str] = ()) -> Table:
    """A table of the paper's values alone (for results this book does not reproduce),
    without the rows ``skip`` names (the reference's row keys, e.g. ``"cifar10"``)."""
    table = reference["tables"][name]
    unknown = set(skip) - set(table["rows"])
    if unknown:
        raise ValueError(f"the paper's {name} table has no rows {sorted(unknown)}; it has {list(table['rows'])}")
    rows = [[GROUP_NAMES.get(row, row)] + [paper_text(cell) for cell in cells] for row, cells in table["rows"].items()
            if row not in skip]
    return Table(title, [""] + list(table["columns"]), rows, [f"The paper ({table['label']}): {table['setting']}."])


#: the networks of the GPU step benchmark (the run-time part of ``benchmarks/calibrate_gpu.py``)
STEP_BENCHMARK_MODELS = {"conv2d+bn": "Conv2d+BN", "convnorm2d+bn": "ConvNorm2d+BN (this package)",
                         "authors+bn": "the authors' algorithm, +BN"}
#: the timing modes of the step benchmark: a column's word, and the adverb of a sentence
STEP_BENCHMARK_MODES = {"eager": ("eager", "eagerly"), "cuda_graph": ("one CUDA graph", "as one CUDA graph")}


def step_benchmark_table(run: Run) -> Table:
    """One training step of a ResNet18 built three ways (Conv2d+BN, this package's
    ConvNorm2d+BN, the authors' algorithm ported to ``torch.fft`` +BN), timed on one GPU
    eagerly and as one CUDA graph: milliseconds per step and the ratio to Conv2d+BN, from
    a calibration record (:func:`~convnorm_book.results.records.calibration`; its
    ``setup`` says how each mode was timed)."""
    setup, time = run.results["setup"], run.results["time"]
    rows = [[label] + [text for mode in STEP_BENCHMARK_MODES
                       for text in ((f"{time[mode][key]['seconds_per_step'] * 1e3:.2f}",
                                     f"{time[mode][key]['relative_to_conv2d_bn']:.2f}×")
                                    if key in time.get(mode, {}) else ("—", "—"))]
            for key, label in STEP_BENCHMARK_MODELS.items()]
    errors = run.results.get("graph_errors") or {}
    failed = [f"{STEP_BENCHMARK_MODELS.get(key, key)}: {error}" for key, error in errors.items()]
    how = "; ".join(f"{word}: {setup[mode]}" for mode, (word, _) in STEP_BENCHMARK_MODES.items() if setup.get(mode))
    notes = ([f"Not timed as one CUDA graph ({'; '.join(failed)})."] if failed else []) + [
        f"{setup['model']}, batch {setup['batch']}, {setup['step']}, on {setup['gpu']}." + (f" {how[0].upper()}"
                                                                                          f"{how[1:]}." if how else "")]
    columns = ["network"] + [f"{word}: {unit}" for word, _ in STEP_BENCHMARK_MODES.values()
                             for unit in ("ms per step", "× Conv2d+BN")]
    return Table(f"One training step on {setup['gpu']}: this package, the authors' algorithm and Conv2d+BN",
                 columns, rows, notes)


#: a verdict's mark in a grid, by the claim's kind and the verdict
MARKS = {(DIFFERENCE, SUPPORTED): "✓", (DIFFERENCE, CONTRADICTED): "✗", (PARITY, SUPPORTED): "≈",
         (PARITY, CONTRADICTED): "≠"}
_MARK_WORDS = {"✓": "supported", "✗": "contradicted", "≈": "parity shown", "≠": "a difference beyond the margin"}


def mark(v: Verdict) -> str:
    """``"✓"``, ``"✗"``, ``"≈"``, ``"≠"`` or ``"?"`` (inconclusive) after the chapter's
    correction; a verdict that holds only tested alone is bracketed, ``"(✓)"``; no mark
    where the paper makes no claim."""
    if not v.tested:
        return ""
    final = MARKS.get((v.kind, v.final), "?")
    alone = MARKS.get((v.kind, v.outcome))
    return f"({alone})" if final == "?" and alone else final


def _cell(v: Verdict) -> str:
    c = v.comparison
    if not c.n:
        return c.over_seeds.diverged_note or "no finished pair"
    like = max(abs(x) for x in (c.mean, *(c.interval or ())))
    interval = "" if c.interval is None else f" [{signed(c.interval[0], like)}, {signed(c.interval[1], like)}]"
    lines = [signed(c.mean, like) + interval + (f" {mark(v)}" if mark(v) else "")]
    if c.paper is not None:
        lines.append(f"paper {signed(c.paper)}")
    if c.diverged:
        lines.append(c.over_seeds.diverged_note)
    return "\n".join(lines)


def verdict_grid(verdicts: Sequence[Verdict], columns: str | None = None, chapter: Chapter | None = None,
                 title: str | None = None) -> Table:
    """The comparisons of one claim as a compact grid: one row per value of the facets
    that vary (e.g. the baseline), one column per value of ``columns`` (default: the
    group if it varies, else the measure, else the epoch); each cell our mean difference
    with its 95 % interval and the verdict's mark (:func:`mark`), the paper's difference
    below it, and the count of diverged seeds. ``chapter`` names the correction in the
    legend; ``title`` defaults to "Paired differences: " and what the comparisons share.

    Raises:
        ValueError: for no verdicts, or ``columns`` not a facet that varies.
    """
    if not verdicts:
        raise ValueError("no verdicts to tabulate")
    changing = varying(verdicts)
    if columns is None:
        columns = next((name for name in ("group", "measure", "epoch") if name in changing), None)
    if columns is not None and columns not in changing:
        raise ValueError(f"columns must be one of the facets that vary, {changing}, got {columns!r}")
    cells: dict[str, dict[str, str]] = {}
    for v, facets in zip(verdicts, short_facets(verdicts)):
        row = ", ".join(text for name, text in facets.items() if name != columns) or shared_label(verdicts)
        cells.setdefault(row, {})[facets.get(columns, "ours")] = _cell(v)
    heads = list(dict.fromkeys(head for row in cells.values() for head in row))
    table_rows = [[row] + [shown.get(head, "") for head in heads] for row, shown in cells.items()]
    shared = shared_label(verdicts)
    return Table(title or ("Paired differences" + (f": {shared}" if shared else "")), [" "] + heads, table_rows,
                 [_legend(verdicts, chapter)])


def _legend(verdicts: Sequence[Verdict], chapter: Chapter | None) -> str:
    shown = {m.strip("()") for m in map(mark, verdicts) if m}
    marks = [f"{m} {_MARK_WORDS.get(m, 'inconclusive')}" for m in ("✓", "✗", "≈", "≠", "?") if m in shown]
    margins = {number(v.margin) + (f" {v.comparison.unit}" if v.comparison.unit else "") for v in verdicts if v.margin}
    text = (f"Each cell: our mean difference, paired by seed, with its 95 % interval [low, high] at the "
            f"{verdicts[0].scale}" + (", and the paper's difference below it." if any(v.paper is not None
                                                                                      for v in verdicts) else "."))
    if marks:
        text += " " + "; ".join(marks) + "."
    if margins:
        text += f" Parity is tested within ±{', '.join(sorted(margins))}."
    if chapter is not None and any(m.startswith("(") for m in map(mark, verdicts)):
        text += (f" A bracketed mark holds tested alone but not after Holm's correction for the chapter's "
                 f"{len(chapter.tested)} comparisons.")
    if any(not v.tested for v in verdicts):
        text += " No mark: the paper makes no claim."
    return text


def claims_table(experiments: Sequence[str] | None = None) -> Table:
    """What each comparison tests and why, one row per declared claim
    (:data:`~convnorm_book.results.claims.CLAIMS`) of ``experiments`` (default: all): the
    experiment, the comparison and its measure, the claim's kind (with its margin and the
    groups it reaches), where the paper makes it, and the reason."""
    rows = []
    for experiment in experiments or CLAIMS:
        for claim in CLAIMS[experiment]:
            kind = claim.kind if claim.margin is None else f"{claim.kind} within ±{number(claim.margin)} points"
            if claim.at_least is not None:
                kind += f", from {claim.at_least:.0%} up"
            rows.append([experiment, claim.name, claim.quantity.describe(experiment), kind, claim.source, claim.reason])
    return Table("What each comparison tests", ["experiment", "comparison", "measure", "tested as", "the paper", "why"],
                 rows)

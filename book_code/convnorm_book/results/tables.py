"""Tables of stored results beside the paper's values, read through each experiment's schema.

Which numbers an experiment has and where the paper reports them is declared once, in
:mod:`convnorm_lab.experiments.schema`; the tables here only follow those declarations.
Accuracies are stored as fractions and shown, like the paper's, in percent. Every table
renders its symbols typeset (:func:`~convnorm_book.results.words.typeset`), counts the
trainings that failed to train beside the numbers they enter, and prints the paper's
"/" (failed training) and "-" (not reported) apart.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from convnorm_lab.experiments import EXPERIMENTS
from convnorm_lab.experiments.schema import Measure

from . import sizes
from .comparisons import Comparison, shared_label, short_facets, varying
from .endpoints import Result, SampleSize
from .paper_values import MARKS, paper_value
from .power import SPREAD_CONFIDENCE
from .quantities import Measured
from .records import FAILURE_MULTIPLE, Records, StoredFile, caveats, failed_count, paper_scale, scale
from .stats import collect
from .words import device_name, group_name, listing, method_label, number, scale_name, typeset


def mean_std(mean: float, std: float | None, places: int | None = None) -> str:
    """``mean ± std``, both with ``places`` decimals (default: the decimals suited to the mean)."""
    if places is not None:
        return f"{mean:,.{places}f}" + ("" if std is None else f" ± {std:,.{places}f}")
    return number(mean) + ("" if std is None else f" ± {number(std, like=mean)}")


def _as_printed(value: float) -> str:
    """A number of the paper as it prints it: two decimals unless it has more."""
    return f"{value:.2f}" if round(value, 2) == value and value != int(value) else f"{value:g}"


def paper_text(cell) -> str:
    """A cell of the paper's: ``[mean, std]`` as ``mean ± std``, a number, or the paper's mark
    in words (``"/"`` failed training, ``"-"`` not reported)."""
    if isinstance(cell, str):
        return f"{MARKS[cell]} ({cell})"
    mean, std = (cell if isinstance(cell, (list, tuple)) else (cell, None))
    if mean is None:
        return "not reported"
    return _as_printed(mean) + ("" if std is None else f" ± {_as_printed(std)}")


@dataclass
class Table:
    """A table for the page: a title, columns, rows of text (a cell may hold several
    lines), notes below. Its symbols are typeset in HTML. ``box``: a heading that sets the
    whole table apart in a marked box (a warning, on the page), for numbers to be read with
    care."""

    title: str
    columns: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)
    box: str | None = None

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
        return "\n".join(([self.box.upper()] if self.box else []) + lines + self.notes)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        def lines(text: str) -> str:
            return "<br>".join(typeset(line, "html") for line in text.split("\n"))

        cell = 'style="padding: 2px 12px 2px 0; text-align: left; vertical-align: top"'
        head = "".join(f"<th {cell}>{lines(c)}</th>" for c in self.columns)
        body = "".join("<tr>" + "".join(f"<td {cell}>{lines(c)}</td>" for c in row) + "</tr>"
                       for row in self.rows)
        notes = "".join(f"<p><small>{lines(n)}</small></p>" for n in self.notes)
        table = (f"<p><b>{lines(self.title)}</b></p><table><thead><tr>{head}</tr></thead>"
                 f"<tbody>{body}</tbody></table>{notes}")
        if self.box is None:
            return table
        return f'<div class="admonition warning"><p class="admonition-title">{lines(self.box)}</p>{table}</div>'


    def column(self, name: str) -> list[str]:
        return [row[self.columns.index(name)] for row in self.rows]


def _seeds(records: Records) -> str:
    n = len(records.files)
    return f"{n} seed{'s' if n != 1 else ''}"


def describe(records: Records) -> str:
    """``"ours, reduced scale: <network, data, schedule>; 3 seeds"``: a title line."""
    return f"ours, {scale_name(records)}: {scale(records.settings, records.experiment)}; {_seeds(records)}"


#: how the tables treat a training that failed to train, said below every table it touches
FAILED_NOTE = (f"A failed training (diverged, or never {FAILURE_MULTIPLE} times chance) is counted: its accuracy "
               "enters as measured, any other number leaves it out; '/' where every seed failed, as in the paper.")


def scale_notes(records: Records, paper_values: dict | None) -> list[str]:
    """Lines naming the scale of our runs and of the paper's, the paper's names of our
    methods where they differ (the paper's SN is our SN+BN), and how failed trainings
    enter, where any did."""
    data = f"{records.data}; " if records.schema.history else f"timed on {device_name(records.devices)}; "
    spread = "; mean ± sample standard deviation over the seeds." if len(records.files) > 1 else "."
    notes = [f"Ours ({scale_name(records)}): {scale(records.settings, records.experiment)}; {data}{_seeds(records)}"
             + spread]
    schema = records.schema
    if paper_values is not None and schema.paper_table is not None:
        table = paper_values["tables"][schema.paper_table]
        notes.append(f"The paper ({table['label']}): {paper_scale(records.experiment)}; the official CIFAR files; "
                     f"{table['setting']}.")
        renamed = {name: method_label(m) for m, name in schema.paper_names.items()
                   if isinstance(name, str) and name != method_label(m) and m in schema.method_keys(records.settings)}
        if renamed:
            notes.append(f"The paper's {listing(renamed)} {'is' if len(renamed) == 1 else 'are'} our "
                         f"{listing(renamed.values())}.")
    if records.failed():
        notes.append(FAILED_NOTE)
    return notes


def _ours(records: Records, group: str | None, method: str, measure: Measure) -> str:
    """Our mean ± standard deviation of ``measure`` over the seeds, an accuracy or a rate to
    no finer than one image of the data behind it (at most two decimals), with the failed
    trainings counted; "/" where every seed failed."""
    path = records.schema.path(group, method, measure)
    stats = collect(records, path, 100.0 if measure.percent else 1.0, accuracy=not measure.analysis)
    if stats.failed and stats.failed == stats.seeds:
        return f"/ ({failed_count(stats.failed, stats.seeds)})"
    if not stats.values:
        return "—"
    resolution = Measured(measure.name).resolution(records, group, method)
    places = None if resolution is None else min(2, sizes.decimals(None, resolution))
    shown = mean_std(stats.mean, stats.std if stats.n > 1 else None, places)
    return shown + (f" ({stats.failed_note})" if stats.failed else "")


def _unit(measure: Measure) -> str:
    return measure.label + (" (%)" if measure.percent else "")


def experiment_table(records: Records, paper_values: dict | None = None,
                     measures: Sequence[str] | None = None, methods: Sequence[str] | None = None,
                     title: str | None = None, whose: str = "ours") -> Table:
    """Our numbers (mean ± std over seeds, failed trainings counted) beside the paper's,
    one row per (group,) method (and measure, where the paper's table has one row or
    column per measure); below it, the scale of both and what a reader must know before
    comparing them (:func:`~convnorm_book.results.records.caveats`).

    ``measures`` / ``methods`` restrict the table to those names (default: all the
    schema declares for the records' preset); ``title`` replaces the experiment's;
    ``whose`` heads our columns ("ours"; "yours" for a reader's own records).
    """
    schema, settings = records.schema, records.settings
    chosen = [m for m in schema.measures_at(settings) if measures is None or m.name in measures]
    methods = list(methods or schema.method_keys(settings))
    measure_rows = "measure" in schema.layout
    keys = ([schema.group.label] if schema.group else []) + ["method"] + (["quantity"] if measure_rows else [])
    ours = [whose] if measure_rows else [f"{whose}: {_unit(m)}" for m in chosen]
    rows = []
    for group in schema.group_keys(settings):
        for method in methods:
            named = ([group_name(schema, group)] if schema.group else []) + [method_label(method)]
            per_row = [[m] for m in chosen] if measure_rows else [chosen]
            for row_measures in per_row:
                cells = [_ours(records, group, method, m) for m in row_measures]
                paper = [paper_value(paper_values, records.experiment, method, m, group)
                         for m in row_measures] if paper_values is not None else []
                shown = next((paper_text(p) for p in paper if p is not None), "—")
                rows.append(named + ([_unit(row_measures[0])] if measure_rows else []) + cells + [shown])
    paper_measure = next((m for m in chosen if m.paper), None)
    paper_column = "paper" + ("" if measure_rows or paper_measure is None else f": {paper_measure.paper}")
    title = title or EXPERIMENTS[records.experiment].title
    if paper_values is not None and schema.paper_table is not None:
        title += f", beside the paper's {paper_values['tables'][schema.paper_table]['label']}"
    return Table(title, keys + ours + [paper_column], rows, scale_notes(records, paper_values) + caveats(records))


def _head(measure: Measure) -> str:
    """A measure's label as a short column head: "FGSM" for "accuracy under FGSM",
    "clean" for "clean accuracy"."""
    label = measure.label
    return "clean" if label == "clean accuracy" else label.removeprefix("accuracy under ")


def grid(records: Records, paper_values: dict | None = None, measure: str | None = None,
         measures: Sequence[str] | None = None) -> Table:
    """Our numbers beside the paper's as a compact grid: one row per method, one column
    per group (noise rate, training fraction) of ``measure`` (default: the first measure
    the paper reports) where the records have several groups, else one column per
    measure (``measures``, default all: the adversarial study as methods × attacks).
    Each cell: our mean ± standard deviation over the seeds (failed trainings counted),
    and the paper's value below it; below the grid, the scale of both and the caveats
    (:func:`~convnorm_book.results.records.caveats`)."""
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
    if paper_values is not None and schema.paper_table is not None:
        title += f", beside the paper's {paper_values['tables'][schema.paper_table]['label']}"
    rows = []
    for method in schema.method_keys(settings):
        cells = []
        for group, m in columns:
            paper = None if paper_values is None else paper_value(paper_values, records.experiment, method, m, group)
            cells.append(_ours(records, group, method, m)
                         + ("" if paper is None else f"\npaper {paper_text(paper)}"))
        rows.append([method_label(method)] + cells)
    return Table(title, ["method"] + heads, rows, scale_notes(records, paper_values) + caveats(records))


#: the networks of the GPU step benchmark (the run-time part of ``benchmarks/calibrate_gpu.py``)
STEP_BENCHMARK_MODELS = {"conv2d+bn": "Conv2d+BN", "convnorm2d+bn": "ConvNorm2d+BN (this package)",
                         "authors+bn": "the authors' algorithm, +BN"}
#: the timing modes of the step benchmark: a column's word, and the adverb of a sentence
STEP_BENCHMARK_MODES = {"eager": ("eager", "eagerly"), "cuda_graph": ("one CUDA graph", "as one CUDA graph")}


def step_benchmark_table(file: StoredFile) -> Table:
    """One training step of a ResNet18 built three ways (Conv2d+BN, this package's
    ConvNorm2d+BN, the authors' algorithm ported to ``torch.fft`` +BN), timed on one GPU
    eagerly and as one CUDA graph: milliseconds per step and the ratio to Conv2d+BN, from
    a calibration record (:func:`~convnorm_book.results.records.calibration`; its
    ``setup`` says how each mode was timed)."""
    setup, time = file.results["setup"], file.results["time"]
    rows = [[label] + [text for mode in STEP_BENCHMARK_MODES
                       for text in ((f"{time[mode][key]['seconds_per_step'] * 1e3:.2f}",
                                     f"{time[mode][key]['relative_to_conv2d_bn']:.2f}×")
                                    if key in time.get(mode, {}) else ("—", "—"))]
            for key, label in STEP_BENCHMARK_MODELS.items()]
    errors = file.results.get("graph_errors") or {}
    failed = [f"{STEP_BENCHMARK_MODELS.get(key, key)}: {error}" for key, error in errors.items()]
    how = "; ".join(f"{word}: {setup[mode]}" for mode, (word, _) in STEP_BENCHMARK_MODES.items() if setup.get(mode))
    notes = ([f"Not timed as one CUDA graph ({'; '.join(failed)})."] if failed else []) + [
        f"{setup['model']}, batch {setup['batch']}, {setup['step']}, on {setup['gpu']}." + (f" {how[0].upper()}"
                                                                                          f"{how[1:]}." if how else "")]
    columns = ["network"] + [f"{word}: {unit}" for word, _ in STEP_BENCHMARK_MODES.values()
                             for unit in ("ms per step", "× Conv2d+BN")]
    return Table(f"One training step on {setup['gpu']}: this package, the authors' algorithm and Conv2d+BN",
                 columns, rows, notes)


def _cell(c: Comparison) -> str:
    p = c.paired
    if not p.n:
        return p.failed_note or "no pair of trained runs"
    places = sizes.places(p, c.resolution)
    if not c.estimable and p.interval is not None:
        lines = ["per seed " + sizes.per_seed_text(p.differences, places), f"not estimable with {p.n} seeds"]
    else:
        interval = "" if p.interval is None else (f" [{sizes.signed(p.interval[0], places)}, "
                                                  f"{sizes.signed(p.interval[1], places)}]")
        lines = [sizes.signed(p.mean, places) + interval]
    if c.paper is not None:
        lines.append(f"paper {sizes.signed(c.paper, sizes.paper_places(c.paper))}")
    if p.failed_a or p.failed_b:
        lines.append(p.failed_short)
    return "\n".join(lines)


def comparison_grid(comparisons: Sequence[Comparison], columns: str | None = None, title: str | None = None) -> Table:
    """The comparisons of one claim as a compact grid: one row per value of the facets
    that vary (e.g. the baseline), one column per value of ``columns`` (default: the
    group if it varies, else the measure, else the epoch); each cell our mean difference
    with its 95 % interval (rounded to what the data resolve; the per-seed differences
    where the interval is wider than the quantity's range), the paper's difference below
    it, and the failed trainings. ``title`` defaults to "Paired differences: " and what
    the comparisons share.

    Raises:
        ValueError: for no comparisons, or ``columns`` not a facet that varies.
    """
    if not comparisons:
        raise ValueError("no comparisons to tabulate")
    changing = varying(comparisons)
    if columns is None:
        columns = next((name for name in ("group", "measure", "epoch") if name in changing), None)
    if columns is not None and columns not in changing:
        raise ValueError(f"columns must be one of the facets that vary, {changing}, got {columns!r}")
    cells: dict[str, dict[str, str]] = {}
    for c, facets in zip(comparisons, short_facets(comparisons)):
        row = ", ".join(text for name, text in facets.items() if name != columns) or shared_label(comparisons)
        cells.setdefault(row, {})[facets.get(columns, "ours")] = _cell(c)
    heads = list(dict.fromkeys(head for row in cells.values() for head in row))
    table_rows = [[row] + [shown.get(head, "") for head in heads] for row, shown in cells.items()]
    shared = shared_label(comparisons)
    margins = {f"{c.margin:g}" + (f" {c.paired.unit.removesuffix('s') if c.margin == 1 else c.paired.unit}"
                                  if c.paired.unit else "") for c in comparisons if c.margin}
    legend = (f"Each cell: our mean difference, paired by seed, with its 95 % interval [low, high] at the "
              f"{comparisons[0].scale}" + (", and the paper's difference below it" if any(
                  c.paper is not None for c in comparisons) else "") + ". A description, not a test: only the primary "
              "endpoints are tested." + (f" A claim with a size is read against its margin: {listing(sorted(margins))}."
                                         if margins else ""))
    return Table(title or ("Paired differences" + (f": {shared}" if shared else "")), [" "] + heads, table_rows,
                 [legend])


def sample_size_table(needed: Sequence[SampleSize]) -> Table:
    """The primary endpoints as declared: each comparison, its quantity and direction, the
    paper's effect, the spread planned with and where it comes from, the seeds needed and
    their power, and how a failed training enters it."""
    rows = []
    for n in needed:
        e = n.endpoint
        rows.append([e.name, f"{method_label(e.a)} − {method_label(e.b)}, {e.quantity.describe(e.experiment)}",
                     f"{sizes.signed(n.effect, 2)} {e.unit}",
                     f"{n.spread.sd:.2f}, bounded by {n.spread.bound:.2f} ({n.spread.source})",
                     "more than the plan allows" if n.seeds is None else str(n.seeds),
                     "—" if n.power is None else f"{n.power:.2f}", e.failure_rule])
    return Table("The primary endpoints, declared before the data",
                 ["endpoint", "comparison", "the paper's effect", "spread of a difference", "seeds", "power",
                  "a failed training"], rows,
                 ["Each is tested by the paired t-test on the per-seed differences, two-sided at 5 %, with Holm's "
                  "correction over these endpoints only. The seeds are the fewest whose power at the paper's effect is "
                  "at least 0.8 at the level of Holm's first step (5 % over the number of endpoints), with the upper "
                  f"{SPREAD_CONFIDENCE:.0%} confidence bound on the largest recorded spread of a difference."])


def primary_results_table(results: Sequence[Result]) -> Table:
    """The primary endpoints tested on the stored records: our effect with its interval,
    ours by the paper's metric where the endpoint tests another (label noise: the maximum
    test accuracy over the epochs), the paper's, the p-value before and after Holm's
    correction, and the verdict."""
    rows = [[r.endpoint.name, r.scale, r.effect, "—" if r.beside is None else sizes.effect(r.beside),
             f"{sizes.signed(r.paired.paper, 2)} {r.endpoint.unit}" if r.paired else "—",
             "—" if r.paired is None else f"{r.p_value:.2g}", "—" if r.paired is None else f"{r.adjusted:.2g}",
             r.verdict] for r in results]
    return Table("The primary endpoints tested", ["endpoint", "records", "ours", "ours by the paper's metric",
                                                  "the paper's", "p", "p after Holm", "verdict"], rows,
                 ["Supported: after Holm's correction over the primary endpoints the p-value is below 0.05 and our "
                  "mean lies in the paper's direction; contradicted: below 0.05 and the other way; inconclusive "
                  "otherwise. Under label noise the test is of the test accuracy at the best noisy-validation epoch; "
                  "the paper's metric, the maximum test accuracy over the epochs, is shown beside it, not tested."])

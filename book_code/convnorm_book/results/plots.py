"""Figures of stored results: curves over training, accuracy against a rate (ours beside
the paper's), layer profiles, paired differences with their intervals beside the paper's
(:func:`forest`, legible at a phone's width: short labels, height scaled to the rows),
the primary endpoints with their verdicts (:func:`primary_forest`), and the learning-rate
rule's trials (:func:`learning_rate_figure`)."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from convnorm_lab.models.normalizations import BN, CAYLEY, CONVNORM, CONVNORM_BN, NONE, OCNN, ONI, SN, Norm

from .comparisons import Comparison, shared_label, short_labels
from .endpoints import CONTRADICTED, SUPPORTED, Result
from .learning_rates import Trials
from .records import Records, classes, failure
from .stats import Band, collect, curve_band, history_band
from .tables import describe, group_name, method_label, scale_name
from .words import method_key, typeset

#: each method's colour in every figure (a baseline and the same baseline followed by BN alike)
METHOD_COLOURS = {NONE: "tab:blue", BN: "tab:orange", CONVNORM: "tab:green", CONVNORM_BN: "tab:red",
                  SN: "tab:purple", ONI: "tab:brown", OCNN: "tab:pink", CAYLEY: "tab:gray"}
#: a primary endpoint's verdict's colour (inconclusive: grey)
VERDICT_COLOURS = {SUPPORTED: "tab:green", CONTRADICTED: "tab:red"}
#: a described comparison's colour: one the paper makes a claim on, and one it does not
CLAIMED_COLOUR, UNCLAIMED_COLOUR = "tab:blue", "tab:grey"
_AXIS_LABELS = {"steps": "training iterations", "epoch": "epoch", "test_acc": "test accuracy (%)",
                "train_acc": "training accuracy (%)", "train_loss": "training loss",
                "val_acc": "validation accuracy (%)"}


def colour(method: str) -> str | None:
    """The colour of a method key (``"sn+bn"`` as ``"sn"``), or of a paper's label; ``None``
    for any other name."""
    key = method_key(method)
    if key in METHOD_COLOURS:
        return METHOD_COLOURS[key]
    try:
        return METHOD_COLOURS.get(Norm(key).base.key)
    except ValueError:
        return None


def plot_band(ax, band: Band, label: str, **style):
    """The mean curve and, over more than one seed, a shaded band from minimum to maximum."""
    (line,) = ax.plot(band.x, band.mean, label=label, **style)
    if band.n > 1:
        ax.fill_between(band.x, band.low, band.high, color=line.get_color(), alpha=0.2, linewidth=0)
    return line


def plot_history(ax, records: Records, metric: str, group: str | None = None, methods: Sequence[str] | None = None,
                 x: str = "steps"):
    """One band per method of ``history[metric]`` over training (accuracies in percent)."""
    schema = records.schema
    scale = 100.0 if metric.endswith("_acc") else 1.0
    for method in methods or schema.method_keys(records.settings):
        band = history_band(records, method, metric, group, x, scale)
        note = f" ({band.failed_note})" if band.failed else ""
        plot_band(ax, band, method_label(method) + note, color=colour(method))
    ax.set_xlabel(_AXIS_LABELS.get(x, x))
    ax.set_ylabel(_AXIS_LABELS.get(metric, metric))
    ax.grid(alpha=0.3)


def history_figure(records: Records, metrics: Sequence[str], x: str = "steps"):
    """One row per metric and one column per group (network or data set) of
    :func:`plot_history`, titled with the scale of the records."""
    import matplotlib.pyplot as plt

    schema = records.schema
    groups = schema.group_keys(records.settings)
    fig, axes = plt.subplots(len(metrics), len(groups), figsize=(5.5 * len(groups), 2.9 * len(metrics)),
                             squeeze=False, sharex="col")
    for row, metric in zip(axes, metrics):
        for ax, group in zip(row, groups):
            plot_history(ax, records, metric, group, x=x)
    for ax in axes[:-1].flat:  # the columns share their x axis: label the bottom row only
        ax.set_xlabel("")
    for ax, group in zip(axes[0], groups):
        if group is not None:
            ax.set_title(group_name(schema, group))
    axes[0, -1].legend(fontsize="small")
    fig.suptitle(describe(records), fontsize="small")
    fig.tight_layout()
    return fig


def seed_curves(records: Records, metrics: Sequence[str], methods: Sequence[str] | None = None,
                group: str | None = None, width: float = 7.0):
    r"""Every seed's ``history[metric]`` against the epoch, one line per seed in its method's
    colour, one panel per metric (accuracies in percent; a dotted line at :math:`\ln K` on
    a loss, the loss of a network whose outputs ignore its input); a training that failed
    to train is drawn dashed."""
    import math

    import matplotlib.pyplot as plt

    schema = records.schema
    group = schema.group_keys(records.settings)[0] if group is None else group
    fig, axes = plt.subplots(len(metrics), 1, figsize=(width, 2.9 * len(metrics)), squeeze=False, sharex=True)
    for ax, metric in zip(axes[:, 0], metrics):
        scale = 100.0 if metric.endswith("_acc") else 1.0
        for method in methods or schema.method_keys(records.settings):
            for i, file in enumerate(records.files):
                record = file.results[group][method] if group is not None else file.results[method]
                history = record["history"]
                ax.plot(history["epoch"], [v * scale for v in history[metric]], color=colour(method), linewidth=1.2,
                        linestyle="--" if failure(record) else "-", label=method_label(method) if i == 0 else None)
        if metric.endswith("loss"):
            ax.axhline(math.log(classes((group,))), color="black", linestyle=":", linewidth=1)
        ax.set_ylabel(_AXIS_LABELS.get(metric, metric))
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("epoch")
    axes[0, 0].legend(fontsize="small", ncol=2)
    fig.suptitle(describe(records), fontsize="small")
    fig.tight_layout()
    return fig


def plot_rates(ax, records: Records, measure: str, methods: Sequence[str] | None = None):
    """Our ``measure`` against the experiment's rate (noise rate, training fraction):
    mean ± standard deviation over the seeds (failed trainings' accuracies included), one
    line per method (its label counts the seeds that failed to train)."""
    schema, settings = records.schema, records.settings
    chosen = schema.measure(measure, settings)
    groups = schema.group_keys(settings)
    xs = [float(g) * 100 for g in groups]
    for method in methods or schema.method_keys(settings):
        stats = [collect(records, schema.path(g, method, chosen), 100.0 if chosen.percent else 1.0,
                         accuracy=not chosen.analysis) for g in groups]
        failed = "; ".join(f"{s.failed_note} at {group_name(schema, g)}" for s, g in zip(stats, groups) if s.failed)
        ax.errorbar(xs, [s.mean for s in stats], yerr=[s.std for s in stats], marker="o", capsize=3,
                    label=method_label(method) + (f" ({failed})" if failed else ""), color=colour(method))
    ax.set_xlabel(f"{schema.group.label} (%)")
    ax.set_ylabel(chosen.label + (" (%)" if chosen.percent else ""))
    ax.grid(alpha=0.3)


def plot_paper_rates(ax, table: dict, xlabel: str, ylabel: str):
    """The paper's values against the rate (mean ± std over its seeds), from one of its tables."""
    xs = [float(c.rstrip("%")) for c in table["columns"]]
    for label, cells in table["rows"].items():
        ax.errorbar(xs, [c[0] for c in cells], yerr=[c[1] for c in cells], marker="s", capsize=3,
                    linestyle="--", label=label, color=colour(label))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)


def plot_layer_profile(ax, records: Records, quantity: str, methods: Sequence[str], log: bool = True):
    """``quantity`` of each conv layer (network order) of the conditioning records, one
    band over seeds per method (trainings that failed to train are left out: there is no
    trained network to analyse)."""
    for method in methods:
        layers = [file.results[method]["layers"] for file in records.files
                  if failure(file.results[method]) is None and file.results[method].get("layers")]
        if layers:
            histories = [{"layer": list(range(1, len(ls) + 1)), quantity: [layer[quantity] for layer in ls]}
                         for ls in layers]
            plot_band(ax, curve_band(histories, quantity, "layer"), method_label(method), marker="o", markersize=3,
                      color=colour(method))
    ax.set_xlabel("conv layer (network order)")
    ax.set_ylabel(quantity.replace("_", " "))
    if log:
        ax.set_yscale("log")
    ax.grid(alpha=0.3)


@dataclass(frozen=True)
class _Row:
    """One row of a forest plot: every seed's difference, the mean and its interval, the
    paper's difference, the colour, and the parity margin (if any)."""

    label: str
    differences: tuple[float, ...]
    mean: float
    interval: tuple[float, float] | None
    paper: float | None
    colour: str
    margin: float | None = None


def _draw_rows(ax, rows: Sequence[_Row], xlabel: str):
    """Rows top to bottom: dots for the seeds, a bar for the interval, a large dot for the
    mean, a black cross for the paper's difference, a shaded band for a parity margin."""
    for index, row in enumerate(rows):
        y = len(rows) - 1 - index
        if row.margin is not None:
            ax.fill_betweenx([y - 0.4, y + 0.4], -row.margin, row.margin, color="tab:olive", alpha=0.15, linewidth=0)
        ax.scatter(row.differences, [y] * len(row.differences), s=12, color=row.colour, alpha=0.5, zorder=2)
        if row.interval is not None:
            ax.plot(row.interval, [y, y], color=row.colour, linewidth=3, alpha=0.8, zorder=3)
        if row.differences:
            ax.plot([row.mean], [y], "o", color=row.colour, markersize=7, zorder=4)
        if row.paper is not None:
            ax.plot([row.paper], [y], "x", color="black", markersize=9, markeredgewidth=2, zorder=5)
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_yticks(range(len(rows)), [row.label for row in reversed(rows)])
    ax.set_ylim(-0.6, len(rows) - 0.4)
    ax.set_xlabel(xlabel)
    ax.grid(alpha=0.3, axis="x")


#: height of one row of a forest plot, and of a panel's title and axis, in inches
_ROW_INCHES, _PANEL_INCHES = 0.3, 0.9


def _figure(panels: Sequence[tuple[str, list[_Row], str]], title: str, width: float):
    """One panel per (unit, rows, panel title), the figure as tall as its rows."""
    import matplotlib.pyplot as plt

    heights = [len(rows) * _ROW_INCHES + _PANEL_INCHES for _, rows, _ in panels]
    fig, axes = plt.subplots(len(panels), 1, figsize=(width, sum(heights) + 0.4), squeeze=False,
                             gridspec_kw={"height_ratios": heights})
    for ax, (unit, rows, panel_title) in zip(axes[:, 0], panels):
        _draw_rows(ax, rows, f"difference ({unit})" if unit else "difference")
        ax.tick_params(labelsize=9)
        if panel_title:
            ax.set_title(panel_title, fontsize=9)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def forest(comparisons: Sequence[Comparison], title: str | None = None, width: float = 6.0):
    """The comparisons of one claim as a forest plot: one row per comparison, labelled
    only by what differs among them (:func:`~convnorm_book.results.comparisons.short_labels`),
    one panel per unit (points of accuracy, queries, a loss; each titled by what its rows
    share), the figure as tall as its rows, so that the labels keep their size at a
    phone's width. Each row: every seed's difference (dots), our mean and 95 % interval
    (blue where the paper makes a claim, grey where it makes none: a description, not a
    verdict), the paper's difference (×), and the margin of a claim with a size (shaded).

    Raises:
        ValueError: for no comparisons.
    """
    if not comparisons:
        raise ValueError("no comparisons to plot")
    units = list(dict.fromkeys(c.paired.unit for c in comparisons))
    panels = []
    for unit in units:
        chosen = [c for c in comparisons if c.paired.unit == unit]
        rows = [_Row(typeset(label), c.paired.differences, c.paired.mean, c.paired.interval, c.paper,
                     CLAIMED_COLOUR if c.claimed else UNCLAIMED_COLOUR, c.margin)
                for c, label in zip(chosen, short_labels(chosen))]
        panels.append((unit, rows, shared_label(chosen) if len(units) > 1 else ""))
    return _figure(panels, title or f"{shared_label(comparisons) or 'Paired differences'}, {comparisons[0].scale}",
                   width)


def primary_forest(results: Sequence[Result], width: float = 6.0):
    """The primary endpoints as a forest plot, one panel per unit: every seed's difference,
    our mean and 95 % interval coloured by the verdict after Holm's correction (green
    supported, red contradicted, grey inconclusive), the paper's effect (×); an endpoint
    the records' scale does not run is left out.

    Raises:
        ValueError: if no endpoint has records.
    """
    shown = [r for r in results if r.paired is not None]
    if not shown:
        raise ValueError("no primary endpoint is run at these records' scale")
    units = list(dict.fromkeys(r.endpoint.unit for r in shown))
    panels = [(unit, [_Row(r.endpoint.name, r.paired.differences, r.paired.mean, r.paired.interval, r.paired.paper,
                           VERDICT_COLOURS.get(r.verdict, "tab:grey")) for r in shown if r.endpoint.unit == unit], "")
              for unit in units]
    return _figure(panels, f"The primary endpoints, {shown[0].scale}", width)


def rate_figure(records: Records, paper_values: dict, measures: Sequence[str] | None = None):
    """Accuracy against the experiment's rate (noise rate, training fraction): our first
    measure, the paper's values beside it, then our other measures (default: every
    measure the schema declares at the records' preset).

    Raises:
        ValueError: if the experiment's groups are not rates.
    """
    import matplotlib.pyplot as plt

    schema = records.schema
    if schema.group is None or not schema.group.percent:
        raise ValueError(f"{records.experiment!r}: its groups are not rates")
    measures = list(measures or [m.name for m in schema.measures_at(records.settings)])
    rows = (len(measures) + 2) // 2
    fig, axes = plt.subplots(rows, 2, figsize=(10, 3.8 * rows), squeeze=False)
    ours, paper, spare = [axes.flat[0], *axes.flat[2:]], axes.flat[1], axes.flat[len(measures) + 1:]
    for ax, measure in zip(ours, measures):
        plot_rates(ax, records, measure)
        ax.set_title(f"ours, {scale_name(records)}", fontsize="medium")
        ax.legend(fontsize="small")
    table = paper_values["tables"][schema.paper_table]
    plot_paper_rates(paper, table, f"{schema.group.label} (%)", ours[0].get_ylabel())
    paper.set_title(f"the paper ({table['label']})", fontsize="medium")
    paper.legend(fontsize="small")
    for ax in spare:
        ax.set_axis_off()
    fig.tight_layout()
    return fig


def learning_rate_figure(found: Sequence[Trials], width: float = 6.0):
    """Each network's best validation accuracy against the rate it was tried at, the
    networks without BatchNorm and those with it side by side; a ring marks the rate the
    rule chose, a cross at the foot a trial that diverged."""
    import matplotlib.pyplot as plt

    panels = [("without BatchNorm", [t for t in found if not Norm(t.norm).uses_batchnorm]),
              ("with BatchNorm", [t for t in found if Norm(t.norm).uses_batchnorm])]
    panels = [(title, group) for title, group in panels if group]
    fig, axes = plt.subplots(1, len(panels), figsize=(width, 3.4), sharey=True, squeeze=False)
    for ax, (title, group) in zip(axes[0], panels):
        for t in group:
            points = [(rate, 100 * a) for rate, a in zip(t.rates, t.accuracies) if a is not None]
            ax.plot(*zip(*points), marker="o", color=colour(t.norm), label=method_label(t.norm))
            ax.plot([t.rate], [100 * t.accuracies[t.reductions.index(t.chosen)]], marker="o", markersize=12,
                    markerfacecolor=(0, 0, 0, 0), markeredgecolor=colour(t.norm), markeredgewidth=1.5)  # a ring
            diverged = [rate for rate, a in zip(t.rates, t.accuracies) if a is None]
            ax.plot(diverged, [0] * len(diverged), marker="x", linewidth=0, color=colour(t.norm))
        ax.set_xscale("log")
        ax.set_xlabel("learning rate")
        ax.set_title(title, fontsize="medium")
        ax.grid(alpha=0.3)
        ax.legend(fontsize="x-small")
    axes[0, 0].set_ylabel(_AXIS_LABELS["val_acc"] + ", best epoch")
    fig.tight_layout()
    return fig


def trial_curves(trials: Trials, metrics: Sequence[str] = ("train_loss", "val_acc"), width: float = 6.0):
    """One network's trials over training: each of ``metrics`` after every epoch, one line
    per rate tried (the chosen one solid), with the loss :math:`\\ln K` of a network whose
    outputs ignore their input dotted."""
    import math

    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(metrics), 1, figsize=(width, 2.6 * len(metrics)), sharex=True, squeeze=False)
    for ax, metric in zip(axes[:, 0], metrics):
        scale = 100.0 if metric.endswith("_acc") else 1.0
        for r, rate, history in zip(trials.reductions, trials.rates, trials.histories):
            ax.plot(history["epoch"], [v * scale for v in history[metric]], marker="o", markersize=3,
                    linestyle="-" if r == trials.chosen else "--", label=f"rate {rate:.3g}")
        if metric.endswith("loss"):
            ax.axhline(math.log(classes(())), color="black", linestyle=":", linewidth=1)
        ax.set_ylabel(_AXIS_LABELS.get(metric, metric))
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("epoch")
    axes[0, 0].legend(fontsize="small")
    fig.suptitle(f"{method_label(trials.norm)}: its trials", fontsize="small")
    fig.tight_layout()
    return fig

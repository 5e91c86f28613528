"""Figures of stored results: curves over training, accuracy against a rate, layer
profiles, and paired differences with their intervals beside the paper's."""
from __future__ import annotations

from collections.abc import Sequence

from .records import Records
from .stats import CONTRADICTED, SUPPORTED, Band, Paired, collect, curve_band, history_band
from .tables import METHOD_LABELS, describe, group_name, method_label

#: each method's colour in every figure (a baseline and the same baseline followed by BN alike)
METHOD_COLOURS = {"none": "tab:blue", "bn": "tab:orange", "convnorm": "tab:green", "convnorm+bn": "tab:red",
                  "sn": "tab:purple", "oni": "tab:brown", "ocnn": "tab:pink", "cayley": "tab:gray"}
#: a verdict's colour in the figures
VERDICT_COLOURS = {SUPPORTED: "tab:green", CONTRADICTED: "tab:red"}
_AXIS_LABELS = {"steps": "training iterations", "epoch": "epoch", "test_acc": "test accuracy (%)",
                "train_acc": "training accuracy (%)", "train_loss": "training loss", "val_acc": "validation accuracy (%)"}


def colour(method: str) -> str | None:
    """The colour of a method key (``"sn+bn"`` as ``"sn"``), or of a paper's label."""
    key = {label: key for key, label in METHOD_LABELS.items()}.get(method, method)
    base = key if key in METHOD_COLOURS else key.removesuffix("+bn")
    return METHOD_COLOURS.get(base)


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
        plot_band(ax, history_band(records, method, metric, group, x, scale), method_label(method),
                  color=colour(method))
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


def plot_rates(ax, records: Records, measure: str, methods: Sequence[str] | None = None):
    """Our ``measure`` against the experiment's rate (noise rate, training fraction):
    mean ± standard deviation over the seeds, one line per method."""
    schema, settings = records.schema, records.settings
    chosen = schema.measure(measure, settings)
    groups = schema.group_keys(settings)
    xs = [float(g) * 100 for g in groups]
    for method in methods or schema.method_keys(settings):
        stats = [collect(records, schema.path(g, method, chosen), 100.0 if chosen.percent else 1.0) for g in groups]
        ax.errorbar(xs, [s.mean for s in stats], yerr=[s.std for s in stats], marker="o", capsize=3,
                    label=method_label(method), color=colour(method))
    ax.set_xlabel(f"{schema.group.label} (%)")
    ax.set_ylabel(chosen.label + (" (%)" if chosen.percent else ""))
    ax.grid(alpha=0.3)


def plot_paper_rates(ax, table: dict, xlabel: str, ylabel: str):
    """The paper's values against the rate (mean ± std over its seeds), from a reference table."""
    xs = [float(c.rstrip("%")) for c in table["columns"]]
    for label, cells in table["rows"].items():
        ax.errorbar(xs, [c[0] for c in cells], yerr=[c[1] for c in cells], marker="s", capsize=3,
                    linestyle="--", label=label, color=colour(label))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)


def plot_layer_profile(ax, records: Records, quantity: str, methods: Sequence[str], log: bool = True):
    """``quantity`` of each conv layer (network order) of the conditioning records, one
    band over seeds per method (methods whose run diverged are left out)."""
    for method in methods:
        layers = [run.results[method]["layers"] for run in records.runs if run.results[method].get("layers")]
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


def plot_comparisons(ax, comparisons: Sequence[Paired], unit: str = "points"):
    """Paired differences, one row each: every seed's difference (dots), their mean and
    95 % t-interval (a bar, coloured by the verdict), and the paper's difference (×)."""
    for row, c in enumerate(comparisons):
        y = len(comparisons) - 1 - row
        colour = VERDICT_COLOURS.get(c.verdict, "tab:grey") if c.claimed_sign is not None else "tab:blue"
        ax.scatter(c.differences, [y] * c.n, s=12, color=colour, alpha=0.5, zorder=2)
        if c.interval is not None:
            ax.plot(c.interval, [y, y], color=colour, linewidth=3, alpha=0.8, zorder=3)
        ax.plot([c.mean], [y], "o", color=colour, markersize=7, zorder=4)
        if c.paper is not None:
            ax.plot([c.paper], [y], "x", color="black", markersize=9, markeredgewidth=2, zorder=5)
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_yticks(range(len(comparisons)), [c.label for c in reversed(comparisons)])
    ax.set_xlabel(f"difference ({unit})")
    ax.grid(alpha=0.3, axis="x")


"""convnorm_book.results.plots: the figures draw what the records hold."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from convnorm_book.results import plots, records, stats  # noqa: E402
from result_files import record, results_root, write  # noqa: E402


@pytest.fixture
def root(tmp_path):
    return results_root(tmp_path)


def test_plot_comparisons_one_row_each_coloured_by_verdict():
    rows = [stats.Paired("a", "b", (1.0, 1.1, 0.9), paper=0.5), stats.Paired("c", "d", (-1.0, 2.0), paper=0.5),
            stats.Paired("e", "f", (1.0, 1.1, 0.9))]
    fig, ax = plt.subplots()
    plots.plot_comparisons(ax, rows)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["e − f", "c − d", "a − b"]
    means = [line for line in ax.lines if line.get_marker() == "o"]
    assert [line.get_color() for line in means] == ["tab:green", "tab:grey", "tab:blue"]
    assert sum(line.get_marker() == "x" for line in ax.lines) == 2  # the paper's differences
    plt.close(fig)


def test_history_figure_one_band_per_method(root):
    for seed in (0, 1):
        write(root, "convergence", "cpu", seed, {"small": {m: record(0.3) for m in ("none", "bn", "convnorm",
                                                                                   "convnorm+bn")}})
    data = records.stored("convergence", root, presets=("cpu",))
    fig = plots.history_figure(data, ("test_acc", "train_loss"))
    left, right = fig.axes
    assert len(left.lines) == 4 and len(left.collections) == 4  # a min-max band each (2 seeds)
    assert np.allclose(left.lines[0].get_ydata(), [10, 20, 30]) and right.get_ylabel() == "training loss"
    assert "six-conv network of width 16" in fig._suptitle.get_text()
    plt.close(fig)


def test_plot_rates_and_layer_profile(root):
    write(root, "label-noise", "cpu", 0, {rate: {m: record(0.4, max_test_acc=0.5) for m in ("none", "bn")}
                                          for rate in ("0.2", "0.8")}, robust_norms=["none", "bn"])
    fig, ax = plt.subplots()
    plots.plot_rates(ax, records.stored("label-noise", root, presets=("cpu",)), "max_test_acc")
    assert len(ax.containers) == 2 and np.allclose(ax.lines[0].get_xdata(), [20, 80])
    assert np.allclose(ax.lines[0].get_ydata(), [50, 50])
    layers = [{"condition_number": 10.0}, {"condition_number": 5.0}]
    write(root, "conditioning", "cpu", 0, {"none": {"layers": layers}, "oni": {"layers": None}})
    fig2, ax2 = plt.subplots()
    plots.plot_layer_profile(ax2, records.stored("conditioning", root, presets=("cpu",)), "condition_number",
                             ["none", "oni"])
    assert len(ax2.lines) == 1 and np.allclose(ax2.lines[0].get_ydata(), [10, 5])  # the diverged run is left out
    plt.close("all")


def test_colours_are_the_same_for_a_method_everywhere():
    assert plots.colour("convnorm+bn") == plots.colour("ConvNorm+BN") == "tab:red"  # our key, the paper's label
    assert plots.colour("oni+bn") == plots.colour("ONI") == plots.colour("oni")
    assert plots.colour("vanilla") == plots.colour("none") and plots.colour("unknown") is None

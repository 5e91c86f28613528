"""convnorm_book.results.plots: the figures draw what the records hold."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
from dataclasses import replace  # noqa: E402

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from convnorm_book.results import claims, comparisons, endpoints, plots, records  # noqa: E402
from convnorm_book.results.paper_values import load_paper_values  # noqa: E402
from convnorm_lab.experiments import EXPERIMENTS  # noqa: E402
from result_files import paper_values, record, root, write  # noqa: E402, F401 (fixtures)


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
    assert len(ax2.lines) == 1 and np.allclose(ax2.lines[0].get_ydata(), [10, 5])  # no layers: nothing to draw
    plt.close("all")


def test_colours_are_the_same_for_a_method_everywhere():
    assert plots.colour("convnorm+bn") == plots.colour("ConvNorm+BN") == "tab:red"  # our key, the paper's label
    assert plots.colour("oni+bn") == plots.colour("ONI") == plots.colour("oni")
    assert plots.colour("vanilla") == plots.colour("none") and plots.colour("unknown") is None


def _adversarial(root, seeds=3):
    """Adversarial records where ConvNorm+BN leads BN by about 10 points under every
    attack (10, 9.9, 9.8 over the seeds) and every other baseline by exactly 5."""
    methods = EXPERIMENTS["adversarial"].schema.methods
    for seed in range(seeds):
        write(root, "adversarial", "cpu", seed, {
            m: {"robust": {k: 0.3 + 0.05 * (m == "convnorm+bn") + 0.05 * (m != "bn") + 0.001 * seed * (m == "bn")
                           for k in ("clean", "fgsm", "pgd10", "pgd20")}} for m in methods})
    return records.stored("adversarial", root, presets=("cpu",))


def test_forest_rows_are_short_labels_and_the_figure_grows_with_them(root):
    paper_values = load_paper_values(root)
    found = comparisons.evaluate(_adversarial(root), paper_values)
    fig = plots.forest(found)
    (ax,) = fig.axes
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels[0] == "vs OCNN+BN, PGD-20" and labels[-1] == "vs SN+BN, clean" and len(labels) == 16
    assert max(map(len, labels)) <= 20  # short enough to keep their size at a phone's width
    assert "ConvNorm+BN against each" in fig._suptitle.get_text()
    assert sum(line.get_marker() == "x" for line in ax.lines) == 16  # the paper's difference on every row
    few = plots.forest(found[:4])
    assert fig.get_size_inches()[1] - few.get_size_inches()[1] == pytest.approx(12 * plots._ROW_INCHES)
    plt.close("all")


def test_forest_colours_a_claim_apart_from_none_and_shades_a_margin(root):
    paper_values = load_paper_values(root)
    found = comparisons.Chapter.of([_adversarial(root)], paper_values)("adversarial", b="bn")
    fig = plots.forest(found)
    means = [line for line in fig.axes[0].lines if line.get_marker() == "o"]
    assert {line.get_color() for line in means} == {plots.CLAIMED_COLOUR}  # a description: no verdict's colour
    assert len(fig.axes[0].collections) == 4 + 1  # the seeds' dots, and the clean row's margin of 'maintaining'
    unclaimed = [replace(c, kind=claims.NO_CLAIM) for c in found]
    assert {line.get_color() for line in plots.forest(unclaimed).axes[0].lines if line.get_marker() == "o"} == {
        plots.UNCLAIMED_COLOUR}
    plt.close("all")


def test_primary_forest_colours_the_verdicts_and_leaves_out_what_is_not_run(paper_values):
    results = endpoints.test(paper_values)
    fig = plots.primary_forest(results)
    labels = [t.get_text() for ax in fig.axes for t in ax.get_yticklabels()]
    assert sorted(labels) == sorted(r.endpoint.name for r in results if r.paired is not None)
    colours = {line.get_color() for ax in fig.axes for line in ax.lines if line.get_marker() == "o"}
    assert colours <= {"tab:green", "tab:red", "tab:grey"}
    plt.close("all")


def test_seed_curves_draw_every_seed_and_dash_a_failed_training(root):
    for seed in (0, 1):
        write(root, "generalization", "cpu", seed, {"cifar10": {
            m: record(0.3, history=(0.1, 0.12, 0.15) if (m, seed) == ("convnorm", 1) else (0.1, 0.2, 0.3))
            for m in ("none", "bn", "convnorm", "convnorm+bn")}})
    fig = plots.seed_curves(records.stored("generalization", root, presets=("cpu",)), ("train_loss", "test_acc"))
    loss, accuracy = fig.axes
    assert len(accuracy.lines) == 4 * 2 and len(loss.lines) == 4 * 2 + 1  # every seed, and ln K on the loss
    assert sum(line.get_linestyle() == "--" for line in accuracy.lines) == 1
    plt.close("all")


def test_forest_one_panel_per_unit(root):
    paper_values = load_paper_values(root)
    for seed in (0, 1):
        write(root, "convergence", "cpu", seed, {"small": {m: record(0.3, history=(0.1, 0.2 + 0.01 * seed))
                                                           for m in ("none", "bn", "convnorm", "convnorm+bn")}},
              epochs=2)
    found = comparisons.evaluate(records.stored("convergence", root, presets=("cpu",)), paper_values)
    fig = plots.forest(found)
    assert [ax.get_title() for ax in fig.axes] == ["test accuracy", "training loss"]
    assert [ax.get_xlabel() for ax in fig.axes] == ["difference (points)", "difference"]
    plt.close("all")


def test_rate_figure_sets_ours_beside_the_papers_and_counts_failed_seeds(root):
    paper_values = load_paper_values(root)
    for seed in range(3):
        write(root, "label-noise", "cpu", seed,
              {rate: {m: record(0.4, max_test_acc=0.5, diverged=(seed, rate, m) == (2, "0.8", "bn"))
                      for m in ("none", "bn")} for rate in ("0.2", "0.8")}, robust_norms=["none", "bn"])
    fig = plots.rate_figure(records.stored("label-noise", root, presets=("cpu",)), paper_values)
    ours, paper, ours_selected, spare = fig.axes
    assert paper.get_title() == "the paper (Table 6 and Figure 3 (left))" and len(paper.containers) == 4
    assert [t.get_text() for t in ours.get_legend().get_texts()] == ["vanilla",
                                                                      "BN (1 of 3 seeds failed to train at 80%)"]
    assert not spare.axison
    with pytest.raises(ValueError, match="not rates"):
        plots.rate_figure(_adversarial(root), paper_values)
    plt.close("all")

"""convnorm_book.results.learning_rates: each network's trials read from the run records its
result files name, the chosen rate checked against the rule, and the table and figure of them."""
from __future__ import annotations

import matplotlib
import numpy as np
import pytest

from convnorm_book.results import learning_rates, plots
from convnorm_book.results.records import RecordError, Records, load_result_files
from convnorm_lab.experiments import run_record_path
from convnorm_lab.training import save_results
from result_files import record, results_root, write

matplotlib.use("Agg")
BASE = 0.1


def _stored(root, accuracies: dict[str, dict[int, float | None]], chosen: dict[str, int]) -> Records:
    """A generalization result file naming each network's trials, and the trials' run records."""
    rule = {}
    for norm, by_reduction in accuracies.items():
        keys = {}
        for r, accuracy in by_reduction.items():
            key = f"small-{norm}-{r}"
            trial = record(0.5, lr=BASE / r, diverged=accuracy is None, run_key=key)
            trial["summary"] = None if accuracy is None else {**trial["summary"], "best_val_acc": accuracy}
            save_results(run_record_path(key, "cpu", 0, root / "cpu"), {"experiment": "learning-rate", "seed": 0},
                         trial)
            keys[str(r)] = key
        rule[norm] = {"chosen": chosen[norm], "trials": keys}
    write(root, "generalization", "cpu", 0, {"cifar10": {}}, choices={"lr_rule": rule})
    return Records("generalization", "cpu", tuple(load_result_files("generalization", "cpu", root)))


def test_the_trials_are_read_from_the_records_the_files_name(tmp_path):
    root = results_root(tmp_path)
    data = _stored(root, {"none": {1: 0.23, 3: 0.34, 10: None}, "bn": {1: 0.52, 3: 0.55, 10: 0.50}},
                   {"none": 3, "bn": 1})
    found = learning_rates.trials([data], root)
    none, bn = found
    assert (none.norm, none.chosen, none.rate, none.accuracies) == ("none", 3, BASE / 3, (0.23, 0.34, None))
    assert none.gain == pytest.approx(0.11) and bn.gain == 0 and bn.rate == BASE
    figure = plots.learning_rate_figure(found)
    assert [ax.get_title() for ax in figure.axes] == ["without BatchNorm", "with BatchNorm"]
    rings = [line for ax in figure.axes for line in ax.lines if line.get_markersize() > 6]
    assert [(line.get_xdata()[0], line.get_ydata()[0]) for line in rings] == [(BASE / 3, 34.0), (BASE, 52.0)]
    assert all(matplotlib.colors.to_rgba(line.get_markerfacecolor())[3] == 0 for line in rings)  # open inside
    figure.canvas.draw()
    pixels = np.asarray(figure.canvas.buffer_rgba())[..., :3].astype(float)
    for line in rings:  # and drawn: its colour on its left edge, beyond the plain marker inside it
        x, y = line.get_transform().transform((line.get_xdata()[0], line.get_ydata()[0]))
        radius = line.get_markersize() * figure.dpi / 72 / 2
        row, left = round(pixels.shape[0] - y), round(x - radius)
        colour = np.array(matplotlib.colors.to_rgb(line.get_markeredgecolor())) * 255
        edge = pixels[row - 2:row + 3, left - 2:left + 3]
        assert (np.abs(edge - colour).sum(-1) < 60).any(), line.get_label()
    curves = plots.trial_curves(none, ("train_loss", "test_acc"))
    loss, accuracy = curves.axes
    assert len(accuracy.lines) == 3 and len(loss.lines) == 4  # a line per rate; ln K on the loss
    assert [line.get_linestyle() for line in accuracy.lines] == ["--", "-", "--"]  # the chosen rate solid


def test_a_choice_the_trials_do_not_give_or_a_file_without_the_rule_is_refused(tmp_path):
    root = results_root(tmp_path)
    data = _stored(root, {"none": {1: 0.23, 3: 0.25, 10: 0.20}}, {"none": 3})  # a gain within the margin
    with pytest.raises(RecordError, match="the rule chose 3 for none, which its stored trials do not give"):
        learning_rates.trials([data], root)
    write(root, "generalization", "cpu", 0, {"cifar10": {}})
    older = Records("generalization", "cpu", tuple(load_result_files("generalization", "cpu", root)))
    with pytest.raises(RecordError, match="made without the learning-rate rule"):
        learning_rates.trials([older], root)


def test_what_the_copy_cost_leaves_out_a_network_trained_at_another_rate(tmp_path):
    """The copy's cost pairs a network with itself on both copies; a network whose rate the rule
    changed on the official images would mix the rate's effect into the copy's."""
    from convnorm_book.results import archive

    root = results_root(tmp_path)
    archived = root / "archive" / "cpu-jpeg-q75"
    archived.mkdir(parents=True)
    for data, vanilla_rate in (("cifar10: lossy JPEG-q75 copy", BASE), ("cifar10: the official images", BASE / 3)):
        for seed in (0, 1):
            results = {"cifar10": {"none": record(0.3, lr=vanilla_rate), "bn": record(0.5 + seed / 100, lr=BASE),
                                   "convnorm": record(0.3, lr=BASE), "convnorm+bn": record(0.5, lr=BASE)}}
            path = write(root, "generalization", "cpu", seed, results, data=data)
            if "JPEG" in data:
                path.rename(archived / path.name)
    costs = archive.copy_costs(root)
    assert {cost.method for cost in costs} == {"bn", "convnorm", "convnorm+bn"}  # the vanilla network's rate differs

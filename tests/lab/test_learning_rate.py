"""The learning-rate rule: one rule for every network, its trials found or trained before
the network's runs, the chosen rate in every run, and no run keyed before its trials."""
from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

import pytest
import torch

from cifar_data import random_cifar_root  # noqa: F401 (fixture)
from convnorm_lab.experiments import PRESETS, run_record_path
from convnorm_lab.experiments.context import Context
from convnorm_lab.experiments.learning_rate import (
    DECLARED,
    MARGIN,
    PREVIOUS_SCALE,
    TRIAL_SEED,
    Rule,
    choose,
    failed,
    trial_run,
)


@pytest.mark.parametrize("accuracies, chosen", [
    ({1: 0.30, 3: 0.30 + MARGIN - 0.01, 10: 0.28}, 1),  # a gain within the margin changes nothing
    ({1: 0.23, 3: 0.34, 10: 0.28}, 3),  # the best trial, where it beats the own rate by more
    ({1: None, 3: 0.20, 10: 0.25}, 10),  # a diverged own rate loses to any trained one
    ({1: None, 3: None, 10: None}, 1),  # nothing trained: nothing to prefer
    ({1: 0.10, 3: 0.40, 10: 0.40}, 3),  # a tie goes to the larger rate
    ({1: 0.205, 3: 0.248, 10: 0.205 + MARGIN}, 1),  # a gain of exactly the margin is not more than it
])
def test_the_rule_keeps_the_own_rate_unless_a_lower_one_is_clearly_better(accuracies, chosen):
    assert choose(accuracies) == chosen


def test_the_rule_and_the_presets_refuse_trials_without_the_own_rate():
    with pytest.raises(ValueError, match="reduction 1"):
        choose({3: 0.5, 10: 0.4})
    for bad in ((3, 10), (1, 10, 3), (1, 1, 3), (1, 2.5)):
        with pytest.raises(ValueError, match="lr_reductions"):
            replace(PRESETS["cpu"], lr_reductions=bad)
    assert PRESETS["paper"].lr_reductions == (1,)  # the paper's protocol: one rate, ONI's aside


def _context(root, output, seed, only=None) -> Context:
    preset = replace(PRESETS["smoke"], lr_reductions=(1, 3, 10))
    return Context("generalization", preset, root, output, seed, progress=False, device=torch.device("cpu"),
                   only=only)


@pytest.mark.training
def test_trials_at_seed_0_choose_the_rate_of_every_seed(random_cifar_root, tmp_path, monkeypatch):
    """The trials are trained once, at the trial seed, before the network's first run; the
    run of another seed trains at the chosen rate, and a second experiment finds the trials."""
    accuracy = {1: 0.10, 3: 0.30, 10: 0.20}
    base = PRESETS["smoke"].lr
    monkeypatch.setattr(Rule, "accuracy", lambda rule, record, k=10: accuracy[round(base / record["lr"])])
    ctx = _context(random_cifar_root, tmp_path, seed=1)
    record = ctx.train("cifar10-none", "none", ctx.splits())
    assert record["lr"] == pytest.approx(base / 3) and ctx.chosen_reductions()["none"]["chosen"] == 3
    trials = [p for p in ctx.planned if p.trial]
    assert [p.run for p in trials] == [trial_run("none", r) for r in (1, 3, 10)]
    assert [p.seed for p in trials] == [TRIAL_SEED] * 3 and ctx.planned[-1].seed == 1
    assert all(run_record_path(p.key, "smoke", TRIAL_SEED, tmp_path).exists() for p in trials)
    assert ctx.chosen_reductions()["none"]["trials"] == {str(r): p.key for r, p in zip((1, 3, 10), trials)}
    again = _context(random_cifar_root, tmp_path, seed=2, only=frozenset())  # trains nothing
    assert again.lr_reduction("none") == 3 and not [p for p in again.skipped if p.trial]


@pytest.mark.training
def test_a_run_whose_trials_are_missing_is_pending_and_never_trained_at_a_guessed_rate(random_cifar_root,
                                                                                      tmp_path):
    planning = _context(random_cifar_root, tmp_path, seed=1, only=frozenset())
    assert planning.train("cifar10-bn", "bn", planning.splits()) is None
    assert [p.run for p in planning.skipped] == [trial_run("bn", r) for r in (1, 3, 10)] + ["cifar10-bn"]
    assert planning.skipped[-1].pending and planning.skipped[-1].key.endswith("-pending")
    asked = _context(random_cifar_root, tmp_path, seed=1, only=frozenset({"cifar10-bn"}))
    with pytest.raises(RuntimeError, match=r"trial-lr/1-bn, trial-lr/3-bn, trial-lr/10-bn are not stored"):
        asked.train("cifar10-bn", "bn", asked.splits())
    assert not list(tmp_path.rglob("*.json"))


THIRD = Fraction(1, 3)


@pytest.mark.parametrize("accuracies, chosen", [
    ({THIRD: 0.80, 1: 0.80, 3: 0.80}, 1),  # a three-way tie: the own rate
    ({THIRD: 0.83, 1: 0.80, 3: 0.83}, THIRD),  # two equally near: the larger rate (three times the own)
    ({THIRD: 0.81, 1: 0.80, 3: 0.80 + DECLARED.margin}, 1),  # a gain of exactly the margin is not more than it
    ({THIRD: 0.70, 1: 0.80, 3: 0.83}, 3),  # a gain beyond the margin, downwards
    ({THIRD: 0.85, 1: 0.80, 3: 0.70}, THIRD),  # and upwards
    ({THIRD: None, 1: None, 3: 0.25}, 3),  # a failed own rate loses to any trained trial
    ({THIRD: None, 1: None, 3: None}, 1),  # nothing trained: nothing to prefer
])
def test_the_declared_rule_steps_both_ways_and_ties_go_to_the_nearest_rate(accuracies, chosen):
    assert DECLARED.choose(accuracies) == chosen


def test_the_declared_rule_counts_a_failed_trial_as_no_accuracy():
    """A trial that never reached twice chance on the test images counts as none under the
    declared rule (the book's definition), and as its accuracy under the previous scale's."""
    record = {"diverged": False, "summary": {"best_val_acc": 0.19}, "history": {"test_acc": [0.11, 0.194, 0.15]}}
    assert failed(record) and DECLARED.accuracy(record) is None and PREVIOUS_SCALE.accuracy(record) == 0.19
    trained = {**record, "history": {"test_acc": [0.11, 0.21]}}
    assert not failed(trained) and DECLARED.accuracy(trained) == 0.19
    assert DECLARED.accuracy({"diverged": True, "summary": None}) is None


def test_the_declared_rule_is_the_airbench_presets_and_keeps_its_seed_out_of_the_reports():
    """The choosing seed is none of the reported seeds: the airbench presets' rule refuses an
    experiment's run at it; the grid steps both ways around the own rate."""
    assert DECLARED.trial_seed not in range(10) and min(DECLARED.grid) < 1 < max(DECLARED.grid)
    for name in ("airbench", "airbench-smoke"):
        assert PRESETS[name].rule is DECLARED
    assert PRESETS["cpu"].rule.grid == PRESETS["cpu"].lr_reductions and PRESETS["cpu"].rule.trial_seed == TRIAL_SEED
    ctx = Context("generalization", PRESETS["airbench-smoke"], seed=DECLARED.trial_seed, device=torch.device("cpu"))
    with pytest.raises(ValueError, match="chooses the learning rates"):
        ctx.train("cifar10-bn", "bn", None)
    assert trial_run("bn", THIRD) == "trial-lr*3-bn" and trial_run("bn", 3) == "trial-lr/3-bn"
    with pytest.raises(ValueError, match="lr_rule"):
        replace(PRESETS["cpu"], lr_rule="best-of-seed-0")

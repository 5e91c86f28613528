"""How the primary endpoints are planned for a scale: the upper confidence bound on a spread
(``convnorm_book.results.power``), whether a scale can test each endpoint
(``convnorm_book.results.scope``), and the records the spreads come from
(``convnorm_book.results.endpoints``)."""
from __future__ import annotations

import math
import shutil

import numpy as np
import pytest

from convnorm_book.results import endpoints, power, scope, stats
from convnorm_book.results.quantities import SpeedUp
from convnorm_book.results.records import PILOT_FOLDER
from convnorm_book.results.studies import PRIMARY
from result_files import REPOSITORY_RESULTS, paper_values, record, results_root, write  # noqa: F401 (a fixture)

ENDPOINTS = {e.name: e for e in PRIMARY}


def test_chi2_quantile_matches_scipy_and_refuses_bad_arguments():
    scipy_stats = pytest.importorskip("scipy.stats")
    for df in (1, 2, 3, 4, 7, 30, 200):
        for p in (0.001, 0.05, 0.2, 0.5, 0.9, 0.999):
            assert math.isclose(stats.chi2_quantile(p, df), scipy_stats.chi2.ppf(p, df), rel_tol=1e-9)
    with pytest.raises(ValueError, match="p must"):
        stats.chi2_quantile(1.0, 3)
    with pytest.raises(ValueError, match="df must"):
        stats.chi2_quantile(0.5, 0)


def test_the_upper_bound_on_a_spread_is_the_chi_square_bound_and_covers_sigma_as_often_as_it_says():
    scipy_stats = pytest.importorskip("scipy.stats")
    for df in (1, 2, 4, 9):
        for confidence in (0.8, 0.9):
            expected = 1.7 * math.sqrt(df / scipy_stats.chi2.ppf(1 - confidence, df))
            assert math.isclose(power.sd_upper_bound(1.7, df, confidence), expected, rel_tol=1e-9)
    # the bound from three seeds lies above the true sigma in 80 % of draws
    rng = np.random.default_rng(0)
    draws = rng.normal(0.0, 2.0, size=(20_000, 3)).std(axis=1, ddof=1)
    covered = np.mean([power.sd_upper_bound(float(s), 2) >= 2.0 for s in draws])
    assert abs(covered - power.SPREAD_CONFIDENCE) < 0.01
    assert power.sd_upper_bound(1.0, 2) > 1.0 and power.sd_upper_bound(0.0, 2) == 0.0
    with pytest.raises(ValueError, match="df >= 1"):
        power.sd_upper_bound(1.0, 0)


def test_a_plan_takes_the_bound_so_a_spread_from_fewer_seeds_asks_more_seeds(paper_values):  # noqa: F811
    wide, narrow = endpoints.Spread(1.0, 1, "two seeds"), endpoints.Spread(1.0, 9, "ten seeds")
    assert wide.bound > narrow.bound > 1.0
    assert power.seeds_needed(6.0, wide.bound, 0.01) > power.seeds_needed(6.0, narrow.bound, 0.01)
    for n in endpoints.sample_sizes(paper_values, preset="airbench"):
        assert n.spread.bound == max(s.bound for s in endpoints.spreads(n.endpoint, paper_values))
        if n.seeds is not None:
            assert n.power == power.power(n.effect, n.spread.bound, n.seeds, endpoints.PLANNING_ALPHA) >= 0.8
            assert n.seeds == 2 or power.power(n.effect, n.spread.bound, n.seeds - 1, endpoints.PLANNING_ALPHA) < 0.8


def _noise(seed_accuracies):
    """Label-noise results at 40 and 80 %: BN and ConvNorm+BN with the given test accuracies at
    the best validation epoch and histories that train."""
    return {rate: {m: record(acc, history=(0.3, 0.5, 0.6)) for m, acc in zip(("bn", "convnorm+bn"), pair)}
            for rate, pair in seed_accuracies.items()}


def test_the_spreads_come_from_the_cpu_records_once_two_seeds_are_complete(tmp_path, paper_values):  # noqa: F811
    root = results_root(tmp_path)
    endpoint = ENDPOINTS["label noise 40 %"]
    write(root, "label-noise", "airbench-cpu", 0, _noise({"0.4": (0.50, 0.53), "0.8": (0.2, 0.3)}))
    # one seed: no spread of ours, and no pilot in this folder: the paper's alone
    assert [s.source for s in endpoints.spreads(endpoint, paper_values, root)] == [
        "the paper's Table 6 and Figure 3 (left) (3 seeds each)"]
    write(root, "label-noise", "airbench-cpu", 1, _noise({"0.4": (0.50, 0.56), "0.8": (0.2, 0.3)}))
    paper, ours = endpoints.spreads(endpoint, paper_values, root)
    assert paper.df == 4 and ours.source == "the airbench-cpu records (2 seeds)" and ours.df == 1
    assert math.isclose(ours.sd, np.std([3.0, 6.0], ddof=1), rel_tol=1e-9)  # test accuracy at the best validation


def test_label_noise_is_tested_at_the_best_validation_epoch_with_the_paper_maximum_beside_it(paper_values):  # noqa: F811
    endpoint = ENDPOINTS["label noise 80 %"]
    assert endpoint.quantity.name == "test_acc" and endpoint.paper_quantity.name == "max_test_acc"
    table = paper_values["tables"]["label_noise"]
    column = table["columns"].index("80%")
    assert endpoint.paper_effect(paper_values) == pytest.approx(
        table["rows"]["ConvNorm+BN"][column][0] - table["rows"]["BN"][column][0])


def test_the_speed_up_is_testable_where_log2_of_bn_best_epoch_exceeds_the_paper(tmp_path, paper_values):  # noqa: F811
    root = results_root(tmp_path)
    endpoint = ENDPOINTS["convergence speed"]
    # from the schedule: the paper's 1,024,000 images are 22 epochs of 88 minibatches of 512
    found = scope.scope(endpoint, "airbench", paper_values, root)
    assert found.testable and "4.46 doublings" in found.reason and "schedule" in found.reason
    # from records: BN reaches its best at its second epoch, so S is at most one doubling
    curve = (0.3, 0.7, 0.6, 0.65)
    for seed in (0, 1):
        write(root, "convergence", "airbench-cpu", seed,
              {"airbench": {m: record(0.7, history=curve, batch_size=128) for m in ("bn", "convnorm+bn")}})
    found = scope.scope(endpoint, "airbench-cpu", paper_values, root)
    assert found.testable is False and "1.00 doublings" in found.reason and "2 seeds" in found.reason
    assert found.reason.startswith("S attains at most")
    assert SpeedUp.bound(record(0.7, history=curve, batch_size=128), 10 ** 9) == 1.0


def test_data_scarcity_compares_the_absolute_number_of_images(paper_values):  # noqa: F811
    """Testable from the paper's smallest subset (4,500 images, below which it measured nothing)
    up to its subset of the same fraction (more images: its own trend expects a smaller gap)."""
    assert scope.scarcity_gap_grows(paper_values, "convnorm+bn", "bn")
    endpoint = ENDPOINTS["data scarcity 10 %"]
    full = scope.scope(endpoint, "airbench", paper_values)
    assert full.testable and full.reason.startswith("4,500 training images, the paper's 4,500")
    cpu = scope.scope(endpoint, "airbench-cpu", paper_values)
    assert cpu.testable is False and cpu.reason.startswith("2,500 training images") and "smallest" in cpu.reason


def test_the_share_of_correct_labels_under_symmetric_noise():
    assert scope.correct_share(0.8, 10) == pytest.approx(0.28)  # 80 % flipped to any of 10, 8 % land back
    assert scope.correct_share(0.0, 10) == 1 and scope.correct_share(1.0, 10) == pytest.approx(0.1)  # chance


def test_label_noise_is_testable_only_where_a_network_fits_wrong_labels(tmp_path, paper_values):  # noqa: F811
    """At chance, a network fits no wrong label; at 80 % noise one fits them once its training
    accuracy exceeds the 28 % of labels still correct."""
    root = results_root(tmp_path)
    endpoint = ENDPOINTS["label noise 80 %"]
    unknown = scope.scope(endpoint, "airbench-cpu", paper_values, root)
    assert unknown.testable is None and unknown.answer.startswith("not known until trained")
    chance = {rate: {m: record(0.1, history=(0.1, 0.12, 0.11)) for m in ("bn", "convnorm+bn")}
              for rate in ("0.4", "0.8")}
    write(root, "label-noise", "airbench-cpu", 0, chance)
    found = scope.scope(endpoint, "airbench-cpu", paper_values, root)
    assert found.testable is False and "at most 11 % with 28 %" in found.reason
    with pytest.raises(ValueError, match="no spread of the primary endpoint 'convergence speed'"):
        endpoints.sample_sizes(paper_values, root, "airbench-cpu")  # no pilot in this folder
    shutil.copytree(REPOSITORY_RESULTS / PILOT_FOLDER, root / PILOT_FOLDER)
    needed = {n.endpoint.name: n for n in endpoints.sample_sizes(paper_values, root, "airbench-cpu")}
    assert needed["label noise 80 %"].seeds is None and not needed["label noise 80 %"].testable
    chance["0.8"]["convnorm+bn"] = record(0.3, history=(0.1, 0.3, 0.25))  # learns, below the share
    write(root, "label-noise", "airbench-cpu", 0, chance)
    assert scope.scope(endpoint, "airbench-cpu", paper_values, root).testable is False
    chance["0.8"]["bn"] = record(0.3, history=(0.2, 0.3, 0.45))  # fits wrong labels: above 28 %
    write(root, "label-noise", "airbench-cpu", 0, chance)
    found = scope.scope(endpoint, "airbench-cpu", paper_values, root)
    assert found.testable is True and "at most 45 %" in found.reason
    assert scope.scope(ENDPOINTS["channel conditioning"], "airbench", paper_values, root).testable

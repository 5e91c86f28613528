"""The stored measurements that fix the airbench network's scales: the cpu scale's table
(``scripts/measure_cpu_scale.py``) and the full-width recipe check (``scripts/verify_recipe.py``).
Each test reads its record where it is stored; until a background measurement has finished
and its record is committed, its test is skipped, saying which."""
from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import pytest

from convnorm_lab.experiments import get_preset, run_record_path
from convnorm_lab.experiments.cpu_scale import MAX_MINUTES, MIN_ACCURACY, ROUNDS, RULES, SCALE_SEED, VAL_IMAGES
from convnorm_lab.experiments.presets import AIRBENCH_CPU_SCALE, AIRBENCH_CPU_VAL, CPU_RECIPE
from convnorm_lab.training import load_results

RESULTS = Path(__file__).resolve().parents[2] / "results"
#: each round's table of the cpu scale
TABLES = {number: RESULTS / "cpu-scale" / f"cpu-scale-round{number}.json" for number in ROUNDS}
#: the accuracy the airbench recipe is chosen to bring BN to on the official test images
RECIPE_TARGET = 0.935


@pytest.mark.parametrize("number", sorted(ROUNDS))
def test_the_cpu_scale_is_each_rounds_rule_applied_to_its_measured_table(number):
    """The stored choice is the round's rule on the stored rows, which are the round's declared
    candidates measured on the official images at the cpu recipe, one thread, the scale's own seed."""
    if not TABLES[number].exists():
        pytest.skip(f"round {number} of the cpu scale is still being measured ({TABLES[number].name})")
    stored = load_results(TABLES[number])
    provenance, rows = stored["provenance"], stored["results"]["rows"]
    assert provenance["seed"] == SCALE_SEED and provenance["recipe"] == CPU_RECIPE and provenance["threads"] == 1
    assert "official images" in provenance["data"] and not provenance["git_commit"].endswith("+dirty")
    assert [{k: row[k] for k in ("width", "images", "epochs")} for row in rows] == [asdict(c) for c in ROUNDS[number]]
    assert all(row["n_test"] == 10_000 for row in rows)
    chosen = stored["results"]["chosen"]
    assert chosen == RULES[number](rows)  # None where no candidate qualifies
    assert chosen is None or chosen["test_acc"] >= MIN_ACCURACY
    if number == 1:
        assert chosen is None or chosen["cpu_s"] <= 60 * MAX_MINUTES


def test_the_cpu_preset_trains_at_the_scale_the_last_round_chose_with_the_measured_recipe():
    last = max(ROUNDS)
    if not TABLES[last].exists():
        pytest.skip(f"round {last} of the cpu scale is still being measured ({TABLES[last].name})")
    chosen = load_results(TABLES[last])["results"]["chosen"]
    assert chosen is not None, f"round {last} chose no scale: the cpu preset has none to train at"
    preset = get_preset("airbench-cpu")
    assert AIRBENCH_CPU_SCALE == {"width": chosen["width"], "max_train": chosen["images"], "epochs": chosen["epochs"]}
    assert (preset.width, preset.max_train, preset.epochs) == (chosen["width"], chosen["images"], chosen["epochs"])
    assert preset.max_val == AIRBENCH_CPU_VAL == VAL_IMAGES and preset.max_test is None and preset.precision == "fp32"
    assert all(getattr(preset, name) == value for name, value in CPU_RECIPE.items())
    assert preset.rule is get_preset("airbench").rule


def _recipe_checks() -> list[Path]:
    return sorted((RESULTS / "airbench" / "runs").glob("airbench-seed*/airbench-bn-*.json"))


@pytest.mark.skipif(not _recipe_checks(), reason="the full-width recipe check is still training")
def test_the_full_width_recipe_brings_bn_to_its_target():
    accuracies = []
    for path in _recipe_checks():
        stored = load_results(path)
        record, provenance = stored["results"], stored["provenance"]
        assert path == run_record_path(record["run_key"], "airbench", provenance["seed"], RESULTS / "airbench")
        assert record["data"]["n_train"] == 45_000 and record["data"]["n_test"] == 10_000
        assert record["lr"] == get_preset("airbench").lr and not record["diverged"]
        accuracies.append(record["summary"]["test_acc_at_best_val"])
    assert sum(accuracies) / len(accuracies) >= RECIPE_TARGET, accuracies

"""convnorm_book.results.prose: comparisons as a list a reader can follow, every number from
the records (built here with known answers), symbols typeset, none of the page's forbidden
forms; and what the records' presets do not run, named."""
from __future__ import annotations

import pytest

from convnorm_book.results import comparisons, prose, records
from convnorm_lab.experiments import EXPERIMENTS
from result_files import paper_values, record, results_root, write  # noqa: F401 (fixtures)

FORBIDDEN = ("+-", "(tab:", "(table:", "(fig:", "harness", "R_κ", "ε_adv")


@pytest.fixture
def chapter(tmp_path, paper_values):
    """Label noise at 20 % and 80 %: ConvNorm+BN − BN +1.0, +1.3, +0.8 points at 20 % and
    +5 ± 0.01 at 80 %; ConvNorm − vanilla undecided; one seed's vanilla run at 80 % diverged."""
    root = results_root(tmp_path)
    leads = {("0.2", "convnorm+bn"): (1.0, 1.3, 0.8), ("0.8", "convnorm+bn"): (5.0, 5.01, 4.99),
             ("0.2", "convnorm"): (0.1, -0.3, 0.4), ("0.8", "convnorm"): (-0.2, 0.5, 0.1)}
    for seed in range(3):
        results = {}
        for rate in ("0.2", "0.8"):
            results[rate] = {"bn": record(0.4, max_test_acc=0.5), "none": record(0.4, max_test_acc=0.5,
                                                                                diverged=(seed, rate) == (2, "0.8"))}
            for method in ("convnorm+bn", "convnorm"):
                results[rate][method] = record(0.4, max_test_acc=0.5 + leads[rate, method][seed] / 100)
        write(root, "label-noise", "cpu", seed, results, robust_norms=["none", "bn", "convnorm", "convnorm+bn"],
              noise_rates=[0.2, 0.8])
    return comparisons.Chapter.of([records.stored("label-noise", root, presets=("cpu",))], paper_values)


def test_describe_lists_each_comparison_with_its_effect_and_reading(chapter):
    text = prose.describe(chapter("label-noise", a="convnorm+bn"))
    lines = text.split("\n")
    assert lines[0] == ("- 20%: +1.03 points (95 % interval +0.41 to +1.66, 3 seeds); rules out zero and the paper's "
                        "+1.96: ours is smaller.")
    assert lines[1] == ("- 80%: +5.000 points (95 % interval +4.975 to +5.025, 3 seeds); rules out zero and the "
                        "paper's +15.44: ours is smaller.")
    assert not any(form in text for form in FORBIDDEN)


def test_describe_says_how_a_failed_training_entered(chapter):
    text = prose.describe(chapter("label-noise", a="convnorm", b="none"))
    assert "vanilla failed to train in 1 of 3 seeds (entered as measured)" in text
    assert text.endswith("A training that failed to train enters with the accuracy it measured (chance, 1/K, where "
                         "it diverged), so that a failure counts against its method.")


def test_symbols_are_typeset_for_the_page(tmp_path, paper_values):
    root = results_root(tmp_path)
    for seed in (0, 1):
        write(root, "conditioning", "cpu", seed,
              {m: {**record(0.4), "rho": 1.0 + 0.1 * seed + (m == "convnorm"), "layers": None}
               for m in EXPERIMENTS["conditioning"].schema.methods})
    data = records.stored("conditioning", root, presets=("cpu",))
    text = prose.describe(comparisons.Chapter.of([data], paper_values)("conditioning"))
    assert "$R_\\kappa$" in text and "R_κ" not in text


def test_not_tested_names_networks_and_groups_the_preset_does_not_run(tmp_path, paper_values):
    """Label noise at 20 % and 80 % with the four basic networks: the paper's baselines
    under noise and its 40 % and 60 % rates are not run; nothing is missing where the
    preset runs everything."""
    root = results_root(tmp_path)
    write(root, "label-noise", "cpu", 0, {r: {m: record(0.4) for m in ("none", "bn", "convnorm", "convnorm+bn")}
                                          for r in ("0.2", "0.8")})
    data = records.stored("label-noise", root, presets=("cpu",))
    missing = comparisons.not_run(data, paper_values)
    assert missing.comparisons == ("ConvNorm+BN against SN+BN, ONI+BN and OCNN+BN",)
    assert missing.groups == ("40%", "60%")
    text = prose.not_tested([data], paper_values)
    assert text == ("Not run at the reduced scale, and so not compared: under label noise, ConvNorm+BN against "
                    "SN+BN, ONI+BN and OCNN+BN (networks this scale does not train) and the paper's label-noise rates "
                    "40% and 60%.")
    assert not any(form in text for form in FORBIDDEN)
    write(root, "ablation", "cpu", 0, {m: record(0.4) for m in EXPERIMENTS["ablation"].schema.methods})
    assert prose.not_tested([records.stored("ablation", root, presets=("cpu",))], paper_values) == ""

"""convnorm_book.results.prose: verdicts as sentences a reader can follow, every number
from the records (built here with known answers), none of the page's forbidden forms."""
from __future__ import annotations

import re

import pytest

from convnorm.experiments import EXPERIMENTS
from convnorm_book.results import prose, records, verdicts
from result_files import record, reference, results_root, write  # noqa: F401 (fixtures)

FORBIDDEN = ("+-", "(tab:", "(table:", "(fig:", "harness", "\n- ", "**")


@pytest.fixture
def chapter(tmp_path, reference):
    """Label noise at 20 % and 80 %: ConvNorm+BN − BN +1.0, +1.3, +0.8 points at 20 %
    (supported alone, not after Holm) and +5 ± 0.01 at 80 % (stands); ConvNorm −
    vanilla undecided; one seed's vanilla run at 80 % diverged."""
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
    return verdicts.Chapter.of([records.stored("label-noise", root, presets=("cpu",))], reference)


def test_summary_counts_the_verdicts_before_and_after_the_correction(chapter):
    text = prose.summary(chapter("label-noise"), chapter)
    assert text.startswith("At the reduced scale, we make four comparisons here and test each as a difference in "
                           "the paper's direction.")
    assert "Tested alone, two are supported (ConvNorm+BN − BN, 20%; ConvNorm+BN − BN, 80%)" in text
    assert "after Holm's correction for the chapter's four comparisons, one verdict stands (ConvNorm+BN − BN, 80%)" \
        in text
    assert "ConvNorm − vanilla: 1 of 3 seeds diverged" in text
    assert not any(form in text for form in FORBIDDEN)


def test_summary_sets_sizes_beside_the_papers(chapter):
    text = prose.summary(chapter("label-noise"), chapter)
    # +5 at 80 % against the paper's +15.44: smaller; +1.03 at 20 % against +1.96: outside a narrow interval
    assert "The paper's difference lies inside our interval in one of four; ours is smaller in three." in text
    assert "Our intervals are 0.0497 to 8.89 points wide, the paper's differences 1.81 to 15.44 points in size." in text


def test_verdict_sentence_says_when_the_correction_changes_a_verdict(chapter):
    weak = chapter("label-noise", a="convnorm+bn")[0]
    text = prose.verdict_sentence(weak, len(chapter.tested))
    assert text.startswith("ConvNorm+BN − BN (20%, maximum test accuracy over the epochs): +1.03 points "
                           "(95 % interval")
    assert "the paper's +1.96 points lies" in text
    assert re.search(r"Supported tested alone \(p = 0\.0\d+\), but not after correcting for four comparisons "
                     r"\(adjusted p = 0\.\d+\): inconclusive at the reduced scale\.$", text)
    strong = chapter("label-noise", a="convnorm+bn")[1]
    assert prose.verdict_sentence(strong).endswith("Supported at the reduced scale.")


def test_multiplicity_states_the_count_the_chance_verdicts_and_the_method(chapter):
    text = prose.multiplicity(chapter)
    assert text.startswith("This chapter tests four comparisons against the paper's claims.")
    assert "about 0.2 of them would come out supported or contradicted by chance alone" in text
    assert "Holm's method" in text
    assert text.endswith("Tested one by one, two are supported and none contradicted; after the correction, one is "
                         "supported and none contradicted.")
    assert prose.multiplicity(verdicts.Chapter(())) == "This chapter tests none of the paper's claims on the " \
                                                      "records shown."


def test_parity_is_named_with_its_margin(chapter):
    from dataclasses import replace

    from convnorm_book.results import claims

    v = chapter("label-noise", a="convnorm")[0]
    parity = replace(v, kind=claims.PARITY, claim=replace(v.claim, kind=claims.PARITY, margin=1.0, sign=None),
                     adjusted=None)
    # +0.07 points, 90 % interval inside ±1
    assert prose.verdict_sentence(parity).endswith("Tested as parity within ±1.00 points. Parity shown at the "
                                                   "reduced scale.")
    assert "test each as parity within ±1.00 points" in prose.summary([parity])


def test_count_words():
    assert prose.count(0, "comparison") == "no comparisons" and prose.count(1, "comparison") == "one comparison"
    assert prose.count(23, "comparison") == "23 comparisons"


def test_not_tested_names_networks_and_groups_the_preset_does_not_run(tmp_path, reference):
    """Label noise at 20 % and 80 % with the four basic networks: the paper's baselines
    under noise and its 40 % and 60 % rates are not run; nothing is missing where the
    preset runs everything."""
    root = results_root(tmp_path)
    write(root, "label-noise", "cpu", 0, {r: {m: record(0.4) for m in ("none", "bn", "convnorm", "convnorm+bn")}
                                          for r in ("0.2", "0.8")})
    data = records.stored("label-noise", root, presets=("cpu",))
    missing = verdicts.not_run(data, reference)
    assert missing.comparisons == ("ConvNorm+BN against SN+BN, ONI+BN and OCNN+BN",)
    assert missing.groups == ("40%", "60%")
    text = prose.not_tested([data], reference)
    assert text == ("Not run at the reduced scale, and so not tested: under label noise, ConvNorm+BN against SN+BN, "
                    "ONI+BN and OCNN+BN (networks this scale does not train) and the paper's label-noise rates 40% "
                    "and 60%.")
    assert not any(form in text for form in FORBIDDEN)
    write(root, "ablation", "cpu", 0, {m: record(0.4) for m in EXPERIMENTS["ablation"].schema.methods})
    assert prose.not_tested([records.stored("ablation", root, presets=("cpu",))], reference) == ""


def test_labels_with_commas_are_listed_with_semicolons():
    assert prose._named(["vs ONI, PGD-10", "vs ONI, PGD-20"]) == "vs ONI, PGD-10; vs ONI, PGD-20"
    assert prose._named(["a", "b", "c", "d"]) == "a, b, c and 1 more"
    assert prose._named(["a, 1", "b", "c", "d"]) == "a, 1; b; c; 1 more"

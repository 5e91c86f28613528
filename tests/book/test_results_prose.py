"""convnorm_book.results.prose: what the records' presets do not run, named (records built
here with known answers)."""
from __future__ import annotations

from convnorm_book.results import comparisons, prose, records
from convnorm_lab.experiments import EXPERIMENTS
from result_files import paper_values, record, results_root, write  # noqa: F401 (fixtures)

FORBIDDEN = ("+-", "(tab:", "(table:", "(fig:", "harness", "R_κ", "ε_adv")


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

"""The lab's result files name the hardware behind their numbers: a record made on a CPU carries the
processor's model and instruction sets (the same timing differs several-fold between processors),
and the commit of the lab's checkout."""
from __future__ import annotations

from convnorm_lab.training.results import cpu_info, git_commit, provenance


def test_a_record_made_on_the_cpu_names_its_processor():
    block = provenance("runtime", "smoke", 0, None, 1.0, device="cpu")
    assert block["cpu"]["model"] in block["device"]
    assert block["cpu"]["instruction_sets"] == cpu_info()["instruction_sets"]


def test_a_record_names_the_commit_of_the_labs_checkout_and_one_process():
    block = provenance("runtime", "smoke", 0, None, 1.0, device="cpu")
    assert block["git_commit"] == git_commit() and len(git_commit().removesuffix("+dirty")) == 40
    assert block["processes"] == 1

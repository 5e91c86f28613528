"""Result files name the hardware behind their numbers: a record made on a CPU carries the
processor's model and instruction sets (the same timing differs several-fold between processors)."""
from __future__ import annotations

from pathlib import Path

import torch

from convnorm_lab.training.results import INSTRUCTION_SETS, cpu_info, provenance


def test_cpu_info_names_the_model_and_its_instruction_sets():
    cpu = cpu_info()
    assert cpu["model"] and cpu["logical_cpus"] >= 1
    assert set(cpu["instruction_sets"]) <= set(INSTRUCTION_SETS)
    assert cpu["torch_cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    if Path("/proc/cpuinfo").exists():
        flags = next((line for line in Path("/proc/cpuinfo").read_text().splitlines()
                      if line.startswith(("flags", "Features"))), "").split()
        assert cpu["instruction_sets"] == [name for name in INSTRUCTION_SETS if name in flags]
        assert len(cpu["load_average"]) == 3


def test_a_record_made_on_the_cpu_names_its_processor():
    block = provenance("runtime", "smoke", 0, None, 1.0, device="cpu")
    assert block["cpu"]["model"] in block["device"]
    assert block["cpu"]["instruction_sets"] == cpu_info()["instruction_sets"]

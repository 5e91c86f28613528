"""``convnorm.machine`` names the hardware behind a number: a CPU's model and instruction sets (the
same timing differs several-fold between processors), or the GPU."""
from __future__ import annotations

from pathlib import Path

import torch

from convnorm.machine import INSTRUCTION_SETS, cpu_info, device_name, resolve_device


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


def test_a_cpus_name_gives_its_model_and_the_threads_torch_uses():
    threads = torch.get_num_threads()
    assert device_name("cpu") == f"cpu ({cpu_info()['model']}, {threads} thread{'' if threads == 1 else 's'})"


def test_no_device_means_the_one_the_code_runs_on():
    assert resolve_device(None).type == ("cuda" if torch.cuda.is_available() else "cpu")
    assert resolve_device("cpu") == torch.device("cpu")

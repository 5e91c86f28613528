"""benchmarks/bench_layer.py's records say which processor measured them: its model, its vector
instruction sets and the load it was under (ratios differ several-fold between processors)."""
from __future__ import annotations

import argparse
from pathlib import Path

import bench_layer
import torch


def test_cpu_info_names_the_model_and_its_instruction_sets():
    cpu = bench_layer.cpu_info()
    assert cpu["model"] and cpu["logical_cpus"] >= 1
    assert set(cpu["instruction_sets"]) <= set(bench_layer.INSTRUCTION_SETS)
    assert cpu["torch_cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    if Path("/proc/cpuinfo").exists():
        flags = next((line for line in Path("/proc/cpuinfo").read_text().splitlines()
                      if line.startswith(("flags", "Features"))), "").split()
        assert cpu["instruction_sets"] == [name for name in bench_layer.INSTRUCTION_SETS if name in flags]
        assert len(cpu["load_average"]) == 3
    assert cpu["model"] in bench_layer.cpu_line() and cpu["torch_cpu_capability"] in bench_layer.cpu_line()


def test_every_whole_step_record_carries_the_cpu():
    args = argparse.Namespace(batch=32, device="cpu", computation="rule")
    cpu = bench_layer.cpu_info()
    assert bench_layer.setup(args, "", cpu)["cpu"] is cpu

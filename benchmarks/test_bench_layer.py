"""benchmarks/bench_layer.py's records and printed lines say which processor measured them
(:func:`convnorm_lab.training.results.cpu_info`: ratios differ several-fold between processors)."""
from __future__ import annotations

import argparse

import bench_layer


def test_the_printed_line_names_the_processor():
    cpu = bench_layer.cpu_info()
    assert cpu["model"] in bench_layer.cpu_line() and cpu["torch_cpu_capability"] in bench_layer.cpu_line()


def test_every_whole_step_record_carries_the_cpu():
    args = argparse.Namespace(batch=32, device="cpu", computation="rule")
    cpu = bench_layer.cpu_info()
    assert bench_layer.setup(args, "", cpu)["cpu"] is cpu

"""convnorm_book.chapters.engineering_notes: the recorded training-step times, one row per device and setting, and
the ratio measured as the paper measured; the link to the raw records."""
from __future__ import annotations

from pathlib import Path

import yaml

from convnorm_book.chapters.engineering_notes import (
    AUTHORS,
    BASELINE,
    CONVNORM,
    like_the_paper,
    records_link,
    step_times,
    summary_table,
)
from convnorm_lab.training import save_results


def _record(folder, name, experiment, day, results):
    save_results(folder / name, {"experiment": experiment, "finished_utc": f"{day}T00:00:00+00:00"}, results)


def test_the_three_kinds_of_record_make_one_table_with_ratios_measured_side_by_side(tmp_path):
    cpu = {"model": "AMD EPYC"}
    _record(tmp_path, "bench_layer.json", "bench_layer", "2026-11-01",
            {"setup": {"device": "cpu (x86_64, 1 threads)", "cpu": cpu, "batch": 32, "computation": "rule"},
             "time": {"conv2d+bn": {"median_s": 1.0}, "convnorm2d+bn": {"median_s": 1.5}}})
    _record(tmp_path, "gpu_calibration_h200.json", "calibrate_gpu", "2026-11-02",
            {"setup": {"gpu": "NVIDIA H200", "batch": 128},
             "time": {"eager": {"conv2d+bn": {"seconds_per_step": 0.01}, "convnorm2d+bn": {"seconds_per_step": 0.04},
                                "authors+bn": {"seconds_per_step": 0.03}}}})
    _record(tmp_path, "bench_gpu_h100.json", "bench_gpu", "2026-11-03",
            {"setup": {"device": "NVIDIA H100", "bf16_batch": 512, "fp32_batch": 128},
             "steps": {"eager": {"bf16": {"conv2d+bn": 0.01, "convnorm2d+bn[fused]": 0.018,
                                          "convnorm2d+bn[fft]": 0.05}},
                       "graphed": {"bf16": {"conv2d+bn": 0.008, "convnorm2d+bn[fused]": 0.014,
                                            "authors+bn": "RuntimeError: cannot capture"}}}})
    rows = step_times(tmp_path)
    assert [row.measured for row in rows] == sorted((row.measured for row in rows), reverse=True)
    assert {row.record for row in rows} == {"bench_layer.json", "gpu_calibration_h200.json", "bench_gpu_h100.json"}
    cpu_row = next(row for row in rows if row.network == CONVNORM and not row.gpu)
    assert (cpu_row.device, cpu_row.ratio, cpu_row.computation) == ("AMD EPYC, 1 thread", 1.5, "rule")
    fused = [row for row in rows if row.computation == "fused"]
    assert {(row.mode, round(row.ratio, 6)) for row in fused} == {("eager", 1.8), ("CUDA graph", 1.75)}
    assert all(row.precision == "bfloat16" and row.batch == 512 for row in fused)
    assert not any(row.network == AUTHORS and row.mode == "CUDA graph" for row in rows)  # a failed capture: no row
    assert all(row.ratio == 1.0 for row in rows if row.network == BASELINE)
    best = like_the_paper(rows)  # as the paper measured: a GPU, float32, eager; not the bfloat16 graphs
    assert (best.device, best.precision, best.mode, best.ratio) == ("NVIDIA H200", "float32", "eager", 4.0)
    table = summary_table(rows)  # one row per device and setting, the GPUs first
    assert [row[0].split("\n")[0] for row in table.rows] == ["NVIDIA H100", "NVIDIA H100", "NVIDIA H200",
                                                             "AMD EPYC, 1 thread"]
    h200 = next(row for row in table.rows if row[0].startswith("NVIDIA H200"))
    assert h200[0].endswith("Conv2d+BN: 10.0 ms") and h200[1:] == ["4.00×", "3.00×"]
    eager_bf16 = next(row for row in table.rows if "bfloat16, batch 512, eager" in row[0])
    assert eager_bf16[1:] == ["1.80×", "—"]  # the fastest filter timed, and no authors' step


def test_the_summary_keeps_the_newest_record_and_leaves_out_forced_computations(tmp_path):
    cpu = {"model": "EPYC"}
    for name, day, computation, seconds in [("bench_layer_old.json", "2026-10-01", "rule", 2.0),
                                            ("bench_layer.json", "2026-11-01", "rule", 1.5),
                                            ("bench_layer_forced.json", "2026-12-01", "frequency_domain", 1.2)]:
        _record(tmp_path, name, "bench_layer", day,
                {"setup": {"device": "cpu (x86_64, 2 threads)", "cpu": cpu, "batch": 32, "computation": computation},
                 "time": {"conv2d+bn": {"median_s": 1.0}, "convnorm2d+bn": {"median_s": seconds}}})
    rows = step_times(tmp_path)
    (row,) = summary_table(rows).rows
    assert row[1] == "1.50×"  # the newest record of the package's own choice
    assert like_the_paper(rows).ratio == 1.5


def test_the_papers_setting_falls_back_to_the_cpu(tmp_path):
    _record(tmp_path, "bench_layer.json", "bench_layer", "2026-11-01",
            {"setup": {"device": "cpu (x86_64, 2 threads)", "cpu": {"model": "EPYC"}, "batch": 32},
             "time": {"conv2d+bn": {"median_s": 1.0}, "convnorm2d+bn": {"median_s": 1.6}}})
    assert like_the_paper(step_times(tmp_path)).device == "EPYC, 2 threads"
    _record(tmp_path, "gpu_calibration_h200.json", "calibrate_gpu", "2026-10-01",
            {"setup": {"gpu": "NVIDIA H200", "batch": 128},
             "time": {"eager": {"conv2d+bn": {"seconds_per_step": 0.01}, "convnorm2d+bn": {"seconds_per_step": 0.04}}}})
    best = like_the_paper(step_times(tmp_path))  # an older GPU measurement comes before the newest CPU one
    assert best.device == "NVIDIA H200" and best.ratio == 4.0
    assert like_the_paper([]) is None


def test_the_records_link_points_to_the_benchmark_records_of_the_configured_repository(tmp_path):
    root = Path(__file__).resolve().parents[2]
    repository = yaml.safe_load((root / "_config.yml").read_text())["repository"]
    link = records_link(root)
    assert link.url == f"{repository['url']}/tree/{repository['branch']}/benchmarks/results"
    assert (root / "benchmarks" / "results").is_dir()  # the folder the link names, in this checkout
    assert link._repr_markdown_() == f"[{link.text}]({link.url})"
    (tmp_path / "_config.yml").write_text("repository:\n  url: https://example.org/a/b/\n  branch: dev\n")
    assert records_link(tmp_path).url == "https://example.org/a/b/tree/dev/benchmarks/results"

"""The GPU protocol's whole path on a CPU, in smoke form: the plan and its prices,
``scripts/gpu_runs.py`` training within a deadline and packing every finished training
(and nothing half-done), bad requests refused before anything starts, and
``scripts/device_session.sh`` end to end, as a lent window runs it."""
from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from cifar_data import cifar_root, random_cifar_root  # noqa: F401 (fixtures)
from convnorm_book.results.deviations import protocol_deviations
from convnorm_lab.experiments import PRESETS, gpu_queue, planned_runs, step_timing
from convnorm_lab.experiments.learning_rate import trial_run
from convnorm_lab.training import load_results, save_results

ROOT = Path(__file__).resolve().parents[2]
SMOKE = "fast-smoke"


def test_smoke_form_keeps_the_protocol_structure_and_recipe():
    full, smoke = PRESETS["fast"], PRESETS[SMOKE]
    assert smoke.arch is full.arch is None  # the paper's networks
    assert smoke.convergence_archs == full.convergence_archs and smoke.robust_norms == full.robust_norms
    assert (smoke.schedule, smoke.nesterov, smoke.precision) == (full.schedule, full.nesterov, full.precision)
    assert smoke.noise_rates == (0.4,) and smoke.fractions == (0.1,)  # the core's
    assert smoke.max_batches_per_epoch == 2 and smoke.reduced


def test_the_fast_recipe_scales_the_papers_rate_with_the_batch():
    fast, paper = PRESETS["fast"], PRESETS["paper"]
    assert fast.lr / fast.batch_size == paper.lr / paper.batch_size
    assert fast.schedule == "one-cycle" and fast.precision == "mixed" and fast.nesterov
    assert (fast.max_train, fast.max_val, fast.max_test) == (None, None, None)  # the full split


@pytest.mark.parametrize("preset", ["cpu", "fast", "short-schedule", "paper"])
def test_protocol_deviations_name_a_source_and_a_reason(preset):
    rows = protocol_deviations(preset)
    assert all(set(row) == {"setting", "paper", "here", "source", "reason"} for row in rows)
    assert all(row["source"] in ("paper", "authors' code", "this book") and row["reason"] for row in rows)
    settings = {row["setting"] for row in rows}
    for always in ("OCNN penalty", "baselines with BatchNorm", "free adversarial training",
                   "ConvNorm's running normalizer", "conditioning study", "data-scarcity subsets"):
        assert always in settings, (preset, always)
    assert ("CIFAR-100" in settings) == (preset != "paper")  # the paper preset runs CIFAR-100


def test_fast_deviations_list_every_change_of_the_recipe():
    rows = {row["setting"]: row for row in protocol_deviations("fast")}
    for setting in ("schedule (CIFAR-10)", "batch size and learning rate", "momentum", "weight decay", "arithmetic",
                    "data-scarcity training length"):
        assert rows[setting]["source"] == "this book" or setting == "data-scarcity training length", setting
    assert "one-cycle" in rows["schedule (CIFAR-10)"]["here"] and "512" in rows["batch size and learning rate"]["here"]
    assert "training images" not in rows and "network" not in rows  # the full split, the paper's networks


def test_trainings_and_their_timing_keep_channels_last_only_for_mixed_precision_on_a_gpu(monkeypatch):
    """One rule for both, so that a step is timed in the layout it will train in; a network
    whose ConvNorm layers filter by FFTs or dense matrices stays contiguous (they would convert
    it at every layer), one whose filter is fused keeps channels-last."""
    import torch

    from convnorm import _fused_filter
    from convnorm.functional import current_policy, use_policy

    cuda, cpu = torch.device("cuda"), torch.device("cpu")
    assert PRESETS["fast"].channels_last(cuda, "bn") and not PRESETS["fast"].channels_last(cpu, "bn")
    assert not PRESETS["short-schedule"].channels_last(cuda, "bn") and not PRESETS["cpu"].channels_last(cuda, "bn")
    monkeypatch.setattr(_fused_filter, "available", lambda device: True)  # Triton as on a GPU machine
    monkeypatch.setattr(_fused_filter, "_device_limits", lambda device: ((9, 0), 227 * 1024))  # an H100
    assert not PRESETS["fast"].channels_last(cuda, "convnorm+bn")  # the known-good filter: FFTs
    with use_policy(current_policy().filtering("fused", "cuda")):
        assert PRESETS["fast"].channels_last(cuda, "convnorm+bn") and PRESETS["fast"].channels_last(cuda, "bn")
    with use_policy(current_policy().filtering("fft", "cuda")):
        assert not PRESETS["fast"].channels_last(cuda, "convnorm+bn") and PRESETS["fast"].channels_last(cuda, "bn")
    assert not step_timing._trainer(SMOKE, "resnet18", "bn", cpu, 1, None).config.channels_last


def test_requests_are_parsed_and_bad_ones_refused():
    request = gpu_queue.Request.parse("generalization:0-2/cifar10-bn,cifar10-convnorm+bn")
    assert request.seeds == (0, 1, 2) and request.runs == ("cifar10-bn", "cifar10-convnorm+bn")
    assert gpu_queue.Request.parse("ablation:0,2").seeds == (0, 2)
    for text, message in (("generalization:3-1", "FIRST <= LAST"), ("generalisation:0", "experiment must be"),
                          ("runtime:0", "trains nothing"), ("ablation", "expected EXPERIMENT:SEEDS"),
                          ("ablation:-1", "FIRST <= LAST")):
        with pytest.raises(ValueError, match=message):
            gpu_queue.Request.parse(text)


def _primary(preset: str = SMOKE) -> tuple:
    from convnorm_book.results import endpoints, paper_values

    needed = endpoints.sample_sizes(paper_values.load_paper_values(ROOT / "results"), ROOT / "results", preset)
    return endpoints.requests(preset, needed), needed


def test_the_queue_checks_the_floor_then_trains_the_primary_endpoints_seed_by_seed(random_cifar_root, tmp_path):
    primary, needed = _primary()
    groups = gpu_queue.queued_groups(primary)
    assert groups[0] == (gpu_queue.FLOOR,) and groups[1] == primary and len(groups) == 2 + len(gpu_queue.QUEUE)
    jobs = gpu_queue.jobs(groups[:2], SMOKE, tmp_path, random_cifar_root)
    # the BN network's learning-rate trials first, the one at its own rate checked against the floor
    floor = [job for job in jobs if job.stage[0] == 0]
    assert [job.run for job in floor] == [trial_run("bn", r) for r in PRESETS[SMOKE].lr_reductions] + ["cifar10-bn"]
    assert gpu_queue.checks_floor(floor[0]) and floor[-1].pending and floor[0].stage < floor[-1].stage
    primary_jobs = [job for job in jobs if job.stage[0] == 1]
    trials = [job for job in primary_jobs if job.stage[1] == -1]
    assert primary_jobs[:len(trials)] == trials
    primary_jobs = primary_jobs[len(trials):]
    # each network's trials once, before any of its runs; the BN network's were the floor's
    assert {job.settings["norm"] for job in trials} == {job.settings["norm"] for job in primary_jobs} - {"bn"}
    assert [job.seed for job in primary_jobs] == sorted(job.seed for job in primary_jobs)  # seed by seed
    seeds = {n.endpoint.experiment: n.seeds for n in needed if n.endpoint.runs_at(PRESETS[SMOKE]) and n.seeds}
    for experiment, count in seeds.items():
        assert max(job.seed for job in primary_jobs if job.experiment == experiment) == count - 1
    assert {job.settings["data"].get("label_noise", 0) for job in primary_jobs} == {0, 0.4}  # no 80 % at smoke
    assert all(job.pending for job in primary_jobs)  # keyed once their trials are stored
    assert {job.settings["data"]["train_fraction"] for job in primary_jobs} == {1.0, 0.1}


def _calibration(tmp_path, seconds_per_image: float, jobs: int = 1, gpu: str = "cpu (test)",
                 norms=("bn", "convnorm+bn"), precision: str = "fp32", filter: str | None = None) -> Path:
    """A calibration record with every network of ``norms`` at one step time, timed with
    ConvNorm's ``filter`` (None: the package's rule)."""
    entries = [{"arch": "resnet18", "norm": norm, "precision": precision, "batch": 50, "cuda_graph": False,
                "train_s_per_image": seconds_per_image, "forward_s_per_image": seconds_per_image / 3}
               for norm in norms]
    results = {"setup": {"gpu": gpu}, "step_times": entries,
               "concurrency": {"jobs": jobs, "slowdown": 1.0, "mode": "test"}}
    if filter is not None:
        results["filter"] = filter
    return save_results(tmp_path / f"calibration-{gpu.split()[-1]}-{precision}-{filter}.json",
                        {"experiment": "calibrate_gpu"}, results)


def test_step_times_prefer_the_named_gpu_and_name_another_gpu_standing_in(tmp_path):
    h100 = _calibration(tmp_path, 2e-3, gpu="NVIDIA H100", norms=("bn",))
    h200 = _calibration(tmp_path, 1e-3, gpu="NVIDIA H200", norms=("bn", "convnorm+bn"), precision="bf16")
    h200_fp32 = _calibration(tmp_path, 5e-3, gpu="NVIDIA H200", norms=("bn",))
    times = gpu_queue.StepTimes.from_records([h100, h200, h200_fp32], "H100", batch=50)
    found, note = times.lookup("resnet18", "bn", "fp32")
    assert found.train == 2e-3 and note is None  # the H100's, though the H200 measured it later
    found, note = times.lookup("resnet18", "convnorm+bn", "bf16")
    assert found.train == 1e-3 and note == "resnet18 convnorm+bn bf16 measured on an NVIDIA H200 only"
    found, note = times.lookup("resnet18", "bn", "bf16")  # the same combination on another GPU comes first
    assert found.train == 1e-3 and note == "resnet18 bn bf16 measured on an NVIDIA H200 only"
    found, note = times.lookup("vgg16", "sn+bn", "fp32")  # ResNet18's, scaled by the operations
    ratio = gpu_queue.network_operations("vgg16", None) / gpu_queue.network_operations("resnet18", None)
    assert found.train == pytest.approx(2e-3 * ratio) and found.forward == pytest.approx(2e-3 / 3 * ratio)
    assert note == (f"vgg16 sn+bn fp32 not measured: resnet18 bn fp32 at batch 50, scaled by the networks' forward "
                    f"operations (x{ratio:.3f}), stands in")


def test_a_network_without_step_times_is_priced_by_its_operations_at_its_width():
    """The airbench network at width 64 does about a fifth of ResNet18's operations, a
    quarter of that at width 32 (its convolutions' channels halve), and ConvNorm keeps
    the ratio to BN measured on ResNet18."""
    measured = (("bn", 1e-5), ("convnorm+bn", 7e-5))
    entries = [{"arch": "resnet18", "norm": norm, "precision": "bf16", "batch": 512, "cuda_graph": True,
                "train_s_per_image": t, "forward_s_per_image": None} for norm, t in measured]
    times = gpu_queue.StepTimes({key: time for e in entries for key, time in gpu_queue._entries(
        {"setup": {"gpu": "NVIDIA H100"}, "step_times": [e]}, "test")}, "H100")
    wide, _ = times.lookup("airbench", "bn", "bf16", 64)
    narrow, _ = times.lookup("airbench", "bn", "bf16", 32)
    convnorm, note = times.lookup("airbench", "convnorm+bn", "bf16", 64)
    assert 0.15 < wide.train / 1e-5 < 0.3 and 3 < wide.train / narrow.train < 4.2
    assert convnorm.train / wide.train == pytest.approx(7.0) and "scaled by the networks' forward operations" in note


def test_the_queue_prices_its_trainings_from_step_times(random_cifar_root, tmp_path):
    times = gpu_queue.StepTimes.from_records([_calibration(tmp_path, 1e-3)], batch=50)
    first = gpu_queue.costs(((gpu_queue.FLOOR,),), SMOKE, tmp_path, times, random_cifar_root)
    # the BN network's three learning-rate trials and its run, priced at its own rate until they choose
    assert [(line.experiment, line.trainings) for line in first] == [("generalization", 4)]
    job = gpu_queue.jobs(((gpu_queue.FLOOR,),), SMOKE, tmp_path, random_cifar_root)[0]
    data, config = job.settings["data"], job.settings["config"]
    expected = config.epochs * (100 * 1e-3 + (data["n_val"] + data["n_test"]) * 1e-3 / 3)  # 2 batches of 50
    assert gpu_queue.estimate(job, times, "fp32").seconds == pytest.approx(expected)
    _, stand_in = times.lookup("vgg16", "oni+bn", "bf16")
    assert "vgg16 oni+bn bf16 not measured" in stand_in and "resnet18 bn fp32" in stand_in


def _gpu_runs(*args: str, env: dict | None = None, timeout: int = 300, cwd: Path | None = None
              ) -> subprocess.CompletedProcess:
    sources = os.pathsep.join([str(ROOT), str(ROOT / "lab"), str(ROOT / "book_code")])
    env = {**os.environ, "PYTHONPATH": sources, "OMP_NUM_THREADS": "1", **(env or {})}
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "gpu_runs.py"), *args], env=env,
                          capture_output=True, text=True, timeout=timeout, cwd=cwd)


@functools.cache
def _script(name: str, path: Path):
    """The module of a script that is not in a package (``scripts/``, ``benchmarks/``)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _checked(data_dir, tmp_path, calibration: Path | None, jobs: int | None = None, filter: str | None = None):
    """``scripts/gpu_runs.py``'s checked arguments for a smoke request: (queue, step times,
    slowdown) and the namespace, with the values it settled."""
    import argparse

    args = argparse.Namespace(preset=SMOKE, jobs=jobs, deadline=60.0, requests=["generalization:0"],
                              calibration=calibration, output=str(tmp_path), data_dir=data_dir, filter=filter)
    return _script("gpu_runs_script", ROOT / "scripts" / "gpu_runs.py").checked(args), args


def test_the_measured_slowdown_prices_only_as_many_trainings_at_once_as_were_measured(random_cifar_root, tmp_path):
    calibration = _calibration(tmp_path, 1e-3, jobs=2)  # two at once measured: each 1.0x as long

    def slowdown(jobs):
        (_, _, measured), args = _checked(random_cifar_root, tmp_path, calibration, jobs)
        return measured, args.jobs

    assert slowdown(None) == (1.0, 2)  # the calibration's number, at its measured slowdown
    assert slowdown(1) == (1.0, 1)
    assert slowdown(6) == (6.0, 6)  # not measured: no gain assumed


def test_the_trainings_filter_as_the_benchmark_chose(random_cifar_root, tmp_path, monkeypatch):
    """The filter the window's benchmark chose, passed through the calibration (or the option);
    a worker trains inside that policy, and a run record says which it was
    (``test_device_session_rehearsed_in_smoke_form``)."""
    from convnorm.functional import current_policy
    from convnorm_lab.experiments import worker

    def chosen(calibration, **option):
        return _checked(random_cifar_root, tmp_path, calibration, **option)[1].filter

    assert chosen(_calibration(tmp_path, 1e-3, filter="dense")) == "dense"
    assert chosen(_calibration(tmp_path, 1e-3)) is None  # a calibration that chose nothing: the package's rule
    assert chosen(None) is None
    assert chosen(_calibration(tmp_path, 1e-3, filter="dense"), filter="fft") == "fft"

    seen = []
    monkeypatch.setattr(worker, "run_experiment",
                        lambda *a, **k: seen.append(current_policy()) or {"skipped": [], "keys": {}})
    answers = []
    jobs = [{"experiment": "ablation", "preset": SMOKE, "seed": 0, "run": "x", "output": str(tmp_path),
             "filter": filter} for filter in ("dense", "fused", None)]
    worker.serve([json.dumps(job) for job in jobs], answers.append)
    assert [a["ok"] for a in answers] == [True, True, True]
    assert "cuda" in seen[0].dense_transform_devices and "cuda" not in seen[0].fused_filter_devices
    assert "cuda" in seen[1].fused_filter_devices and seen[2] == current_policy()


def test_the_benchmark_chooses_the_fastest_correct_filter():
    bench = _script("bench_gpu_script", ROOT / "benchmarks" / "bench_gpu.py")
    checks = {"fused": {"ok": True}, "fft": {"ok": True}, "dense": {"ok": False}}
    eager = {"bf16": {"convnorm2d+bn[fused]": 2.0, "convnorm2d+bn[fft]": 1.0, "convnorm2d+bn[dense]": 0.1}}
    assert bench.choose(checks, {"eager": eager}) == "fft"  # dense is faster but wrong
    graphed = {"bf16": {"convnorm2d+bn[fused]": 0.5, "convnorm2d+bn[fft]": "RuntimeError: cannot capture"}}
    assert bench.choose(checks, {"eager": eager, "graphed": graphed}) == "fused"  # graphed times come first
    assert bench.choose(checks, {}) == "fft"  # nothing timed: the known-good filter, where it is correct
    assert bench.choose({"fft": {"ok": False}, "fused": {"ok": True}, "dense": {"ok": True}}, {}) == "dense"
    assert bench.choose({"fft": {"ok": True}, "fused": {"ok": False}}, {}) == "fft"
    assert bench.choose({"fft": {"ok": False}}, {}) is None
    assert bench.choose(checks, {"eager": eager}, ruled_out=("fft",)) == "fused"  # a later check ruled it out


@pytest.mark.rehearsal
def test_the_benchmark_and_the_calibration_stay_within_their_budgets(random_cifar_root, tmp_path):
    """Each stops at its budget, its children included, and says what it left out; neither
    measures at another scale than the one asked for (a smoke window's scale stays small)."""
    env = {**os.environ, "CONVNORM_DATA_DIR": random_cifar_root, "OMP_NUM_THREADS": "1"}
    out = tmp_path / "bench.json"
    started = time.monotonic()
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_gpu.py"), "--scale", "smoke",
                           "--budget", "0.05", "--out", str(out)], capture_output=True, text=True, timeout=300,
                          env=env)  # the checks are never cut; this budget is spent before any timing, on any machine
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads(out.read_text())["results"]
    assert results["setup"]["scale"] == "smoke" and results["setup"]["torch"]
    assert all(check["ok"] and check["float32"] < 1e-4 for name, check in results["checks"].items())
    assert results["chosen_filter"] in results["checks"]
    assert any(item["why"] == "the budget was spent" for item in results["skipped"])
    out = tmp_path / "calibration.json"
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "calibrate_gpu.py"), "--preset", SMOKE,
                           "--device", "cpu", "--batches", "2", "--budget", "1", "--filter", "dense",
                           "--out", str(out)], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert time.monotonic() - started < 240
    results = json.loads(out.read_text())["results"]
    assert results["filter"] == "dense" and len(results["step_times"]) < len(results["skipped"])
    assert {"what": "step time of vgg16:convnorm+bn", "why": "the budget was spent"} in results["skipped"]


@pytest.mark.rehearsal
def test_the_plan_reads_its_own_checkouts_records_wherever_it_is_started(tmp_path):
    """``--plan`` started from another folder (where a plan that read the working directory's
    records would find none), and from a folder holding another ``results/`` (an older clone's,
    whose pilot has one conditioning seed of three, which changes the paper's effect the
    conditioning endpoint is planned at), prints the same plan: the checkout's."""
    decoy = tmp_path / "older-clone"
    pilot = decoy / "results" / "archive" / "cpu-jpeg-q75"
    pilot.mkdir(parents=True)
    shutil.copy(ROOT / "results" / "paper_reference_values.json", decoy / "results")
    shutil.copy(ROOT / "results" / "archive" / "cpu-jpeg-q75" / "conditioning-cpu-seed0.json", pilot)
    args = ("--plan", "--preset", SMOKE, "--output", str(tmp_path / "out"))
    plans = [_gpu_runs(*args, cwd=folder) for folder in (tmp_path, decoy)]
    assert all(plan.returncode == 0 for plan in plans), [plan.stderr[-2000:] for plan in plans]
    assert plans[0].stdout == plans[1].stdout  # the decoy's pilot would change the conditioning's effect
    assert "channel conditioning" in plans[0].stdout and "the pilot (2 seeds)" in plans[0].stdout


@pytest.mark.rehearsal
def test_gpu_runs_refuses_bad_requests_in_one_line_before_starting(random_cifar_root, tmp_path):
    common = ("--preset", SMOKE, "--output", str(tmp_path), "--data-dir", random_cifar_root)
    cases = ((("generalisation:0-3",), "experiment must be one of"), (("generalization:3-1",), "FIRST <= LAST"),
             (("ablation:0", "runtime:0"), "runtime trains nothing"), (("--jobs", "0", "ablation:0"), "--jobs"),
             (("generalization:0/cifar10-nope",), "is not a run of generalization"),
             (("--deadline", "-5", "ablation:0"), "--deadline"))
    for args, message in cases:
        done = _gpu_runs(*common, *args)
        assert done.returncode == 2 and done.stderr.startswith("error: ") and message in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    no_data = _gpu_runs("--status", "--output", str(tmp_path), env={"CONVNORM_DATA_DIR": ""})
    assert no_data.returncode == 2 and "no data directory given" in no_data.stderr
    assert not any(tmp_path.iterdir())  # nothing was started or written


def _report(capsys, *args: str) -> tuple[int, str, str]:
    """``scripts/gpu_runs.py --plan`` or ``--status``, called in this process (its ``main``):
    the exit status, stdout and stderr."""
    code = _script("gpu_runs_script", ROOT / "scripts" / "gpu_runs.py").main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_plan_and_status_refuse_what_they_cannot_honour_and_honour_the_rest(random_cifar_root, tmp_path, capsys):
    """A window's options, two reports at once, bad requests: one line on stderr, exit 2.
    Requests given: a plan (a status) of those requests alone."""
    common = ("--preset", SMOKE, "--output", str(tmp_path), "--data-dir", random_cifar_root)
    refused = ((("--plan", "--jobs", "0"), "--plan does not take --jobs"),
               (("--plan", "--deadline", "90"), "--plan does not take --deadline"),
               (("--status", "--pack", str(tmp_path / "p")), "--status does not take --pack"),
               (("--status", "--calibration", "x.json"), "--status does not take --calibration"),
               (("--plan", "--status"), "two reports"),
               (("--plan", "generalization:3-1"), "FIRST <= LAST"),
               (("--status", "label-noise:0/noise0.3-bn"), "is not a run of label-noise"))
    for args, message in refused:
        code, out, err = _report(capsys, *common, *args)
        assert code == 2 and err.startswith("error: ") and message in err, err
        assert len(err.strip().splitlines()) == 1 and not out
    code, out, _ = _report(capsys, *common, "--status", "label-noise:0/noise0.4-bn")
    trials = len(PRESETS[SMOKE].lr_reductions)  # the run, and the BN network's learning-rate trials it waits on
    assert code == 0 and out.splitlines()[2:] == [f"| label-noise | 1 | none | 0 / {1 + trials} |"]
    code, out, _ = _report(capsys, *common, "--plan", "label-noise:0")
    assert code == 0 and out.strip().splitlines()[-1].startswith("asked: ")
    assert [line.split(" | ")[0] for line in out.splitlines() if line.startswith("| label")] == [
        "| label noise 40 %", "| label noise 80 %", "| label-noise"]  # the endpoints, then the one asked


def test_the_primary_section_ends_with_one_line_of_power(random_cifar_root, capsys):
    """At the airbench protocol every primary endpoint runs; each one planned has a power of at
    least 0.8 at the paper's effect, with the bound on its spread; the section's line of power
    says so, and one line names each testable endpoint that the plan cannot power."""
    code, out, err = _report(capsys, "--plan", "--preset", "airbench", "--data-dir", random_cifar_root)
    assert code == 0, err
    lines = out.splitlines()
    summary = [line for line in lines if line.startswith("primary:")]
    _, needed = _primary("airbench")
    testable = [n for n in needed if n.testable]
    planned = [n for n in testable if n.seeds is not None]
    assert summary == [f"primary: {len(needed)} endpoints, {len(testable)} testable at airbench; power at the "
                       f"paper's effect: min {min(n.power for n in planned):.2f}"]
    rows = lines[lines.index("|" + " --- |" * 9) + 1:lines.index(summary[0]) - 1]
    assert len(rows) == len(needed) <= 5
    for row, n in zip(rows, needed):
        cells = row.strip("| ").split(" | ")
        assert cells[0] == n.endpoint.name and float(cells[4]) == round(n.spread.bound, 2) >= float(cells[3])
        assert cells[6] == n.scope.answer and (cells[-1] == "—" or float(cells[-1]) >= 0.8)
        assert cells[-2] == (str(n.seeds) if n.seeds else "too many" if n.testable else "none: not testable")
    assert len([line for line in lines if line.startswith("not planned: ")]) == len(testable) - len(planned)
    ratio = [line for line in lines if line.startswith("ConvNorm ratio: ")]
    assert len(ratio) == 1 and "x a BN step" in ratio[0]
    assert any(line.startswith("confirmatory: ResNet18 at fast, generalization") for line in lines)


def _packed(archive: Path) -> dict[str, dict]:
    with tarfile.open(archive) as tar:
        return {m.name: json.load(tar.extractfile(m)) for m in tar.getmembers() if m.isfile()}


@pytest.mark.rehearsal
@pytest.mark.data
def test_a_deadline_cuts_a_training_and_leaves_no_partial_record(cifar_root, tmp_path):
    """Step times far below the real ones make every training seem to fit; the deadline
    then stops the one running, which leaves no record, while the finished ones are packed."""
    # the cpu preset: a BN training of under a minute, then a ConvNorm+BN one of several minutes; the two
    # networks' learning-rate trials are the stored ones, so that their rates are chosen already
    output = tmp_path / "results"
    stored = output / "cpu" / "runs" / "cpu-seed0"
    stored.mkdir(parents=True)
    rule = load_results(ROOT / "results" / "cpu" / "generalization-cpu-seed0.json")["provenance"]["choices"]["lr_rule"]
    for norm in ("bn", "convnorm+bn"):
        for key in rule[norm]["trials"].values():
            shutil.copy(ROOT / "results" / "cpu" / "runs" / "cpu-seed0" / f"{key}.json", stored)
    calibration = _calibration(tmp_path, 1e-7)
    done = _gpu_runs("--preset", "cpu", "--output", str(output), "--data-dir", cifar_root,
                     "--calibration", str(calibration), "--deadline", "240", "--pack", str(tmp_path / "out"),
                     "--logs", str(tmp_path / "logs"), "data-scarcity:0/subset0.1-bn",
                     "generalization:1/cifar10-convnorm+bn")
    assert done.returncode == 0, done.stdout + done.stderr
    status = json.loads((tmp_path / "out" / "status.json").read_text())
    assert status["cut_at_deadline"] and status["finished"], status
    packed = _packed(tmp_path / "out" / "results.tgz")
    runs = {name: data for name, data in packed.items() if "/runs/" in name}
    assert len(runs) == len(status["finished"])  # every finished training, and nothing else
    for data in runs.values():
        assert data["results"]["summary"] and not data["results"]["diverged"]
    cut = status["cut_at_deadline"][0]
    assert (cut["experiment"], cut["run"], cut["seed"]) == ("generalization", "cifar10-convnorm+bn", 1)
    cut_key = next(p.key for p in planned_runs("generalization", "cpu", cifar_root, output / "cpu", 1)
                   if p.run == cut["run"])
    seed1 = output / "cpu" / "runs" / "cpu-seed1"
    assert not (seed1 / f"{cut_key}.json").exists() and not list(seed1.glob("*.tmp"))


def _session(phase: str, tmp_path: Path, deadline: int, data: dict, **extra) -> subprocess.CompletedProcess:
    env = {**os.environ, "PRESET": SMOKE, "COMMIT": "0" * 40, "DEADLINE_S": str(deadline),
           "WORK": str(tmp_path / "work"), "OUT": str(tmp_path / f"out-{phase}"), "STATE": str(tmp_path / "state"),
           "OMP_NUM_THREADS": "1", "PYTHON": sys.executable, "CALIBRATION_S": "10",
           "CALIBRATION_ARGS": "--networks resnet18:bn,resnet18:convnorm+bn --batches 2",
           "REQUESTS": "generalization:0-2/cifar10-bn,cifar10-convnorm+bn", **data, **extra}
    return subprocess.run(["bash", str(ROOT / "scripts" / "device_session.sh"), phase], env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.mark.rehearsal
@pytest.mark.data
def test_device_session_rehearsed_in_smoke_form(cifar_root, tmp_path):
    """``scripts/device_session.sh`` end to end, in the two calls of a lent window, under a
    deadline of 150 s with a second process busy on the machine: the benchmark's choice of
    filter, then the core's trainings until the deadline (no calibration: the 10 s left for it
    would measure nothing), at least one finished and packed in an archive that unpacks into
    the repository's own layout, its record saying how it filtered."""
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        data = {"CONVNORM_DATA_DIR": cifar_root, "CONVNORM_CACHE_DIR": os.environ.get("CONVNORM_CACHE_DIR", "")}
        data = {k: v for k, v in data.items() if v}
        measured = _session("measure", tmp_path, 30, data)
        trained = _session("train", tmp_path, 150, data)
    finally:
        busy.kill()
    assert measured.returncode == 0, measured.stdout + measured.stderr
    assert trained.returncode == 0, trained.stdout + trained.stderr
    with tarfile.open(tmp_path / "out-measure" / "measure.tgz") as tar:
        (bench,) = [m for m in tar.getnames() if m.startswith("benchmarks/results/bench_gpu_cpu")
                    and m.endswith(".json")]  # beside it, the benchmark's whole log
    filter = (tmp_path / "state" / "filter").read_text().strip()
    status = json.loads((tmp_path / "out-train" / "status.json").read_text())
    assert status["finished"] and not status["failed"] and status["filter"] == filter
    packed = _packed(tmp_path / "out-train" / "results.tgz")
    assert bench in packed and not any(name.startswith("benchmarks/results/gpu_calibration") for name in packed)
    runs = [data for name, data in packed.items() if name.startswith(f"results/{SMOKE}/runs/{SMOKE}-seed")]
    # a network's run at the rate of its trial is that trial's training: one record for both
    assert len(runs) == len({(entry["seed"], entry["key"]) for entry in status["finished"]})
    assert all(data["provenance"]["git_commit"] == "0" * 40 for data in runs)
    # the trainings filter as the benchmark chose, and their records say so
    from convnorm.functional import current_policy

    noted = current_policy().filtering(filter, "cuda").changes()
    assert all(data["results"]["computation_policy"] == noted for data in runs)
    with tarfile.open(tmp_path / "out-train" / "logs-train.tgz") as tar:
        session = tar.extractfile("logs/session-train.log").read().decode()
    assert "no calibration" in session and "trainings until the deadline" in session
    assert "stopped: " in session and "packed: " in trained.stdout


@pytest.mark.rehearsal
def test_a_window_without_time_for_its_trainings_stops_in_one_line(random_cifar_root, tmp_path):
    done = _session("train", tmp_path, 3, {"CONVNORM_DATA_DIR": random_cifar_root})
    assert done.returncode == 0, done.stdout + done.stderr
    status = json.loads((tmp_path / "out-train" / "status.json").read_text())
    assert status["finished"] == [] and status["stopped"].startswith("no time left")
    assert "error" not in done.stdout and "Traceback" not in done.stdout


def _between(text: str, marker: str) -> list[str]:
    block = text.split(f"<!-- {marker}:begin -->")[1].split(f"<!-- {marker}:end -->")[0]
    return [line for line in block.strip().splitlines() if line.strip()]


def test_a_profiled_step_lists_its_costliest_operators():
    profile = step_timing.profile_steps(SMOKE, "resnet18", "convnorm+bn", "cpu", batches=2, top=6)
    ops = profile["ops"]
    assert len(ops) == 6 and profile["time"] == "processor" and profile["batch"] == PRESETS[SMOKE].batch_size
    assert [op["ms_per_step"] for op in ops] == sorted((op["ms_per_step"] for op in ops), reverse=True)
    assert sum(op["ms_per_step"] for op in ops) <= profile["ms_per_step"] * (1 + 1e-9)
    assert all(0 < op["share"] <= 1 for op in ops) and sum(op["share"] for op in ops) <= 1 + 1e-9
    assert any(op["name"].startswith(("aten::", "FrequencyDomain")) for op in ops)


@pytest.mark.rehearsal
@pytest.mark.data
def test_the_results_readme_shows_the_plan_and_the_status_as_the_script_prints_them(cifar_root):
    readme = (ROOT / "results" / "README.md").read_text()
    # the airbench plan prices every seed its endpoints ask (a few CPU minutes)
    plan = _gpu_runs("--plan", "--preset", "airbench", "--data-dir", cifar_root, timeout=600)
    status = _gpu_runs("--status", "--preset", "airbench", "--data-dir", cifar_root)
    assert plan.returncode == 0 and status.returncode == 0, plan.stderr + status.stderr
    printed = [line for line in plan.stdout.splitlines()
               if line.startswith(("|", "primary:", "not planned:", "floor and primary:", "ConvNorm ratio:",
                                   "above the", "within the", "confirmatory:"))]
    assert _between(readme, "plan") == printed
    assert _between(readme, "status") == [line for line in status.stdout.splitlines() if line.strip()]

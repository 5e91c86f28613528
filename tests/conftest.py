"""Shared test configuration: headless plotting, the website built once per session, every
test under the package's default computation policy, and each test's kind.

Kinds are pytest markers (declared in pyproject.toml), given here, by file or by test, so that
one table says what each test is: ``python -m pytest -m "not slow"`` is the fast loop of unit
tests; ``python -m pytest -n 2`` runs everything."""
from __future__ import annotations

import os

os.environ.setdefault("MPLBACKEND", "Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from convnorm.functional import ComputationPolicy, current_policy  # noqa: E402
from site_build import build_site  # noqa: E402

KINDS_BY_FILE = {
    "test_site_browser.py": ("site", "browser"),
    "test_book_build_errors.py": ("site",),
    "test_api_page.py": ("docs",),
    "test_explorers_parity.py": ("javascript",),
    "test_distributed.py": ("multiprocess",),
    "test_layer_cuda.py": ("cuda",),
    "test_training_cuda.py": ("cuda",),
    "test_fused_filter.py": ("triton",),
    "test_bench_imagenet.py": ("heavy",),
}
"""The kinds of every test in a file (``tests/`` or ``benchmarks/``); notebooks are ``notebook``."""

KINDS_BY_TEST = {
    ("test_gpu_protocol.py", "test_a_deadline_cuts_a_training_and_leaves_no_partial_record"): ("rehearsal",),
    ("test_gpu_protocol.py", "test_device_session_rehearsed_in_smoke_form"): ("rehearsal",),
    ("test_gpu_protocol.py", "test_a_window_without_time_for_its_trainings_stops_in_one_line"): ("rehearsal",),
    ("test_gpu_protocol.py", "test_the_benchmark_and_the_calibration_stay_within_their_budgets"): ("rehearsal",),
    ("test_gpu_protocol.py", "test_gpu_runs_refuses_bad_requests_in_one_line_before_starting"): ("rehearsal",),
    ("test_gpu_protocol.py",
     "test_the_results_readme_shows_the_plan_and_the_status_as_the_script_prints_them"): ("rehearsal",),
    ("test_layer.py", "test_distributed_data_parallel_updates_buffers"): ("multiprocess",),
    ("test_layer.py", "test_torch_compile_matches_eager"): ("compile",),
    ("test_layer.py", "test_exporting_first_leaves_no_fake_tensor_for_eager_calls"): ("compile",),
    ("test_layer.py", "test_second_derivatives_only_without_stop_gradient"): ("heavy",),
    ("test_deployment.py", "test_onnx_of_a_convnorm_resnet18_matches_eager_at_any_batch"): ("compile",),
    ("test_deployment.py", "test_onnx_of_a_converted_torchvision_style_net_matches_eager"): ("compile",),
    ("test_deployment.py", "test_export_with_a_dynamic_batch_dimension"): ("compile",),
    ("test_deployment.py", "test_jit_trace_runs_at_any_batch_and_saves"): ("compile",),
    ("test_deployment.py", "test_an_exported_training_program_is_the_training_layer"): ("compile",),
    ("test_experiments.py", "test_smoke_preset_runs"): ("training",),
    ("test_experiments.py", "test_an_analysed_training_is_stored_with_its_findings"): ("training",),
    ("test_experiments.py", "test_finished_runs_are_reused_and_leave_no_checkpoint"): ("training",),
    ("test_experiments.py", "test_a_run_record_states_every_setting_that_defines_the_training"): ("training",),
    ("test_experiments.py", "test_a_partial_experiment_is_written_with_its_missing_runs_named"): ("training",),
    ("test_experiments.py", "test_the_run_time_is_never_assembled_from_runs"): ("training",),
    ("test_training.py", "test_resume_continues_identically"): ("training",),
    ("test_training.py", "test_training_reduces_loss_and_history_is_complete"): ("training",),
    ("test_training.py", "test_mixed_precision_channels_last_and_truncated_epochs"): ("training",),
    ("test_training.py", "test_free_training_resets_or_carries_the_perturbation"): ("training",),
    ("test_training.py", "test_keep_best_restores_the_best_validation_epoch"): ("training",),
    ("test_training.py", "test_the_trainer_follows_the_one_cycle_schedule_per_minibatch"): ("training",),
    ("test_results_live.py", "test_the_quote_is_measured_here_and_trains_whole_comparisons"): ("training",),
    ("test_results_live.py", "test_train_keeps_checkpoints_off_the_results_folder"): ("training",),
}
"""The kinds of single tests (by file and function name) in files of otherwise fast unit tests."""

SLOW_KINDS = {"notebook", "site", "browser", "docs", "javascript", "multiprocess", "rehearsal", "compile", "heavy",
              "training", "triton"}
"""Kinds left out of the fast loop: each of these tests is marked ``slow`` too."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark each item with its kinds; a test named in ``KINDS_BY_TEST`` that its file, when
    collected, does not hold is an error (a renamed test would silently join the fast loop)."""
    files, named = set(), set()
    for item in items:
        path = item.path
        files.add(path.name)
        if path.suffix == ".ipynb":
            kinds = ("notebook",)
        else:
            named.add((path.name, item.originalname))
            kinds = KINDS_BY_FILE.get(path.name, ()) + KINDS_BY_TEST.get((path.name, item.originalname), ())
        for kind in kinds:
            item.add_marker(kind)
        if SLOW_KINDS.intersection(kinds):
            item.add_marker("slow")
    missing = sorted(key for key in KINDS_BY_TEST if key[0] in files and key not in named)
    if missing:
        raise pytest.UsageError(f"tests/conftest.py gives kinds to tests that do not exist: {missing}")


@pytest.fixture
def full_float32(monkeypatch):
    """No TensorFloat-32 (cuDNN uses it for float32 convolutions by default: ~1e-3 relative
    error, as for any Conv2d), so float32 on the GPU can be held to float32 accuracy."""
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)
    monkeypatch.setattr(torch.backends.cuda.matmul, "allow_tf32", False)


@pytest.fixture(scope="session")
def built_site():
    """The book's HTML folder, freshly built with warnings as errors."""
    return build_site()


@pytest.fixture
def rng():
    """A seeded NumPy generator, fresh for each test (reproducible random inputs)."""
    return np.random.default_rng(1234)


@pytest.fixture(autouse=True)
def default_policy_around_each_test():
    """Every test starts and ends under the package's default policy: a test that changed
    it for good would make later tests skip a computation without failing."""
    assert current_policy() == ComputationPolicy()
    yield
    assert current_policy() == ComputationPolicy()

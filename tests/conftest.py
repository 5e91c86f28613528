"""Shared test configuration: headless plotting, one intra-op thread, the website built once
per session, every test under the package's default computation policy, which kinds are slow,
and no rehearsal (a Python process, a shell script) in the fast loop.

Kinds are pytest markers (declared in pyproject.toml) that each test carries itself, a file's
as ``pytestmark``, a test's as a decorator: ``python -m pytest -m "not slow"`` is the fast
loop of unit tests; ``python -m pytest -n 2`` runs everything."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("MPLBACKEND", "Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

if not torch.cuda.is_available():
    # Triton's interpreter runs the fused filter's kernels on a CPU. Triton reads the variable
    # once, when triton.language is first imported (it decorates its own standard library then),
    # and test modules import it at collection (torch.utils.flop_counter does), so it is set
    # here, before any test module: set later, the kernels cannot call tl.zeros.
    os.environ.setdefault("TRITON_INTERPRET", "1")

from convnorm.functional import ComputationPolicy, current_policy  # noqa: E402
from site_build import build_site  # noqa: E402

SLOW_KINDS = frozenset({"notebook", "site", "browser", "docs", "javascript", "multiprocess", "rehearsal", "compile",
                        "heavy", "training", "triton", "data", "typecheck"})
"""Kinds left out of the fast loop: a test of one of these kinds is marked ``slow`` too."""
REHEARSING_PROGRAMS = frozenset({Path(sys.executable).name, "python", "python3", "bash", "sh", "node", "torchrun"})
"""What a test of the fast loop may not start: a Python process, a shell script, Node.js (a
rehearsal of a script or a page is of a slow kind); other programs (git) it may."""


def pytest_configure(config: pytest.Config) -> None:
    """One intra-op thread in each test process (each worker of ``-n 2``), for the tests of
    ``benchmarks/`` too. The tests' tensors are small, so a second thread mostly waits for the
    first, and ``-n 2`` already gives each core a worker: on a 2-core machine with other work
    running, the gradient checks ran 20 times faster on one thread, the fast loop twice as fast."""
    torch.set_num_threads(1)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Two rules, not a table of names: a notebook (an nbval item, which cannot carry a
    marker) is of kind ``notebook``; a test of a slow kind is ``slow``."""
    for item in items:
        if item.path.suffix == ".ipynb":
            item.add_marker("notebook")
        if SLOW_KINDS.intersection(mark.name for mark in item.iter_markers()):
            item.add_marker("slow")


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


@pytest.fixture(autouse=True)
def no_rehearsal_in_the_fast_loop(request, monkeypatch):
    """A test of the fast loop that starts one of :data:`REHEARSING_PROGRAMS` fails, naming
    it: such a test calls the script's function in this process, or declares its slow kind."""
    if request.node.get_closest_marker("slow") is not None:
        return
    popen = subprocess.Popen

    def refusing(args, *rest, **kwargs):
        command = [args] if isinstance(args, (str, os.PathLike)) else list(args)
        program = Path(str(command[0]).split()[0]).name
        if program in REHEARSING_PROGRAMS:
            raise AssertionError(f"a test of the fast loop started {program} ({command}): call the function in this "
                                 "process, or mark the test with its slow kind (e.g. @pytest.mark.rehearsal)")
        return popen(args, *rest, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", refusing)

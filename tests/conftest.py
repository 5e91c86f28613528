"""Shared test configuration: headless plotting, the website built once per session, and
every test under the package's default computation policy."""
from __future__ import annotations

import os

os.environ.setdefault("MPLBACKEND", "Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from convnorm.functional import ComputationPolicy, current_policy  # noqa: E402
from site_build import build_site  # noqa: E402


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

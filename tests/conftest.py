"""Shared test configuration: headless plotting, and the website built once per session."""
from __future__ import annotations

import os

os.environ.setdefault("MPLBACKEND", "Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from site_build import build_site  # noqa: E402


@pytest.fixture(scope="session")
def built_site():
    """The book's HTML folder, freshly built with warnings as errors."""
    return build_site()


@pytest.fixture
def rng():
    """A seeded NumPy generator, fresh for each test (reproducible random inputs)."""
    return np.random.default_rng(1234)

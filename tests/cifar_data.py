"""Fixtures shared by the harness tests (imported by test_data.py, test_training.py, ...).

The real CIFAR-10 is needed: its directory comes from ``CONVNORM_DATA_DIR``. When it
is unset the tests fail (not skip) with the loader's own explanation.
"""
from __future__ import annotations

import os

import pytest
import torch

from convnorm_lab.data import ENV_VAR, CifarNotFoundError, find_cifar, prepare_cifar


@pytest.fixture(scope="session")
def cifar_root():
    """The data directory holding a copy of CIFAR-10."""
    try:
        find_cifar("cifar10", os.environ.get(ENV_VAR))
    except CifarNotFoundError as error:
        pytest.fail(f"these tests need the real CIFAR-10: {error}", pytrace=False)
    return os.environ[ENV_VAR]


@pytest.fixture(scope="session")
def tiny_cifar(cifar_root):
    """A small real split: 400 train, 100 val, 100 test images."""
    return prepare_cifar("cifar10", cifar_root, seed=0, max_train=400, max_val=100, max_test=100)


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """One intra-op thread: on a loaded 2-core machine this is several times faster."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)

"""Fixtures shared by the harness tests (imported by test_data.py, test_training.py, ...).

Two kinds of data, asked for by name, never one standing in for the other:

- ``random_cifar_root``, ``tiny_random_cifar``: a data directory holding CIFAR-10 in the
  official archive's python-pickle format (``cifar-10-batches-py/``), of random images, written
  by this module. The loaders read it as they read the real files: the fast loop tests the
  code that only needs CIFAR-shaped data with no data set present.
- ``cifar_root``: the real CIFAR-10, from ``CONVNORM_DATA_DIR``, for the tests of kind ``data``
  (the published statistics, the stored records' keys, the protocol's sizes). When it is unset
  they fail (not skip) with the loader's own explanation.
"""
from __future__ import annotations

import os
import pickle
from pathlib import Path

import numpy as np
import pytest

from convnorm_lab.data import ENV_VAR, CifarNotFoundError, find_cifar, prepare_cifar
from convnorm_lab.data.cifar import CACHE_ENV_VAR

RANDOM_IMAGES_PER_BATCH = 200
"""Images in each of the random copy's six batches: 1,000 training images (100 a class), 200
test images; enough for the smoke presets' 200 / 100 / 100."""


def write_random_cifar10(directory: Path, images_per_batch: int, seed: int = 0) -> tuple[Path, dict[str, dict]]:
    """An extracted official CIFAR-10 folder under ``directory``: five training batches and a
    test batch of ``images_per_batch`` rows of 3,072 bytes each, every class equally often in a
    batch; a class's pixels scatter around a colour of its own, so that a network learns the
    labels within a few steps. Returns the folder and its batches by file name."""
    folder = directory / "cifar-10-batches-py"
    folder.mkdir()
    rng = np.random.default_rng(seed)
    colours = rng.integers(64, 192, (10, 3, 1))
    batches = {}
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        labels = rng.permutation(np.arange(images_per_batch) % 10)
        pixels = colours[labels] + rng.integers(-48, 48, (images_per_batch, 3, 1024))
        batches[name] = {"data": pixels.astype(np.uint8).reshape(images_per_batch, 3072), "labels": labels.tolist()}
        (folder / name).write_bytes(pickle.dumps(batches[name]))
    return folder, batches


def random_cifar_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session's random CIFAR-10 (:func:`write_random_cifar10`), written on first use, and
    beside it the cache its decoded arrays go to (``cache/``)."""
    root = tmp_path_factory.getbasetemp() / "random-cifar"
    if not root.is_dir():
        root.mkdir()
        write_random_cifar10(root, RANDOM_IMAGES_PER_BATCH)
    return root


@pytest.fixture
def random_cifar_root(tmp_path_factory, monkeypatch) -> str:
    """The data directory of the random CIFAR-10, with ``CONVNORM_CACHE_DIR`` pointing at its
    own cache for the test (the user's cache never holds random arrays)."""
    root = random_cifar_folder(tmp_path_factory)
    monkeypatch.setenv(CACHE_ENV_VAR, str(root / "cache"))
    return str(root)


@pytest.fixture(scope="session")
def tiny_random_cifar(tmp_path_factory):
    """A small split of the random CIFAR-10: 400 train, 100 val, 100 test images."""
    root = random_cifar_folder(tmp_path_factory)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(CACHE_ENV_VAR, str(root / "cache"))
        return prepare_cifar("cifar10", root, seed=0, max_train=400, max_val=100, max_test=100)


@pytest.fixture(scope="session")
def cifar_root():
    """The data directory holding a copy of the real CIFAR-10."""
    try:
        find_cifar("cifar10", os.environ.get(ENV_VAR))
    except CifarNotFoundError as error:
        pytest.fail(f"these tests need the real CIFAR-10: {error}", pytrace=False)
    return os.environ[ENV_VAR]


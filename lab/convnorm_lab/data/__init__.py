"""CIFAR-10/100 for the experiments: finding and caching the data, seeded splits,
label noise, scarce subsets, augmentation and batching (no torchvision needed).

The entry point most code needs is :func:`load_cifar`; :func:`prepare_cifar` builds
the paper's train/validation/test protocol in one call.
"""
from .cifar import (
    CIFAR10_CLASSES,
    COPIES,
    ENV_VAR,
    CifarNotFoundError,
    CifarSource,
    CorruptDataError,
    data_root,
    download_cifar,
    find_cifar,
    load_cifar,
)
from .pipeline import BatchLoader, CifarSplits, prepare_cifar, random_crop_flip
from .splits import LabelNoise, balanced_subset, symmetric_label_noise, train_val_split

__all__ = [
    "CIFAR10_CLASSES", "COPIES", "ENV_VAR", "BatchLoader", "CifarNotFoundError", "CifarSource", "CifarSplits",
    "CorruptDataError", "LabelNoise", "balanced_subset", "data_root", "download_cifar", "find_cifar", "load_cifar",
    "prepare_cifar", "random_crop_flip", "symmetric_label_noise", "train_val_split",
]

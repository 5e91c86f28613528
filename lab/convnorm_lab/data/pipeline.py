"""Batches, augmentation and the assembled train/validation/test sets.

Everything runs on tensors (no torchvision): images stay uint8 until a batch is
formed, then become float in [0, 1]. Per-channel standardisation is part of each
model (``convnorm_lab.models.Standardize``), so attacks work directly in pixel space.
"""
from __future__ import annotations

import copy
import math
import os
from collections.abc import Iterator
from dataclasses import dataclass, field

import torch

from convnorm.validation import check_fraction, check_positive_int

from .cifar import CifarSource, cached_arrays, find_cifar
from .splits import LabelNoise, balanced_subset, symmetric_label_noise, train_val_split


def random_crop_flip(images: torch.Tensor, generator: torch.Generator, padding: int = 4,
                     flip: bool = True) -> torch.Tensor:
    """Standard CIFAR augmentation of a batch ``(N, C, H, W)``.

    Each image is zero-padded by ``padding`` pixels per side, an ``H x W`` window at a
    uniformly random offset in ``{0, ..., 2 padding}^2`` is cut out, and with
    probability 1/2 (if ``flip``) it is mirrored left-right. The random numbers come
    from ``generator`` (on the CPU) so a seeded run repeats exactly.
    """
    if images.dim() != 4:
        raise ValueError(f"images must have shape (N, C, H, W), got {tuple(images.shape)}")
    return _crop_flip(images, *_crop_flip_draws(len(images), generator, padding, flip), padding)


def _crop_flip_draws(n: int, generator: torch.Generator, padding: int = 4,
                     flip: bool = True) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The random numbers of ``random_crop_flip`` for ``n`` images: window offsets
    ``(2, n)`` and mirror flags ``(n,)`` (None without ``flip``), in that order."""
    offsets = torch.randint(0, 2 * padding + 1, (2, n), generator=generator)
    mirror = torch.rand(n, generator=generator) < 0.5 if flip else None
    return offsets, mirror


def _crop_flip(images: torch.Tensor, offsets: torch.Tensor, mirror: torch.Tensor | None,
               padding: int = 4) -> torch.Tensor:
    """Cut the window at ``offsets[:, i]`` out of padded image ``i``, mirrored where ``mirror``."""
    n, _, h, w = images.shape
    offsets = offsets.to(images.device)
    padded = torch.nn.functional.pad(images, (padding,) * 4)
    rows = offsets[0, :, None] + torch.arange(h, device=images.device)  # (N, H)
    cols = offsets[1, :, None] + torch.arange(w, device=images.device)  # (N, W)
    if mirror is not None:
        cols = torch.where(mirror.to(images.device)[:, None], cols.flip(1), cols)
    batch = torch.arange(n, device=images.device)[:, None, None]
    out = padded.permute(0, 2, 3, 1)[batch, rows[:, :, None], cols[:, None, :]]  # (N, H, W, C)
    return out.permute(0, 3, 1, 2).contiguous()


class BatchLoader:
    """Minibatches of ``(images in [0, 1], labels)`` from uint8 tensors.

    ``epoch(e)`` shuffles (if ``shuffle``) and augments (if ``augment``: a random crop
    moving the image by up to ``padding`` pixels, and a flip, ``random_crop_flip``) with a
    generator seeded by ``(seed, e)``, so epoch ``e`` is the same whether or not a
    run was interrupted before it: this is what makes checkpoint resumption exact.

    On a CUDA ``device`` the whole uint8 set is copied there once (CIFAR-10's
    training set is 138 MB), so batches are gathered, augmented and converted on the
    GPU; only the permutation and the augmentation's random offsets come from the
    CPU generator, which keeps a seeded epoch identical on every device.

    **Data-parallel parts.** ``shard`` gives process ``rank`` of ``world_size`` its
    part of every batch: the images at positions ``rank, rank + world_size, ...`` of
    the batch (the split of ``torch.utils.data.DistributedSampler``). ``batch_size`` is
    the *global* batch: every process draws the same permutation and the augmentation
    of the whole batch and keeps its part, so the parts of one step are, image for
    image and augmentation included, the batch a single process gets. A batch with
    fewer images than processes leaves some without any; they skip it.

    **Longer epochs.** ``epoch_images`` (None: the set once) sets how many images an epoch
    draws. More than the set holds passes over it several times, each pass in a fresh
    random order, so that a small training set can be trained for as many steps as a
    large one (the data-scarcity study, ``Preset.scarcity_same_steps``).
    """

    def __init__(self, images: torch.Tensor, labels: torch.Tensor, batch_size: int = 128,
                 shuffle: bool = False, augment: bool = False, seed: int = 0,
                 device: torch.device | str = "cpu", epoch_images: int | None = None, padding: int = 4):
        if images.dtype != torch.uint8 or images.dim() != 4:
            raise ValueError(f"images must be a uint8 tensor (N, C, H, W), got {images.dtype} {tuple(images.shape)}")
        if labels.shape != (len(images),):
            raise ValueError(f"labels must have shape ({len(images)},), got {tuple(labels.shape)}")
        self.images, self.labels = images, labels
        self.batch_size = check_positive_int("batch_size", batch_size)
        self.shuffle, self.augment, self.seed = shuffle, augment, int(seed)
        self.epoch_images = None if epoch_images is None else check_positive_int("epoch_images", epoch_images)
        self.padding = check_positive_int("padding", padding)
        self.rank, self.world_size = 0, 1
        self.device = torch.device("cpu")
        self.to(device)

    def to(self, device: torch.device | str) -> BatchLoader:
        """Deliver batches on ``device`` (holding the data there if it is a GPU); returns self."""
        self.device = torch.device(device)
        home = self.device if self.device.type == "cuda" else torch.device("cpu")
        self.images, self.labels = self.images.to(home), self.labels.to(home)
        return self

    def shard(self, rank: int, world_size: int) -> BatchLoader:
        """A copy (sharing the data) that yields process ``rank``'s part of each batch
        of ``world_size`` processes (see the class docstring)."""
        check_positive_int("world_size", world_size)
        if not 0 <= rank < world_size:
            raise ValueError(f"rank must be in [0, {world_size}), got {rank}")
        part = copy.copy(self)
        part.rank, part.world_size = int(rank), int(world_size)
        return part

    @property
    def images_per_epoch(self) -> int:
        """Images one epoch draws: ``epoch_images``, or the set's size if that is None."""
        return len(self.labels) if self.epoch_images is None else self.epoch_images

    def __len__(self) -> int:
        return math.ceil(self.images_per_epoch / self.batch_size)

    def __iter__(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        return self.epoch(0)

    def epoch(self, epoch: int) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        gen = torch.Generator().manual_seed(self.seed * 1_000_003 + int(epoch))
        size, wanted = len(self.labels), self.images_per_epoch
        passes = [torch.randperm(size, generator=gen) if self.shuffle else torch.arange(size)
                  for _ in range(math.ceil(wanted / size))]
        order = torch.cat(passes)[:wanted]
        part = slice(self.rank, None, self.world_size)
        for start in range(0, len(order), self.batch_size):
            batch = order[start:start + self.batch_size]
            if self.augment:  # drawn for the whole batch, whichever part this is
                offsets, mirror = _crop_flip_draws(len(batch), gen, self.padding)
            idx = batch[part].to(self.images.device)
            if len(idx) == 0:
                continue
            x = self.images[idx].to(self.device, non_blocking=True)
            if self.augment:
                x = _crop_flip(x, offsets[:, part], mirror[part], self.padding)
            yield x.float().div_(255), self.labels[idx].to(self.device, non_blocking=True)


@dataclass
class CifarSplits:
    """Train / validation / test sets (uint8 images, int64 labels) and how they were made.

    ``indices`` holds each set's positions in the official training (train, val) or
    test (test) arrays; ``info`` the sizes, noise statistics and data copy.
    """

    train: tuple[torch.Tensor, torch.Tensor]
    val: tuple[torch.Tensor, torch.Tensor]
    test: tuple[torch.Tensor, torch.Tensor]
    num_classes: int
    source: CifarSource
    info: dict = field(default_factory=dict)
    indices: dict = field(default_factory=dict)

    def loaders(self, batch_size: int = 128, augment: bool = True, seed: int = 0,
                device: torch.device | str = "cpu", eval_batch_size: int = 500,
                epoch_images: int | None = None) -> dict[str, BatchLoader]:
        """A shuffled (optionally augmented) train loader drawing ``epoch_images`` an epoch
        (None: the training set once) and plain val/test loaders."""
        return {
            "train": BatchLoader(*self.train, batch_size, shuffle=True, augment=augment, seed=seed, device=device,
                                 epoch_images=epoch_images),
            "val": BatchLoader(*self.val, eval_batch_size, device=device),
            "test": BatchLoader(*self.test, eval_batch_size, device=device),
        }


def _take(arrays, split: str, idx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    index = idx.numpy()
    return torch.from_numpy(arrays[f"{split}_x"][index]), torch.from_numpy(arrays[f"{split}_y"][index])


def prepare_cifar(name: str = "cifar10", root: str | os.PathLike | None = None, *, seed: int = 0,
                  val_fraction: float = 0.1, train_fraction: float = 1.0, label_noise: float = 0.0,
                  noise_include_true_class: bool = True, max_train: int | None = None,
                  max_val: int | None = None, max_test: int | None = None,
                  download: bool = False, copy: str | None = None) -> CifarSplits:
    """The paper's data protocol in one call.

    1. Hold out ``val_fraction`` of the training set (stratified, seeded) as validation.
    2. Cut the rest to at most ``max_train`` images (a balanced random cut, for reduced
       presets), then keep a class-balanced ``train_fraction`` of them (data scarcity).
    3. Apply symmetric label noise of rate ``label_noise`` to the training *and*
       validation labels, as the paper does; the test labels stay clean.

    ``max_val`` / ``max_test`` cut the evaluation sets (balanced, seeded) for quick runs.
    ``copy`` names the copy of the data to read (:func:`~convnorm_lab.data.find_cifar`); None
    takes the first found.
    Only the selected images are read from the memory-mapped cache.

    Raises:
        ValueError: naming the argument, for a fraction or rate outside its range, a limit
            that is not a positive integer, or arguments that leave a set without images
            (every class keeps a rounded share, which can be 0), before any image is read.
    """
    val_fraction = check_fraction("val_fraction", val_fraction, open_low=True, open_high=True)
    train_fraction = check_fraction("train_fraction", train_fraction, open_low=True)
    label_noise = check_fraction("label_noise", label_noise)
    limits = {arg: None if value is None else check_positive_int(arg, value)
              for arg, value in (("max_train", max_train), ("max_val", max_val), ("max_test", max_test))}
    source = find_cifar(name, root, download, copy)
    arrays = cached_arrays(source)
    num_classes = 10 if name == "cifar10" else 100
    all_labels = torch.from_numpy(arrays["train_y"][:].copy())
    train_idx, val_idx = train_val_split(all_labels, val_fraction, seed)
    info: dict = {"val_fraction": val_fraction, "train_fraction": train_fraction}

    def cut(idx: torch.Tensor, labels: torch.Tensor, limit: str, salt: int) -> torch.Tensor:
        if limits[limit] is None or limits[limit] >= len(idx):
            return idx
        return idx[balanced_subset(labels[idx], limits[limit] / len(idx), seed + salt)]

    train_idx = cut(train_idx, all_labels, "max_train", 2)
    if train_fraction < 1.0:
        train_idx = train_idx[balanced_subset(all_labels[train_idx], train_fraction, seed + 1)]
    val_idx = cut(val_idx, all_labels, "max_val", 3)
    test_labels = torch.from_numpy(arrays["test_y"][:].copy())
    test_idx = cut(torch.arange(len(test_labels)), test_labels, "max_test", 4)
    for split, idx, arguments in (("training", train_idx, "val_fraction, max_train or train_fraction"),
                                  ("validation", val_idx, "val_fraction or max_val"), ("test", test_idx, "max_test")):
        if len(idx) == 0:
            raise ValueError(f"these arguments leave the {split} set without images (each class keeps its rounded "
                             f"share): raise {arguments} (val_fraction={val_fraction}, "
                             f"train_fraction={train_fraction}, {', '.join(f'{k}={v}' for k, v in limits.items())})")
    train, val, test = (_take(arrays, "train", train_idx), _take(arrays, "train", val_idx),
                        _take(arrays, "test", test_idx))
    if label_noise > 0:
        noisy: list[LabelNoise] = [
            symmetric_label_noise(part[1], label_noise, num_classes, seed + salt, noise_include_true_class)
            for part, salt in ((train, 5), (val, 6))
        ]
        train, val = (train[0], noisy[0].labels), (val[0], noisy[1].labels)
        info.update(label_noise=label_noise, noise_include_true_class=noise_include_true_class,
                    train_flip_rate=noisy[0].flip_rate, val_flip_rate=noisy[1].flip_rate,
                    expected_flip_rate=noisy[0].expected_flip_rate)
    info.update(n_train=len(train[1]), n_val=len(val[1]), n_test=len(test[1]), copy=source.kind,
                source=source.description)
    indices = {"train": train_idx, "val": val_idx, "test": test_idx}
    return CifarSplits(train, val, test, num_classes, source, info, indices)

"""One training loop for every experiment.

Defaults are the paper's CIFAR protocol: SGD with learning rate 0.1, momentum 0.9,
weight decay 1e-4, batch 128, the learning rate divided by 10 at fixed epochs
(CIFAR-10: 120 epochs, milestones 40 and 80; CIFAR-100: 150 epochs, 60 and 120).
A fast-CIFAR recipe is a configuration away: a larger batch, Nesterov momentum, a
one-cycle schedule (:mod:`convnorm_lab.training.schedule`), mixed precision
(:mod:`convnorm_lab.training.mixed_precision`), channels-last memory and a CUDA-graph step.
The loop evaluates on the validation and test sets after every epoch, writes a
checkpoint after every epoch, and resumes from it reproducing the uninterrupted run
(same batches, same augmentation, same RNG state, same optimizer state): bit for bit
on the CPU; on a GPU up to the non-determinism of some CUDA kernels. A training whose
loss stops being finite raises :class:`TrainingDiverged`, which says at which epoch.

Data-parallel training: the same code started by ``torchrun --nproc_per_node=N``
(on one machine; ``--nnodes`` for several) trains one model in ``N`` processes, each
taking its part of every batch (:class:`Trainer` says how); a script that builds a
:class:`Trainer` needs no change, and the experiments' command line works the same way::

    torchrun --nproc_per_node=4 -m convnorm_lab.experiments generalization --preset paper
"""
from __future__ import annotations

import copy
import dataclasses
import logging
import math
import os
import pickle
import random
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from convnorm.validation import check_fraction, check_positive_int

from ..attacks import free
from ..data.pipeline import BatchLoader
from . import distributed
from .graphed import GraphedStep
from .mixed_precision import PRECISIONS, autocast, needs_loss_scaling
from .schedule import SCHEDULES, lr_factor

try:  # progress bars are an optional extra (pip install convnorm-lab[progress])
    from tqdm.auto import tqdm
except ImportError:  # pragma: no cover - exercised where tqdm is absent
    tqdm = None

_log = logging.getLogger(__name__)


@dataclass
class TrainConfig:
    """Hyper-parameters of one run (defaults: the paper's CIFAR-10 setting).

    ``schedule`` is ``"step"`` (``lr`` times ``gamma`` at each of ``milestones``) or
    ``"one-cycle"`` (a linear warm-up over ``warmup_fraction`` of the minibatches, then a
    linear decay to zero; ``milestones`` unused): :func:`convnorm_lab.training.schedule.lr_factor`.
    ``precision`` is ``"fp32"``, ``"bf16"`` or ``"fp16"`` (float16 with loss scaling,
    CUDA only): :mod:`convnorm_lab.training.mixed_precision`.

    ``free_replays = m > 0`` switches to "free" adversarial training
    (:func:`convnorm_lab.attacks.free_adversarial_step`): every minibatch is replayed
    ``m`` times with a perturbation of max-norm radius ``free_eps`` that is carried over to
    the next minibatch (or reset per batch with ``free_reset_per_batch``, as the
    authors' code does). ``max_batches_per_epoch`` truncates epochs for quick presets.
    ``epoch_images`` (None: the training set once) is how many images an epoch draws; more
    than the training set holds passes over it several times
    (:class:`convnorm_lab.data.BatchLoader`), so that a subset trains for a full set's steps.
    ``cuda_graph`` replays every full-size standard step from one captured CUDA graph
    (``convnorm_lab.training.graphed.GraphedStep``; the same update, without the
    per-kernel launch cost); it needs a CUDA device and excludes float16 (its loss
    scaling reads gradients on the host) and free adversarial training.
    ``label_smoothing`` :math:`\\varepsilon` trains on the cross-entropy against labels
    smoothed to :math:`(1 - \\varepsilon)\\,\\text{one-hot} + \\varepsilon / K` (0: the plain
    cross-entropy; evaluation always reports the plain one). ``crop_padding`` is how far
    the random crop of the augmentation moves an image (4: the standard CIFAR crop; the
    fast-CIFAR networks translate by 2 pixels).
    ``channels_last`` stores images and weights channels-last, the layout tensor cores
    read fastest. Both are how a run executes, not what it computes, so a checkpoint may
    be resumed with them switched.

    ``batch_size`` is the global batch, the images of one optimizer step over all the
    processes of a data-parallel run (each takes about ``batch_size / N``), so the
    paper's 128 stays 128 however many GPUs train, and the run computes the
    single-process run up to rounding (BatchNorm on a CPU aside, see :class:`Trainer`).
    """

    epochs: int = 120
    batch_size: int = 128
    lr: float = 0.1
    momentum: float = 0.9
    nesterov: bool = False
    weight_decay: float = 1e-4
    schedule: str = "step"
    milestones: tuple[int, ...] = (40, 80)
    gamma: float = 0.1
    warmup_fraction: float = 0.0
    augment: bool = True
    precision: str = "fp32"
    seed: int = 0
    free_replays: int = 0
    free_eps: float = 8 / 255
    free_reset_per_batch: bool = False
    max_batches_per_epoch: int | None = None
    epoch_images: int | None = None
    cuda_graph: bool = False
    channels_last: bool = False
    label_smoothing: float = 0.0
    crop_padding: int = 4

    #: fields that say how a run executes rather than what it computes: a run key ignores
    #: them, and a checkpoint resumes with them changed. The precision is among them
    #: because a device decides it (an experiment's preset asks for "mixed" precision, and
    #: each GPU resolves that to the half precision it has), as it decides which kernels run.
    EXECUTION_ONLY: ClassVar[tuple[str, ...]] = ("cuda_graph", "channels_last", "precision")
    #: fields a run key leaves out while they hold their default, so that adding such a
    #: field keeps the keys, and the stored records, of every training that does not use it
    KEYED_WHEN_SET: ClassVar[tuple[str, ...]] = ("epoch_images", "label_smoothing", "crop_padding")

    def __post_init__(self):
        check_positive_int("epochs", self.epochs)
        check_positive_int("batch_size", self.batch_size)
        for name in ("lr", "momentum", "weight_decay", "gamma", "free_eps"):
            value = getattr(self, name)
            if not np.isfinite(value) or value < 0:
                raise ValueError(f"{name} must be a finite non-negative number, got {value}")
        if self.lr == 0:
            raise ValueError("lr must be positive")
        if self.schedule not in SCHEDULES:
            raise ValueError(f"schedule must be one of {SCHEDULES}, got {self.schedule!r}")
        if self.precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, got {self.precision!r}")
        check_fraction("warmup_fraction", self.warmup_fraction)
        check_fraction("label_smoothing", self.label_smoothing)
        check_positive_int("crop_padding", self.crop_padding)
        self.milestones = tuple(int(m) for m in self.milestones)
        if list(self.milestones) != sorted(self.milestones) or any(m < 1 for m in self.milestones):
            raise ValueError(f"milestones must be increasing positive epochs, got {self.milestones}")
        if self.free_replays < 0:
            raise ValueError(f"free_replays must be >= 0, got {self.free_replays}")
        for name in ("max_batches_per_epoch", "epoch_images"):
            if getattr(self, name) is not None:
                check_positive_int(name, getattr(self, name))
        if self.cuda_graph and (needs_loss_scaling(self.precision) or self.free_replays):
            raise ValueError("cuda_graph cannot be combined with precision 'fp16' or free adversarial training "
                             "(free_replays > 0)")


    def images_per_epoch(self, n_train: int) -> int:
        """Images an epoch trains on, from a training set of ``n_train``: ``epoch_images`` (or
        ``n_train``), cut to ``max_batches_per_epoch`` full minibatches if that is set."""
        images = n_train if self.epoch_images is None else self.epoch_images
        return images if self.max_batches_per_epoch is None else min(images, self.max_batches_per_epoch *
                                                                      self.batch_size)

    def batches_per_epoch(self, n_train: int) -> int:
        """Minibatches (optimizer steps) an epoch takes on a training set of ``n_train``."""
        return math.ceil(self.images_per_epoch(n_train) / self.batch_size)


def paper_config(dataset: str = "cifar10", **overrides) -> TrainConfig:
    """The paper's schedule for ``"cifar10"`` (120 epochs, ÷10 at 40, 80) or
    ``"cifar100"`` (150 epochs, ÷10 at 60, 120); keyword overrides win."""
    schedules = {"cifar10": (120, (40, 80)), "cifar100": (150, (60, 120))}
    if dataset not in schedules:
        raise ValueError(f"dataset must be one of {sorted(schedules)}, got {dataset!r}")
    epochs, milestones = schedules[dataset]
    return TrainConfig(**{"epochs": epochs, "milestones": milestones, **overrides})


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy and torch (CPU and CUDA) random number generators."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def default_device() -> torch.device:
    """CUDA if available, else the CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


class TrainingDiverged(FloatingPointError):
    """The training loss stopped being finite: ``epoch`` (counted from 1) and ``reason``."""

    def __init__(self, epoch: int, reason: str):
        super().__init__(reason)
        self.epoch, self.reason = epoch, reason


@dataclass
class History:
    """Per-epoch metrics; ``steps`` counts optimizer updates so far."""

    epoch: list[int] = field(default_factory=list)
    steps: list[int] = field(default_factory=list)
    lr: list[float] = field(default_factory=list)
    train_loss: list[float] = field(default_factory=list)
    train_acc: list[float] = field(default_factory=list)
    val_loss: list[float] = field(default_factory=list)
    val_acc: list[float] = field(default_factory=list)
    test_loss: list[float] = field(default_factory=list)
    test_acc: list[float] = field(default_factory=list)
    epoch_time: list[float] = field(default_factory=list)

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)

    def summary(self) -> dict:
        """Test accuracy at the best validation epoch (model selection as in the
        paper), the maximum test accuracy, and the mean epoch time."""
        if not self.epoch:
            return {}
        best = int(np.argmax(self.val_acc)) if self.val_acc else len(self.epoch) - 1
        return {
            "best_val_epoch": self.epoch[best],
            "best_val_acc": self.val_acc[best] if self.val_acc else None,
            "test_acc_at_best_val": self.test_acc[best] if self.test_acc else None,
            "max_test_acc": max(self.test_acc) if self.test_acc else None,
            "final_test_acc": self.test_acc[-1] if self.test_acc else None,
            "final_train_acc": self.train_acc[-1],
            "mean_epoch_time_s": float(np.mean(self.epoch_time)),
        }


@torch.no_grad()
def evaluate(model: nn.Module, loader: BatchLoader, device: torch.device | None = None,
             precision: str = "fp32", channels_last: bool = False) -> tuple[float, float]:
    """Mean cross-entropy and accuracy of ``model`` (in eval mode) over ``loader``.

    The sums stay on the device until the end (reading them per batch would make the
    host wait for the GPU at every batch). For a process's part of a loader
    (``BatchLoader.shard``), over the whole loader: the sums are added up over the
    processes, each of which must call this."""
    device = device or next(model.parameters()).device
    was_training = model.training
    model.eval()
    loss_sum = torch.zeros((), dtype=torch.float64, device=device)
    correct = torch.zeros((), dtype=torch.long, device=device)
    count = 0
    for x, y in loader:
        x, y = _layout(x.to(device), channels_last), y.to(device)
        with autocast(device, precision):
            logits = model(x)
        loss_sum += F.cross_entropy(logits.float(), y, reduction="sum").double()
        correct += (logits.argmax(1) == y).sum()
        count += len(y)
    model.train(was_training)
    loss_sum, correct, count = distributed.all_sum([loss_sum, correct, count], device)
    return loss_sum / max(count, 1), correct / max(count, 1)


def _layout(x: torch.Tensor, channels_last: bool) -> torch.Tensor:
    return x.contiguous(memory_format=torch.channels_last) if channels_last else x


class _NoBar:
    """What the loop asks of a progress bar, where none is shown."""

    def __init__(self, iterable: Iterable = (), **_):
        self.iterable = iterable

    def __iter__(self):
        return iter(self.iterable)

    def set_postfix(self, **_) -> None:
        pass

    def close(self) -> None:
        pass


def _bar(iterable: Iterable, show: bool, **kwargs):
    """A tqdm bar over ``iterable`` when ``show`` and tqdm is installed, else a silent stand-in."""
    return tqdm(iterable, **kwargs) if show and tqdm is not None else _NoBar(iterable)


def _check_parts(size: int, config: TrainConfig, processes: int) -> None:
    """Refuse a data-parallel run in which a training batch leaves a process without
    images: the processes must take every step together."""
    images = config.images_per_epoch(size)
    smallest = min(config.batch_size, images - (config.batches_per_epoch(size) - 1) * config.batch_size)
    if smallest < processes:
        raise ValueError(f"batch_size={config.batch_size} with {images} training images an epoch gives a batch of "
                         f"{smallest} image(s), fewer than the {processes} processes: choose another batch size")


def _read_checkpoint(path: Path) -> dict:
    """The checkpoint at ``path``; a truncated or damaged file (an interrupted copy, a full
    disk) raises a ValueError naming it and what to do, not the unpickler's error."""
    try:
        return torch.load(path, map_location="cpu", weights_only=False)
    except (OSError, EOFError, RuntimeError, pickle.UnpicklingError) as error:
        raise ValueError(f"checkpoint {path} cannot be read ({type(error).__name__}: {error}); delete it "
                         "to train this run from the start") from error


class Trainer:
    """Train ``model`` on ``loaders["train"]``, evaluating on ``"val"`` and ``"test"``.

    Args:
        model: the network (moved to ``device``).
        loaders: ``{"train": BatchLoader, "val": ..., "test": ...}`` (val/test optional).
        config: a :class:`TrainConfig`; it sets the train loader's batch size,
            augmentation and seed, so the config alone describes the run (the trainer
            works on copies of the loaders: the caller's are left as they were).
        checkpoint: file written after every epoch (None: no checkpoints).
        regularizer: ``model -> scalar`` added to the loss; for an ``"ocnn"``
            model pass ``convnorm_lab.baselines.OCNNRegularizer(λ)`` (its penalty times λ).
        progress: show tqdm bars (notebook widgets or terminal text).
        device: default :func:`default_device`.
        keep_best: keep a copy of the weights of the epoch with the best validation
            accuracy (``best_state``; :meth:`load_best` restores it), the paper's
            model selection.

    On a CUDA device the trainer turns on cuDNN's autotuner (``torch.backends.cudnn.benchmark``,
    for the whole process), as the fast-CIFAR recipes do (the book's engineering notes say why).

    **Data-parallel training.** In a process started by ``torchrun`` with more than one
    process (``convnorm_lab.training.distributed.setup``: NCCL on CUDA with this process
    on ``cuda:LOCAL_RANK``, Gloo on the CPU) the trainer

    * splits every batch: each process takes its part of every loader
      (``BatchLoader.shard``), drawn from the same seeded permutation and
      augmentation, so the parts of one step make up the single-process batch of
      ``config.batch_size`` images (the global batch);
    * wraps the model in ``DistributedDataParallel``, which averages the processes'
      gradients. A process's loss is its part's mean cross-entropy times its
      ``share``, ``N`` times its fraction of the global batch (``_loss``), so that
      the average is the gradient of the global batch's mean even when the parts
      differ in size; the regularizer, the same in every process, enters once. Free
      adversarial training works alike, each process carrying the perturbation of
      its positions in the batch;
    * converts BatchNorm to SyncBatchNorm on CUDA, so that data-parallel training
      computes the single-process training up to floating-point rounding; on the CPU
      BatchNorm keeps per-process statistics, with a warning
      (``convnorm_lab.training.distributed.data_parallel`` says why; ConvNorm needs no
      synchronisation);
    * adds up the training and evaluation sums over the processes, so every process
      holds the same :class:`History`, and copies process 0's buffers to all after
      each epoch, so all evaluate, keep and resume the same model;
    * writes the checkpoint, shows progress and logs from process 0 only; on resume
      process 0 reads the checkpoint and sends it to the others (which need not see
      its file system).

    ``model`` stays the plain network (its state dict and checkpoints are those of a
    single-process run, and either kind of run resumes the other's checkpoint); the
    training forward runs through the wrapper. A global batch smaller than the number
    of processes is refused, and so is ``cuda_graph``: a captured step would have to
    include the gradient all-reduce, which is not supported here. The process group
    stays open after training; call ``convnorm_lab.training.distributed.teardown`` at
    the end of the script.
    """

    CHECK_EVERY = 50

    def __init__(self, model: nn.Module, loaders: dict[str, BatchLoader], config: TrainConfig,
                 checkpoint: str | os.PathLike | None = None,
                 regularizer: Callable[[nn.Module], torch.Tensor] | None = None,
                 progress: bool = True, device: torch.device | str | None = None, keep_best: bool = False):
        if "train" not in loaders:
            raise ValueError("loaders must contain a 'train' BatchLoader")
        self.device = distributed.setup(torch.device(device) if device is not None else default_device())
        processes = distributed.world_size()
        if config.cuda_graph and processes > 1:
            raise ValueError(f"cuda_graph cannot be combined with data-parallel training ({processes} processes): "
                             "train without it")
        if config.cuda_graph and self.device.type != "cuda":
            raise ValueError(f"cuda_graph needs a CUDA device, got device={self.device}")
        if needs_loss_scaling(config.precision) and self.device.type != "cuda":
            raise ValueError(f"precision 'fp16' (with loss scaling) needs a CUDA device, got device={self.device}")
        self.model = model.to(self.device)
        if self.device.type == "cuda":
            torch.backends.cudnn.benchmark = True
        if config.channels_last:
            self.model = self.model.to(memory_format=torch.channels_last)
        self.loaders = {name: copy.copy(loader).to(self.device) for name, loader in loaders.items()}
        train = self.loaders["train"]
        train.batch_size, train.augment, train.seed, train.shuffle, train.epoch_images, train.padding = (
            config.batch_size, config.augment, config.seed, True, config.epoch_images, config.crop_padding)
        self.config = config
        # the forward of a training step runs through _network (the DDP wrapper in a
        # data-parallel run), over this process's part of each loader
        self._network, self._parts = self.model, self.loaders
        if processes > 1:
            _check_parts(len(train.labels), config, processes)
            self.model, self._network = distributed.data_parallel(self.model, self.device)
            self._parts = {name: loader.shard(distributed.rank(), processes) for name, loader in self.loaders.items()}
        self.checkpoint = Path(checkpoint) if checkpoint is not None else None
        self.regularizer = regularizer
        self.progress = progress and distributed.is_main()
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=config.lr, momentum=config.momentum,
                                         weight_decay=config.weight_decay, nesterov=config.nesterov)
        self.scaler = torch.amp.GradScaler(self.device.type, enabled=needs_loss_scaling(config.precision))
        self.history = History()
        self.steps = 0  # optimizer updates (free adversarial training: replays x minibatches)
        self.batches = 0  # minibatches: the learning-rate schedule's clock
        self.start_epoch = 0
        self.delta: torch.Tensor | None = None  # free adversarial training perturbation
        self.keep_best = keep_best
        self.best_state: dict | None = None
        self.graphed: GraphedStep | None = None  # captured at the first full batch

    # ----------------------------------------------------------------- checkpoints
    def state_dict(self) -> dict:
        return {
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scaler": self.scaler.state_dict(),
            "epochs_done": self.start_epoch,
            "steps": self.steps,
            "batches": self.batches,
            "history": self.history.as_dict(),
            "config": dataclasses.asdict(self.config),
            "torch_rng": torch.get_rng_state(),
            "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
            "delta": None if self.delta is None else self.delta.cpu(),
            "best_state": self.best_state,
        }

    def load_state_dict(self, state: dict) -> None:
        saved = dict(state["config"])
        saved["milestones"] = tuple(saved["milestones"])
        current = dataclasses.asdict(self.config)
        differs = {k for k in current
                   if current[k] != saved.get(k) and k not in ("epochs", *TrainConfig.EXECUTION_ONLY)}
        if differs:
            raise ValueError(f"checkpoint was written with a different config ({sorted(differs)})")
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.scaler.load_state_dict(state["scaler"])
        self.start_epoch, self.steps, self.batches = state["epochs_done"], state["steps"], state["batches"]
        self.history = History(**state["history"])
        torch.set_rng_state(state["torch_rng"])
        if state["cuda_rng"] is not None and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(state["cuda_rng"])
        self.delta = None if state["delta"] is None else state["delta"].to(self.device)
        self.best_state = state["best_state"]

    def load_best(self) -> None:
        """Put the weights of the best validation epoch back into the model."""
        if self.best_state is None:
            raise ValueError("no best state kept: construct the Trainer with keep_best=True and fit it")
        self.model.load_state_dict(self.best_state)

    def save_checkpoint(self) -> None:
        """Write :meth:`state_dict` to ``checkpoint`` (process 0 only)."""
        if self.checkpoint is None or not distributed.is_main():
            return
        self.checkpoint.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.checkpoint.with_name(self.checkpoint.name + ".tmp")
        torch.save(self.state_dict(), tmp)
        tmp.replace(self.checkpoint)  # atomic: an interruption never leaves half a file

    def resume(self) -> bool:
        """Load the checkpoint if it exists; return whether one was loaded.

        It is read on the CPU (where the RNG state must be; the model and optimizer
        copy their tensors to their device), by process 0, which sends it to the others."""
        if self.checkpoint is None:
            return False
        path = self.checkpoint
        state = distributed.from_main(lambda: _read_checkpoint(path) if path.exists() else None)
        if state is None:
            return False
        self.load_state_dict(state)
        return True

    # ------------------------------------------------------------------- training
    def _loss(self, x: torch.Tensor, y: torch.Tensor, share: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
        r"""``(loss, logits)``: ``share`` times the mean cross-entropy of ``(x, y)``, plus
        the regularizer.

        ``share`` is :math:`N n_r / n` for a process's part of :math:`n_r` images of a
        global batch of :math:`n` in :math:`N` processes (1 in a single process):
        DistributedDataParallel averages the gradients of the :math:`N` losses, and
        :math:`\frac1N \sum_r \frac{N n_r}{n} \bar\ell_r = \frac1n \sum_i \ell_i`, the
        mean over the global batch, whatever the parts' sizes."""
        with autocast(self.device, self.config.precision):
            logits = self._network(x)
            loss = F.cross_entropy(logits.float(), y, label_smoothing=self.config.label_smoothing)
            if share != 1:
                loss = loss * share
            if self.regularizer is not None:
                loss = loss + self.regularizer(self.model)
        return loss, logits

    def _standard_step(self, x: torch.Tensor, y: torch.Tensor,
                       share: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
        self.steps += 1
        if self.config.cuda_graph and len(y) == self.config.batch_size:  # a last smaller batch runs eagerly
            if self.graphed is None:
                self.graphed = GraphedStep(self.model, self.optimizer, self._loss, x, y)
            return self.graphed(x, y, self.optimizer.param_groups[0]["lr"])
        loss, logits = self._loss(x, y, share)
        self.optimizer.zero_grad(set_to_none=True)
        self.scaler.scale(loss).backward()
        self.scaler.step(self.optimizer)
        self.scaler.update()
        return loss.detach(), (logits.argmax(1) == y).sum()

    def _free_step(self, x: torch.Tensor, y: torch.Tensor, share: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
        cfg = self.config
        if self.delta is None or cfg.free_reset_per_batch:
            self.delta = torch.zeros(self.loaders["train"].batch_size, *x.shape[1:], device=self.device)
        loss, correct, self.delta = free.free_adversarial_step(
            self.model, x, y, self.delta, self.optimizer, lambda xx, yy: self._loss(xx, yy, share),
            cfg.free_replays, cfg.free_eps, self.scaler)
        self.steps += cfg.free_replays
        return torch.tensor(loss, device=self.device), torch.tensor(correct, device=self.device)

    def train_epoch(self, epoch: int) -> tuple[float, float]:
        """One pass over the training loader; returns mean loss and accuracy.

        The running sums stay on the device and are read every ``CHECK_EVERY`` batches
        (progress bar, divergence check) and at the end: reading them after every batch
        would make the host wait for the GPU at each step. In a data-parallel run they
        are added up over the processes there, so all see the same numbers (and stop
        together if the loss diverges). A batch's loss enters the sum times ``n / N``
        (its global size over the number of processes, ``len(y)`` in a single
        process): added up over the processes, ``_loss``'s shares make that the
        batch's summed cross-entropy plus ``n`` times the regularizer."""
        self._network.train()
        loader, part = self.loaders["train"], self._parts["train"]
        total = self.batches_per_epoch
        step = self._free_step if self.config.free_replays > 0 else self._standard_step
        processes, size = part.world_size, loader.images_per_epoch
        loss_sum = torch.zeros((), dtype=torch.float64, device=self.device)
        correct = torch.zeros((), dtype=torch.long, device=self.device)
        count, checked = 0, 0
        bar = _bar(part.epoch(epoch), self.progress, total=total, desc=f"epoch {epoch + 1}", leave=False)
        for i, (x, y) in enumerate(bar):
            if i >= total:
                break
            batch = min(loader.batch_size, size - i * loader.batch_size)  # global
            self.optimizer.param_groups[0]["lr"] = self.lr_at(self.batches)
            self.batches += 1
            loss, hits = step(_layout(x, self.config.channels_last), y, processes * len(y) / batch)
            loss_sum += loss.double() * (batch / processes)
            correct += hits
            count += len(y)
            if i + 1 == total or (i + 1) % self.CHECK_EVERY == 0:
                summed_loss, summed_correct, seen = distributed.all_sum([loss_sum, correct, count], self.device)
                mean = summed_loss / seen
                if not np.isfinite(mean):
                    raise TrainingDiverged(epoch + 1, f"training loss became {mean} at epoch {epoch + 1}, "
                                                      f"between batches {checked + 1} and {i + 1}")
                checked = i + 1
                bar.set_postfix(loss=f"{mean:.3f}", acc=f"{summed_correct / seen:.3f}")
        bar.close()
        distributed.same_buffers(self.model)
        return mean, summed_correct / seen

    @property
    def batches_per_epoch(self) -> int:
        """Minibatches in one epoch (``max_batches_per_epoch`` caps them)."""
        return self.config.batches_per_epoch(len(self.loaders["train"].labels))

    def lr_at(self, batch: int) -> float:
        """The learning rate of minibatch ``batch`` (counted from 0) under the config's schedule."""
        c = self.config
        return c.lr * lr_factor(c.schedule, batch, self.batches_per_epoch, c.epochs, c.milestones, c.gamma,
                                c.warmup_fraction)

    def fit(self, resume: bool = False) -> History:
        """Train for ``config.epochs`` epochs (continuing a checkpoint if ``resume``).

        Raises:
            TrainingDiverged: when the training loss stops being finite (the history up
                to the last finished epoch stays in ``history``).
        """
        if resume:
            self.resume()
        epochs = _bar(range(self.start_epoch, self.config.epochs), self.progress, initial=self.start_epoch,
                      total=self.config.epochs, desc="training")
        for epoch in epochs:
            start = time.perf_counter()
            lr = self.lr_at(self.batches)
            train_loss, train_acc = self.train_epoch(epoch)
            elapsed = time.perf_counter() - start
            h = self.history
            h.epoch.append(epoch + 1)
            h.steps.append(self.steps)
            h.lr.append(lr)
            h.train_loss.append(train_loss)
            h.train_acc.append(train_acc)
            h.epoch_time.append(elapsed)
            for split in ("val", "test"):
                if split in self.loaders:
                    loss, acc = evaluate(self.model, self._parts[split], self.device, self.config.precision,
                                         self.config.channels_last)
                    getattr(h, f"{split}_loss").append(loss)
                    getattr(h, f"{split}_acc").append(acc)
            if self.keep_best and h.val_acc and (len(h.val_acc) == 1 or h.val_acc[-1] > max(h.val_acc[:-1])):
                self.best_state = {k: v.detach().cpu().clone() for k, v in self.model.state_dict().items()}
            epochs.set_postfix(train_acc=f"{train_acc:.3f}",
                               val_acc=f"{h.val_acc[-1]:.3f}" if h.val_acc else "-")
            if distributed.is_main():
                _log.info("epoch %d/%d: train loss %.4f acc %.4f, val acc %s, test acc %s, %.1f s", epoch + 1,
                          self.config.epochs, train_loss, train_acc, f"{h.val_acc[-1]:.4f}" if h.val_acc else "-",
                          f"{h.test_acc[-1]:.4f}" if h.test_acc else "-", elapsed)
            self.start_epoch = epoch + 1
            self.save_checkpoint()
        epochs.close()
        return self.history

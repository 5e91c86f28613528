"""Data-parallel training across the processes of a ``torchrun`` launch.

``torchrun --nproc_per_node=N script.py`` starts ``N`` copies of a script and tells each
its place in the environment (``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``, ``MASTER_ADDR``,
``MASTER_PORT``). :func:`setup` turns that into a process group (NCCL for CUDA, Gloo on
the CPU) and a device per process (``cuda:LOCAL_RANK``); without that environment, or
with one process, it does nothing, and the rest of this module reduces to a single
process: sums stay local, the main process is the only one, nothing is broadcast.

The trainer (:class:`convnorm_lab.training.Trainer`) uses these helpers so that the
processes split every batch between them and step together: each process computes the
gradient of its part, :class:`~torch.nn.parallel.DistributedDataParallel` averages the
gradients, every process applies the same update, and process 0 alone writes files.
A training script therefore runs unchanged in one process or under torchrun::

    # torchrun --nproc_per_node=2 train.py   (or: python train.py)
    trainer = Trainer(model, loaders, config, checkpoint="run.pt")  # joins the processes
    history = trainer.fit(resume=True)
    distributed.teardown()
"""
from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Sequence
from typing import TypeVar

import torch
import torch.distributed as dist
import torch.nn as nn

T = TypeVar("T")


def launched_processes() -> int:
    """How many processes the launcher started (``WORLD_SIZE``; 1 when none set it)."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def world_size() -> int:
    """Number of processes training together (1 outside a process group)."""
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


def rank() -> int:
    """This process's rank: from the process group, else from the launcher's ``RANK``
    (so that a torchrun launch that never trains, such as listing runs, still knows
    its main process), else 0."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank()
    return int(os.environ.get("RANK", "0"))


def is_main() -> bool:
    """Whether this process writes files, prints and shows progress (rank 0)."""
    return rank() == 0


def setup(device: torch.device | str) -> torch.device:
    """Join the process group of a ``torchrun`` launch; return this process's device.

    With ``WORLD_SIZE > 1`` in the environment the process group is initialised (once;
    a group the caller initialised is used as it is): backend ``nccl`` for a CUDA
    ``device``, ``gloo`` for the CPU. On CUDA each process trains on
    ``cuda:LOCAL_RANK`` (and makes it the current device); ``device="cuda"`` means that
    device, another index is refused, since two processes on one GPU cannot use NCCL.
    Outside a launch the device is returned unchanged and nothing else happens.

    Raises:
        ValueError: a CUDA device whose index is not ``LOCAL_RANK``.
    """
    device = torch.device(device)
    if not dist.is_initialized() and launched_processes() <= 1:
        return device
    if device.type == "cuda" and "LOCAL_RANK" in os.environ:
        local = int(os.environ["LOCAL_RANK"])
        if device.index not in (None, local):
            raise ValueError(f"device={device}: under torchrun each process trains on cuda:LOCAL_RANK "
                             f"(cuda:{local} here); pass device='cuda'")
        device = torch.device("cuda", local)
        torch.cuda.set_device(device)
    if not dist.is_initialized():
        if device.type == "cuda":
            dist.init_process_group("nccl", device_id=device)
        else:
            dist.init_process_group("gloo")
    return device


def teardown() -> None:
    """Leave the process group (if any); call once at the end of a torchrun script."""
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def barrier() -> None:
    """Wait until every process gets here (nothing to wait for in a single process)."""
    if world_size() > 1:
        dist.barrier()


def all_sum(values: Sequence[float | torch.Tensor], device: torch.device) -> list[float]:
    """Each of ``values`` summed over the processes, as float64 numbers.

    The values travel in one float64 tensor on ``device`` (NCCL needs the GPU), so
    integer counts below :math:`2^{53}` come back exact. Every process must call it."""
    totals = torch.stack([torch.as_tensor(v, dtype=torch.float64, device=device) for v in values])
    if world_size() > 1:
        dist.all_reduce(totals)
    return totals.tolist()


def from_main(compute: Callable[[], T]) -> T:
    """``compute()`` run by process 0 and sent to every process (pickled).

    For what only the main process may decide, such as whether a file it wrote exists
    and what it holds: the other processes need not see the same file system (several
    machines). In a single process it is just ``compute()``."""
    if world_size() == 1:
        return compute()
    box = [compute() if is_main() else None]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def same_buffers(module: nn.Module) -> None:
    """Copy process 0's buffers (running statistics) to every process, in place."""
    if world_size() > 1:
        for buffer in module.buffers():
            dist.broadcast(buffer, src=0)


def data_parallel(model: nn.Module, device: torch.device) -> tuple[nn.Module, nn.parallel.DistributedDataParallel]:
    """``(model, wrapper)``: the model to keep (checkpoints, evaluation) and the
    :class:`~torch.nn.parallel.DistributedDataParallel` wrapper the training forward
    runs through, which averages the gradients over the processes in the backward pass
    (and starts every process from process 0's weights).

    BatchNorm normalizes with the statistics of the batch it sees, and a process sees
    only its part. On CUDA every ``BatchNorm`` layer is therefore converted to
    :class:`~torch.nn.SyncBatchNorm` (in place; the parameters and running statistics
    are kept), which computes the statistics of the whole global batch: data-parallel
    training then computes what one process computes on that batch, as the paper's
    batch-128 protocol needs. PyTorch's SyncBatchNorm runs only on GPUs, so on the CPU
    BatchNorm keeps each process's own batch statistics, the training differs from the
    single-process one, and a warning (from process 0) says so; the running statistics
    are then process 0's (the wrapper broadcasts them before each forward).

    ConvNorm layers need no such conversion: their running statistics
    (``running_autocorrelation``, see :class:`convnorm.layers.ConvNorm2d`) and their
    normalizer are functions of the weights alone, never of the batch, and the weights
    are the same in every process.
    """
    if device.type == "cuda":
        model = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    elif is_main() and any(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in model.modules()):
        warnings.warn("data-parallel training on the CPU: BatchNorm uses each process's own part of the batch "
                      "for its statistics (SyncBatchNorm needs a GPU), so the run differs from single-process "
                      "training", stacklevel=3)
    wrapper = nn.parallel.DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
    return model, wrapper

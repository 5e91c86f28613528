"""What one training step of a preset's network costs on the device that will train it, measured.

:func:`time_steps` runs the trainer itself (:class:`convnorm_lab.training.Trainer`, with the
preset's batch, recipe, precision, channels-last layout and, on a GPU, the CUDA-graph
step) for a few minibatches of synthetic images after an untimed warm-up (kernel
selection, the graph's capture), then an evaluation pass, and returns seconds per image
of each. The GPU window's calibration and a reader's estimate before training both use
it, so an estimate is priced by the same loop that will train. :func:`profile_steps` runs
the same trainer under the profiler and says which operators take the step's time.
"""
from __future__ import annotations

import time

import torch

from ..data import BatchLoader
from ..models import build_model
from ..models.normalizations import Norm
from ..training import TrainConfig, Trainer, evaluate
from ..training.mixed_precision import needs_loss_scaling, resolve_precision
from .presets import get_preset


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _trainer(preset: str, arch: str, norm: str, device: torch.device, batches: int, cuda_graph: bool | None,
             eval_images: int = 1000) -> Trainer:
    """The trainer of ``arch`` with ``norm`` as ``preset`` trains it on ``device``, over
    ``batches`` minibatches of synthetic images (an epoch), with the first ``eval_images``
    of them (at most) as its ``"val"`` set."""
    settings = get_preset(preset)
    precision = resolve_precision(settings.precision, device)
    graph = device.type == "cuda" and not needs_loss_scaling(precision) and cuda_graph is not False
    gen = torch.Generator().manual_seed(0)
    size = batches * settings.batch_size
    images = torch.randint(0, 256, (size, 3, 32, 32), dtype=torch.uint8, generator=gen)
    labels = torch.randint(0, 10, (size,), generator=gen)
    config = TrainConfig(epochs=2, batch_size=settings.batch_size, lr=settings.lr, nesterov=settings.nesterov,
                         weight_decay=settings.weight_decay, schedule=settings.schedule,
                         warmup_fraction=settings.warmup_fraction, precision=precision, cuda_graph=graph,
                         channels_last=settings.channels_last(device, norm))
    torch.manual_seed(0)
    model = build_model(settings.arch or arch, norm, 10, settings.width)
    penalty = Norm(norm).base.penalty
    regularizer = None if penalty is None else penalty.regularizer(penalty.weight)
    count = min(eval_images, size)
    loaders = {"train": BatchLoader(images, labels, device=device),
               "val": BatchLoader(images[:count], labels[:count], 500, device=device)}
    return Trainer(model, loaders, config, regularizer=regularizer, progress=False, device=device)


def time_steps(preset: str, arch: str, norm: str, device: torch.device | str, batches: int = 20,
               eval_images: int = 1000, cuda_graph: bool | None = None) -> dict:
    """Seconds per image of a training step (``train_s_per_image``, over ``batches``
    timed minibatches) and of an evaluation forward pass (``forward_s_per_image``, over
    ``eval_images``) of ``arch`` with ``norm`` under ``preset`` on ``device``, with the
    precision, batch and whether the step ran as a CUDA graph: as the trainer runs it
    (``cuda_graph`` None: a graph on a GPU unless the precision needs loss scaling), or
    eagerly if ``cuda_graph`` is False, as a training without graphs will step."""
    device = torch.device(device)
    trainer = _trainer(preset, arch, norm, device, batches, cuda_graph, eval_images)
    config, val = trainer.config, trainer.loaders["val"]
    size, count = len(trainer.loaders["train"].labels), len(val.labels)
    trainer.train_epoch(0)  # untimed: kernel selection, the graph's capture
    _sync(device)
    start = time.perf_counter()
    trainer.train_epoch(1)
    _sync(device)
    train = (time.perf_counter() - start) / size
    evaluate(trainer.model, val, device, config.precision, config.channels_last)
    _sync(device)
    start = time.perf_counter()
    evaluate(trainer.model, val, device, config.precision, config.channels_last)
    _sync(device)
    forward = (time.perf_counter() - start) / count
    return {"arch": get_preset(preset).arch or arch, "norm": norm, "precision": config.precision,
            "batch": config.batch_size, "cuda_graph": config.cuda_graph, "train_s_per_image": train,
            "forward_s_per_image": forward}


def profile_steps(preset: str, arch: str, norm: str, device: torch.device | str, batches: int = 4,
                  top: int = 25) -> dict:
    """Where an eager training step of ``arch`` with ``norm`` under ``preset`` spends its
    time on ``device``: the ``top`` operators by their own time on the device (the GPU's
    kernels on CUDA, the processor's on a CPU), per step and as a share of all operators'
    time, over ``batches`` profiled minibatches after an untimed epoch. Eager, because a
    CUDA graph's replay hides which operator launched its kernels."""
    from torch.profiler import ProfilerActivity, profile

    device = torch.device(device)
    trainer = _trainer(preset, arch, norm, device, batches, cuda_graph=False, eval_images=1)
    trainer.train_epoch(0)
    _sync(device)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=activities) as prof:
        trainer.train_epoch(1)
        _sync(device)
    attribute = "self_device_time_total" if device.type == "cuda" else "self_cpu_time_total"
    events = [e for e in prof.key_averages() if getattr(e, attribute) > 0]
    total = sum(getattr(e, attribute) for e in events)
    events.sort(key=lambda e: getattr(e, attribute), reverse=True)
    ops = [{"name": e.key, "calls_per_step": e.count / batches,
            "ms_per_step": getattr(e, attribute) / 1000 / batches, "share": getattr(e, attribute) / total}
           for e in events[:top]]
    return {"arch": get_preset(preset).arch or arch, "norm": norm, "precision": trainer.config.precision,
            "batch": trainer.config.batch_size, "time": "device" if device.type == "cuda" else "processor",
            "ms_per_step": total / 1000 / batches, "ops": ops}

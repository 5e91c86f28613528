"""The paper's Table 8: the time of a training step of ResNet18, vanilla against ConvNorm
and Cayley convolutions."""
from __future__ import annotations

import math
import time

import torch
import torch.nn as nn

from ...models import build_model
from ...models.normalizations import BN, CAYLEY, CONVNORM_BN, NONE
from ...training import seed_everything
from ..context import Context
from ..experiment import TRAINING_SPLIT, Experiment
from ..presets import Preset
from ..schema import Measure, ResultSchema, method_names

#: vanilla convolutions (with BatchNorm, as the paper's), ConvNorm's and Cayley's
METHODS = (BN, CONVNORM_BN, CAYLEY)


def conduct(ctx: Context) -> dict:
    """Seconds per training step of a ResNet18 (the preset's width and batch) for
    vanilla (BN), ConvNorm+BN and Cayley convolutions, and the implied time of one
    CIFAR-10 epoch."""
    splits = ctx.splits()
    p = ctx.preset
    batch = p.batch_size
    x = splits.train[0][:batch].float().div(255).to(ctx.device)
    y = splits.train[1][:batch].to(ctx.device)
    out = {}
    for norm in METHODS:
        seed_everything(ctx.seed)
        model = build_model("resnet18", norm, 10, p.width).to(ctx.device)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

        def step(model=model, optimizer=optimizer):
            optimizer.zero_grad(set_to_none=True)
            nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()

        step()  # warm-up (allocations, kernel selection)
        if ctx.device.type == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(p.runtime_steps):
            step()
        if ctx.device.type == "cuda":
            torch.cuda.synchronize()
        per_step = (time.perf_counter() - start) / p.runtime_steps
        out[norm] = {"seconds_per_step": per_step, "batch_size": len(y),
                     "seconds_per_epoch": per_step * math.ceil(TRAINING_SPLIT / batch), "steps_timed": p.runtime_steps}
    for norm in out:
        out[norm]["relative_to_bn"] = out[norm]["seconds_per_step"] / out[BN]["seconds_per_step"]
    return out


def networks(preset: Preset) -> str:
    """The timed ResNet18 at the preset's width (the run time ignores the preset's network)."""
    return "ResNet18" + ("" if preset.width is None else f" of width {preset.width}")


def describe(preset: Preset) -> str:
    return f"{networks(preset)}, batch {preset.batch_size}, {preset.runtime_steps} timed steps"


EXPERIMENT = Experiment(
    "runtime", "seconds per training step: vanilla (bn), convnorm+bn and Cayley convolutions", conduct,
    ResultSchema(
        methods=METHODS, paper_names={**method_names(METHODS), BN: NONE.label},
        measures=(Measure("seconds_per_epoch", ("seconds_per_epoch",), "seconds per epoch", paper="seconds_per_epoch"),
                  Measure("relative", ("relative_to_bn",), "time relative to vanilla")),
        details=(("seconds_per_step",), ("batch_size",), ("steps_timed",)),
        paper_table="runtime", layout=("measure", "method"), history=False),
    title="Training time of a ResNet18", networks_in_words=networks, describe=describe,
    paper_protocol="ResNet18, one training epoch of 45,000 images on the authors' GPU", seeds=1, trains=False)

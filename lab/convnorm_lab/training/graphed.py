"""A training step captured once as a CUDA graph and replayed for every full batch.

Eagerly, a CIFAR ResNet18 step at batch 128 launches hundreds of small kernels and the
GPU waits on the Python that launches them; replaying one captured graph launches them
all at once (the whole-step timings in ``benchmarks/results/bench_layer_cuda*``).

The graph holds forward, cross-entropy (plus a regularizer), backward and the SGD
update; the forward runs under the trainer's autocast where it asks for one (bfloat16;
float16's loss scaling reads the gradients on the host and cannot be captured). The
update is written out with ``torch._foreach`` operations so that the learning rate can
be a tensor the graph reads at each replay (a Python float would be baked into the
captured kernels, and the schedule could not change it):

.. math::

    g \\leftarrow \\nabla L + \\lambda\\,\\theta,\\qquad
    b \\leftarrow \\mu\\, b + g,\\qquad
    \\theta \\leftarrow \\theta - \\eta\\,(g + \\mu b) \\text{ (Nesterov) or }
    \\theta - \\eta\\, b,

PyTorch's SGD with momentum :math:`\\mu`, weight decay :math:`\\lambda` and no dampening. The
momentum buffers are the optimizer's own (``optimizer.state[p]["momentum_buffer"]``,
created as zeros if missing, which gives the same first step as PyTorch's ``b = g``), so
checkpoints and eager steps taken between replays (a last, smaller batch) see and update
the same state.
"""
from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn as nn


def _sgd_settings(optimizer: torch.optim.Optimizer) -> tuple[float, float, bool]:
    if not isinstance(optimizer, torch.optim.SGD) or len(optimizer.param_groups) != 1:
        raise ValueError("a graphed step needs a torch.optim.SGD optimizer with one parameter group")
    group = optimizer.param_groups[0]
    if group["dampening"] != 0 or group["maximize"]:
        raise ValueError("a graphed step supports SGD without dampening or maximize")
    return group["momentum"], group["weight_decay"], group["nesterov"]


class GraphedStep:
    """Call with a batch ``(x, y)`` of the captured shape: one replay; returns the
    step's loss and number of correct predictions as 0-dim CUDA tensors (no sync).

    Args:
        model: the network, on a CUDA device, in training mode.
        optimizer: its SGD optimizer (one parameter group).
        loss_fn: ``(x, y) -> (loss, logits)``, the trainer's loss.
        x, y: a first batch; its shape is the graph's (other shapes: step eagerly).
        warmup: forward-backward passes run on a side stream before the capture (CUDA
            libraries choose their kernels there); the model's parameters and buffers
            are restored afterwards, so they are not training steps.
    """

    def __init__(self, model: nn.Module, optimizer: torch.optim.Optimizer,
                 loss_fn: Callable[[torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]],
                 x: torch.Tensor, y: torch.Tensor, warmup: int = 3):
        if x.device.type != "cuda":
            raise ValueError(f"a CUDA graph needs CUDA tensors, got a batch on {x.device}")
        momentum, weight_decay, nesterov = _sgd_settings(optimizer)
        self.shape = tuple(x.shape)
        self.params = [p for p in optimizer.param_groups[0]["params"] if p.requires_grad]
        self.buffers = [optimizer.state[p].setdefault("momentum_buffer", torch.zeros_like(p))
                        for p in self.params]
        self.lr = torch.zeros((), device=x.device)
        self.x, self.y = x.clone(), y.clone()
        saved = {name: t.detach().clone() for name, t in model.state_dict().items()}
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(warmup):
                optimizer.zero_grad(set_to_none=True)
                loss_fn(self.x, self.y)[0].backward()
        torch.cuda.current_stream().wait_stream(side)
        with torch.no_grad():  # the warm-up passes moved running statistics: put them back
            for name, t in model.state_dict().items():
                t.copy_(saved[name])
        optimizer.zero_grad(set_to_none=True)  # gradients are allocated inside the graph
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            loss, logits = loss_fn(self.x, self.y)
            loss.backward()
            grads = [p.grad for p in self.params]
            with torch.no_grad():
                if weight_decay:
                    torch._foreach_add_(grads, self.params, alpha=weight_decay)
                torch._foreach_mul_(self.buffers, momentum)
                torch._foreach_add_(self.buffers, grads)
                if nesterov:
                    torch._foreach_add_(grads, self.buffers, alpha=momentum)
                step = grads if nesterov else self.buffers
                torch._foreach_sub_(self.params, torch._foreach_mul(step, self.lr))
            self.loss = loss.detach()
            self.correct = (logits.argmax(1) == self.y).sum()

    def __call__(self, x: torch.Tensor, y: torch.Tensor, lr: float) -> tuple[torch.Tensor, torch.Tensor]:
        if tuple(x.shape) != self.shape:
            raise ValueError(f"the graph was captured for batches of shape {self.shape}, got {tuple(x.shape)}")
        self.x.copy_(x, non_blocking=True)
        self.y.copy_(y, non_blocking=True)
        self.lr.fill_(lr)
        self.graph.replay()
        return self.loss, self.correct

"""The CUDA-graph training step computes what the eager step computes (CUDA only).

Two copies of a network start from the same weights and see the same batches (full
ones replayed from the graph, a last smaller one stepped eagerly, the learning rate
changed between epochs or, in the fast recipe, at every minibatch); their weights,
momentum buffers, BatchNorm statistics and losses must agree to the rounding of the
precision they train in after every epoch. The GPU window runs these after its benchmark,
with the filter the benchmark chose (``FILTER`` in the environment: ``fused``, ``fft`` or
``dense``; unset, the package's rule); where they fail, its trainings step eagerly.
"""
from __future__ import annotations

import copy
import os

import pytest
import torch

from convnorm.functional import current_policy, use_policy
from convnorm_lab.data import BatchLoader
from convnorm_lab.models import build_model
from convnorm_lab.training import TrainConfig, Trainer

pytestmark = [pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]


#: the paper's step schedule, and the fast protocol's recipe (one-cycle, Nesterov, channels-last)
RECIPES = {"step": dict(milestones=(1, 2)),
           "fast": dict(schedule="one-cycle", warmup_fraction=0.3, nesterov=True, channels_last=True)}


def _trainer(model, graph: bool, recipe: str = "step", precision: str = "fp32") -> Trainer:
    gen = torch.Generator().manual_seed(0)
    images = torch.randint(0, 256, (100, 3, 16, 16), dtype=torch.uint8, generator=gen)
    labels = torch.randint(0, 10, (100,), generator=gen)
    config = TrainConfig(epochs=3, batch_size=32, cuda_graph=graph, weight_decay=5e-4, precision=precision,
                         **RECIPES[recipe])
    return Trainer(model, {"train": BatchLoader(images, labels)}, config, progress=False, device="cuda")


@pytest.mark.parametrize("norm, recipe, precision", [
    ("bn", "step", "fp32"), ("convnorm+bn", "step", "fp32"), ("convnorm", "step", "fp32"), ("sn+bn", "step", "fp32"),
    ("bn", "fast", "fp32"), ("convnorm+bn", "fast", "fp32"), ("bn", "fast", "bf16"), ("convnorm+bn", "fast", "bf16")])
def test_graphed_training_matches_eager(norm, recipe, precision, full_float32):
    """Float32 without TensorFloat-32 (the fused filter's float32 products too, by the package's
    default): with it, cuDNN's ~1e-3 rounding of each convolution, which may differ between the
    eager and the captured algorithms, grows over an epoch of updates beyond the float32
    tolerance (seen on an H200). ConvNorm filters as ``FILTER`` says (see the module docstring)."""
    if precision == "bf16" and not torch.cuda.is_bf16_supported():
        pytest.skip("no bfloat16 on this GPU")
    chosen = os.environ.get("FILTER")
    with use_policy(current_policy().filtering(chosen, "cuda") if chosen else current_policy()):
        _compare_graphed_with_eager(norm, recipe, precision)


def _compare_graphed_with_eager(norm: str, recipe: str, precision: str) -> None:
    torch.manual_seed(0)
    model = build_model("small", norm, 10, width=8)
    eager = _trainer(copy.deepcopy(model), False, recipe, precision)
    graphed = _trainer(copy.deepcopy(model), True, recipe, precision)
    rtol, atol = (1e-4, 1e-5) if precision == "fp32" else (2e-2, 2e-3)  # bfloat16 keeps 8 bits of mantissa
    for epoch in range(3):
        loss_eager, _ = eager.train_epoch(epoch)
        loss_graph, _ = graphed.train_epoch(epoch)
        assert graphed.graphed is not None
        assert loss_graph == pytest.approx(loss_eager, rel=10 * rtol)
        for (name, a), b in zip(eager.model.state_dict().items(), graphed.model.state_dict().values()):
            assert torch.allclose(a.float(), b.float(), rtol=rtol, atol=atol), f"{name} differs after epoch {epoch}"
    for p_eager, p_graph in zip(eager.model.parameters(), graphed.model.parameters()):
        buf_e = eager.optimizer.state[p_eager]["momentum_buffer"]
        buf_g = graphed.optimizer.state[p_graph]["momentum_buffer"]
        assert torch.allclose(buf_e, buf_g, rtol=rtol, atol=atol)



def test_the_trainer_turns_on_the_cudnn_autotuner():
    """Every full batch has the same shapes, so the trainer lets cuDNN time its algorithms once."""
    torch.backends.cudnn.benchmark = False
    _trainer(build_model("small", "bn", 10, 4), graph=False)
    assert torch.backends.cudnn.benchmark

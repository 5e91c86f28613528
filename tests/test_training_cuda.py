"""The CUDA-graph training step computes what the eager step computes (CUDA only).

Two copies of a network start from the same weights and see the same batches (full
ones replayed from the graph, a last smaller one stepped eagerly, learning rate changed
between epochs); their weights, momentum buffers, BatchNorm statistics and losses must
agree to float32 rounding after every epoch.
"""
from __future__ import annotations

import copy

import pytest
import torch

from convnorm.data import BatchLoader
from convnorm.models import build_model
from convnorm.training import TrainConfig, Trainer

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def _trainer(model, graph: bool) -> Trainer:
    gen = torch.Generator().manual_seed(0)
    images = torch.randint(0, 256, (100, 3, 16, 16), dtype=torch.uint8, generator=gen)
    labels = torch.randint(0, 10, (100,), generator=gen)
    config = TrainConfig(epochs=3, milestones=(1, 2), batch_size=32, cuda_graph=graph, weight_decay=5e-4)
    return Trainer(model, {"train": BatchLoader(images, labels)}, config, progress=False, device="cuda")


@pytest.mark.parametrize("norm", ["bn", "convnorm+bn", "convnorm", "sn+bn"])
def test_graphed_training_matches_eager(norm):
    torch.manual_seed(0)
    model = build_model("small", norm, 10, width=8)
    eager, graphed = _trainer(copy.deepcopy(model), False), _trainer(copy.deepcopy(model), True)
    for epoch in range(3):
        loss_eager, _ = eager.train_epoch(epoch)
        loss_graph, _ = graphed.train_epoch(epoch)
        assert graphed.graphed is not None
        assert loss_graph == pytest.approx(loss_eager, rel=1e-4)
        for (name, a), b in zip(eager.model.state_dict().items(), graphed.model.state_dict().values()):
            assert torch.allclose(a.float(), b.float(), rtol=1e-4, atol=1e-5), f"{name} differs after epoch {epoch}"
    for p_eager, p_graph in zip(eager.model.parameters(), graphed.model.parameters()):
        buf_e = eager.optimizer.state[p_eager]["momentum_buffer"]
        buf_g = graphed.optimizer.state[p_graph]["momentum_buffer"]
        assert torch.allclose(buf_e, buf_g, rtol=1e-4, atol=1e-5)


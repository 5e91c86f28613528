"""The engine switches autocast off around a layer's own arithmetic by one C call each way
(convnorm._engine.Prepared): the caller's autocast is on again after the layer, its dtype kept,
and a program exported under autocast computes what the layer computes."""
from __future__ import annotations

import pytest
import torch

from convnorm.layers import ConvNorm2d


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_autocast_is_on_again_after_the_layer(dtype):
    """Inside ``torch.autocast``, after a training forward and an evaluation forward, autocast
    is still on with its dtype, and the next matrix product runs in it."""
    torch.manual_seed(0)
    layer = ConvNorm2d(4, 6, 3, padding=1)
    x = torch.randn(2, 4, 8, 8)
    with torch.autocast("cpu", dtype=dtype):
        for training in (True, False):
            layer.train(training)
            out = layer(x)
            assert out.dtype == dtype
            assert torch.is_autocast_enabled("cpu") and torch.get_autocast_dtype("cpu") == dtype
            assert (x.flatten(1) @ x.flatten(1).T).dtype == dtype
    assert not torch.is_autocast_enabled("cpu")


@pytest.mark.compile
def test_a_program_exported_under_autocast_is_the_layer():
    """``torch.export`` traces the layer under autocast (the engine keeps the context manager
    there, which the exporter records): the program's output equals the layer's."""
    torch.manual_seed(0)
    layer = ConvNorm2d(4, 6, 3, padding=1)
    x = torch.randn(2, 4, 8, 8)
    layer(x)  # a training step: evaluation reads the running average
    layer.eval()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        want = layer(x)
        got = torch.export.export(layer, (x,)).module()(x)
    assert got.dtype == want.dtype == torch.bfloat16
    torch.testing.assert_close(got, want, rtol=0, atol=0)

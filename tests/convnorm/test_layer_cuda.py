"""ConvNorm2d on a CUDA GPU: same numbers as the float64 CPU reference, float16/bfloat16
autocast returns what a conv would, buffers update under DataParallel like BatchNorm's,
torch.compile (inductor) matches eager, a whole training step records into a CUDA graph.
Each of these with the package's rule (the spatial computation, its filter the known-good FFTs
until a stored GPU record shows the fused one correct and faster), with each filter of the
spatial computation (``ComputationPolicy.filtering``: the fused kernels, cuFFT, dense DFT
matrices) and with the frequency-domain computation forced
(``convnorm.functional.computation``). Skipped without a GPU (CI has none; a lent GPU window's
benchmark checks each filter against the float64 reference before it may train with it, see
``benchmarks/bench_gpu.py``)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from convnorm.functional import computation, conv_norm, current_policy, use_policy
from convnorm.layers import ConvNorm2d

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))  # the benchmarks' training steps
from timing import make_graphed_train_step, make_train_step  # noqa: E402

pytestmark = [pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

CASES = [dict(kernel_size=3, padding=1), dict(kernel_size=3, stride=2, padding=1),
         dict(kernel_size=3, padding=1, padding_mode="circular"), dict(kernel_size=1, stride=2),
         dict(kernel_size=5, padding=1, dilation=1)]


@pytest.fixture(params=["rule", "fused", "fft", "dense", "frequency_domain"])
def way(request):
    """The package's rule on a GPU, each filter of the spatial computation, or the
    frequency-domain computation forced."""
    if request.param == "rule":
        yield
    elif request.param == "frequency_domain":
        with computation(request.param):
            yield
    else:
        with use_policy(current_policy().filtering(request.param, "cuda")):
            yield


def conv_weight_grad_error(x, weight, padding):
    """Largest error, relative to the largest entry, of the weight gradient of a plain
    ``conv2d`` computed in float32 on the GPU (cuDNN's own precision for this shape)."""
    w = weight.detach().clone().requires_grad_()
    F.conv2d(x, w, padding=padding).square().sum().backward()
    w32 = weight.detach().to("cuda", torch.float32).requires_grad_()
    F.conv2d(x.to("cuda", torch.float32), w32, padding=padding).square().sum().backward()
    return ((w32.grad.double().cpu() - w.grad).abs().max() / w.grad.abs().max()).item()


@pytest.mark.parametrize("kwargs", CASES)
@pytest.mark.parametrize("size", [8, 32, 61])
def test_cuda_float32_matches_cpu_float64(kwargs, size, full_float32, way):
    torch.manual_seed(size)
    x = torch.randn(4, 6, size, size, dtype=torch.float64)
    layer = ConvNorm2d(6, 5, dtype=torch.float64, **kwargs)
    with torch.no_grad():
        layer.affine_weight.add_(0.1 * torch.randn_like(layer.affine_weight))
    reference = layer(x)
    reference.square().sum().backward()
    reference_grad, reference_affine_grad = layer.weight.grad.clone(), layer.affine_weight.grad.clone()
    layer.zero_grad()
    out = layer.to("cuda", torch.float32)(x.to("cuda", torch.float32))
    torch.testing.assert_close(out.double().cpu(), reference.detach(), rtol=1e-4, atol=1e-4)
    out.square().sum().backward()
    # The weight gradient flows through the (full) convolution: allow what cuDNN's float32
    # algorithm for that convolution itself incurs (some are FFT-based), and no more.
    m = layer.weight.shape[-1]
    conv_error = conv_weight_grad_error(x, layer.weight.double().cpu(), m - 1)
    error = ((layer.weight.grad.double().cpu() - reference_grad).abs().max() / reference_grad.abs().max()).item()
    assert error <= 10 * conv_error + 1e-5, (error, conv_error)
    torch.testing.assert_close(layer.affine_weight.grad.double().cpu(), reference_affine_grad, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_cuda_autocast_returns_the_conv_dtype(dtype, way):
    torch.manual_seed(1)
    layer = ConvNorm2d(3, 8, 3, stride=2, padding=1).cuda()
    x = torch.randn(4, 3, 16, 16, device="cuda")
    expected = layer(x).detach()
    with torch.autocast("cuda", dtype=dtype):
        out = layer(x)
        conv_dtype = nn.functional.conv2d(x, layer.weight).dtype
    assert out.dtype == conv_dtype == dtype
    assert layer.running_autocorrelation.dtype == torch.float32
    torch.testing.assert_close(out.float(), expected, rtol=2e-2, atol=3e-2)
    out.float().sum().backward()
    assert layer.weight.grad.dtype == torch.float32 and torch.isfinite(layer.weight.grad).all()


def test_data_parallel_updates_buffers_like_batchnorm():
    torch.manual_seed(2)
    layer = ConvNorm2d(3, 4, 3, padding=1).cuda()
    reference = ConvNorm2d(3, 4, 3, padding=1).cuda()
    reference.load_state_dict(layer.state_dict())
    parallel = nn.DataParallel(layer, device_ids=list(range(torch.cuda.device_count())))
    x = torch.randn(2 * torch.cuda.device_count(), 3, 8, 8, device="cuda")
    for _ in range(3):
        parallel(x).sum().backward()
        reference(x).sum().backward()
    assert int(layer.num_steps_tracked) == int(reference.num_steps_tracked) == 3
    torch.testing.assert_close(layer.running_autocorrelation, reference.running_autocorrelation)
    torch.testing.assert_close(layer.weight.grad, reference.weight.grad)


def test_torch_compile_inductor_matches_eager_on_cuda(way):
    torch.manual_seed(3)
    eager = ConvNorm2d(4, 8, 3, stride=2, padding=1).cuda()
    compiled_layer = ConvNorm2d(4, 8, 3, stride=2, padding=1).cuda()
    compiled_layer.load_state_dict(eager.state_dict())
    compiled = torch.compile(compiled_layer)
    x = torch.randn(4, 4, 16, 16, device="cuda")
    torch.testing.assert_close(compiled(x), eager(x), rtol=1e-4, atol=1e-4)
    compiled(x).sum().backward()
    eager(x).sum().backward()
    torch.testing.assert_close(compiled_layer.weight.grad, eager.weight.grad, rtol=1e-3, atol=1e-3)
    assert int(compiled_layer.num_steps_tracked) == int(eager.num_steps_tracked) == 2


def test_functional_on_cuda_float64_is_exact(way):
    torch.manual_seed(4)
    x = torch.randn(2, 3, 10, 12, dtype=torch.float64)
    weight = torch.randn(4, 3, 3, 3, dtype=torch.float64)
    cpu = conv_norm(x, weight, None, 2, 1)
    gpu = conv_norm(x.cuda(), weight.cuda(), None, 2, 1)
    torch.testing.assert_close(gpu.cpu(), cpu, rtol=1e-10, atol=1e-10)


def test_training_step_records_into_a_cuda_graph(full_float32, way):
    """Forward, backward, SGD and the running-average update of a ConvNorm network record
    into one CUDA graph (nothing in the layer synchronises with the host); each replay is
    one training step, equal to an eager one."""
    def network():
        torch.manual_seed(5)
        return nn.Sequential(ConvNorm2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                             ConvNorm2d(8, 16, 3, stride=2, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                             nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10)).cuda()

    images = torch.randn(8, 3, 16, 16, device="cuda")
    labels = torch.randint(0, 10, (8,), device="cuda")
    eager, graphed = network(), network()
    eager_step = make_train_step(eager, images, labels)
    graphed_step = make_graphed_train_step(graphed, images, labels, warmup=3)  # 3 eager steps
    for _ in range(3):
        eager_step()
    for _ in range(4):
        assert graphed_step() == pytest.approx(eager_step(), rel=1e-4, abs=1e-5)
    for (name, a), b in zip(eager.state_dict().items(), graphed.state_dict().values()):
        torch.testing.assert_close(b, a, rtol=1e-4, atol=1e-5, msg=name)
    assert int(graphed[0].num_steps_tracked) == 7

"""The frequency domain by matrix products only (convnorm._frequency_gemm): the layer and its
gradients in float64 to the reference's rounding; in bfloat16 and float16 under CPU autocast,
rounded as on a GPU, within bounds set by the dtypes' rounding; chosen by the policy where it
can take the layer (groups, dilation and a gradient through v-hat fall back to the spatial
computation, and the plan says why); nearly all its operations in the autocast dtype; no value
read to the host in a training step; traced by torch.compile without a graph break."""
from __future__ import annotations

import collections
import math
from dataclasses import replace

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import flop_registry

import convnorm._engine
from convnorm._frequency_gemm import frequency_gemm_conv_norm
from convnorm._geometry import layer_geometry
from convnorm.functional import ComputationPolicy, conv_norm, use_policy
from convnorm.layers import ConvNorm2d
from convnorm.reference import conv_norm_reference

POLICY = replace(ComputationPolicy().forcing("frequency_domain"), frequency_domain_gemms=True)

# size, kernel, stride, padding, padding mode, affine taps
CASES = [
    ((8, 8), 3, 1, 1, "zeros", (3, 3)),
    ((8, 8), 3, 2, 1, "zeros", (3, 3)),
    ((5, 7), 3, 2, 1, "zeros", (2, 3)),     # L = 7 (prime) by 9 (odd)
    ((1, 1), 3, 1, 1, "zeros", (1, 1)),     # a 1x1 map
    ((6, 6), 3, 1, 1, "circular", (3, 3)),  # L = n
    ((9, 9), 5, 2, 2, "zeros", (2, 4)),     # even affine taps: the centre's offset
]


def layer(case, n=2, c_in=3, c_out=4, low_pass=False, seed=0, dtype=torch.float64):
    """Input, weight, bias and affine kernel of a layer of ``case``, and its arguments."""
    size, kernel, stride, padding, mode, taps = case
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, c_in, *size, generator=g, dtype=dtype)
    w = torch.randn(c_out, c_in, kernel, kernel, generator=g, dtype=dtype)
    if low_pass:  # a box kernel plus 1 %: its spectrum nearly vanishes, where v-hat is largest
        w = torch.ones_like(w) + 0.01 * w
    b = torch.randn(c_out, generator=g, dtype=dtype)
    r = torch.randn(c_out, *taps, generator=g, dtype=dtype)
    return (x, w, b, r), dict(stride=stride, padding=padding, padding_mode=mode)


@pytest.fixture
def calls(monkeypatch):
    """How many times the layer ran by matrix products."""
    counted = collections.Counter()

    def counting(*args):
        counted["gemm"] += 1
        return frequency_gemm_conv_norm(*args)

    monkeypatch.setattr(convnorm._engine, "frequency_gemm_conv_norm", counting)
    return counted


def run(tensors, arguments, autocast=None):
    """The layer's output by matrix products and the leaves it differentiates."""
    leaves = [t.detach().clone().requires_grad_() for t in tensors]
    x, w, b, r = leaves
    with use_policy(POLICY), torch.autocast("cpu", dtype=autocast or torch.bfloat16, enabled=autocast is not None):
        return conv_norm(x, w, b, affine_weight=r, **arguments), leaves


def reference(tensors, arguments):
    leaves = [t.detach().double().requires_grad_() for t in tensors]
    x, w, b, r = leaves
    return conv_norm_reference(x, w, b, affine_weight=r, **arguments), leaves


@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("case", CASES)
def test_float64_is_the_reference_layer(case, channels_last, calls):
    """Output and every gradient (input, weight, bias, affine kernel) within 1e-10 of the
    reference in float64 (they differ by float64 rounding, about 1e-14); the output in the
    input's memory format."""
    tensors, arguments = layer(case)
    if channels_last:
        tensors = (tensors[0].contiguous(memory_format=torch.channels_last), *tensors[1:])
    out, leaves = run(tensors, arguments)
    want, want_leaves = reference(tensors, arguments)
    assert calls["gemm"] == 1 and out.dtype == torch.float64
    assert out.is_contiguous(memory_format=torch.channels_last if channels_last else torch.contiguous_format)
    torch.testing.assert_close(out, want, rtol=0, atol=1e-10)
    grad = torch.randn_like(want)
    for got, expected in zip(torch.autograd.grad(out, leaves, grad), torch.autograd.grad(want, want_leaves, grad)):
        torch.testing.assert_close(got, expected, rtol=0, atol=1e-10)


def relative(got: torch.Tensor, want: torch.Tensor) -> float:
    got, want = got.detach().double(), want.detach()
    return float((got - want).norm() / want.norm())


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("low_pass", [False, True])
@pytest.mark.parametrize("case", [((12, 12), 3, 1, 1, "zeros", (3, 3)), ((7, 7), 3, 2, 1, "zeros", (3, 3))])
def test_half_precision_is_within_its_rounding(case, low_pass, dtype, calls):
    r"""Under CPU autocast (the products rounded as on a GPU) the output, in the autocast dtype,
    is within :math:`1.25\,\epsilon` of the float64 layer in relative Frobenius norm, and each
    gradient within :math:`3.75\,\epsilon` (:math:`\epsilon` the dtype's machine epsilon:
    9.8e-3 and 2.9e-2 for bfloat16, 1.2e-3 and 3.7e-3 for float16), on random and low-pass
    kernels alike. Why these bounds: the data are rounded about seven times on the way (input,
    two transforms, folded kernels, products, two inverse transforms), each by at most
    :math:`\epsilon/2` relative, errors of random sign that add in norm (measured: about
    :math:`0.75\,\epsilon`); nothing amplifies them, since the folded kernels are bounded by the
    affine kernel's spectrum and the normalizer is folded in float32. The gradients take the
    same path back and sum the rounded products over samples and frequencies once more
    (measured: at most :math:`0.95\,\epsilon`). The stride-2 layer reads a channels-last input."""
    tensors, arguments = layer(case, n=8, c_in=16, c_out=16, low_pass=low_pass, dtype=torch.float32)
    if arguments["stride"] == 2:
        tensors = (tensors[0].contiguous(memory_format=torch.channels_last), *tensors[1:])
    out, leaves = run(tensors, arguments, autocast=dtype)
    want, want_leaves = reference(tensors, arguments)
    assert calls["gemm"] == 1 and out.dtype == dtype
    eps = torch.finfo(dtype).eps
    assert relative(out, want) <= 1.25 * eps
    grad = torch.randn(want.shape, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    got = torch.autograd.grad(out, leaves, grad.to(dtype))
    for name, g, expected in zip("xwbr", got, torch.autograd.grad(want, want_leaves, grad)):
        assert relative(g, expected) <= 3.75 * eps, name


def plan(size, policy=POLICY, dtype=torch.float32, groups=1, dilation=1, autocast=None):
    x = torch.empty(2, 4, size, size, dtype=dtype)
    w = torch.empty(4, 4 // groups, 3, 3, dtype=dtype)
    geometry = layer_geometry(x, w, 1, dilation, dilation, groups, "zeros")
    return policy.plan(x, tuple(w.shape), geometry, True, autocast)


def test_the_policy_chooses_the_products_where_they_take_the_layer():
    """The products run in the autocast dtype under autocast, else in the computation's dtype
    (float32 for half-precision data); groups and dilation go to the spatial computation, which
    takes them (and gives the reference's layer); the default policy never chooses them."""
    assert plan(8, autocast=torch.bfloat16).gemm_dtype == torch.bfloat16
    assert plan(8, autocast=torch.float16).gemm_dtype == torch.float16
    assert plan(8, dtype=torch.float64).gemm_dtype == torch.float64
    assert plan(8, dtype=torch.bfloat16).gemm_dtype == torch.float32
    chosen = plan(8)
    assert chosen.computation == "frequency_domain" and chosen.frequencies_per_chunk is None
    for fallback in (plan(8, groups=2), plan(8, dilation=2)):
        assert fallback.computation == "spatial" and fallback.gemm_dtype is None
    assert plan(8, policy=ComputationPolicy()).gemm_dtype is None
    assert ComputationPolicy().frequency_domain_gemms is False
    with pytest.raises(ValueError, match="frequency_domain_gemms"):
        ComputationPolicy(frequency_domain_gemms=1)
    g = torch.Generator().manual_seed(3)
    x, w = torch.randn(2, 4, 6, 6, generator=g, dtype=torch.float64), torch.randn(4, 2, 3, 3, generator=g,
                                                                                  dtype=torch.float64)
    with use_policy(POLICY):
        grouped = conv_norm(x, w, padding=2, dilation=2, groups=2)
    torch.testing.assert_close(grouped, conv_norm_reference(x, w, padding=2, dilation=2, groups=2))


FFTS = (torch.ops.aten._fft_r2c.default, torch.ops.aten._fft_c2r.default, torch.ops.aten._fft_c2c.default)


class Flops(TorchDispatchMode):
    r"""Floating-point operations by kind and dtype, everything the layer computes counted: the
    matrix products' as PyTorch's FLOP counter counts them (two per multiply-add), the FFTs' at
    :math:`5\, n \log_2 n` per transform of :math:`n` complex points (the usual count; half that
    for real data), and every pointwise operation at one per output element, a reduction at one
    per input element (copies that ATen tags pointwise, such as ``clone``, counted too: the count
    errs against half precision)."""

    def __init__(self):
        super().__init__()
        self.counted = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if func._overloadpacket in flop_registry:
            self.counted["products", args[0].dtype] += flop_registry[func._overloadpacket](*args, **kwargs,
                                                                                           out_val=out)
        elif func in FFTS:
            assert args[0].dtype in (torch.float32, torch.complex64)  # the kernels' spectra: float32
            larger = max(args[0], out, key=torch.Tensor.numel)
            points = math.prod(larger.shape[d] for d in args[1])
            complex_points = larger.numel() if larger.is_complex() else larger.numel() / 2
            self.counted["ffts", torch.float32] += 5 * complex_points * math.log2(max(points, 2))
        elif torch.Tag.pointwise in func.tags and isinstance(out, torch.Tensor) and out.is_floating_point():
            self.counted["pointwise", out.dtype] += out.numel()
        elif torch.Tag.reduction in func.tags and args[0].is_floating_point():
            self.counted["pointwise", args[0].dtype] += args[0].numel()
        return out

    def share(self, dtype: torch.dtype, kinds=("products", "ffts", "pointwise")) -> float:
        """The share of the operations of ``kinds`` done in ``dtype``."""
        of_kinds = {key: value for key, value in self.counted.items() if key[0] in kinds}
        return sum(value for (_, d), value in of_kinds.items() if d == dtype) / sum(of_kinds.values())


@pytest.mark.parametrize("n, channels, size, stride", [(2, 8, 8, 1), (16, 32, 8, 1), (16, 32, 16, 2)])
def test_most_multiply_adds_are_in_half_precision(n, channels, size, stride):
    """Forward and backward under bfloat16 autocast: at least 80 % of the matrix products'
    multiply-adds in bfloat16 (the data's transforms and the per-frequency products; about 89 % at
    batch 2, 99 % at 16; the rest: the normalizer's small float32 products). What does not
    shrink with the batch, the kernels' float32 FFTs and the float32 arithmetic that folds the
    normalizer and the affine kernel into their spectra, is counted too from batch 16 on:
    bfloat16 still does at least 80 % of all the layer's operations (about 81 % there, 89 % at
    batch 32 with 64 channels)."""
    g = torch.Generator().manual_seed(4)
    x = torch.randn(n, channels, size, size, generator=g, requires_grad=True)
    w = torch.randn(channels, channels, 3, 3, generator=g, requires_grad=True)
    r = torch.randn(channels, 3, 3, generator=g, requires_grad=True)
    b = torch.randn(channels, generator=g, requires_grad=True)
    with use_policy(POLICY):
        conv_norm(x, w, b, stride=stride, padding=1, affine_weight=r)  # the constants built outside the count
        with Flops() as counted:
            with torch.autocast("cpu", dtype=torch.bfloat16):
                out = conv_norm(x, w, b, stride=stride, padding=1, affine_weight=r)
            out.backward(torch.randn(out.shape, generator=g, dtype=out.dtype))
    assert {d for kind, d in counted.counted if kind == "products"} == {torch.bfloat16, torch.float32}
    assert counted.counted["ffts", torch.float32] > 0 and counted.counted["pointwise", torch.float32] > 0
    assert counted.share(torch.bfloat16, kinds=("products",)) >= 0.8
    if n >= 16:
        assert counted.share(torch.bfloat16) >= 0.8


def test_the_layer_trains_with_the_products_under_autocast(calls):
    """ConvNorm2d with its running average, under bfloat16 autocast: the products run, the
    output is bfloat16 like a convolution's, and the weight and affine kernel get gradients."""
    torch.manual_seed(5)
    module = ConvNorm2d(4, 6, 3, padding=1, affine=True)
    x = torch.randn(3, 4, 8, 8)
    with use_policy(POLICY), torch.autocast("cpu", dtype=torch.bfloat16):
        out = module(x)
        module(x)
    assert calls["gemm"] == 2 and out.dtype == torch.bfloat16
    out.float().square().sum().backward()
    assert module.weight.grad.dtype == torch.float32 and module.weight.grad.abs().sum() > 0
    affine = [p for name, p in module.named_parameters() if "affine" in name]
    assert affine and all(p.grad is not None and p.grad.abs().sum() > 0 for p in affine)


HOST_READS = {"aten._local_scalar_dense", "aten.item", "aten.is_nonzero", "aten.equal", "aten.nonzero",
              "aten.masked_select", "aten._unique2", "aten.unique_consecutive", "aten.unique_dim"}
"""Operators that wait for the device: a value read to the host (``.item()``, ``bool(t)``, a
Python branch on a tensor, ``torch.equal``) or an output whose size depends on the values."""


class HostReads(TorchDispatchMode):
    """The host-reading operators (:data:`HOST_READS`) dispatched inside the ``with`` block: on a
    CUDA GPU each would synchronise the host with the device and break a CUDA graph's capture."""

    def __init__(self):
        super().__init__()
        self.found = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if str(func.overloadpacket) in HOST_READS:
            self.found.append(str(func))
        return func(*args, **(kwargs or {}))


def test_host_reads_are_found():
    """The detector sees a value read and a branch on a tensor."""
    x = torch.randn(3)
    with HostReads() as reads:
        x.sum().item()
        if x.abs().sum() > 0:
            x.nonzero()
    assert len(reads.found) == 3, reads.found


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_no_host_synchronisation(dtype):
    """A ConvNorm2d with its running average, channels-last, under autocast: a training step
    (forward, the running average's update, backward) reads no value to the host and makes no
    value-sized tensor, so nothing waits for a GPU and a CUDA graph can capture it; nor does a
    forward in evaluation. (The first evaluation call after a training step prepares the layer
    again, since the step count changed, and reads once whether the average has been trained:
    the layer's design, the same for every computation.)"""
    torch.manual_seed(7)
    module = ConvNorm2d(4, 6, 3, stride=2, padding=1, affine=True)
    x = torch.randn(3, 4, 9, 9).contiguous(memory_format=torch.channels_last).requires_grad_()
    with use_policy(POLICY), torch.autocast("cpu", dtype=dtype):
        module(x)  # prepared for this signature
        with HostReads() as training:
            module(x).float().square().sum().backward()
        module.eval()
        module(x)  # prepared for evaluation after that step
        with HostReads() as evaluation:
            module(x)
    assert training.found == [] and evaluation.found == []


def test_the_stop_gradient_is_as_in_the_other_computations():
    r"""With the stop-gradient (the default) the products take :math:`\hat v` as a constant, as
    every other computation does (the float64 test compares their gradients with the reference's);
    without it the gradient must flow through :math:`\hat v`, which the products do not take, so
    the policy falls back to the spatial computation and says why, and the gradients are the
    reference's with the gradient through :math:`\hat v`. Groups and dilation fall back likewise,
    named in the plan's reason."""
    x = torch.empty(2, 4, 8, 8)
    geometry = layer_geometry(x, torch.empty(4, 4, 3, 3), 1, 1, 1, 1, "zeros")
    free = POLICY.plan(x, (4, 4, 3, 3), geometry, False, torch.bfloat16)
    assert free.method == "spatial" and "gradient flows through v-hat" in free.reason
    assert POLICY.plan(x, (4, 4, 3, 3), geometry, True, torch.bfloat16).method == "frequency_gemms"
    assert "groups=2" in plan(8, groups=2).reason and "dilation (2, 2)" in plan(8, dilation=2).reason
    tensors, arguments = layer(CASES[1])
    leaves = [t.detach().clone().requires_grad_() for t in tensors]
    want_leaves = [t.detach().clone().requires_grad_() for t in tensors]
    with use_policy(POLICY):
        out = conv_norm(leaves[0], leaves[1], leaves[2], affine_weight=leaves[3], stop_gradient=False, **arguments)
    want = conv_norm_reference(want_leaves[0], want_leaves[1], want_leaves[2], affine_weight=want_leaves[3],
                               stop_gradient=False, **arguments)
    grad = torch.randn_like(want)
    got, expected = torch.autograd.grad(out, leaves, grad), torch.autograd.grad(want, want_leaves, grad)
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e, rtol=0, atol=1e-10)
    stopped, stopped_leaves = run(tensors, arguments)  # the products with the stop-gradient: another gradient
    assert (torch.autograd.grad(stopped, stopped_leaves[1], grad)[0] - expected[1]).abs().max() > 1e-3


@pytest.mark.compile
def test_torch_compile_traces_the_layer_whole():
    """A ConvNorm2d under bfloat16 autocast in one graph (``fullgraph``: no host
    synchronisation, no branch on values), with the same output and gradient as eager."""
    torch.manual_seed(6)
    eager, traced = ConvNorm2d(4, 6, 3, stride=2, padding=1), ConvNorm2d(4, 6, 3, stride=2, padding=1)
    traced.load_state_dict(eager.state_dict())
    compiled = torch.compile(traced, backend="aot_eager", fullgraph=True)
    x = torch.randn(2, 4, 8, 8)
    with use_policy(POLICY), torch.autocast("cpu", dtype=torch.bfloat16):
        outs = compiled(x), eager(x)
    assert outs[0].dtype == torch.bfloat16
    torch.testing.assert_close(*outs)
    for out in outs:
        out.float().sum().backward()
    torch.testing.assert_close(traced.weight.grad, eager.weight.grad)

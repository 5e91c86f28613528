"""convnorm.layers: ConvNorm2d/ConvNorm1d mirror nn.Conv2d/nn.Conv1d (shapes, weights,
arguments), start as pure normalization, keep a running average with the cosine ramp
in buffers that round-trip through state_dict, evaluate at other sizes, never take in
non-finite values, and run under autocast, torch.compile and DDP."""
from __future__ import annotations

import copy
import math
import subprocess
import sys

import numpy as np
import pytest
import torch
import torch.nn as nn

from convnorm import InputError, layers
from convnorm.fourier import kernel_autocorrelation
from convnorm.functional import conv_norm
from convnorm.layers import ConvNorm1d, ConvNorm2d
from convnorm.reference import conv_norm_reference

CASES = [dict(kernel_size=3, padding=1), dict(kernel_size=3, stride=2, padding=1),
         dict(kernel_size=(3, 5), padding=(0, 2)), dict(kernel_size=1, stride=2, bias=False),
         dict(kernel_size=3, padding=2, dilation=2, groups=2), dict(kernel_size=3, padding=1, padding_mode="circular"),
         dict(kernel_size=4, padding="valid"), dict(kernel_size=5, padding="same")]


@pytest.mark.parametrize("kwargs", CASES)
def test_shapes_and_parameters_mirror_conv2d(kwargs):
    torch.manual_seed(0)
    conv, layer = nn.Conv2d(4, 6, **kwargs), ConvNorm2d(4, 6, **kwargs)
    x = torch.randn(2, 4, 11, 10)
    assert layer(x).shape == conv(x).shape
    assert layer.weight.shape == conv.weight.shape
    assert (layer.bias is None) == (conv.bias is None)
    layer.load_state_dict(conv.state_dict(), strict=False)  # weights copy across
    torch.testing.assert_close(layer.weight, conv.weight)
    meta = ConvNorm2d(4, 6, **kwargs, device="meta")  # shapes without data (no autocast on meta)
    assert meta(x.to("meta")).shape == conv(x).shape and meta.running_autocorrelation.is_meta


def test_fresh_layer_is_pure_normalization_and_train_equals_eval_before_training():
    torch.manual_seed(1)
    layer = ConvNorm2d(3, 5, 3, padding=1, bias=False).double()
    x = torch.randn(2, 3, 8, 8, dtype=torch.float64)
    plain = conv_norm(x, layer.weight, padding=1)
    torch.testing.assert_close(layer(x), plain)  # affine kernel starts as the identity
    layer.reset_running_stats()
    torch.testing.assert_close(layer.eval()(x), plain)  # eval before any step: current weight


def test_ramp_factor_values():
    layer = ConvNorm2d(1, 1, 3, ramp_steps=100, ramp_floor=0.01)
    assert float(layer.ramp_factor(0)) == 1.0
    assert math.isclose(float(layer.ramp_factor(50)), 0.5, abs_tol=1e-12)
    assert math.isclose(float(layer.ramp_factor(25)), 0.5 * (1 + math.cos(math.pi / 4)), abs_tol=1e-12)
    assert float(layer.ramp_factor(100)) == float(layer.ramp_factor(10**6)) == 0.01


def test_running_average_follows_the_ramp_and_counts_training_forwards():
    torch.manual_seed(2)
    layer = ConvNorm2d(2, 3, 3, padding=1, ramp_steps=4).double()
    x = torch.randn(1, 2, 6, 6, dtype=torch.float64)
    expected = torch.zeros_like(layer.running_autocorrelation)
    for t in range(6):
        with torch.no_grad():
            layer.weight.add_(0.1 * torch.randn_like(layer.weight))
        layer(x)
        f = max(0.5 * (1 + math.cos(math.pi * min(t, 4) / 4)), 0.01)
        expected = f * kernel_autocorrelation(layer.weight.detach()) + (1 - f) * expected
        torch.testing.assert_close(layer.running_autocorrelation, expected)
        assert int(layer.num_steps_tracked) == t + 1
    layer.eval()(x)
    assert int(layer.num_steps_tracked) == 6, "eval forwards do not count"


def test_eval_uses_the_average_train_the_current_weight():
    torch.manual_seed(3)
    layer = ConvNorm2d(2, 3, 3, padding=1).double()
    x = torch.randn(1, 2, 7, 7, dtype=torch.float64)
    layer(x)
    old = layer.weight.detach().clone()
    with torch.no_grad():
        layer.weight.mul_(torch.rand_like(layer.weight) + 0.5)
    train_out = layer(x)  # f = 0.5 * (1 + cos(pi / 40000)): almost all new
    torch.testing.assert_close(train_out, conv_norm(x, layer.weight, layer.bias, padding=1,
                                                    affine_weight=layer.affine_weight))
    eval_out = layer.eval()(x)
    torch.testing.assert_close(eval_out, conv_norm(x, layer.weight, layer.bias, padding=1,
                                                   affine_weight=layer.affine_weight,
                                                   running_autocorrelation=layer.running_autocorrelation,
                                                   num_steps_tracked=layer.num_steps_tracked))
    assert not torch.allclose(eval_out, conv_norm(x, layer.weight, layer.bias, padding=1,
                                                  running_autocorrelation=kernel_autocorrelation(old),
                                                  num_steps_tracked=torch.tensor(1)))


@pytest.mark.parametrize("size", [(5, 5), (9, 12), (16, 16)])
def test_eval_at_another_resolution_is_exact(size):
    """The average is kept as an autocorrelation, valid at any size: after training on
    8x8 with fixed weights, eval at another size equals train mode at that size."""
    torch.manual_seed(4)
    layer = ConvNorm2d(3, 4, 3, stride=2, padding=1).double()
    for _ in range(3):
        layer(torch.randn(2, 3, 8, 8, dtype=torch.float64))
    x = torch.randn(2, 3, *size, dtype=torch.float64)
    torch.testing.assert_close(layer.eval()(x), layer.train()(x))


def test_state_dict_round_trip_and_ramp_resumes():
    torch.manual_seed(5)
    a = ConvNorm2d(2, 3, 3, padding=1, ramp_steps=10)
    opt = torch.optim.SGD(a.parameters(), lr=0.1)
    x = torch.randn(2, 2, 8, 8)
    for _ in range(4):
        opt.zero_grad()
        a(x).square().mean().backward()
        opt.step()
    state = a.state_dict()
    assert set(state) == {"weight", "bias", "affine_weight", "running_autocorrelation", "num_steps_tracked"}
    b = ConvNorm2d(2, 3, 3, padding=1, ramp_steps=10)
    b.load_state_dict(state)
    assert int(b.num_steps_tracked) == 4
    torch.testing.assert_close(b.eval()(x), a.eval()(x))
    a.train()(x)
    b.train()(x)
    torch.testing.assert_close(b.running_autocorrelation, a.running_autocorrelation)
    assert int(b.num_steps_tracked) == 5


def test_non_finite_values_never_reach_the_buffers():
    torch.manual_seed(6)
    layer = ConvNorm2d(2, 3, 3, padding=1)
    layer(torch.randn(1, 2, 6, 6))
    out = layer(torch.full((1, 2, 6, 6), float("nan")))  # a NaN input: buffers depend on weights only
    assert out.isnan().all() and torch.isfinite(layer.running_autocorrelation).all()
    assert int(layer.num_steps_tracked) == 2
    with torch.no_grad():
        layer.weight[0, 0, 0, 0] = float("inf")
    after_nan_input = layer.running_autocorrelation.clone()
    steps = int(layer.num_steps_tracked)
    layer(torch.randn(1, 2, 6, 6))  # a non-finite weight: update skipped, count kept
    torch.testing.assert_close(layer.running_autocorrelation, after_nan_input)
    assert int(layer.num_steps_tracked) == steps


def test_buffers_are_updated_in_place():
    """In-place updates are what lets DataParallel's first replica reach the module."""
    layer = ConvNorm2d(2, 3, 3, padding=1)
    ptrs = (layer.running_autocorrelation.data_ptr(), layer.num_steps_tracked.data_ptr())
    layer(torch.randn(1, 2, 6, 6))
    assert (layer.running_autocorrelation.data_ptr(), layer.num_steps_tracked.data_ptr()) == ptrs


def test_weight_gradient_is_the_stop_gradient_one():
    torch.manual_seed(7)
    layer = ConvNorm2d(2, 3, 3, padding=1).double()
    x = torch.randn(2, 2, 7, 7, dtype=torch.float64)
    probe = torch.randn(2, 3, 7, 7, dtype=torch.float64)
    (layer(x) * probe).sum().backward()
    w = layer.weight.detach().clone().requires_grad_()
    ref = conv_norm(x, w, layer.bias.detach(), padding=1, affine_weight=layer.affine_weight.detach())
    (g,) = torch.autograd.grad((ref * probe).sum(), w)
    torch.testing.assert_close(layer.weight.grad, g)
    full = ConvNorm2d(2, 3, 3, padding=1, stop_gradient=False).double()
    full.load_state_dict(layer.state_dict())
    (full(x) * probe).sum().backward()
    assert not torch.allclose(full.weight.grad, g)


@pytest.mark.heavy
@pytest.mark.parametrize("stride", [1, 2])
def test_second_derivatives_only_without_stop_gradient(stride):
    """The stop-gradient backward is differentiable once (PyTorch says so when asked for
    more); without stop-gradient autograd gives exact second derivatives."""
    torch.manual_seed(11)
    x = torch.randn(1, 2, 6, 6, dtype=torch.float64, requires_grad=True)
    layer = ConvNorm2d(2, 3, 3, stride=stride, padding=1).double()
    (g,) = torch.autograd.grad(layer(x).square().sum(), x, create_graph=True)
    with pytest.raises(RuntimeError, match="once_differentiable"):
        g.sum().backward()
    full = ConvNorm2d(2, 3, 3, stride=stride, padding=1, stop_gradient=False).double()
    assert torch.autograd.gradgradcheck(full, (x,))


def test_autocast_bfloat16_on_cpu():
    torch.manual_seed(8)
    layer = ConvNorm2d(3, 4, 3, padding=1)
    x = torch.randn(2, 3, 8, 8)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = layer(x)
    assert out.dtype == torch.bfloat16
    assert layer.running_autocorrelation.dtype == torch.float32
    torch.testing.assert_close(out.float(), layer(x).detach(), rtol=1e-2, atol=2e-2)
    out.float().sum().backward()
    assert layer.weight.grad.dtype == torch.float32 and torch.isfinite(layer.weight.grad).all()


@pytest.mark.parametrize("dtype, tolerance", [(torch.float16, 4e-3), (torch.bfloat16, 3e-2)])
@pytest.mark.parametrize("stride", [1, 2])
def test_half_precision_layer_computes_in_float32(dtype, tolerance, stride):
    """``layer.to(float16 / bfloat16)`` outside autocast: computed in float32 from the rounded
    weights and input, returned in the input's dtype, gradients and buffers in the layer's."""
    torch.manual_seed(10)
    layer = ConvNorm2d(3, 4, 3, stride=stride, padding=1)
    half = ConvNorm2d(3, 4, 3, stride=stride, padding=1).to(dtype)
    half.load_state_dict(layer.state_dict())
    layer.load_state_dict({k: v.to(dtype).float() for k, v in half.state_dict().items()})  # same rounded weights
    x = torch.randn(2, 3, 12, 12).to(dtype)
    out = half(x)
    assert out.dtype == dtype and half.running_autocorrelation.dtype == dtype
    want = layer(x.float())
    assert out.float().sub(want).abs().max() <= tolerance * want.abs().max()
    out.float().square().sum().backward()
    assert half.weight.grad.dtype == dtype and torch.isfinite(half.weight.grad.float()).all()
    assert half.num_steps_tracked.item() == 1
    half.eval()
    assert half(x).dtype == dtype


@pytest.mark.compile
def test_torch_compile_matches_eager():
    torch.manual_seed(9)
    eager = ConvNorm2d(3, 4, 3, stride=2, padding=1)
    compiled_layer = ConvNorm2d(3, 4, 3, stride=2, padding=1)
    compiled_layer.load_state_dict(eager.state_dict())
    compiled = torch.compile(compiled_layer, backend="aot_eager", fullgraph=True)
    x = torch.randn(2, 3, 8, 8)
    torch.testing.assert_close(compiled(x), eager(x))
    compiled(x).sum().backward()
    eager(x).sum().backward()
    torch.testing.assert_close(compiled_layer.weight.grad, eager.weight.grad)
    torch.testing.assert_close(compiled_layer.running_autocorrelation, eager.running_autocorrelation)
    assert int(compiled_layer.num_steps_tracked) == int(eager.num_steps_tracked) == 2



BUILDS_A_CONSTANT = {torch.arange, torch.cos, torch.sin, torch.polar, torch.eye, torch.meshgrid, torch.outer,
                     torch.full, torch.zeros, torch.ones, torch.empty, torch.tensor, torch.stack, torch.cat}
"""The operations that build the layer's constant matrices (DFT and cosine bases, lag maps, the
ramp); the layer's own computation applies none of them."""


def captured_graphs(layer: nn.Module, x: torch.Tensor, calls: int) -> list[torch.fx.GraphModule]:
    """The graphs Dynamo captures when ``calls`` calls of the compiled ``layer`` are made (and
    the last call's output compared with an eager twin's)."""
    graphs: list[torch.fx.GraphModule] = []

    def backend(graph: torch.fx.GraphModule, inputs):
        graphs.append(graph)
        return graph.forward

    torch._dynamo.reset()
    compiled = torch.compile(layer, backend=backend, fullgraph=True)
    for _ in range(calls):
        out = compiled(x)
    twin = ConvNorm2d(16, 8, 3, padding=1)
    twin.load_state_dict(layer.state_dict())  # the output reads the weight, not the buffers the call updated
    torch.testing.assert_close(out, twin.train(layer.training)(x))
    return graphs


@pytest.mark.compile
def test_a_layer_compiled_before_any_eager_call_builds_no_constant_in_its_program():
    """Compiled before any eager call, a layer prepares once, outside the program, and the program
    reads the constants (as it reads those of a layer that ran eagerly first): no operation that
    builds a matrix is in the captured graph, which has as many nodes as the one captured after an
    eager call (one more: the autocast query of the preparation), and a second call captures
    nothing new. Without this, the program rebuilt every basis at every call (about 320 nodes
    instead of 45)."""
    torch.manual_seed(12)
    x = torch.randn(2, 16, 8, 8)
    nodes = {}
    for eager_first in (False, True):
        layer = ConvNorm2d(16, 8, 3, padding=1)
        if eager_first:
            layer(x)
        graphs = captured_graphs(layer, x, calls=2)
        assert len(graphs) == 1
        targets = {node.target for node in graphs[0].graph.nodes if node.op == "call_function"}
        assert not targets & BUILDS_A_CONSTANT, targets & BUILDS_A_CONSTANT
        nodes[eager_first] = len(graphs[0].graph.nodes)
    assert nodes[True] <= nodes[False] <= nodes[True] + 1, nodes


@pytest.mark.compile
def test_a_layer_compiled_with_dynamic_shapes_is_specialized_to_the_spatial_size():
    """Under ``dynamic=True`` the layer's constants are still made outside the program, for the
    size of the call: each spatial size gets its own program, equal to eager."""
    torch.manual_seed(14)
    layer = ConvNorm2d(16, 8, 3, padding=1)
    twin = ConvNorm2d(16, 8, 3, padding=1)
    twin.load_state_dict(layer.state_dict())
    torch._dynamo.reset()
    compiled = torch.compile(layer, backend="eager", dynamic=True, fullgraph=True)
    for n in (8, 10, 8):
        x = torch.randn(3, 16, n, n)
        torch.testing.assert_close(compiled(x), twin(x))
    assert len(layer.__dict__[layers.COMPILED]) == 2

@pytest.mark.compile
def test_what_a_compiled_layer_prepares_is_real_and_not_its_state():
    """The entry prepared while compiled holds real tensors (a later eager call of the same
    signature reads them from the package's cache), is not in the ``state_dict``, is left out of a
    copy, and is dropped when a setting it was made from changes."""
    torch.manual_seed(13)
    layer = ConvNorm2d(16, 8, 3, padding=1).eval()
    x = torch.randn(2, 16, 8, 8)
    keys = set(layer.state_dict())
    captured_graphs(layer, x, calls=1)
    kept = [layer.__dict__[name] for name in layer.__dict__[layers.COMPILED].values()]
    assert len(kept) == 1 and kept[0].prepared.basis.device.type == "cpu"
    assert not isinstance(kept[0].prepared.basis, torch._subclasses.FakeTensor)
    assert set(layer.state_dict()) == keys
    assert layers.COMPILED not in copy.deepcopy(layer).__dict__
    torch.testing.assert_close(layer(x), copy.deepcopy(layer)(x))
    layer.eps = 1e-3
    assert layers.COMPILED not in layer.__dict__ and not any(k.startswith("_compiled_entry") for k in layer.__dict__)


def test_only_the_settings_it_is_made_from_prepare_the_layer_again():
    """A layer keeps what it prepared through settings it was not made from (``torch.compile``'s
    mark on the module, anything else code sets), so a compiled layer reads its constants; a
    setting it was made from prepares it again."""
    layer = ConvNorm2d(3, 4, 3, padding=1)
    x = torch.randn(2, 3, 8, 8)
    layer(x)
    entry = layer._prepared
    torch.compile(layer, backend="eager")  # sets _is_torch_compile on the layer
    layer.note = "a caller's attribute"
    assert entry is not None and layer._prepared is entry
    layer.stride = (2, 2)
    assert layer._prepared is None and layer(x).shape == (2, 4, 4, 4)
    layer.eps = 1e-3
    assert layer._prepared is None

DDP_CHECK = """
import os, sys
import torch, torch.distributed as dist, torch.nn as nn
from convnorm.layers import ConvNorm2d
dist.init_process_group("gloo", init_method="file://" + sys.argv[1], rank=0, world_size=1)
torch.manual_seed(10)
layer = ConvNorm2d(2, 3, 3, padding=1)
reference = ConvNorm2d(2, 3, 3, padding=1)
reference.load_state_dict(layer.state_dict())
ddp = nn.parallel.DistributedDataParallel(layer)
x = torch.randn(2, 2, 6, 6)
ddp(x).sum().backward()
reference(x).sum().backward()
torch.testing.assert_close(layer.running_autocorrelation, reference.running_autocorrelation)
assert int(layer.num_steps_tracked) == 1
torch.testing.assert_close(layer.weight.grad, reference.weight.grad)
print("DDP-OK", flush=True)
os._exit(0)
"""


@pytest.mark.multiprocess
def test_distributed_data_parallel_updates_buffers(tmp_path):
    """In a subprocess that ends with ``os._exit``: tearing down a Gloo process group can
    deadlock in torch 2.13 (the main thread, holding the GIL, joins Gloo's thread, which
    waits for the GIL), which once stalled a whole test run."""
    dist = pytest.importorskip("torch.distributed")
    if not dist.is_available():
        pytest.skip("torch.distributed unavailable")
    result = subprocess.run([sys.executable, "-c", DDP_CHECK, str(tmp_path / "store")],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0 and "DDP-OK" in result.stdout, result.stderr[-3000:]


def test_conv1d_layer():
    torch.manual_seed(11)
    conv, layer = nn.Conv1d(3, 4, 5, stride=2, padding=2), ConvNorm1d(3, 4, 5, stride=2, padding=2).double()
    x = torch.randn(2, 3, 21, dtype=torch.float64)
    assert layer(x).shape == conv(x.float()).shape
    torch.testing.assert_close(layer(x), conv_norm(x, layer.weight, layer.bias, 2, 2,
                                                   affine_weight=layer.affine_weight))


def test_extra_repr_shows_non_defaults():
    text = repr(ConvNorm2d(3, 8, 3, stride=2, padding=1, bias=False, affine=False, eps=0.0, ramp_steps=10))
    assert text == ("ConvNorm2d(3, 8, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), bias=False, "
                    "affine=False, eps=0.0, ramp_steps=10)")


@pytest.mark.parametrize("kwargs, match", [
    (dict(in_channels=0), "in_channels must be a positive integer"),
    (dict(out_channels=2.5), "out_channels must be a positive integer"),
    (dict(groups=2), "in_channels must be divisible by groups"),
    (dict(kernel_size=0), "kernel_size must be a positive int"),
    (dict(stride=(1, 0)), "stride must be a positive int"),
    (dict(padding=-1), "padding must be a non-negative int"),
    (dict(padding=3), "padding must be at most"),
    (dict(padding_mode="reflect"), "padding_mode must be one of"),
    (dict(padding_mode="circular", padding=0), "padding must equal"),
    (dict(eps=-1e-3), "eps must be a finite non-negative number"),
    (dict(eps=float("inf")), "eps must be a finite non-negative number"),
    (dict(kernel_size=3.0), "kernel_size must be a positive int"),
    (dict(stride=1.5), "stride must be a positive int"),
    (dict(in_channels=3.0), "in_channels must be a positive integer"),
    (dict(ramp_floor=float("nan")), r"ramp_floor must lie in \[0, 1\]"),
    (dict(ramp_steps=0), "ramp_steps must be a positive integer"),
    (dict(ramp_floor=1.5), r"ramp_floor must lie in \[0, 1\]"),
    (dict(padding="valid", padding_mode="circular"), "padding must equal"),
])
def test_constructor_errors_name_the_argument(kwargs, match):
    args = dict(in_channels=3, out_channels=4, kernel_size=3) | kwargs
    with pytest.raises(ValueError, match=match):
        ConvNorm2d(**args)


def test_numpy_integer_arguments_are_taken_as_conv2d_takes_them():
    """``nn.Conv2d`` accepts NumPy integers (sizes read off an array's shape, say); so does the
    layer, storing them as Python ints."""
    args = dict(in_channels=np.int64(4), out_channels=np.int32(6), kernel_size=np.int64(3), stride=(np.int64(2), 1),
                padding=np.int64(1), groups=np.int64(2), ramp_steps=np.int64(10))
    conv, layer = nn.Conv2d(**{k: v for k, v in args.items() if k != "ramp_steps"}), ConvNorm2d(**args)
    x = torch.randn(2, 4, 9, 9)
    assert layer(x).shape == conv(x).shape and layer.weight.shape == conv.weight.shape
    assert all(type(v) is int for v in (layer.in_channels, layer.out_channels, layer.groups, layer.ramp_steps,
                                        *layer.kernel_size, *layer.stride, *layer.padding))


def test_forward_errors_name_the_problem():
    layer = ConvNorm2d(3, 4, 3, padding=1)
    with pytest.raises(ValueError, match="input has 2 channels"):
        layer(torch.randn(1, 2, 8, 8))
    with pytest.raises(ValueError, match="input must have shape"):
        layer(torch.randn(8, 8))
    with pytest.raises(ValueError, match="input is torch.bfloat16 but weight is torch.float32"):
        layer(torch.randn(1, 3, 8, 8, dtype=torch.bfloat16))


@pytest.mark.parametrize("make_input, match", [
    (lambda: torch.randn(1, 2, 8, 8), "input has 2 channels, expected C_in = 3"),
    (lambda: torch.randn(8, 8), r"input must have shape \(N, C_in, H, W\), got \(8, 8\)"),
    (lambda: torch.randn(1, 3, 8, 8, dtype=torch.float64), "input is torch.float64 but weight is torch.float32"),
    (lambda: torch.ones(1, 3, 8, 8, dtype=torch.long), "input (must be a floating-point tensor|is torch.int64 but)"),
    (lambda: torch.randn(1, 3, 1, 1), r"input size \(1, 1\) is too small"),
])
def test_input_errors_are_caught_as_value_error_and_as_runtime_error(make_input, match):
    """What nn.Conv2d refuses with a RuntimeError the layer (and its functional form) refuses
    with InputError, also a ValueError: ``except RuntimeError`` and ``except ValueError`` both
    catch it, and the message names what is wrong."""
    assert issubclass(InputError, ValueError) and issubclass(InputError, RuntimeError)
    layer = ConvNorm2d(3, 4, 3)
    for caught in (RuntimeError, ValueError, InputError):
        with pytest.raises(caught, match=match):
            layer(make_input())
        with pytest.raises(caught, match=match):
            conv_norm(make_input(), layer.weight)
    with pytest.raises(RuntimeError):
        nn.Conv2d(3, 4, 3)(make_input())  # the convolution's type for the same input


@pytest.mark.parametrize("value", [[[1.0]], None, np.zeros((1, 3, 8, 8), dtype=np.float32)])
def test_a_non_tensor_input_is_a_type_error_naming_its_type(value):
    layer = ConvNorm2d(3, 4, 3)
    with pytest.raises(TypeError, match=f"input must be a torch.Tensor, got {type(value).__name__}"):
        layer(value)
    with pytest.raises(TypeError):
        nn.Conv2d(3, 4, 3)(value)  # as the convolution's type


@pytest.mark.parametrize("layer_class, size", [(ConvNorm1d, (9,)), (ConvNorm2d, (9, 9))])
def test_valid_padding_with_circular_mode_is_refused_in_1d_and_2d(layer_class, size):
    """padding='valid' is padding 0, which circular ConvNorm (the operator (A A^T)^(-1/2) A,
    circulant on the input) does not honour for kernels of more than one tap: refused when
    the layer is built, in 1D as in 2D, and by the functional form; a 1x1 kernel is accepted."""
    with pytest.raises(ValueError, match=r"padding must equal .* got padding=valid"):
        layer_class(2, 3, 3, padding="valid", padding_mode="circular")
    x = torch.randn(1, 2, *size)
    with pytest.raises(ValueError, match="padding must equal"):
        conv_norm(x, torch.randn(3, 2, *[3] * len(size)), padding="valid", padding_mode="circular")
    pointwise = layer_class(2, 3, 1, padding="valid", padding_mode="circular")
    assert pointwise(x).shape == (1, 3, *size)


def test_the_conv2d_contract_unbatched_same_padding_repr_layout():
    """What nn.Conv2d does, the layer does: an input without the batch axis, padding='same' with
    an even kernel (one more sample of padding after than before, as Conv2d pads), the padding
    shown as given, the input's memory format kept."""
    torch.manual_seed(0)
    layer = ConvNorm2d(3, 4, 4, padding="same")
    conv = torch.nn.Conv2d(3, 4, 4, padding="same")
    x = torch.randn(2, 3, 9, 8)
    out = layer(x)
    assert out.shape == conv(x).shape == (2, 4, 9, 8)
    torch.testing.assert_close(out, conv_norm_reference(x, layer.weight, layer.bias, padding="same",
                                                        affine_weight=layer.affine_weight))
    # the same crop of the full output as a Conv2d: ConvNorm of a kernel whose normalizer is 1
    delta = torch.zeros(1, 1, 4, 4)
    delta[..., 1, 1] = 1  # the tap Conv2d's 'same' centres: left padding (4 - 1) // 2 = 1
    image = torch.randn(1, 1, 7, 7)
    torch.testing.assert_close(conv_norm(image, delta, padding="same", eps=0.0), image)
    assert "padding=same" in repr(layer) and repr(conv).endswith("padding=same)")
    torch.testing.assert_close(layer(x[0]), layer(x[:1])[0])  # unbatched, as Conv2d takes it
    assert layer(x[0]).shape == (4, 9, 8)
    last = x.contiguous(memory_format=torch.channels_last)
    assert layer(last).is_contiguous(memory_format=torch.channels_last)
    torch.testing.assert_close(layer(last), out)
    with pytest.raises(ValueError, match="padding='same' requires stride 1"):
        ConvNorm2d(3, 4, 4, stride=2, padding="same")


def test_torch_func_grad_and_vmap_take_the_layer_in_evaluation():
    """torch.func's transforms meet the layer's operations, not its custom backward: per-sample
    gradients by vmap(grad) equal autograd's sample by sample, and vmap equals the batch."""
    from torch.func import functional_call, grad, vmap

    torch.manual_seed(1)
    layer = ConvNorm2d(3, 4, 3, stride=2, padding=1, dtype=torch.float64)
    x = torch.randn(4, 3, 8, 8, dtype=torch.float64)
    layer(x)  # a training step, then evaluation with the running average
    layer.eval()
    params = dict(layer.named_parameters())

    def loss(p, sample):
        return functional_call(layer, p, (sample,)).square().sum()

    per_sample = vmap(grad(loss), in_dims=(None, 0))(params, x)
    for i in range(len(x)):
        expected = torch.autograd.grad(layer(x[i]).square().sum(), list(params.values()))
        for name, want in zip(params, expected):
            torch.testing.assert_close(per_sample[name][i], want)
    torch.testing.assert_close(vmap(layer)(x.unsqueeze(1)).squeeze(1), layer(x))


@pytest.mark.compile
def test_exporting_first_leaves_no_fake_tensor_for_eager_calls():
    """torch.export traces with fake tensors; nothing it builds is kept in a cache or a layer,
    so the first eager call afterwards, of the exported layer or a new one of the same
    geometry, computes real numbers (the reference's)."""
    from convnorm import clear_caches

    clear_caches()
    torch.manual_seed(2)
    model = nn.Sequential(ConvNorm2d(3, 4, 3, padding=1), nn.ReLU()).eval()
    x = torch.randn(2, 3, 8, 8)
    torch.export.export(model, (x,))
    fresh = ConvNorm2d(3, 4, 3, padding=1).eval()
    for layer in (model[0], fresh):
        out = layer(x)
        assert type(out) is torch.Tensor
        torch.testing.assert_close(out, conv_norm_reference(x, layer.weight, layer.bias, 1, 1,
                                                            affine_weight=layer.affine_weight))


def test_code_written_for_nn_conv2d_finds_and_handles_the_layer():
    """The layer is an nn.Conv2d (nn.Conv1d): an init loop and a weight-decay filter written for
    convolutions reach it, the attributes read on convolutions exist, and ``_conv_forward`` with a
    weight of the caller's computes the layer with that weight."""
    torch.manual_seed(5)
    model = nn.Sequential(ConvNorm2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.Flatten(),
                          nn.Linear(8 * 4 * 4, 10))
    for module in model.modules():  # torchvision's ResNet initialisation
        if isinstance(module, nn.Conv2d):
            nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")
            if module.bias is not None:
                nn.init.zeros_(module.bias)
    layer = model[0]
    with torch.no_grad():
        assert float(layer.bias.abs().sum()) == 0 and abs(float(layer.weight.std()) - math.sqrt(2 / (8 * 9))) < 0.05
    decay = [m.weight for m in model.modules() if isinstance(m, (nn.Conv2d, nn.Linear))]
    decay_ids = {id(p) for p in decay}
    optimizer = torch.optim.SGD([{"params": decay, "weight_decay": 5e-4},
                                 {"params": [p for p in model.parameters() if id(p) not in decay_ids],
                                  "weight_decay": 0.0}], lr=0.1)
    assert any(p is layer.weight for p in optimizer.param_groups[0]["params"])
    assert any(p is layer.affine_weight for p in optimizer.param_groups[1]["params"])
    model(torch.randn(2, 3, 4, 4)).sum().backward()
    optimizer.step()
    assert isinstance(ConvNorm1d(2, 3, 3), nn.Conv1d) and not isinstance(ConvNorm1d(2, 3, 3), nn.Conv2d)
    assert layer.transposed is False and layer.output_padding == (0, 0)
    assert (layer.in_channels, layer.out_channels, layer.kernel_size, layer.groups) == (3, 8, (3, 3), 1)
    x, weight = torch.randn(2, 3, 6, 6), torch.randn(8, 3, 3, 3)
    layer.eval()
    torch.testing.assert_close(layer._conv_forward(x, weight, None),  # normalized by the running average, in eval
                               conv_norm(x, weight, None, padding=1, affine_weight=layer.affine_weight,
                                         running_autocorrelation=layer.running_autocorrelation,
                                         num_steps_tracked=layer.num_steps_tracked))
    torch.testing.assert_close(layer._conv_forward(x, layer.weight, layer.bias), layer(x))


def test_torch_fx_traces_a_model_with_the_layer_as_one_call_of_it():
    """``torch.fx.symbolic_trace`` takes a model with ConvNorm layers, each one call of the layer in
    the graph (a leaf, as nn.Conv2d), so the graph computes what the model computes, in the mode
    the layers are in; a layer traced on its own is one call of the layer's function, which trains
    and evaluates as the layer does (in the mode it was traced in)."""
    import copy

    torch.manual_seed(6)
    model = nn.Sequential(ConvNorm2d(3, 4, 3, padding=1), nn.ReLU(), ConvNorm2d(4, 4, 3, stride=2, padding=1))
    twin = copy.deepcopy(model)
    graph = torch.fx.symbolic_trace(twin)
    calls = [node.target for node in graph.graph.nodes if node.op == "call_module"]
    assert calls == ["0", "1", "2"]
    x = torch.randn(2, 3, 8, 8)
    torch.testing.assert_close(graph(x), model(x))  # a training step each: the same buffers after it
    assert int(twin[0].num_steps_tracked) == int(model[0].num_steps_tracked) == 1
    model.eval()
    graph.eval()
    torch.testing.assert_close(graph(x), model(x))  # the running average: the graph follows the mode
    layer = ConvNorm2d(3, 4, 3, padding=1)
    alone = torch.fx.symbolic_trace(copy.deepcopy(layer))
    assert [node.op for node in alone.graph.nodes].count("call_function") == 1
    for _ in range(2):
        torch.testing.assert_close(alone(x), layer(x))
    torch.testing.assert_close(alone.running_autocorrelation, layer.running_autocorrelation)


def test_a_hidden_feature_is_read_from_the_traced_graph():
    """What torchvision's ``create_feature_extractor`` does, with torch.fx alone (torchvision's
    wheels on PyPI need a CUDA build of torch): the traced model's output set to a hidden node
    gives that node's value, each ConvNorm layer one call of itself."""
    torch.manual_seed(7)
    model = nn.Sequential(ConvNorm2d(3, 4, 3, padding=1), nn.ReLU(), ConvNorm2d(4, 4, 3, padding=1)).eval()
    traced = torch.fx.symbolic_trace(model)
    (output,) = [node for node in traced.graph.nodes if node.op == "output"]
    (hidden,) = [node for node in traced.graph.nodes if node.op == "call_module" and node.target == "1"]
    output.args = ({"hidden": hidden},)
    traced.recompile()
    x = torch.randn(1, 3, 8, 8)
    torch.testing.assert_close(traced(x)["hidden"], model[1](model[0](x)))

"""Deployment: a model with ConvNorm layers, in evaluation mode (what ships), exported to ONNX and
run by onnxruntime, exported by ``torch.export`` with a dynamic batch dimension, traced by
``torch.jit.trace``; ``torch.jit.script`` refused with the ways that work.

A program traced for deployment computes every layer spatially with the planar filter: the full
convolution, then the DFTs as real matrix products (no complex tensor, no FFT, no custom autograd
function), the normalizer from the running average's buffer. The tests check what it computes
(the reference, gradients included, as the eager layer), that nothing complex or FFT-based
reaches the exported programs, and that tracing leaves the eager layers as they were."""
from __future__ import annotations

import copy

import pytest
import torch
import torch.nn as nn
from test_functional import REFERENCE_CASES, reference_case

from convnorm import ConvNorm1d, ConvNorm2d, convert
from convnorm.functional import conv_norm
from convnorm.reference import conv_norm_reference
from convnorm_lab.models import build_model

ONNX_TOLERANCE = 1e-5
"""onnxruntime against eager in float32, relative to the output's largest entry: both compute in
float32, through different transforms (a dense DFT in the program, the frequency domain or dense
DFTs eagerly), each rounding at about 1e-7 relative per operation over a few hundred operations."""


class BasicBlock(nn.Module):
    """``torchvision.models.resnet.BasicBlock``'s structure: two 3x3 convolutions, the first
    strided, and a strided 1x1 convolution on the shortcut where the shape changes."""

    def __init__(self, c_in: int, c_out: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.downsample = (nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride, bias=False), nn.BatchNorm2d(c_out))
                           if stride != 1 or c_in != c_out else None)

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        return self.relu(self.bn2(self.conv2(self.relu(self.bn1(self.conv1(x))))) + identity)


class TorchvisionStyleResNet(nn.Module):
    """A small ``torchvision.models.resnet18``: a 7x7 stride-2 stem, max pooling, two stages of
    basic blocks, global average pooling and a linear classifier."""

    def __init__(self, width: int = 8, classes: int = 10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, width, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        self.layer1 = BasicBlock(width, width, 1)
        self.layer2 = BasicBlock(width, 2 * width, 2)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(2 * width, classes)

    def forward(self, x):
        x = self.layer2(self.layer1(self.maxpool(self.relu(self.bn1(self.conv1(x))))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def trained(model: nn.Module, x: torch.Tensor, steps: int = 3) -> nn.Module:
    """``model`` after ``steps`` SGD steps on ``x``, in evaluation mode: its layers' running
    averages (ConvNorm's and BatchNorm's) differ from what the final weights give."""
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model.train()
    for _ in range(steps):
        optimizer.zero_grad()
        model(x).square().mean().backward()
        optimizer.step()
    return model.eval()


def convnorm_layers(model: nn.Module) -> list[nn.Module]:
    return [m for m in model.modules() if isinstance(m, (ConvNorm1d, ConvNorm2d))]


def assert_close_to_largest(got, want, tolerance: float = ONNX_TOLERANCE) -> None:
    got, want = torch.as_tensor(got), torch.as_tensor(want)
    error = (got - want).abs().max() / want.abs().max()
    assert got.shape == want.shape and error <= tolerance, (tuple(got.shape), tuple(want.shape), float(error))


def assert_real_onnx(proto) -> None:
    """Real arithmetic only: no DFT operator, no complex tensor anywhere in the graph."""
    import onnx

    inferred = onnx.shape_inference.infer_shapes(proto)
    graph = inferred.graph
    operators = {node.op_type for node in graph.node}
    assert not operators & {"DFT", "STFT"}, operators
    complex_types = {onnx.TensorProto.COMPLEX64, onnx.TensorProto.COMPLEX128}
    types = {t.type.tensor_type.elem_type for t in (*graph.input, *graph.output, *graph.value_info)}
    types |= {t.data_type for t in graph.initializer}
    assert not types & complex_types, types


def run_onnx(proto, x: torch.Tensor) -> torch.Tensor:
    import onnxruntime

    session = onnxruntime.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    return torch.from_numpy(session.run(None, {session.get_inputs()[0].name: x.numpy()})[0])


@pytest.mark.compile
def test_onnx_of_a_convnorm_resnet18_matches_eager_at_any_batch():
    """The book's ConvNorm+BN ResNet18, trained a few steps, exported to ONNX (torch.onnx's
    default exporter, through torch.export) with a dynamic batch: onnxruntime gives the eager
    model's output within ``ONNX_TOLERANCE`` at the traced batch size and others."""
    torch.manual_seed(0)
    x = torch.randn(4, 3, 32, 32)
    model = trained(build_model("resnet18", "convnorm+bn", width=8), x)
    program = torch.onnx.export(model, (x,), dynamo=True, dynamic_shapes=({0: torch.export.Dim("batch")},))
    assert_real_onnx(program.model_proto)
    with torch.no_grad():
        for batch in (x, x[:1], torch.randn(7, 3, 32, 32)):
            assert_close_to_largest(run_onnx(program.model_proto, batch), model(batch))


@pytest.mark.compile
def test_onnx_of_a_converted_torchvision_style_net_matches_eager(tmp_path):
    """A torchvision-style ResNet converted by ``convnorm.convert`` (7x7 stride-2 stem, strided 3x3
    and 1x1 layers), trained a few steps, exported by the TorchScript-based exporter
    (``dynamo=False``, through torch.jit.trace) with a dynamic batch: onnxruntime gives the eager
    output within ``ONNX_TOLERANCE``."""
    import onnx

    torch.manual_seed(1)
    x = torch.randn(4, 3, 32, 32)
    model = trained(convert(TorchvisionStyleResNet()), x)
    path = tmp_path / "model.onnx"
    torch.onnx.export(model, (x,), path, dynamo=False, input_names=["x"], dynamic_axes={"x": {0: "batch"}})
    proto = onnx.load(path)
    assert_real_onnx(proto)
    with torch.no_grad():
        for batch in (x, torch.randn(3, 3, 32, 32)):
            assert_close_to_largest(run_onnx(proto, batch), model(batch))


def dynamic_batch_models() -> list[tuple[nn.Module, torch.Tensor]]:
    """2D and 1D models of layers of every kind, trained a few steps: strided, grouped,
    dilated with ``padding='same'`` and an even kernel, circular, pointwise, without an affine
    kernel; each with an input."""
    torch.manual_seed(2)
    two = nn.Sequential(ConvNorm2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                        ConvNorm2d(8, 8, 3, stride=2, padding=1, groups=2),
                        ConvNorm2d(8, 6, 2, padding="same", dilation=2, affine=False),
                        ConvNorm2d(6, 6, 3, padding=1, padding_mode="circular"), ConvNorm2d(6, 4, 1))
    one = nn.Sequential(ConvNorm1d(2, 4, 5, stride=2, padding=2), nn.ReLU(), ConvNorm1d(4, 3, 3, padding=1))
    return [(trained(two, torch.randn(4, 3, 10, 9)), torch.randn(4, 3, 10, 9)),
            (trained(one, torch.randn(4, 2, 21)), torch.randn(4, 2, 21))]


@pytest.mark.compile
def test_export_with_a_dynamic_batch_dimension():
    """torch.export with the batch dimension dynamic: the program equals the eager model at other
    batch sizes, holds no complex tensor and no FFT, and the layers, prepared eagerly before,
    keep what they prepared (the eager calls after are those before, exactly)."""
    for model, x in dynamic_batch_models():
        with torch.no_grad():
            before = model(x)
        entries = [layer._prepared for layer in convnorm_layers(model)]
        program = torch.export.export(model, (x,), dynamic_shapes=({0: torch.export.Dim("batch")},))
        for node in program.graph.nodes:
            value = node.meta.get("val")
            assert "fft" not in str(node.target) and not (isinstance(value, torch.Tensor) and value.is_complex()), node
        assert [layer._prepared for layer in convnorm_layers(model)] == entries
        with torch.no_grad():
            assert torch.equal(model(x), before)
            for batch in (x[:1], x[:3], torch.cat([x, x])):
                torch.testing.assert_close(program.module()(batch), model(batch), rtol=1e-5, atol=1e-6)


@pytest.mark.compile
def test_an_exported_training_program_is_the_training_layer():
    """Evaluation mode is what ships, but torch.export keeps training's semantics too: the program
    of a model in training mode updates the running averages as the eager model does, and its
    weight gradient is the stop-gradient's (a program records grad mode; a jit trace does not)."""
    torch.manual_seed(3)
    x = torch.randn(4, 3, 8, 8)
    model = nn.Sequential(ConvNorm2d(3, 8, 3, padding=1), nn.ReLU(), ConvNorm2d(8, 4, 3, stride=2, padding=1))
    model(x)  # a first step: the running averages are under way
    eager = copy.deepcopy(model)
    program = torch.export.export(model, (x,), dynamic_shapes=({0: torch.export.Dim("batch")},)).module()
    batch = torch.randn(3, 3, 8, 8)
    got, want = program(batch), eager(batch)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    for name in ("0.running_autocorrelation", "0.num_steps_tracked", "2.running_autocorrelation"):
        torch.testing.assert_close(program.get_buffer(name), eager.get_buffer(name))
    probe = torch.randn_like(want)
    (g_program,) = torch.autograd.grad((got * probe).sum(), program.get_parameter("0.weight"))
    (g_eager,) = torch.autograd.grad((want * probe).sum(), eager.get_parameter("0.weight"))
    torch.testing.assert_close(g_program, g_eager, rtol=1e-4, atol=1e-6)


def test_an_export_with_a_dynamic_spatial_size_is_refused_by_name():
    """The layer's matrices are made for one input size: a spatial dimension left dynamic is
    refused with what to do, not with an error from inside the tracer."""
    model = nn.Sequential(ConvNorm2d(3, 4, 3, padding=1)).eval()
    height = torch.export.Dim("height")
    with pytest.raises(ValueError, match="input must have a static spatial size to be exported.*batch dimension"):
        torch.export.export(model, (torch.randn(2, 3, 8, 8),), dynamic_shapes=({2: height},))


@pytest.mark.compile
def test_jit_trace_runs_at_any_batch_and_saves(tmp_path):
    """torch.jit.trace of each model: the traced program (and the one saved and loaded back)
    equals the eager model at another batch size, holds no complex tensor and no FFT, and the
    eager layers keep what they prepared."""
    for model, x in dynamic_batch_models():
        with torch.no_grad():
            model(x)
        entries = [layer._prepared for layer in convnorm_layers(model)]
        traced = torch.jit.trace(model, (x,))
        graph = str(traced.inlined_graph)
        assert "fft" not in graph and "Complex" not in graph
        assert [layer._prepared for layer in convnorm_layers(model)] == entries
        torch.jit.save(traced, tmp_path / "model.pt")
        loaded = torch.jit.load(tmp_path / "model.pt")
        with torch.no_grad():
            for program in (traced, loaded):
                torch.testing.assert_close(program(x[:3]), model(x[:3]), rtol=1e-5, atol=1e-6)


def test_jit_script_names_the_ways_that_work():
    """TorchScript's compiler cannot take the layer; the error says what to do instead."""
    model = nn.Sequential(ConvNorm2d(3, 4, 3, padding=1), nn.ReLU())
    with pytest.raises(RuntimeError, match=r"ConvNorm2d cannot be compiled by torch.jit.script.*torch.jit.trace"
                                           r".*torch.export.export.*torch.onnx.export"):
        torch.jit.script(model)


@pytest.mark.parametrize("case", REFERENCE_CASES)
@pytest.mark.parametrize("stop_gradient", [True, False])
def test_a_traced_layer_is_the_reference(case, stop_gradient):
    """``conv_norm`` traced by torch.jit.trace (the planar filter) equals ``conv_norm_reference``
    in every geometry: outputs to 1e-12 and, without the stop-gradient (a trace records no grad
    mode, so the stop-gradient is for ``torch.export``'s programs, which do), input, weight,
    affine and bias gradients."""
    d, n, k, padding, stride, dilation, groups, mode, taps = case
    x, w, b, rho = reference_case(d, n, k, groups, taps, seed=len(n) + k)
    args = (stride, padding, dilation, groups, mode, 1e-3)

    def layer(x, w, b, rho):
        return conv_norm(x, w, b, *args, affine_weight=rho, stop_gradient=stop_gradient)

    traced = torch.jit.trace(layer, (x, w, b, rho), check_trace=False)
    assert "fft" not in str(traced.graph) and "Complex" not in str(traced.graph)
    got = traced(x, w, b, rho)
    want = conv_norm_reference(x, w, b, *args, affine_weight=rho, stop_gradient=stop_gradient)
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
    if not stop_gradient:
        probe = torch.randn_like(got)
        grads = [torch.autograd.grad((o * probe).sum(), (x, w, rho, b)) for o in (got, want)]
        for a, e in zip(*grads):
            torch.testing.assert_close(a, e, rtol=1e-10, atol=1e-10)

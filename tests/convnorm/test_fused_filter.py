"""The fused Triton filter (:mod:`convnorm._fused_filter`) against the spatial computation's
dense-matrix filter in float64 (``convnorm._spatial``'s own functions, differentiated by
autograd for the backward) and, end to end, against the paper's procedure
(:func:`convnorm.reference.conv_norm_reference`).

With a CUDA GPU the kernels run on it; without one, in triton's interpreter on the CPU
(``TRITON_INTERPRET=1``, set for every test process by ``tests/conftest.py`` before triton
is first imported, which is when triton reads it). Skipped without triton.

Tolerances, relative to the largest entry of the expected result (the transforms spread every
input over every output, so an entry's error is on the scale of the largest). The references
take the inputs the kernel takes (rounded to its dtype, then float64), so that only the
kernel's own arithmetic is measured, except end to end (float64 data, rounded to float32 for
the kernel, which adds about u per entry). Float32: four products in a row (columns, rows,
inverse rows, inverse columns), each a sum of at most 64 products of float32 numbers (unit
roundoff u = 2**-24 = 6e-8): at most about 4 * 64 * u = 1.5e-5, about 4 * sqrt(64) * u = 2e-6
for rounding errors of random sign; we allow 1e-5 (observed: 1e-7 to 1e-6). Half precision:
the kernel reads bfloat16/float16 exactly, computes in float32 and rounds its result once to
the dtype: an error of at most u |z| (u = 2**-8 for bfloat16, 2**-11 for float16; 2**-7 for
bfloat16 under the interpreter, which truncates) on top of the float32 error (atol 2e-5 of
the largest entry), which is what ``rtol=u`` states; the products S stay float32 (1e-5). The
transform lengths do not enter: nothing is rounded to the half dtype before the end.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

pytestmark = pytest.mark.triton

import triton  # noqa: E402, F401 (the project's install brings it: these tests never skip for want of it)

from convnorm import _fused_filter as fused  # noqa: E402
from convnorm._caches import cache_entries, clear_caches  # noqa: E402
from convnorm._geometry import layer_geometry  # noqa: E402
from convnorm._spatial import _dense_irfft2_sample, _dense_rfft2  # noqa: E402
from convnorm._transforms import dense_dft, kernel_basis, shifted_kernel_spectrum  # noqa: E402
from convnorm.fourier import normalizer_spectrum  # noqa: E402
from convnorm.reference import conv_norm_reference  # noqa: E402

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
FLOAT32_TOLERANCE = 1e-5
INTERPRETED = DEVICE.type == "cpu"
TF32_TOLERANCE = 5e-3
"""``precision="tf32"`` rounds both operands of each product to 10 mantissa bits (u = 2**-11 =
4.9e-4): four products in a row, about 4 * 2 * u = 4e-3 at most (8e-4 when emulated on a CPU)."""
UNIT_ROUNDOFF = {torch.bfloat16: 2.0 ** (-7 if INTERPRETED else -8), torch.float16: 2.0 ** -11}
"""The largest relative error of rounding float32 to each dtype: half its spacing, 2**-8 and
2**-11, except that triton's interpreter truncates float32 to bfloat16 (a GPU rounds to
nearest): then a whole spacing, 2**-7."""

LAYERS = {  # (input size, kernel, stride, padding): the normalization size L and output size O follow
    "L34": ((32, 32), (3, 3), 1, 1), "L34-stride2": ((32, 32), (3, 3), 2, 1),
    "L18": ((16, 16), (3, 3), 1, 1), "L18-stride2": ((16, 16), (3, 3), 2, 1),
    "L10": ((8, 8), (3, 3), 1, 1), "L10-stride2": ((8, 8), (3, 3), 2, 1),
    "L6": ((4, 4), (3, 3), 1, 1), "L6-stride2": ((4, 4), (3, 3), 2, 1),
    "5x5-nonsquare": ((12, 20), (5, 5), (2, 1), 2), "1x3": ((9, 30), (1, 3), (1, 2), (0, 1)),
    "L64": ((60, 62), (5, 3), 1, (2, 1)),
}
"""The layers of a CIFAR ResNet18 and VGG16 (3x3 kernels on 32, 16, 8 and 4 maps, stride 1
and 2), a non-square 5x5 one, a 1x3 one and the largest size the kernels take."""


def geometry(name: str, padding_mode: str = "zeros"):
    """The :class:`~convnorm._geometry.LayerGeometry` of ``LAYERS[name]`` (one channel)."""
    size, kernel, stride, padding = LAYERS[name]
    return layer_geometry(torch.empty(1, 1, *size), torch.empty(1, 1, *kernel), stride, padding, 1, 1, padding_mode)


def matrices(geo):
    """The kernels' matrices of ``geo``, from the float32 DenseDFT on ``DEVICE``."""
    return fused.filter_matrices(dense_dft(geo.length, geo.stride, geo.out_size, torch.float32, DEVICE))


def filter_case(geo, n=3, c=2, dtype=torch.float32, seed=0):
    """A random tile batch ``y`` ``(n, c, *L)`` in ``dtype`` and a multiplier's float32 planes, on
    ``DEVICE``, with the float64 copies of exactly these values for the references."""
    generator = torch.Generator().manual_seed(seed)
    k = geo.length[1] // 2 + 1
    y = torch.randn(n, c, *geo.length, generator=generator).to(dtype)
    real, imag = torch.randn(2, c, geo.length[0], k, generator=generator)
    return y.to(DEVICE), real.to(DEVICE), imag.to(DEVICE), y.double(), torch.complex(real.double(), imag.double())


def dense_filter(y, multiplier, geo):
    """The spatial computation's dense filter (``_filtered`` with ``dense=True``) in float64 on the CPU."""
    dft = dense_dft(geo.length, geo.stride, geo.out_size, torch.float64, torch.device("cpu"))
    return _dense_irfft2_sample(_dense_rfft2(y, dft) * multiplier, dft)


def error(result, reference):
    """Largest error relative to the largest entry of ``reference`` (float64, on the CPU)."""
    return ((result.double().cpu() - reference).abs().max() / reference.abs().max()).item()


@pytest.mark.parametrize("name", list(LAYERS))
def test_forward_matches_the_dense_filter(name):
    """z = re(idft_rows (M Y)) irfft_cols + b with Y = dft_rows (y rfft_cols), at every size, for
    both strides, with the samples split over programs unevenly (3 samples, 2 per program)."""
    geo = geometry(name)
    y, real, imag, y64, m64 = filter_case(geo)
    bias = torch.tensor([0.5, -2.0])
    z = fused.filter_forward(y, real, imag, matrices(geo), bias.to(DEVICE), samples_per_program=2)
    assert z.shape == (3, 2, *geo.out_size) and z.dtype == torch.float32 and z.is_contiguous()
    assert error(z, dense_filter(y64, m64, geo) + bias.double()[:, None, None]) < FLOAT32_TOLERANCE


def autograd_backward(y64, m64, geo, grad_z):
    """What autograd of the float64 dense filter gives for ``grad_z``: ``(grad_y, dL/dM real,
    dL/dM imag)``; the latter two are the products :math:`S = \\sum_n \\overline{Y_n} \\Gamma_n`."""
    y = y64.clone().requires_grad_()
    real, imag = m64.real.clone().requires_grad_(), m64.imag.clone().requires_grad_()
    dense_filter(y, torch.complex(real, imag), geo).backward(grad_z)
    return y.grad, real.grad, imag.grad


def random_grad(y, geo, dtype=torch.float32, seed=1):
    """A random gradient of z for the tiles ``y``, in ``dtype``."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(*y.shape[:2], *geo.out_size, generator=generator).to(dtype)


@pytest.mark.parametrize("name", list(LAYERS))
def test_backward_matches_autograd(name):
    """grad_y and the products S (the gradient of M summed over the samples) are autograd's
    gradients of the float64 dense filter, with the sum over samples split over programs."""
    geo = geometry(name)
    y, real, imag, y64, m64 = filter_case(geo)
    grad_z = random_grad(y, geo)
    result = fused.filter_backward(grad_z.to(DEVICE), y, real, imag, matrices(geo), True, True,
                                   samples_per_program=2)
    assert result[0].shape == y.shape and result[0].dtype == torch.float32
    assert result[1].shape == real.shape and result[1].dtype == torch.float32
    for fused_result, expected in zip(result, autograd_backward(y64, m64, geo, grad_z.double())):
        assert error(fused_result, expected) < FLOAT32_TOLERANCE


@pytest.mark.parametrize("precision, tolerance", [("ieee", FLOAT32_TOLERANCE), ("tf32", TF32_TOLERANCE)])
@pytest.mark.parametrize("name", ["L34", "L18-stride2"])
def test_each_precision_keeps_its_accuracy(name, precision, tolerance):
    """``tl.dot``'s input precision: float32 accuracy for "ieee", TensorFloat-32's for "tf32",
    forward and backward (the interpreter computes every one in float32: this test
    measures the precisions on a GPU)."""
    geo = geometry(name)
    y, real, imag, y64, m64 = filter_case(geo)
    z = fused.filter_forward(y, real, imag, matrices(geo), precision=precision)
    assert error(z, dense_filter(y64, m64, geo)) < tolerance
    grad_z = random_grad(y, geo)
    result = fused.filter_backward(grad_z.to(DEVICE), y, real, imag, matrices(geo), True, True, precision)
    for fused_result, expected in zip(result, autograd_backward(y64, m64, geo, grad_z.double())):
        assert error(fused_result, expected) < tolerance


def test_backward_computes_only_what_is_needed():
    """Each output alone is the one computed with both (the same arithmetic, in another compiled
    variant); neither asked, nothing is computed."""
    geo = geometry("L10-stride2")
    y, real, imag, _, _ = filter_case(geo)
    grad_z, mats = random_grad(y, geo).to(DEVICE), matrices(geo)
    grad_y, products_real, products_imag = fused.filter_backward(grad_z, y, real, imag, mats, True, True)
    only_grad_y = fused.filter_backward(grad_z, y, real, imag, mats, True, False)
    only_products = fused.filter_backward(grad_z, y, real, imag, mats, False, True)
    assert only_grad_y[1:] == (None, None) and only_products[0] is None
    for result, expected in ((only_grad_y[0], grad_y), (only_products[1], products_real),
                             (only_products[2], products_imag)):
        assert error(result, expected.double().cpu()) < FLOAT32_TOLERANCE
    assert fused.filter_backward(grad_z, y, real, imag, mats, False, False) == (None, None, None)


def assert_rounded_once(result, reference, dtype):
    """``result`` (in ``dtype``) is ``reference`` rounded to ``dtype``, up to the float32 error:
    within the unit roundoff relatively, plus twice the float32 tolerance of the largest entry."""
    assert result.dtype == dtype
    torch.testing.assert_close(result.double().cpu(), reference, rtol=UNIT_ROUNDOFF[dtype],
                               atol=2 * FLOAT32_TOLERANCE * reference.abs().max().item())


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("name", ["L34-stride2", "L18", "5x5-nonsquare"])
def test_half_precision_rounds_only_the_result(name, dtype):
    """bfloat16/float16 y and grad_z are read exactly and filtered in float32: z and grad_y, in
    the input's dtype, are the float64 results rounded once (relative error at most the unit
    roundoff u, plus the float32 error on the scale of the largest entry); S stays float32."""
    geo = geometry(name)
    y, real, imag, y64, m64 = filter_case(geo, dtype=dtype)
    assert_rounded_once(fused.filter_forward(y, real, imag, matrices(geo)), dense_filter(y64, m64, geo), dtype)
    grad_z = random_grad(y, geo, dtype)
    grad_y, grad_real, grad_imag = autograd_backward(y64, m64, geo, grad_z.double())
    result = fused.filter_backward(grad_z.to(DEVICE), y, real, imag, matrices(geo), True, True)
    assert_rounded_once(result[0], grad_y, dtype)
    assert error(result[1], grad_real) < FLOAT32_TOLERANCE and error(result[2], grad_imag) < FLOAT32_TOLERANCE


def test_channels_last_is_read_in_place_and_kept():
    """A channels-last y gives a channels-last z and grad_y (any strides are read through), with
    the values of the contiguous computation: the same arithmetic, bit for bit."""
    geo = geometry("L10")
    y, real, imag, _, _ = filter_case(geo, c=3)
    mats, bias = matrices(geo), torch.randn(3, device=DEVICE)
    last = y.contiguous(memory_format=torch.channels_last)
    z = fused.filter_forward(last, real, imag, mats, bias)
    assert z.is_contiguous(memory_format=torch.channels_last) and not z.is_contiguous()
    assert torch.equal(z, fused.filter_forward(y, real, imag, mats, bias))
    grad_z = random_grad(y, geo).to(DEVICE)
    grad_y, products_real, products_imag = fused.filter_backward(
        grad_z.contiguous(memory_format=torch.channels_last), last, real, imag, mats, True, True)
    assert grad_y.is_contiguous(memory_format=torch.channels_last) and not grad_y.is_contiguous()
    expected = fused.filter_backward(grad_z, y, real, imag, mats, True, True)
    assert torch.equal(grad_y, expected[0])
    assert torch.equal(products_real, expected[1]) and torch.equal(products_imag, expected[2])


def test_products_are_deterministic_for_any_split_of_the_samples():
    """The products are summed without atomics: the same call gives the same bits, and any split
    of the samples over programs the same sums up to the float32 rounding of the order."""
    geo = geometry("L6-stride2")
    y, real, imag, _, _ = filter_case(geo, n=5)
    grad_z, mats = random_grad(y, geo).to(DEVICE), matrices(geo)
    runs = {per: fused.filter_backward(grad_z, y, real, imag, mats, False, True, samples_per_program=per)[1:]
            for per in (1, 2, 5)}
    again = fused.filter_backward(grad_z, y, real, imag, mats, False, True, samples_per_program=2)[1:]
    assert all(torch.equal(a, b) for a, b in zip(again, runs[2]))
    for per in (1, 2):
        for result, expected in zip(runs[per], runs[5]):
            assert error(result, expected.double().cpu()) < FLOAT32_TOLERANCE


def test_an_empty_batch_gives_empty_outputs_and_zero_products():
    """No sample: no program runs; z and grad_y are empty and the products zero."""
    geo = geometry("L6")
    _, real, imag, _, _ = filter_case(geo)
    y = torch.empty(0, 2, *geo.length, device=DEVICE)
    assert fused.filter_forward(y, real, imag, matrices(geo)).shape == (0, 2, *geo.out_size)
    grad_y, products_real, products_imag = fused.filter_backward(
        torch.empty(0, 2, *geo.out_size, device=DEVICE), y, real, imag, matrices(geo), True, True)
    assert grad_y.shape == y.shape and not products_real.any() and not products_imag.any()


@pytest.mark.parametrize("kwargs", [dict(stride=1, padding=1), dict(stride=2, padding=1),
                                    dict(stride=1, padding=1, padding_mode="circular")])
def test_end_to_end_matches_the_reference(kwargs):
    """ConvNorm by the full convolution (as convnorm._spatial computes it), then the fused filter
    with M = v-hat * the shifted spectrum of the affine kernel (as SpectralFilter builds it),
    plus the bias: the paper's procedure in float64, forward, and backward through the input,
    the conv weight and the affine kernel (its gradient from the products S as
    SpectralFilter's dense backward forms it)."""
    torch.manual_seed(0)
    padding_mode = kwargs.get("padding_mode", "zeros")
    x = torch.randn(3, 2, 8, 6, dtype=torch.float64, requires_grad=True)
    weight = torch.randn(4, 2, 3, 3, dtype=torch.float64, requires_grad=True)
    affine = (torch.randn(4, 3, 3, dtype=torch.float64) * 0.3 + F.pad(torch.ones(4, 1, 1), (1, 1, 1, 1))
              ).requires_grad_()
    bias = torch.randn(4, dtype=torch.float64)
    reference = conv_norm_reference(x, weight, bias, affine_weight=affine, **kwargs)
    grad_z = torch.randn_like(reference)
    reference.backward(grad_z)
    expected = {"x": x.grad, "weight": weight.grad, "affine": affine.grad}
    x.grad = weight.grad = affine.grad = None

    geo = layer_geometry(x, weight, kwargs["stride"], 1, 1, 1, padding_mode, bias, affine)
    if padding_mode == "circular":
        y = F.conv2d(F.pad(x, (1, 1, 1, 1), mode="circular"), weight)
    else:
        y = F.conv2d(x, weight, padding=2)
    gain = normalizer_spectrum(weight.detach(), geo.length, 1e-5)
    shift = tuple(c - (t - 1) // 2 for c, t in zip(geo.offset, affine.shape[1:]))
    multiplier = gain * shifted_kernel_spectrum(affine.detach(), shift, geo.length)
    real, imag = (part.float().contiguous().to(DEVICE) for part in (multiplier.real, multiplier.imag))
    mats = fused.filter_matrices(dense_dft(geo.length, geo.stride, geo.out_size, torch.float32, DEVICE))
    y32 = y.detach().float().to(DEVICE)
    z = fused.filter_forward(y32, real, imag, mats, bias.float().to(DEVICE))
    assert error(z, reference.detach()) < FLOAT32_TOLERANCE
    grad_y, products_real, products_imag = fused.filter_backward(grad_z.float().to(DEVICE), y32, real, imag, mats,
                                                                 True, True)
    y.backward(grad_y.double().cpu())
    products = torch.complex(products_real.double().cpu(), products_imag.double().cpu())
    basis = kernel_basis((3, 3), shift, geo.length, torch.float64, torch.device("cpu"))
    grad_affine = (torch.view_as_real(products * gain).flatten(1) @ basis.T).reshape(affine.shape)
    for name, result in (("x", x.grad), ("weight", weight.grad), ("affine", grad_affine)):
        assert error(result, expected[name]) < FLOAT32_TOLERANCE, name


def test_matrices_are_the_dense_dft_planes_padded_and_cached():
    """The planes are DenseDFT's matrices (rows symmetric, which the backward relies on), zero
    beyond the geometry, padded to powers of two of at least 16; cached until clear_caches."""
    dft = dense_dft((34, 10), (2, 1), (16, 8), torch.float32, DEVICE)
    mats = fused.filter_matrices(dft)
    assert mats.length == (34, 10) and mats.out_size == (16, 8)
    assert [tuple(m.shape) for m in mats[:4]] == [(2, 16, 16), (2, 64, 64), (2, 16, 64), (2, 16, 16)]
    assert torch.equal(mats.columns[0, :10, :6], dft.rfft_cols[:, 0::2])
    assert torch.equal(mats.rows[1, :34, :34], dft.dft_rows.imag)
    assert torch.equal(mats.inverse_rows[0, :16, :34], dft.idft_rows.real)
    assert torch.equal(mats.inverse_columns[1, :6, :8], dft.irfft_cols[1::2])
    assert torch.equal(mats.rows, mats.rows.transpose(1, 2))
    assert not mats.columns[:, 10:].any() and not mats.columns[:, :, 6:].any()
    assert fused.filter_matrices(dft) is mats
    assert cache_entries()["convnorm._fused_filter.filter_matrices"] >= 1
    clear_caches()
    assert cache_entries()["convnorm._fused_filter.filter_matrices"] == 0


def test_the_kernels_tuning_changes_no_result(monkeypatch):
    """``num_warps`` and ``programs_per_sm`` (what the GPU benchmark sweeps) change how the work is
    split, never the result beyond float32's rounding; on a GPU more programs per multiprocessor
    give each fewer samples."""
    geo = geometry("L10-stride2")
    y, real, imag, _, _ = filter_case(geo, n=5, c=3)
    g = torch.randn(5, 3, *geo.out_size, device=DEVICE)
    mats = matrices(geo)
    want = (fused.filter_forward(y, real, imag, mats), *fused.filter_backward(g, y, real, imag, mats, True, True))
    got = (fused.filter_forward(y, real, imag, mats, num_warps=2, programs_per_sm=8),
           *fused.filter_backward(g, y, real, imag, mats, True, True, num_warps=1, programs_per_sm=16))
    for a, b in zip(got, want):  # the products are summed over other blocks of samples: float32's rounding
        assert error(a, b.double().cpu()) < FLOAT32_TOLERANCE

    class Properties:  # an H100's multiprocessors
        multi_processor_count = 132

    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device: Properties)
    cuda = torch.device("cuda")
    per_program = {per_sm: fused._samples_per_program(512, 64, cuda, None, per_sm) for per_sm in (None, 2, 8, 16)}
    assert per_program[None] == per_program[fused.PROGRAMS_PER_SM]
    assert per_program[2] > per_program[8] > per_program[16] >= 1
    assert fused._samples_per_program(512, 64, torch.device("cpu"), None, 16) == 512  # the interpreter: one program


def test_unsupported_arguments_are_refused_by_name():
    """Sizes beyond 64, other dtypes, shapes, planes, precisions and splits: a ValueError that
    names the argument and the rule."""
    with pytest.raises(ValueError, match="dft must have a normalization size of at most 64 .*got \\(66, 34\\)"):
        fused.filter_matrices(dense_dft((66, 34), (1, 1), (64, 32), torch.float32, DEVICE))
    geo = geometry("L6")
    y, real, imag, _, _ = filter_case(geo)
    mats = matrices(geo)
    with pytest.raises(ValueError, match="y must be float32, bfloat16 or float16, got torch.float64"):
        fused.filter_forward(y.double(), real, imag, mats)
    with pytest.raises(ValueError, match="y must have shape \\(N, C, 6, 6\\)"):
        fused.filter_forward(y[..., :5], real, imag, mats)
    with pytest.raises(ValueError, match="multiplier_imag must be a contiguous float32 tensor of shape \\(2, 6, 4\\)"):
        fused.filter_forward(y, real, imag.double(), mats)
    with pytest.raises(ValueError, match="multiplier_real .* not contiguous"):
        fused.filter_forward(y, real.transpose(1, 2).contiguous().transpose(1, 2), imag, mats)
    with pytest.raises(ValueError, match="bias must be a floating-point tensor of shape \\(2,\\)"):
        fused.filter_forward(y, real, imag, mats, torch.zeros(3, device=DEVICE))
    with pytest.raises(ValueError, match="precision must be one of \\('ieee', 'tf32'\\)"):
        fused.filter_forward(y, real, imag, mats, precision="bf16")
    with pytest.raises(ValueError, match="samples_per_program must be a positive integer"):
        fused.filter_forward(y, real, imag, mats, samples_per_program=0)
    with pytest.raises(ValueError, match="programs_per_sm must be a positive integer"):
        fused.filter_backward(y[..., :4, :4], y, real, imag, mats, True, True, programs_per_sm=0)
    with pytest.raises(ValueError, match="num_warps must be one of \\[1, 2, 4, 8, 16\\], got 3"):
        fused.filter_forward(y, real, imag, mats, num_warps=3)
    with pytest.raises(ValueError, match="grad_z must have shape \\(N, C, 4, 4\\)"):
        fused.filter_backward(y, y, real, imag, mats, True, True)
    with pytest.raises(ValueError, match="grad_z must have shape \\(N, C, O0, O1\\) = \\(3, 2, 4, 4\\)"):
        fused.filter_backward(torch.zeros(3, 1, 4, 4, device=DEVICE), y, real, imag, mats, True, True)
    with pytest.raises(ValueError, match="matrices must be a FilterMatrices"):
        fused.filter_forward(y, real, imag, dense_dft((6, 6), (1, 1), (4, 4), torch.float32, DEVICE))
    with pytest.raises(ValueError, match="y must be on a CUDA device, or on the CPU with TRITON_INTERPRET=1 set, "
                                         "got meta"):
        fused.filter_forward(y.to("meta"), real, imag, mats)


def test_available_on_a_cpu_only_under_the_interpreter(monkeypatch):
    """A CPU runs the kernels only in triton's interpreter; other devices but CUDA never."""
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    assert not fused.available(torch.device("cpu")) and not fused.available("meta")
    assert fused.available("cuda")  # triton imports here
    geo = geometry("L6")
    y, real, imag, _, _ = filter_case(geo)
    if DEVICE.type == "cpu":
        with pytest.raises(ValueError, match="y must be on a CUDA device, or on the CPU with TRITON_INTERPRET=1"):
            fused.filter_forward(y, real, imag, matrices(geo))
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert fused.available("cpu")


def test_without_triton_the_module_imports_and_says_what_is_missing():
    """In a process where triton cannot be imported: both modules import (as every module of the
    package must), available() is False, the matrices (plain torch) are built, and a launch
    raises an ImportError naming triton."""
    code = (
        "import sys; sys.modules['triton'] = None\n"
        "import torch\n"
        "from convnorm import _fused_filter as fused, _fused_filter_kernels\n"
        "from convnorm._transforms import dense_dft\n"
        "assert not fused.available('cpu') and not fused.available('cuda')\n"
        "mats = fused.filter_matrices(dense_dft((6, 6), (1, 1), (4, 4), torch.float32, torch.device('cpu')))\n"
        "try:\n"
        "    fused.filter_forward(torch.zeros(1, 1, 6, 6), torch.zeros(1, 6, 4), torch.zeros(1, 6, 4), mats)\n"
        "except ImportError as error:\n"
        "    assert 'triton' in str(error), error\n"
        "else:\n"
        "    raise AssertionError('no ImportError')\n")
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]))
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=root)
    assert completed.returncode == 0, completed.stderr


# The layer with the fused filter: ConvNorm2d as the policy computes it on a GPU (where the
# filter is fused by default), against the reference, and what bfloat16 costs.

def fused_policy():
    from convnorm.functional import ComputationPolicy

    return ComputationPolicy(frequency_domain_devices=()).filtering("fused", DEVICE.type)


@pytest.mark.parametrize("name", ["L34", "L34-stride2", "L18-stride2", "L6", "5x5-nonsquare"])
@pytest.mark.parametrize("channels_last", [False, True], ids=["contiguous", "channels-last"])
def test_the_layer_with_the_fused_filter_is_the_equation(name, channels_last):
    """ConvNorm2d (its weight, affine kernel and bias) in float32 by the fused filter, output
    and every gradient against the float64 reference, in both memory layouts; the output keeps
    the input's layout."""
    from convnorm import ConvNorm2d
    from convnorm.functional import use_policy

    size, kernel, stride, padding = LAYERS[name]
    torch.manual_seed(0)
    layer = ConvNorm2d(3, 4, kernel, stride, padding).to(DEVICE)
    with torch.no_grad():
        layer.affine_weight.add_(0.1 * torch.randn_like(layer.affine_weight))
        layer.bias.normal_()
    x = torch.randn(2, 3, *size, device=DEVICE)
    x = x.contiguous(memory_format=torch.channels_last) if channels_last else x
    x.requires_grad_()
    with use_policy(fused_policy()):
        out = layer(x)
        assert layer._prepared.prepared.plan.filter == "fused"
    probe = torch.randn_like(out)
    got = (out, *torch.autograd.grad(out, (x, layer.weight, layer.affine_weight, layer.bias), probe))
    leaves = [t.detach().double().requires_grad_() for t in (x, layer.weight, layer.affine_weight, layer.bias)]
    want = conv_norm_reference(leaves[0], leaves[1], leaves[3], stride, padding, affine_weight=leaves[2])
    wanted = (want, *torch.autograd.grad(want, leaves, probe.double()))
    for g, w, what in zip(got, wanted, ("output", "input", "weight", "affine", "bias")):
        assert error(g, w.detach()) < FLOAT32_TOLERANCE, what
    assert out.is_contiguous(memory_format=torch.channels_last if channels_last else torch.contiguous_format)


def test_bfloat16_costs_more_on_a_low_pass_kernel_and_stays_bounded():
    """Under bfloat16 autocast the fused filter takes the convolution in bfloat16 (unless
    ``float32_convolution``): the normalizer's gain, up to eps**-1/2 where a kernel's spectrum
    vanishes, amplifies that rounding. Measured on a random kernel and on a low-pass one (a 3x3
    box filter plus 1 % noise, whose spectrum nearly vanishes at the highest frequencies), each
    against the float64 reference: the low-pass error is the larger, both stay below 5 % of the
    output's largest entry, and the float32 convolution brings both back to float32's accuracy."""
    from dataclasses import replace

    from convnorm.functional import conv_norm2d, use_policy

    torch.manual_seed(1)
    x = torch.randn(4, 8, 16, 16)
    random = torch.randn(8, 8, 3, 3) / 8
    box = torch.ones(8, 8, 3, 3) / 8 + 0.01 * torch.randn(8, 8, 3, 3)
    errors = {}
    for name, w in (("random", random), ("low-pass", box)):
        want = conv_norm_reference(x.double(), w.double(), None, 1, 1)
        for convolution in ("bfloat16", "float32"):
            policy = replace(fused_policy(), float32_convolution=convolution == "float32")
            with use_policy(policy), torch.autocast(DEVICE.type, dtype=torch.bfloat16):
                got = conv_norm2d(x.to(DEVICE), w.to(DEVICE), None, 1, 1)
            assert got.dtype == torch.bfloat16
            errors[name, convolution] = error(got.float(), want)
    assert errors["low-pass", "bfloat16"] > errors["random", "bfloat16"]
    assert max(errors["random", "bfloat16"], errors["low-pass", "bfloat16"]) < 5e-2, errors
    # float32 convolution: the only bfloat16 rounding left is the output's own (2**-8, 2**-7 interpreted)
    assert max(errors["random", "float32"], errors["low-pass", "float32"]) <= 2 * UNIT_ROUNDOFF[torch.bfloat16], errors


def test_the_float32_escape_hatch_holds_from_the_stem_to_the_last_layer():
    """Under bfloat16 autocast every ConvNorm layer after the stem reads bfloat16 activations;
    with ``float32_convolution`` each of them, the stem and the last included, still convolves in
    float32 (without it, each in bfloat16), and the stack's output on a low-pass kernel comes
    back to the accuracy of the output's own bfloat16 rounding."""
    from dataclasses import replace

    from convnorm import ConvNorm2d
    from convnorm.functional import use_policy

    torch.manual_seed(2)
    stack = torch.nn.Sequential(ConvNorm2d(3, 4, 3, 1, 1, affine=False), torch.nn.ReLU(),
                                ConvNorm2d(4, 4, 3, 1, 1, affine=False), torch.nn.ReLU(),
                                ConvNorm2d(4, 4, 3, 2, 1, affine=False)).to(DEVICE)
    with torch.no_grad():
        for layer in stack[2::2]:  # low-pass kernels after the stem: the normalizer's gain is large there
            layer.weight.copy_(torch.ones_like(layer.weight) / 36 + 0.01 * torch.randn_like(layer.weight))
    layers = [module for module in stack if isinstance(module, ConvNorm2d)]
    x = torch.randn(2, 3, 16, 16, device=DEVICE)
    with torch.no_grad():
        want = stack.double()(x.double()).float()
        stack.float()
    errors = {}
    for hatch in (False, True):
        with use_policy(replace(fused_policy(), float32_convolution=hatch)), torch.no_grad(), \
                torch.autocast(DEVICE.type, dtype=torch.bfloat16):
            out = stack(x)
            plans = [layer._prepared.prepared.plan for layer in layers]
        assert out.dtype == torch.bfloat16
        assert all(plan.filter == "fused" for plan in plans)
        assert [plan.convolution_dtype for plan in plans] == [torch.float32 if hatch else torch.bfloat16] * 3
        errors[hatch] = error(out.float(), want.double().cpu())
    assert errors[True] <= 2 * UNIT_ROUNDOFF[torch.bfloat16] < errors[False], errors


@pytest.mark.parametrize("frozen", ["affine", "affine-and-input"])
def test_a_frozen_affine_kernel_takes_no_products_and_keeps_the_gradients(frozen):
    """With the affine kernel frozen (no gradient asked for it) the fused filter keeps no copy
    of the full convolution's output and computes no products, and the gradients that are asked
    for (the input's, the weight's, the bias's) still equal the float64 reference's."""
    from convnorm import ConvNorm2d
    from convnorm.functional import use_policy

    torch.manual_seed(0)
    layer = ConvNorm2d(3, 4, 3, 1, 1).to(DEVICE)
    with torch.no_grad():
        layer.affine_weight.add_(0.1 * torch.randn_like(layer.affine_weight))
    layer.affine_weight.requires_grad_(False)
    x = torch.randn(2, 3, 6, 6, device=DEVICE, requires_grad=frozen == "affine")
    with use_policy(fused_policy()):
        out = layer(x)
        assert layer._prepared.prepared.plan.filter == "fused"
    probe = torch.randn_like(out)
    asked = ((x,) if x.requires_grad else ()) + (layer.weight, layer.bias)
    got = torch.autograd.grad(out, asked, probe)
    leaves = [t.detach().double().requires_grad_(t.requires_grad) for t in (x, layer.weight, layer.bias)]
    want = conv_norm_reference(leaves[0], leaves[1], leaves[2], 1, 1, affine_weight=layer.affine_weight.double())
    wanted = torch.autograd.grad(want, [t for t in leaves if t.requires_grad], probe.double())
    for g, w in zip(got, wanted):
        assert error(g, w) < FLOAT32_TOLERANCE


def test_backward_without_y_asks_for_no_products():
    """``y`` may be left out only when no products are asked for: then the input's gradient is
    the one computed with ``y``, in ``grad_z``'s memory format; asking for products without
    ``y`` is refused by name."""
    geo = geometry("L6")
    y, real, imag, _, _ = filter_case(geo)
    mats = matrices(geo)
    grad = torch.randn(y.shape[0], y.shape[1], *mats.out_size, device=DEVICE)
    with_y = fused.filter_backward(grad, y, real, imag, mats, True, False)[0]
    for layout in (torch.contiguous_format, torch.channels_last):
        without = fused.filter_backward(grad.contiguous(memory_format=layout), None, real, imag, mats, True, False)
        assert torch.equal(without[0], with_y) and without[1:] == (None, None)
        assert without[0].is_contiguous(memory_format=layout)
    with pytest.raises(ValueError, match="y must be a tensor when need_products is True"):
        fused.filter_backward(grad, None, real, imag, mats, True, True)

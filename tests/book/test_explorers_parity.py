"""The explorers' browser-side computations (JavaScript, run here in Node.js) give the package's
numbers: each compared with the Python reference on the same inputs, odd and even sizes,
to a relative 1e-9 in float64 (entry by entry, relative to the array's largest magnitude).
"""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch

from convnorm.fourier import kernel_power_spectrum
from convnorm_book.chapters.all_pass_filters import KERNEL_PRESETS as PRESETS_1D
from convnorm_book.chapters.all_pass_filters import allpass_view
from convnorm_book.chapters.convolution_padding_stride import padding_stride_view, padding_weights
from convnorm_book.chapters.intro import kernel_spectrum_view
from convnorm_book.chapters.multichannel_tight_frames import channel_singular_value_pair, random_channel_kernels
from convnorm_book.chapters.two_dimensions import KERNEL_PRESETS as PRESETS_2D
from convnorm_book.chapters.two_dimensions import kernel_filter_view
from convnorm_book.explorers.page import LIBRARY, SOURCES, encode_float64

pytestmark = pytest.mark.javascript

RUNNER = Path(__file__).with_name("explorer_views.js")
SCRIPTS = ("kernel_spectrum.js", "allpass.js", "channel_singular_values.js", "padding_stride.js", "kernel_filter.js")
RTOL = 1e-9


def run_js(*calls: tuple[str, list]) -> list:
    """Results of ``CX.<name>(*args)`` for each call, computed by Node.js from the explorers' sources."""
    node = shutil.which("node")
    if node is None:
        pytest.fail("Node.js is not installed (Debian: apt-get install -y nodejs); .ci/run installs it with npm")
    request = {"sources": [str(SOURCES / name) for name in (*LIBRARY, *SCRIPTS)], "calls": list(calls)}
    done = subprocess.run([node, str(RUNNER)], input=json.dumps(request), capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def as_array(value) -> np.ndarray:
    return np.asarray(value if not isinstance(value, list) else [as_array(v) for v in value], dtype=np.float64)


def assert_matches(js, reference, name: str = "", scale: float | None = None) -> None:
    """``js`` equals ``reference`` within RTOL of ``scale``, by default the reference's largest
    finite magnitude (non-finite entries must coincide)."""
    js, reference = as_array(js), np.asarray(reference, dtype=np.float64)
    assert js.shape == reference.shape, f"{name}: shape {js.shape} != {reference.shape}"
    finite = np.isfinite(reference)
    np.testing.assert_array_equal(np.isfinite(js), finite, err_msg=f"{name}: non-finite entries differ")
    np.testing.assert_array_equal(js[~finite], reference[~finite], err_msg=f"{name}: non-finite entries differ")
    scale = np.abs(reference[finite]).max(initial=0.0) if scale is None else scale
    error = np.abs(js[finite] - reference[finite]).max(initial=0.0)
    assert error <= RTOL * scale, f"{name}: largest difference {error:.3g} > {RTOL} x {scale:.3g}"


def test_the_comparison_fails_on_a_wrong_number():
    with pytest.raises(AssertionError):
        assert_matches([1.0, 2.0 + 1e-6], [1.0, 2.0])
    with pytest.raises(AssertionError):
        assert_matches([1.0, np.inf], [1.0, 2.0])


@pytest.mark.parametrize("n", [1, 2, 3, 7, 15, 16, 17, 96, 97, 256])
def test_fft_and_inverse_match_numpy(rng, n):
    x = rng.standard_normal(n) + 1j * rng.standard_normal(n)
    forward, inverse = run_js(("fft", [x.real.tolist(), x.imag.tolist(), False]),
                              ("fft", [x.real.tolist(), x.imag.tolist(), True]))
    for result, reference in ((forward, np.fft.fft(x)), (inverse, np.fft.ifft(x))):
        assert_matches(result["re"], reference.real, f"re n={n}")
        assert_matches(result["im"], reference.imag, f"im n={n}")


@pytest.mark.parametrize("shape", [(7, 8), (16, 15), (64, 64), (96, 96)])
def test_fft2_matches_numpy(rng, shape):
    x = rng.standard_normal(shape)
    (result,) = run_js(("fft2", [x.ravel().tolist(), None, *shape, False]))
    reference = np.fft.fft2(x).ravel()
    assert_matches(result["re"], reference.real, "re")
    assert_matches(result["im"], reference.imag, "im")


@pytest.mark.parametrize("k, n", [(3, 8), (4, 7), (5, 33), (1, 4)])
def test_kernel_dft_matches_numpy(rng, k, n):
    a = rng.standard_normal(k)
    full, half = run_js(("kernelDft", [a.tolist(), n]), ("kernelDft", [a.tolist(), n, n // 2 + 1]))
    assert_matches(full["re"], np.fft.fft(a, n).real)
    assert_matches(full["im"], np.fft.fft(a, n).imag)
    assert_matches(half["re"], np.fft.rfft(a, n).real)


@pytest.mark.parametrize("kernel, size", [((3,), (8,)), ((4,), (7,)), ((3, 3), (7, 8)), ((3, 2), (6, 5))])
@pytest.mark.parametrize("onesided", [True, False])
def test_power_spectrum_matches_the_package(rng, kernel, size, onesided):
    weight = torch.from_numpy(rng.standard_normal((1, 3, *kernel)))
    kernels = [w.ravel().tolist() for w in weight[0].numpy()]
    (result,) = run_js(("powerSpectrum", [kernels, list(kernel), list(size), onesided]))
    assert_matches(result, kernel_power_spectrum(weight, size, onesided)[0].numpy().ravel())


@pytest.mark.parametrize("size", [(7, 8), (16, 15)])
def test_kernel_dft2_matches_numpy(rng, size):
    kernel = rng.standard_normal((3, 3))
    (result,) = run_js(("kernelDft2", [kernel.ravel().tolist(), 3, 3, *size]))
    reference = np.fft.fft2(kernel, s=size).ravel()
    assert_matches(result["re"], reference.real)
    assert_matches(result["im"], reference.imag)


@pytest.mark.parametrize("n", [1, 2, 5, 34, 67])
def test_symmetric_eigenvalues_match_numpy(rng, n):
    a = rng.standard_normal((n, n + 3))
    for matrix in (a @ a.T, (a[:, :n] + a[:, :n].T) / 2):
        (result,) = run_js(("symmetricEigenvalues", [matrix.ravel().tolist(), n]))
        assert_matches(result, np.linalg.eigvalsh(matrix))


def test_float64_data_travels_exactly(rng):
    x = np.concatenate([rng.standard_normal(50), [0.0, -0.0, 1e-300, 1 / 3]])
    (result,) = run_js(("decodeFloat64", [encode_float64(x)]))
    np.testing.assert_array_equal(np.asarray(result), x)


@pytest.mark.parametrize("n", [7, 8, 33, 64, 255, 256])
def test_intro_explorer(rng, n):
    kernels = [[1.0, 0.5, 0.25], rng.standard_normal(3).tolist()]
    results = run_js(*[("explorers.kernelSpectrum.view", [k, n]) for k in kernels])
    for kernel, result in zip(kernels, results):
        before, after = kernel_spectrum_view(kernel, n)
        assert_matches(result["before"], before, "before")
        assert_matches(result["after"], after, "after")


ALLPASS_CASES = [(PRESETS_1D["box blur"], 32, 0.0), (PRESETS_1D["random"], 32, 0.0), (PRESETS_1D["random"], 15, 1e-6),
                 (PRESETS_1D["edge detector"], 16, 1e-6), (PRESETS_1D["edge detector"], 33, 1e-2),
                 (np.array([1.0, -0.5, 0.25, 0.1]), 15, 0.0), (np.array([0.3, 2.0]), 256, 1e-12)]


@pytest.mark.parametrize("a, n, eps", ALLPASS_CASES)
def test_chapter2_explorer(a, n, eps):
    (result,) = run_js(("explorers.allpass.view", [a.tolist(), n, eps]))
    reference = allpass_view(a, n, eps)
    assert result["singular"] is False
    for name in ("a", "v", "g", "v_hat"):
        assert_matches(result["vHat" if name == "v_hat" else name], reference[name], name)
    for name in ("a_hat", "g_hat"):
        js = result["aHat" if name == "a_hat" else "gHat"]
        assert_matches(js["re"], reference[name].real, name)
        assert_matches(js["im"], reference[name].imag, name)
    assert_matches(result["kappaA"], reference["kappa_a"], "kappa_a")
    assert_matches(result["kappaQ"], reference["kappa_q"], "kappa_q")


def test_chapter2_explorer_refuses_what_the_package_refuses():
    (result,) = run_js(("explorers.allpass.view", [PRESETS_1D["edge detector"].tolist(), 16, 0.0]))
    assert result["singular"] is True
    with pytest.raises(ValueError, match="vanishing spectrum"):
        allpass_view(PRESETS_1D["edge detector"], 16, 0.0)


@pytest.mark.parametrize("c_in, m, n, seed",
                         [(1, 8, 32, 0), (3, 3, 32, 0), (8, 32, 32, 20), (2, 5, 15, 3), (4, 4, 16, 7)])
def test_chapter3_explorer(c_in, m, n, seed):
    draws = np.random.default_rng(seed).standard_normal(8 * n)  # what the explorer carries per seed
    np.testing.assert_array_equal(draws[: c_in * m].reshape(c_in, m) / np.sqrt(c_in * m),
                                  random_channel_kernels(c_in, m, seed))
    (result,) = run_js(("explorers.channelSingularValues.view", [c_in, m, n, draws.tolist()]))
    sigma_a, sigma_q = channel_singular_value_pair(c_in, m, n, seed)
    assert_matches(result["sigmaA"], sigma_a, "sigma_a")
    assert_matches(result["sigmaQ"], sigma_q, "sigma_q")
    assert_matches(result["kappaA"], sigma_a.max() / sigma_a.min(), "kappa_a")


PADDING_CASES = [(m, n, p, s, "zeros") for m in (2, 3, 4, 5) for n in (8, 17) for p in range(m) for s in (1, 2, 3)]
PADDING_CASES += [(m, n, (m - 1) // 2, s, "circular") for m in (3, 5) for n in (8, 17) for s in (1, 2)]


@pytest.mark.parametrize("m, n, padding, stride, mode", PADDING_CASES)
def test_chapter4_explorer(m, n, padding, stride, mode):
    weight = padding_weights()[m]
    (result,) = run_js(("explorers.paddingStride.view", [weight.numpy().tolist(), n, padding, stride, mode]))
    reference = padding_stride_view(weight, n, padding, stride, mode)
    assert_matches(result["eigenvalues"], reference["eigenvalues"], "eigenvalues")
    # ||Q_k Q_k^T - I|| is a difference of eigenvalues: its rounding is relative to them (it is
    # pure rounding, about 1e-15, where the frame is tight).
    assert_matches(result["distances"], reference["distances"], "distances", scale=reference["eigenvalues"].max())


@pytest.mark.parametrize("shape", [(7, 8), (16, 15), (64, 64)])
@pytest.mark.parametrize("preset, eps", [("gaussian blur", 1e-6), ("laplacian (edges)", 1e-6), ("sobel x", 1e-2),
                                         ("box blur", 1e-6), ("random", 1e-8)])
def test_chapter5_explorer(rng, shape, preset, eps):
    kernel = rng.standard_normal(9) if preset == "random" else np.asarray(PRESETS_2D[preset], dtype=float)
    photo = torch.from_numpy(rng.random((1, *shape)))
    (result,) = run_js(("explorers.kernelFilter.view",
                        [kernel.tolist(), photo[0].numpy().ravel().tolist(), *shape, eps]))
    reference = kernel_filter_view(kernel, photo, eps)
    for name in ("magnitude", "normalized", "filtered", "normed"):
        assert_matches(result[name], reference[name].ravel(), name)


def test_labels_are_typeset_as_the_book_writes_symbols():
    runs, plain, svg = run_js(("plot.mathRuns", ["$‖Q_0 Q_0^⊤ − I‖_2$ at max $v̂_{ab}$"]),
                              ("plot.plainText", ["$κ(C_{ab})$ and $σ_j$"]), ("plot.svgMath", ["$σ_j$ <"]))
    assert runs == [
        {"text": "‖", "italic": False, "level": 0}, {"text": "Q", "italic": True, "level": 0},
        {"text": "0", "italic": False, "level": -1}, {"text": " ", "italic": False, "level": 0},
        {"text": "Q", "italic": True, "level": 0}, {"text": "0", "italic": False, "level": -1},
        {"text": "⊤", "italic": False, "level": 1}, {"text": " − ", "italic": False, "level": 0},
        {"text": "I", "italic": True, "level": 0}, {"text": "‖", "italic": False, "level": 0},
        {"text": "2", "italic": False, "level": -1}, {"text": " at max ", "italic": False, "level": 0},
        {"text": "v̂", "italic": True, "level": 0}, {"text": "ab", "italic": False, "level": -1},
    ]
    assert plain == "κ(C_ab) and σ_j"
    assert svg == ('<tspan font-style="italic" class="cx-math">σ</tspan>'
                   '<tspan dy="3.30" font-size="75%" font-style="italic" class="cx-math">j</tspan>'
                   '<tspan dy="-3.30"> &lt;</tspan>')

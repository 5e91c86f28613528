"""convnorm.functional: the fast normalized convolution equals a straightforward float64
reference of the paper's appendix procedure, the circular layer is a tight frame per
output channel, stride is downsampling, 1x1 is division by the kernel norm, the weight
gradient is the stop-gradient one, and bad arguments are named."""
from __future__ import annotations

import itertools

import pytest
import torch
import torch.nn.functional as F

import convnorm.functional as functional
from convnorm import frequency_domain
from convnorm.functional import conv_norm, conv_norm1d, conv_norm2d

CONV = {1: F.conv1d, 2: F.conv2d}
FFT = {1: lambda t, s: torch.fft.fftn(t, s=s, dim=(-1,)), 2: lambda t, s: torch.fft.fftn(t, s=s, dim=(-2, -1))}


@pytest.fixture(autouse=True, params=["spatial", "frequency-domain", "frequency-domain-per-axis"])
def computation(request, monkeypatch):
    """Every test runs through both computations of conv_norm: the spatial one (full
    convolution, then the spectral filter) and :mod:`convnorm.frequency_domain` (forced
    for every eligible layer, whatever its size and stride), the latter also with every
    map transformed axis by axis (``DENSE_2D_MAX_PIXELS = 0``: no dense 2D transforms,
    which small maps otherwise get)."""
    if request.param.endswith("per-axis"):
        monkeypatch.setattr(frequency_domain, "DENSE_2D_MAX_PIXELS", 0)
    functional._frequency_domain_constants.cache_clear()  # constants built under this setting
    with functional.computation(request.param.removesuffix("-per-axis").replace("-", "_")):
        yield request.param
    functional._frequency_domain_constants.cache_clear()


def dilated(weight, dilation):
    """The zero-stuffed kernel that a dilated convolution applies."""
    d = weight.dim() - 2
    span = [dilation * (k - 1) + 1 for k in weight.shape[2:]]
    out = weight.new_zeros(*weight.shape[:2], *span)
    out[(..., *([slice(None, None, dilation)] * d))] = weight
    return out


def appendix_reference(x, w, padding, stride, dilation=1, groups=1, eps=0.0, affine=None, bias=None,
                       padding_mode="zeros", stop_gradient=True):
    """The paper's procedure, written plainly: pad by m-1, full cross-correlation,
    per-channel circular normalization with v = (Σ_i |FFT_L(a_ki)|² + eps)^(-1/2) from
    one FFT per kernel, circular affine, crop m-1-p, keep every s-th sample, bias."""
    d = w.dim() - 2
    wd = dilated(w, dilation)
    m = wd.shape[2:]
    if padding_mode == "zeros":
        y = CONV[d](F.pad(x, [k - 1 for k in reversed(m) for _ in range(2)]), wd, groups=groups)
        crop = [k - 1 - padding for k in m]
    else:
        y = CONV[d](F.pad(x, [padding] * 2 * d, mode="circular"), wd, groups=groups)
        crop = [0] * d
    L = y.shape[2:]
    a = wd.detach() if stop_gradient else wd
    v = ((FFT[d](a, L).abs() ** 2).sum(1) + eps).rsqrt()
    y = torch.fft.ifftn(torch.fft.fftn(y, dim=tuple(range(2, 2 + d))) * v, dim=tuple(range(2, 2 + d))).real
    if affine is not None:  # circular cross-correlation centred on (taps - 1) // 2
        centre = [(t - 1) // 2 for t in affine.shape[1:]]
        out = torch.zeros_like(y)
        for j in itertools.product(*(range(t) for t in affine.shape[1:])):
            shifts = [-(jj - c) for jj, c in zip(j, centre)]
            out = out + affine[(slice(None), *j)].reshape(-1, *([1] * d)) * torch.roll(y, shifts, tuple(range(2, 2 + d)))
        y = out
    n = x.shape[2:]
    keep = [nn + 2 * padding - k + 1 for nn, k in zip(n, m)]
    y = y[(..., *(slice(c, c + kk, stride) for c, kk in zip(crop, keep)))]
    return y if bias is None else y + bias.reshape(-1, *([1] * d))


ZEROS_CASES = [
    # d, n, k, padding, stride, dilation, groups
    (2, (8, 8), 3, 1, 1, 1, 1),
    (2, (7, 9), 3, 0, 1, 1, 1),
    (2, (8, 8), 3, 2, 1, 1, 1),
    (2, (8, 6), 3, 1, 2, 1, 1),   # L = 10, 8: stride folded into the spectrum
    (2, (9, 9), 3, 1, 2, 1, 1),   # L = 11: stride by slicing
    (2, (10, 10), 3, 1, 3, 1, 1),
    (2, (8, 8), 2, 1, 1, 1, 1),   # even kernel
    (2, (9, 8), 5, 2, 2, 1, 2),   # groups
    (2, (9, 9), 3, 2, 1, 2, 1),   # dilation
    (1, (11,), 3, 1, 1, 1, 1),
    (1, (10,), 4, 3, 2, 1, 1),
    (1, (12,), 3, 1, 1, 3, 2),
]


@pytest.mark.parametrize("d, n, k, padding, stride, dilation, groups", ZEROS_CASES)
def test_zeros_mode_is_the_appendix_procedure(d, n, k, padding, stride, dilation, groups):
    torch.manual_seed(0)
    x = torch.randn(2, 4, *n, dtype=torch.float64)
    w = torch.randn(6, 4 // groups, *([k] * d), dtype=torch.float64)
    b = torch.randn(6, dtype=torch.float64)
    got = conv_norm(x, w, b, stride, padding, dilation, groups, eps=0.0)
    want = appendix_reference(x, w, padding, stride, dilation, groups, bias=b)
    assert got.shape == CONV[d](x, w, b, stride, padding, dilation, groups).shape
    torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("d, n, k, stride", [(2, (8, 8), 3, 1), (2, (7, 8), 5, 2), (2, (9, 9), 3, 3), (1, (9,), 3, 2)])
def test_circular_mode_is_the_appendix_procedure(d, n, k, stride):
    torch.manual_seed(1)
    x = torch.randn(2, 3, *n, dtype=torch.float64)
    w = torch.randn(5, 3, *([k] * d), dtype=torch.float64)
    got = conv_norm(x, w, None, stride, (k - 1) // 2, padding_mode="circular", eps=0.0)
    torch.testing.assert_close(got, appendix_reference(x, w, (k - 1) // 2, stride, padding_mode="circular"))


def operator_matrix(fn, c_in, size):
    """Dense matrix of a linear map (C_in, *size) -> (C_out, *out), from its basis images."""
    numel = c_in * size[0] * size[1]
    basis = torch.eye(numel, dtype=torch.float64).reshape(numel, c_in, *size)
    return fn(basis).reshape(numel, -1).T


@pytest.mark.parametrize("n, k", [((6, 6), 3), ((5, 7), 3), ((6, 5), 5)])
def test_circular_mode_is_a_tight_frame_per_channel(n, k):
    """Q_k Q_kᵀ = I, and Q_k = (A_k A_kᵀ)^(-1/2) A_k, from the layer's own operator matrix."""
    torch.manual_seed(2)
    c_in, c_out, p = 3, 4, (k - 1) // 2
    w = torch.randn(c_out, c_in, k, k, dtype=torch.float64)
    q = operator_matrix(lambda x: conv_norm2d(x, w, padding=p, padding_mode="circular", eps=0.0), c_in, n)
    a = operator_matrix(lambda x: F.conv2d(F.pad(x, [p] * 4, mode="circular"), w), c_in, n)
    rows = n[0] * n[1]
    for ch in range(c_out):
        q_k, a_k = q[ch * rows:(ch + 1) * rows], a[ch * rows:(ch + 1) * rows]
        torch.testing.assert_close(q_k @ q_k.T, torch.eye(rows, dtype=torch.float64), rtol=0, atol=1e-10)
        evals, evecs = torch.linalg.eigh(a_k @ a_k.T)
        torch.testing.assert_close(q_k, evecs @ torch.diag(evals.rsqrt()) @ evecs.T @ a_k, rtol=0, atol=1e-9)


def test_eps_shrinks_the_frame_by_s_over_s_plus_eps():
    torch.manual_seed(3)
    w = torch.randn(1, 2, 3, 3, dtype=torch.float64)
    eps = 0.3
    q = operator_matrix(lambda x: conv_norm2d(x, w, padding=1, padding_mode="circular", eps=eps), 2, (5, 5))
    s = (torch.fft.fft2(w, s=(5, 5)).abs() ** 2).sum(1).flatten()
    torch.testing.assert_close(torch.linalg.eigvalsh(q @ q.T), (s / (s + eps)).sort().values)


@pytest.mark.parametrize("mode, n, stride", [("zeros", (10, 10), 2), ("zeros", (9, 11), 2), ("zeros", (12, 12), 3),
                                             ("circular", (8, 8), 2), ("circular", (9, 8), 2)])
def test_stride_is_the_downsampled_stride_one_output(mode, n, stride):
    torch.manual_seed(4)
    x = torch.randn(2, 3, *n, dtype=torch.float64)
    w = torch.randn(4, 3, 3, 3, dtype=torch.float64)
    rho = torch.randn(4, 3, 3, dtype=torch.float64)
    full = conv_norm2d(x, w, padding=1, padding_mode=mode, affine_weight=rho)
    strided = conv_norm2d(x, w, stride=stride, padding=1, padding_mode=mode, affine_weight=rho)
    torch.testing.assert_close(strided, full[..., ::stride, ::stride])


@pytest.mark.parametrize("stride", [1, 2])
def test_one_by_one_divides_each_channel_by_its_kernel_norm(stride):
    torch.manual_seed(5)
    x = torch.randn(2, 6, 7, 7, dtype=torch.float64)
    w = torch.randn(5, 6, 1, 1, dtype=torch.float64)
    want = F.conv2d(x, w, stride=stride) / w.flatten(1).norm(dim=1).reshape(1, 5, 1, 1)
    torch.testing.assert_close(conv_norm2d(x, w, stride=stride, eps=0.0), want)


def test_affine_kernel_is_a_circular_filter_before_the_crop():
    torch.manual_seed(6)
    x = torch.randn(2, 3, 8, 7, dtype=torch.float64)
    w = torch.randn(4, 3, 3, 3, dtype=torch.float64)
    rho = torch.randn(4, 3, 3, dtype=torch.float64)
    got = conv_norm2d(x, w, padding=1, stride=2, affine_weight=rho, eps=0.0)
    torch.testing.assert_close(got, appendix_reference(x, w, 1, 2, affine=rho))
    delta = torch.zeros(4, 3, 3, dtype=torch.float64)
    delta[:, 1, 1] = 1
    torch.testing.assert_close(conv_norm2d(x, w, padding=1, affine_weight=delta), conv_norm2d(x, w, padding=1))


@pytest.mark.parametrize("stop_gradient", [True, False])
@pytest.mark.parametrize("size, stride, mode", [((7, 8), 2, "zeros"), ((8, 9), 2, "zeros"), ((9, 9), 1, "zeros"),
                                                ((8, 8), 2, "circular"), ((7, 6), 3, "circular"),
                                                ((50, 49), 2, "zeros"), ((51, 52), 2, "circular"),
                                                ((49, 50), 1, "zeros")])
def test_gradients_match_the_reference(stop_gradient, size, stride, mode):
    """Input, weight and affine gradients (the hand-written backward with stop-gradient,
    autograd without) equal autograd through the plain reference. The last three sizes
    normalize at more than ``DENSE_DFT_MAX_LENGTH`` per axis: FFTs (the GPU's transforms),
    with the stride folded into the spectrum (52 rows), not (51 rows), and stride 1."""
    torch.manual_seed(7)
    x = torch.randn(2, 3, *size, dtype=torch.float64, requires_grad=True)
    w = torch.randn(4, 3, 3, 3, dtype=torch.float64, requires_grad=True)
    rho = torch.randn(4, 2, 3, dtype=torch.float64, requires_grad=True)
    out = conv_norm2d(x, w, None, stride, 1, padding_mode=mode, affine_weight=rho, eps=1e-3,
                      stop_gradient=stop_gradient)
    probe = torch.randn_like(out)
    want = appendix_reference(x, w, 1, stride, eps=1e-3, affine=rho, padding_mode=mode, stop_gradient=stop_gradient)
    grads = [torch.autograd.grad((o * probe).sum(), (x, w, rho)) for o in (out, want)]
    for got, want in zip(*grads):
        torch.testing.assert_close(got, want)


def test_stop_gradient_drops_the_normalizer_term():
    """With the stop-gradient the weight gradient is the conv's gradient scaled by v:
    for a 1x1 kernel, d/da of <probe, (a/|a|) * x> is probe·x / |a|, not its projection."""
    torch.manual_seed(8)
    x = torch.randn(3, 4, 5, 5, dtype=torch.float64)
    w = torch.randn(1, 4, 1, 1, dtype=torch.float64, requires_grad=True)
    probe = torch.randn(3, 1, 5, 5, dtype=torch.float64)
    (g_stop,) = torch.autograd.grad((conv_norm2d(x, w, eps=0.0) * probe).sum(), w)
    (g_full,) = torch.autograd.grad((conv_norm2d(x, w, eps=0.0, stop_gradient=False) * probe).sum(), w)
    raw = (probe * x).sum((0, 2, 3)).reshape(1, 4, 1, 1)
    torch.testing.assert_close(g_stop, raw / w.norm())
    u = (w / w.norm()).detach()
    torch.testing.assert_close(g_full, (raw - (raw * u).sum() * u) / w.norm())


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_autocast_cpu_returns_the_autocast_dtype_from_float32_ffts(dtype):
    torch.manual_seed(9)
    x = torch.randn(2, 3, 8, 8)
    w = torch.randn(4, 3, 3, 3)
    with torch.autocast("cpu", dtype=dtype):
        got = conv_norm2d(x, w, padding=1)
        conv_dtype = F.conv2d(x, w, padding=1).dtype
    assert got.dtype == conv_dtype == dtype
    torch.testing.assert_close(got.float(), conv_norm2d(x, w, padding=1), rtol=1e-2, atol=2e-2)


def test_one_dimensional_wrapper_matches_generic():
    x = torch.randn(2, 3, 9, dtype=torch.float64)
    w = torch.randn(4, 3, 3, dtype=torch.float64)
    torch.testing.assert_close(conv_norm1d(x, w, padding=1), conv_norm(x, w, padding=1))


X, W = torch.randn(1, 3, 8, 8), torch.randn(4, 3, 3, 3)


@pytest.mark.parametrize("kwargs, match", [
    ({"padding_mode": "reflect"}, "padding_mode must be one of"),
    ({"padding": 3}, "padding must be at most"),
    ({"padding": 0, "padding_mode": "circular"}, "padding must equal"),
    ({"padding": "same", "stride": 2}, "padding='same' requires stride 1"),
    ({"padding": "full"}, "padding must be an int"),
    ({"stride": 0}, "stride must be a positive int"),
    ({"dilation": (1, 2, 3)}, "dilation must be a positive int"),
    ({"groups": 3}, "groups must be a positive int dividing"),
    ({"eps": -1.0}, "eps must be non-negative"),
    ({"affine_weight": torch.ones(3, 3, 3)}, "affine_weight must have shape"),
    ({"autocorrelation": torch.ones(4, 3, 3)}, "autocorrelation must have shape"),
])
def test_bad_arguments_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        conv_norm2d(X, W, **kwargs)


def test_bad_shapes_are_named():
    with pytest.raises(ValueError, match="input must have shape"):
        conv_norm2d(X[0], W)
    with pytest.raises(ValueError, match="input has 2 channels"):
        conv_norm2d(X[:, :2], W)
    with pytest.raises(ValueError, match=r"weight must have shape \(C_out, C_in, k_h, k_w\)"):
        conv_norm2d(X, W[..., 0])
    with pytest.raises(ValueError, match="larger than the input size"):
        conv_norm2d(torch.randn(1, 3, 2, 2), W, padding=1, padding_mode="circular")
    with pytest.raises(ValueError, match="one tap per channel"):
        conv_norm2d(X, W[..., :1, :1], affine_weight=torch.ones(4, 3, 3))


def test_autocorrelation_large_kernel_path_and_spectrum_from_it():
    """Kernels too large for the Gram lag map use a grouped convolution: same result,
    and the power spectrum from r equals the direct sum of |FFT|²."""
    from convnorm.fourier import autocorrelation_power_spectrum, kernel_autocorrelation

    torch.manual_seed(12)
    w = torch.randn(3, 2, 11, 11, dtype=torch.float64)
    r = kernel_autocorrelation(w)
    assert r.shape == (3, 21, 21)
    torch.testing.assert_close(r[:, 10, 10], (w ** 2).sum((1, 2, 3)))
    direct = (torch.fft.rfft2(w, s=(16, 13)).abs() ** 2).sum(1)
    torch.testing.assert_close(autocorrelation_power_spectrum(r, (16, 13)), direct)
    with pytest.raises(ValueError, match="autocorrelation must have shape"):
        autocorrelation_power_spectrum(torch.ones(3, 4, 4), 8)


def test_frequency_domain_is_chosen_where_documented(monkeypatch):
    monkeypatch.setattr(functional, "FREQUENCY_DOMAIN_MAX_SIZE", 16)
    monkeypatch.setattr(functional, "FREQUENCY_DOMAIN_STRIDED", True)
    monkeypatch.setattr(functional, "FREQUENCY_DOMAIN_DEVICES", ("cpu",))

    def chosen(size, stride=1, groups=1, dilation=1, device="cpu", dtype=torch.float32, stop_gradient=True, kernel=3):
        x = torch.empty(2, 4, size, size, device=device, dtype=dtype)
        w = torch.empty(4, 4 // groups, kernel, kernel, device=device, dtype=dtype, requires_grad=True)
        return functional.chosen_computation(x, w, stride, dilation * (kernel - 1) // 2, dilation, groups,
                                             stop_gradient=stop_gradient) == "frequency_domain"

    assert chosen(16) and chosen(4) and chosen(8, dtype=torch.float64) and chosen(32, stride=2)
    assert not chosen(32)  # a large stride-1 map: the spatial convolution
    assert not chosen(8, groups=2) and not chosen(8, dilation=2) and not chosen(8, device="meta")
    assert not chosen(8, stop_gradient=False)  # the gradient flows through v-hat: autograd path
    with torch.no_grad():  # ... unless there is no gradient at all
        assert chosen(8, stop_gradient=False)
    assert not chosen(8, kernel=49) and not chosen(64, stride=2)  # beyond the dense-DFT sizes
    assert chosen(8, dtype=torch.bfloat16) and chosen(8, dtype=torch.float16)  # computed in float32
    with torch.autocast("cpu", dtype=torch.bfloat16):  # so is a float64 input under autocast
        assert chosen(8, dtype=torch.float64)
    x, w = torch.empty(2, 4, 8, 8), torch.empty(6, 4, 1, 1)
    assert functional.chosen_computation(x, w) == "pointwise"
    assert functional.chosen_computation(x, torch.empty(6, 4, 3, 3), padding=1, groups=1) == "frequency_domain"
    with pytest.raises(ValueError, match="input has 4 channels"):
        functional.chosen_computation(x, torch.empty(6, 3, 3, 3))


@pytest.mark.parametrize("size, stride, stop_gradient", [(8, 1, True), (8, 2, True), (20, 1, True), (8, 1, False)])
def test_chosen_computation_is_the_one_conv_norm_runs(monkeypatch, size, stride, stop_gradient):
    """:func:`chosen_computation` answers what :func:`conv_norm` then does (here with the
    limit at 16: the 20x20 stride-1 map is computed spatially)."""
    monkeypatch.setattr(functional, "FREQUENCY_DOMAIN_MAX_SIZE", 16)
    monkeypatch.setattr(functional, "FREQUENCY_DOMAIN_STRIDED", True)
    monkeypatch.setattr(functional, "FREQUENCY_DOMAIN_DEVICES", ("cpu",))
    calls = []
    monkeypatch.setattr(functional.FrequencyDomainConvNorm, "apply",
                        lambda *args, apply=functional.FrequencyDomainConvNorm.apply: calls.append(1) or apply(*args))
    x, w = torch.randn(2, 3, size, size), torch.randn(4, 3, 3, 3, requires_grad=True)
    want = functional.chosen_computation(x, w, stride, 1, stop_gradient=stop_gradient)
    conv_norm(x, w, None, stride, 1, stop_gradient=stop_gradient)
    assert want == ("frequency_domain" if calls else "spatial")
    assert want == ("spatial" if size == 20 or not stop_gradient else "frequency_domain")


def test_dense_dft_matrices_only_on_a_cpu_and_for_small_2d_sizes():
    """The spatial computation's transforms: dense DFT matrices on a CPU up to
    ``DENSE_DFT_MAX_LENGTH``, FFTs beyond it, in 1D, and on any other device (cuFFT on a GPU;
    ``meta`` stands in for it here)."""
    def dense(device="cpu", length=(34, 34), dtype=torch.float32):
        return functional._use_dense(torch.empty(1, device=device, dtype=dtype), length)

    limit = functional.DENSE_DFT_MAX_LENGTH
    assert dense() and dense(length=(limit, 3)) and dense(dtype=torch.float64)
    assert not dense(length=(limit + 1, 3)) and not dense(length=(34,)) and not dense(device="meta")
    assert not dense(dtype=torch.float16)


def test_frequency_domain_chunks_of_kernel_spectra_give_the_same_layer(monkeypatch):
    """One chunk of frequencies or many: the same output and gradients (and the chunks
    partition the frequencies, none larger than ``CHUNK_BYTES`` unless a single one is)."""
    monkeypatch.setattr(functional, "FREQUENCY_DOMAIN_MAX_SIZE", 16)
    monkeypatch.setattr(functional, "FREQUENCY_DOMAIN_DEVICES", ("cpu",))
    torch.manual_seed(12)
    x = torch.randn(2, 6, 9, 9, dtype=torch.float64, requires_grad=True)
    w = torch.randn(5, 6, 3, 3, dtype=torch.float64, requires_grad=True)
    rho = torch.randn(5, 3, 3, dtype=torch.float64, requires_grad=True)
    frequency_bytes = 2 * 5 * 6 * 8  # one frequency of the kernel spectra
    frequencies = 11 * 6  # L = 11: rfft grid 11 x 6
    results = []
    for chunk_bytes, count in ((frequency_domain.CHUNK_BYTES, 1), (4 * frequency_bytes, 17), (1, 66)):
        monkeypatch.setattr(frequency_domain, "CHUNK_BYTES", chunk_bytes)
        chunks = frequency_domain._chunks(frequencies, frequency_bytes, x.device)
        sizes = [part.stop - part.start for part in chunks]
        assert len(chunks) == count and max(sizes) - min(sizes) <= 1
        assert [part.start for part in chunks[1:]] == [part.stop for part in chunks[:-1]]
        assert chunks[0].start == 0 and chunks[-1].stop == frequencies
        assert max(sizes) * frequency_bytes <= max(chunk_bytes, frequency_bytes)
        out = conv_norm(x, w, None, 2, 1, affine_weight=rho)
        results.append((out, *torch.autograd.grad(out.square().sum(), (x, w, rho))))
    torch.testing.assert_close(
        conv_norm(x, w, None, 2, 1).detach(), appendix_reference(x.detach(), w.detach(), 1, 2, eps=1e-5))
    for other in results[1:]:
        for a, b in zip(results[0], other):
            torch.testing.assert_close(a, b)


def test_computation_forces_a_way_and_restores_the_rule():
    """Forcing the frequency domain reaches CUDA tensors too (``meta`` is neither a CPU nor
    CUDA and stands in for any other device)."""
    def rule():
        return (functional.FREQUENCY_DOMAIN_MAX_SIZE, functional.FREQUENCY_DOMAIN_STRIDED,
                functional.FREQUENCY_DOMAIN_DEVICES)

    default = rule()

    def frequency_domain_used(device="cpu", stride=2):
        x, w = torch.empty(2, 4, 32, 32, device=device), torch.empty(4, 4, 3, 3, device=device)
        return functional.chosen_computation(x, w, stride, 1) == "frequency_domain"

    with functional.computation("frequency_domain"):
        assert frequency_domain_used(stride=1) and "cuda" in functional.FREQUENCY_DOMAIN_DEVICES
        assert not frequency_domain_used("meta")
    with functional.computation("spatial"):
        assert not frequency_domain_used()
    assert rule() == default
    with pytest.raises(ValueError, match="way must be one of"):
        with functional.computation("fft"):
            pass


@pytest.mark.parametrize("size", list(itertools.product([2, 3, 4, 5], [2, 3, 4, 5])))
def test_odd_and_even_sizes_are_the_appendix_procedure(size):
    """Odd and even normalization sizes per axis (L_1 = 1 and 2 included, with a 1x2 kernel):
    output and input, weight and affine gradients equal the plain reference (in the
    frequency domain the repeated frequencies of the half spectrum are filled in as
    conjugates and their gradients folded back)."""
    torch.manual_seed(sum(size))
    x = torch.randn(2, 3, *size, dtype=torch.float64, requires_grad=True)
    for kernel, padding, stride in (((3, 3), 1, 1), ((2, 2), 0, 2), ((1, 2), 0, 1)):
        w = torch.randn(4, 3, *kernel, dtype=torch.float64, requires_grad=True)
        taps = [min(3, n + m - 1) for n, m in zip(size, kernel)]
        rho = torch.randn(4, *taps, dtype=torch.float64, requires_grad=True)
        out = conv_norm2d(x, w, None, stride, padding, affine_weight=rho, eps=1e-3)
        want = appendix_reference(x, w, padding, stride, eps=1e-3, affine=rho)
        torch.testing.assert_close(out, want)
        probe = torch.randn_like(out)
        grads = [torch.autograd.grad((o * probe).sum(), (x, w, rho)) for o in (out, want)]
        for got, expected in zip(*grads):
            torch.testing.assert_close(got, expected)


@pytest.mark.parametrize("stride", [1, 2])
def test_empty_batch_gives_an_empty_output_and_zero_gradients(stride):
    """Like nn.Conv2d, a batch of no samples is an empty output, and gradients of zero."""
    x = torch.randn(0, 3, 8, 8, requires_grad=True)
    w = torch.randn(4, 3, 3, 3, requires_grad=True)
    rho = torch.randn(4, 3, 3, requires_grad=True)
    out = conv_norm2d(x, w, None, stride, 1, affine_weight=rho)
    assert out.shape == (0, 4, 8 // stride, 8 // stride)
    grad_w, grad_rho = torch.autograd.grad(out.sum(), (w, rho))
    assert not grad_w.any() and not grad_rho.any()

"""The book's five explorers, one per page that has one. Each returns an :class:`~.page.Explorer`
(display it as a cell's last expression); its opening state is set here, and its numbers are
those of :mod:`.views`, recomputed in the browser.
"""
from __future__ import annotations

import numpy as np
import torch
from matplotlib import colormaps

from convnorm._validation import check_positive_int
from convnorm_book.figures_onedim import KERNEL_PRESETS as PRESETS_1D
from convnorm_book.figures_twodim import KERNEL_PRESETS as PRESETS_2D

from .page import Explorer, encode_bytes, encode_float64
from .views import check_photo

#: The regularisers the ε sliders step through: 0 (chapter 2 only), then every decade up to 1.
EPS_DECADES = [10.0**e for e in range(-12, 1)]


def kernel_spectrum_explorer(kernel=(1.0, 0.5, 0.25), n: int = 64) -> Explorer:
    """The intro's explorer: three taps and the signal length ``n`` (8 to 256) against the
    spectrum before and after normalization (:func:`.views.kernel_spectrum_view`)."""
    taps = [float(t) for t in kernel]
    if len(taps) != 3:
        raise ValueError(f"kernel must have 3 taps, got {len(taps)}")
    n = check_positive_int("n", n)
    return Explorer("kernelSpectrum", "kernel_spectrum.js", "A kernel's spectrum before and after ConvNorm",
                    {"kernel": taps, "n": n})


def allpass_explorer(n: int = 32, taps: int = 5, preset: str = "box blur", eps: float = 0.0) -> Explorer:
    """Chapter 2's explorer: a preset or ``taps`` sliders and ε against :math:`|\\hat a|`,
    :math:`|\\hat g|`, the phases, :math:`\\hat v`, the impulse responses of :math:`a, v, g` and
    both condition numbers (:func:`.views.allpass_view`), at signal length ``n``."""
    n, taps = check_positive_int("n", n), check_positive_int("taps", taps)
    if preset not in PRESETS_1D:
        raise ValueError(f"preset must be one of {sorted(PRESETS_1D)}, got {preset!r}")
    eps_values = [0.0, *EPS_DECADES]
    if eps not in eps_values:
        raise ValueError(f"eps must be one of {eps_values}, got {eps!r}")
    presets = {name: [float(t) for t in kernel] for name, kernel in PRESETS_1D.items()}
    if max(len(kernel) for kernel in presets.values()) > min(taps, n):
        raise ValueError(f"taps and n must be at least the longest preset's length, got taps={taps}, n={n}")
    return Explorer("allpass", "allpass.js", "A kernel, its normalizer and its all-pass filter",
                    {"n": n, "taps": taps, "presets": presets, "preset": preset, "eps": eps,
                     "eps_values": eps_values})


def singular_value_explorer(n: int = 32, max_channels: int = 8, seeds: int = 21,
                            c_in: int = 1, m: int = 8, seed: int = 0) -> Explorer:
    """Chapter 3's explorer: :math:`C_I`, the kernel length and the seed against the singular
    values of :math:`A_k` and :math:`Q_k` (:func:`.views.channel_singular_value_pair`).

    It carries, per seed, the first ``max_channels * n`` normal draws, from which
    :func:`.views.random_channel_kernels` takes every setting's kernels.
    """
    n, max_channels = check_positive_int("n", n), check_positive_int("max_channels", max_channels)
    seeds = check_positive_int("seeds", seeds)
    if not (1 <= c_in <= max_channels and 1 <= m <= n and 0 <= seed < seeds):
        raise ValueError(f"need 1 <= c_in <= {max_channels}, 1 <= m <= {n}, 0 <= seed < {seeds}; "
                         f"got {c_in}, {m}, {seed}")
    draws = [encode_float64(np.random.default_rng(s).standard_normal(max_channels * n)) for s in range(seeds)]
    return Explorer("channelSingularValues", "channel_singular_values.js", "Singular values of one output channel",
                    {"n": n, "max_c_in": max_channels, "draws": draws, "c_in": c_in, "m": m, "seed": seed})


def padding_weights(kernel_sizes=range(2, 6), channels: tuple[int, int] = (2, 3),
                    seed: int = 5) -> dict[int, torch.Tensor]:
    """The random ``(C_O, C_I, m)`` float64 weights of chapter 4's explorer, one per kernel length ``m``."""
    return {m: torch.randn(*channels, m, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))
            for m in kernel_sizes}


def padding_stride_explorer(n: int = 32, m: int = 3, padding: int = 1, stride: int = 1, max_n: int = 64,
                            max_stride: int = 4) -> Explorer:
    """Chapter 4's explorer: padding mode, kernel length, padding :math:`p`, stride :math:`s` and
    :math:`n` against the spectrum of :math:`Q_k Q_k^\\top` and :math:`\\|Q_k Q_k^\\top - I\\|_2`
    (:func:`.views.padding_stride_view`) for the layers of :func:`padding_weights`."""
    weights = padding_weights()
    if m not in weights or not 0 <= padding < m or not 1 <= stride <= max_stride or not 8 <= n <= max_n:
        raise ValueError(f"need m in {sorted(weights)}, 0 <= padding < m, 1 <= stride <= {max_stride}, "
                         f"8 <= n <= {max_n}; got m={m}, padding={padding}, stride={stride}, n={n}")
    return Explorer("paddingStride", "padding_stride.js", "Padding and stride against the tight frame",
                    {"weights": {str(size): encode_float64(w.numpy().ravel()) for size, w in weights.items()},
                     "shape": list(weights[m].shape[:2]), "max_m": max(weights), "mode": "zeros", "m": m,
                     "padding": padding, "stride": stride, "n": n, "max_n": max_n, "max_stride": max_stride})


def kernel_filter_explorer(photo: torch.Tensor, preset: str = "gaussian blur", eps: float = 1e-6) -> Explorer:
    """Chapter 5's explorer: a preset or the nine taps and ε against the kernel's 2D spectrum
    before and after ConvNorm and the grayscale ``photo`` ``(1, H, W)`` filtered by each
    (:func:`.views.kernel_filter_view`)."""
    check_photo(photo)
    if preset not in PRESETS_2D:
        raise ValueError(f"preset must be one of {sorted(PRESETS_2D)}, got {preset!r}")
    if eps not in EPS_DECADES:
        raise ValueError(f"eps must be one of {EPS_DECADES}, got {eps!r}")
    magma = np.round(colormaps["magma"](np.linspace(0, 1, 256))[:, :3] * 255)
    return Explorer("kernelFilter", "kernel_filter.js", "A 3×3 kernel, its spectrum and a photograph",
                    {"photo": encode_float64(photo[0].double().numpy()), "photo_shape": list(photo.shape[1:]),
                     "magma": encode_bytes(magma),
                     "presets": {name: list(map(float, k)) for name, k in PRESETS_2D.items()},
                     "preset": preset, "eps": eps, "eps_values": EPS_DECADES})

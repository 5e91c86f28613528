r"""ConvNorm computed spatially: the full convolution, then the per-channel filter.

The direct convolution gives :math:`y = a \star x` of size :math:`L` (zero padding
:math:`m - 1`, or the circular padding); its half spectrum is multiplied by one spectrum
per channel,

.. math:: M_k(\omega) = \hat v_k(\omega)\,\hat\rho_k(\omega)\,e^{2\pi i \langle\omega, c\rangle/L},

which also carries the crop offset :math:`c` as a phase, so that the crop becomes "keep the
first samples"; the inverse transform is evaluated on the strided output grid only.

The filter runs one of four ways (:attr:`~convnorm._policy.Plan.filter`):

- ``"fft"``: ``rfftn``/``irfftn``. The inverse transform's :math:`1/\prod L` is folded into
  the gain (below), so no pass scales the output, and the crop and stride are one strided view
  of the inverse transform;
- ``"dense"``: dense DFT matrix products (small 2D sizes, on a CPU by default), whose inverse
  matrices keep only the output rows and columns :math:`s t`, so crop and stride cost nothing;
- ``"fused"``: the same matrix products as GPU kernels (:mod:`convnorm._fused_filter`) that
  read :math:`y` once in its own dtype and write the layer's output once, bias included;
- ``"planar"``: the same matrix products again, on the real and imaginary planes by plain real
  operations (:func:`_planar_filtered`): what a program traced for deployment computes, and what
  ``torch.func`` differentiates.

The filter reads the normalizer as its *gain*, ``(C, 2F)`` over the half spectrum's ``F``
frequencies: :math:`\hat v` at each frequency twice, for the real and the imaginary part of the
affine kernel's spectrum it multiplies, times :func:`gain_scale` (the ``"fft"`` filter's
:math:`1/\prod L`). :mod:`convnorm._engine` computes it in that form directly, the scale folded
into the normalizer's basis and :math:`\varepsilon`.

With the stop-gradient the filter has a hand-written backward (:class:`SpectralFilter`);
without it (:func:`spatial_conv_norm`), autograd differentiates the FFT, dense or planar
operations, through :math:`\hat v` too. The planar filter has no hand-written backward: the
runtimes it is made for take no custom autograd function, and with the stop-gradient
:math:`\hat v` enters it as a constant, so that autograd's gradient is the hand-written one's.
"""
from __future__ import annotations

import math
from typing import NamedTuple, cast

import torch

from ._caches import cached
from ._fused_filter import filter_matrices, launch_backward, launch_forward
from ._geometry import LayerGeometry, plane_sizes
from ._policy import EXPORTED_FILTER
from ._transforms import DenseDFT, dense_dft, kernel_basis


class SpatialFilter(NamedTuple):
    """The fixed parts of one layer geometry's filter (:func:`spatial_filter`)."""

    geometry: LayerGeometry
    filter: str
    """``"fft"``, ``"dense"``, ``"fused"`` or ``"planar"``."""
    taps: tuple[int, ...]
    """The affine kernel's taps."""
    shift: tuple[int, ...]
    """The lag of the affine kernel's tap 0 from the output sample."""
    affine_basis: torch.Tensor
    """``(Π taps, 2F)``: :func:`~convnorm._transforms.kernel_basis` of the affine kernel."""
    half: tuple[int, ...]
    """The half spectrum's shape: :math:`(L_0, \\dots, L_{d-1} // 2 + 1)`."""
    dft: DenseDFT | None
    """The dense DFT matrices (``"dense"`` and ``"fused"``)."""
    matrices: object | None
    """``"fused"``: the kernels' planar matrices (:func:`convnorm._fused_filter.filter_matrices`);
    ``"planar"``: the :class:`PlanarDFT`."""
    products_by_sample: bool
    """``"dense"``: the affine gradient's products summed sample by sample (a CPU's cache)."""
    precision: str | None
    """``"fused"``: the kernels' product precision."""
    dims: tuple[int, ...]
    """The spatial axes, counted from the end."""
    sampled: tuple[tuple[int, ...], tuple[int, ...]]
    """``"fft"``: the output's spatial size and its strides in the inverse transform's output,
    which :func:`_sample` views."""
    ones: tuple[int, ...]
    """``(1,) * d``: a bias of shape ``(C,)`` viewed as ``(C, *ones)`` broadcasts over positions."""


class PlanarDFT(NamedTuple):
    r"""The matrices of a :class:`~convnorm._transforms.DenseDFT` as real planes, each complex
    matrix :math:`X = X^R + iX^I` as its two real ones, in the fused kernels' notation
    (:mod:`convnorm._fused_filter_kernels`); for a 1D signal the DFT of the last axis alone
    (the rows' matrices None)."""

    columns: tuple[torch.Tensor, torch.Tensor]
    """:math:`C^R, C^I` ``(L_1, K)``: the last axis's ``rfft``."""
    rows: tuple[torch.Tensor, torch.Tensor] | None
    """:math:`D^R, D^I` ``(L_0, L_0)``: the rows' DFT (2D)."""
    inverse_rows: tuple[torch.Tensor, torch.Tensor] | None
    """:math:`I^R, I^I` ``(O_0, L_0)``: the rows' inverse DFT at rows :math:`s_0 u` (2D)."""
    inverse_columns: tuple[torch.Tensor, torch.Tensor]
    """:math:`E^R, E^I` ``(K, O_1)``: the inverse ``rfft``'s rows that multiply the real and the
    imaginary parts of the spectrum, at columns :math:`s_1 v`."""


def planar_dft(length: tuple[int, ...], stride: tuple[int, ...], out_size: tuple[int, ...], dtype: torch.dtype,
               device: torch.device) -> PlanarDFT:
    """The :class:`PlanarDFT` of a 1D or 2D signal of size ``length`` sampled with ``stride`` on
    ``out_size`` outputs, in ``dtype`` on ``device``: :func:`~convnorm._transforms.dense_dft`'s
    matrices (a 1D signal as one row), split into planes."""
    lead = (1,) * (2 - len(length))
    dft = dense_dft(plane_sizes(lead + length), plane_sizes(lead + stride), plane_sizes(lead + out_size), dtype, device)

    def planes(matrix: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor] | None:
        return (matrix.real.contiguous(), matrix.imag.contiguous()) if len(length) == 2 else None

    return PlanarDFT((dft.rfft_cols[:, 0::2].contiguous(), dft.rfft_cols[:, 1::2].contiguous()),
                     planes(dft.dft_rows), planes(dft.idft_rows),
                     (dft.irfft_cols[0::2].contiguous(), dft.irfft_cols[1::2].contiguous()))


@cached(maxsize=64)
def spatial_filter(geometry: LayerGeometry, filter: str, taps: tuple[int, ...], dtype: torch.dtype,
                   device: torch.device, products_by_sample: bool, precision: str | None) -> SpatialFilter:
    """The :class:`SpatialFilter` of a layer of ``geometry`` with an affine kernel of ``taps``,
    its matrices in ``dtype`` (the computing dtype; float32 for the fused kernels) on ``device``."""
    shift = tuple(c - (t - 1) // 2 for c, t in zip(geometry.offset, taps))  # tap j reads t + c + j - centre
    length = geometry.length
    half = (*length[:-1], length[-1] // 2 + 1)
    dft = None
    matrices: object | None = None
    if filter in ("dense", "fused"):
        dft = dense_dft(plane_sizes(length), plane_sizes(geometry.stride), plane_sizes(geometry.out_size), dtype,
                        device)
        matrices = filter_matrices(dft) if filter == "fused" else None
    elif filter == EXPORTED_FILTER:
        matrices = planar_dft(length, geometry.stride, geometry.out_size, dtype, device)
    contiguous = [math.prod(length[a + 1:]) for a in range(len(length))]  # the inverse transform's strides
    sampled = (geometry.out_size, tuple(c * s for c, s in zip(contiguous, geometry.stride)))
    return SpatialFilter(geometry, filter, taps, shift, kernel_basis(taps, shift, length, dtype, device), half, dft,
                         matrices, products_by_sample, precision, tuple(range(-len(length), 0)), sampled,
                         (1,) * len(length))


def gain_scale(filter: str | None, geometry: LayerGeometry) -> float:
    r"""What ``filter``'s gain carries besides :math:`\hat v`: for ``"fft"`` the inverse transform's
    :math:`1/\prod_a L_a`, so that its ``irfftn`` runs unnormalized; 1 for the others."""
    return 1 / math.prod(geometry.length) if filter == "fft" else 1.0


def spatial_conv_norm(y: torch.Tensor, affine_weight: torch.Tensor, gain: torch.Tensor, bias: torch.Tensor | None,
                      spec: SpatialFilter) -> torch.Tensor:
    r"""The layer's output from the full convolution ``y`` ``(N, C, *L)``: filtered per channel
    by the normalizer's ``gain`` (see the module docstring) and the affine kernel ``affine_weight``
    ``(C, *taps)``, cropped, strided, plus ``bias``, by operations that autograd differentiates
    (through ``gain`` too, where it requires a gradient); :class:`SpectralFilter` is the same map
    with the hand-written backward."""
    multiplier = _multiplier(affine_weight, gain, spec)
    if spec.filter == EXPORTED_FILTER:
        z = _planar_filtered(y, multiplier[..., 0], multiplier[..., 1], cast(PlanarDFT, spec.matrices))
    else:
        z = _filtered(y, torch.view_as_complex(multiplier), spec)[1]
    return z if bias is None else z + bias.view(-1, *spec.ones)


def _planar_filtered(y: torch.Tensor, real: torch.Tensor, imag: torch.Tensor, planes: PlanarDFT) -> torch.Tensor:
    r""":math:`z = \operatorname{sample}_s(\mathcal F^{-1}[M Y])`, :math:`Y = \mathcal F y`, with the
    multiplier's planes :math:`M^R` = ``real``, :math:`M^I` = ``imag`` ``(C, *half)``, by real
    matrix products on planes: the fused kernels' formulas
    (:func:`convnorm._fused_filter_kernels.forward_kernel`), the inverse's columns first,

    .. math:: H = yC,\quad Y = DH,\quad P = M \circ Y,\quad
              z = I^R (P^R E^R + P^I E^I) + I^I (P^R E^I - P^I E^R),

    the last being :math:`Q^R E^R + Q^I E^I` with :math:`Q = IP` (with :math:`E` first, the row
    products run on :math:`O_1 \le K` columns); in 1D, :math:`Y = H` and
    :math:`z = P^R E^R + P^I E^I`."""
    h_real, h_imag = y @ planes.columns[0], y @ planes.columns[1]
    if planes.rows is not None:
        d_real, d_imag = planes.rows
        h_real, h_imag = d_real @ h_real - d_imag @ h_imag, d_real @ h_imag + d_imag @ h_real
    p_real, p_imag = real * h_real - imag * h_imag, real * h_imag + imag * h_real
    e_real, e_imag = planes.inverse_columns
    u_real, u_imag = p_real @ e_real + p_imag @ e_imag, p_real @ e_imag - p_imag @ e_real
    if planes.inverse_rows is None:
        return u_real
    i_real, i_imag = planes.inverse_rows
    return i_real @ u_real + i_imag @ u_imag


def _multiplier(affine_weight: torch.Tensor, gain: torch.Tensor, spec: SpatialFilter) -> torch.Tensor:
    r"""The multiplier :math:`M = \hat v \hat\rho` ``(C, *half, 2)``, real and imaginary parts
    interleaved: the affine kernels' half spectra (the crop's phase included) times the ``gain``
    (the FFT filter's :math:`M` times its inverse's scale)."""
    return (affine_weight.reshape(affine_weight.shape[0], -1) @ spec.affine_basis * gain).view(-1, *spec.half, 2)


def _dense_rfft2(y: torch.Tensor, dft: DenseDFT) -> torch.Tensor:
    """``rfftn(y, dim=(-2, -1))`` by two matrix products (complex result)."""
    half = torch.view_as_complex(torch.unflatten(y @ dft.rfft_cols, -1, (-1, 2)))  # no Python frame
    return torch.matmul(dft.dft_rows, half)


def _dense_irfft2_sample(spectrum: torch.Tensor, dft: DenseDFT) -> torch.Tensor:
    """``irfftn`` of a half spectrum, evaluated at the output grid ``s t`` only."""
    return torch.view_as_real(torch.matmul(dft.idft_rows, spectrum)).flatten(-2) @ dft.irfft_cols


def _sample(spectrum: torch.Tensor, spec: SpatialFilter) -> torch.Tensor:
    """The unnormalized inverse ``rfftn`` of ``spectrum`` at size :math:`L`, then ``z[s t]`` for
    ``t < out_size``, as one strided view of the inverse transform."""
    z = torch.fft.irfftn(spectrum, s=spec.geometry.length, dim=spec.dims, norm="forward")
    size, strides = spec.sampled
    return z.as_strided((*z.shape[:2], *size), (*z.stride()[:2], *strides))


def _embed_spectrum(grad: torch.Tensor, geometry: LayerGeometry) -> torch.Tensor:
    """``rfftn`` of the adjoint of :func:`_sample`'s sampling: ``grad`` placed at positions
    ``s t`` of a zero signal of size :math:`L`."""
    length, stride = geometry.length, geometry.stride
    d = len(length)
    dims = tuple(range(-d, 0))
    if all(s == 1 for s in stride):  # placed at the start of each axis: rfftn's zero padding does it
        return torch.fft.rfftn(grad, s=length, dim=dims)
    full = grad.new_zeros(*grad.shape[:-d], *length)
    full[(...,) + tuple(slice(0, (o - 1) * s + 1, s) for o, s in zip(grad.shape[-d:], stride))] = grad
    return torch.fft.rfftn(full, dim=dims)


def _filtered(y: torch.Tensor, multiplier: torch.Tensor, spec: SpatialFilter) -> tuple[torch.Tensor, torch.Tensor]:
    r"""``(Y, z)``: the half spectrum :math:`Y` of ``y`` and
    :math:`z = \operatorname{sample}_s(\mathcal F^{-1}[M Y])`, by dense DFT matrices (``"dense"``)
    or FFTs (``"fft"``, ``multiplier`` carrying the inverse's scale). Differentiable by autograd
    (used as such without stop-gradient)."""
    if spec.filter == "dense":
        # made for the "dense" filter; typed by an ignore, not typing.cast (a Python frame on the hot path)
        dft: DenseDFT = spec.dft  # type: ignore[assignment]
        spectrum = _dense_rfft2(y, dft)
        return spectrum, _dense_irfft2_sample(spectrum * multiplier, dft)
    spectrum = torch.fft.rfftn(y, dim=spec.dims)
    return spectrum, _sample(spectrum * multiplier, spec)


class SpectralFilter(torch.autograd.Function):
    r""":math:`z = \operatorname{sample}_s\bigl(\mathcal F^{-1}[\hat v \hat\rho\, \mathcal F y]\bigr) + b` with
    a hand-written backward that keeps only what it needs: the (small) multiplier
    :math:`M = \hat v \hat\rho` for the input gradient, plus, when the affine kernel needs a
    gradient, the half spectrum :math:`Y` of the conv output (about the size of :math:`y`;
    keeping it saves a transform) or, for the fused kernels, :math:`y` itself (they recompute
    :math:`Y` as they go).

    Backward: the map is real-linear in :math:`y` with adjoint
    :math:`\mathcal F^{-1}[\overline{M}\,\mathcal F \operatorname{embed}_s(g)]` (with dense
    matrices: the transposed, conjugate-transposed matrices in reverse order). Affine kernel:
    with :math:`G` the gradient of the product :math:`MY` (real coordinates), the gradient of
    :math:`M` is :math:`\sum_n \overline{Y} G`, pulled back to :math:`\rho` through the small
    map :math:`\rho \mapsto \hat v \hat\rho` (with FFTs: the equivalent circular cross-correlation
    :math:`\partial/\partial\rho_k[j] = \sum_{n,t} \operatorname{embed}_s(g)[t]\,(v_k * y)[t + j + \text{shift}]`).
    The bias's gradient is the output gradient summed over samples and positions.
    """

    @staticmethod
    def forward(ctx, y, affine_weight, bias, gain_and_spec):
        gain, spec = gain_and_spec  # the gain takes no gradient: it rides with the constants (one argument less)
        ctx.spec = spec
        multiplier = _multiplier(affine_weight, gain, spec)
        if spec.filter == "fused":  # the kernels take the multiplier's planes, each contiguous
            real, imag = multiplier[..., 0].contiguous(), multiplier[..., 1].contiguous()
            # unchecked: the plan chose the fused kernels for this device, dtype and size
            z = launch_forward(y, real, imag, spec.matrices, bias, spec.precision)
            if any(ctx.needs_input_grad):
                ctx.save_for_backward(y if ctx.needs_input_grad[1] else None, gain, real, imag)
            return z
        multiplier = torch.view_as_complex(multiplier)
        if spec.filter == "fft":
            spectrum = torch.fft.rfftn(y, dim=spec.dims)
            z = _sample(spectrum * multiplier, spec)
        else:
            spectrum, z = _filtered(y, multiplier, spec)
        if any(ctx.needs_input_grad):
            ctx.save_for_backward(spectrum if ctx.needs_input_grad[1] else None, gain, multiplier)
        return z if bias is None else z + bias.view(-1, *spec.ones)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad):
        kept, gain, *multiplier = ctx.saved_tensors  # the fused filter's planes, else the complex multiplier
        spec = ctx.spec
        grad_bias = grad.sum((0, *range(2, 2 + len(spec.half)))) if ctx.needs_input_grad[2] else None
        if spec.filter == "fused":
            grad_y, products = _fused_backward(grad, kept, *multiplier, spec, ctx.needs_input_grad[0])
        elif spec.filter == "dense":
            grad_y, products = _dense_backward(grad, kept, *multiplier, spec, ctx.needs_input_grad[0])
        else:
            grad_y, products = _fft_backward(grad, kept, *multiplier, spec, ctx.needs_input_grad[0])
        grad_affine = None
        if ctx.needs_input_grad[1]:
            weighted = torch.view_as_real(products).flatten(1) * gain  # the products times the gain, interleaved
            if spec.filter == "fft":  # the circular cross-correlation c[tau] = sum_t g[t] (v*y)[t + tau]
                cross = torch.fft.irfftn(torch.view_as_complex(weighted.view(-1, *spec.half, 2)),
                                         s=spec.geometry.length, dim=spec.dims, norm="forward")
                grad_affine = cross[(slice(None),) + _lag_index(spec.taps, spec.shift, spec.geometry.length,
                                                                grad.device)]
            else:  # M = v * sum_j rho[j] E_j, so d/d rho[j] = Re sum_w conj(dM) v E_j, with dM = sum_n conj(Y) G
                grad_affine = (weighted @ spec.affine_basis.T).reshape(-1, *spec.taps)
        return grad_y, grad_affine, grad_bias, None


def _fft_backward(grad, spectrum, multiplier, spec, need_y):
    """The ``"fft"`` filter's input gradient and the affine gradient's products
    :math:`\\sum_n \\overline{G}\\, Y` (None where not needed)."""
    grad_spectrum = _embed_spectrum(grad, spec.geometry)
    grad_y = products = None
    if need_y:
        grad_y = torch.fft.irfftn(grad_spectrum * multiplier.conj(), s=spec.geometry.length, dim=spec.dims,
                                  norm="forward")
    if spectrum is not None:
        products = (grad_spectrum.conj() * spectrum).sum(0)
    return grad_y, products


def _dense_backward(grad, spectrum, multiplier, spec, need_y):
    """The ``"dense"`` filter's input gradient and the products :math:`\\sum_n \\overline{Y} G`."""
    dft = spec.dft
    # Adjoint of _dense_irfft2_sample: gradient of the product spectrum M Y.
    grad_product = torch.matmul(dft.idft_rows_h,
                                torch.view_as_complex(torch.unflatten(grad @ dft.irfft_cols_t, -1, (-1, 2))))
    grad_y = products = None
    if need_y:  # adjoint of _dense_rfft2 applied to conj(M) G
        grad_y = (torch.view_as_real(torch.matmul(dft.dft_rows_h, grad_product * multiplier.conj())).flatten(-2)
                  @ dft.rfft_cols_t)
    if spectrum is not None:
        products = (_sum_conj_products(spectrum, grad_product) if spec.products_by_sample
                    else (spectrum.conj() * grad_product).sum(0))
    return grad_y, products


def _fused_backward(grad, y, real, imag, spec, need_y):
    r"""The fused kernels' input gradient and the products :math:`\sum_n \overline{Y} G`, from
    the multiplier's planes ``real`` and ``imag``; ``y`` None when the affine kernel needs no
    gradient."""
    grad_y, products_real, products_imag = launch_backward(grad, y, real, imag, spec.matrices, need_y, y is not None,
                                                           spec.precision)
    return grad_y, None if products_real is None else torch.complex(products_real, products_imag)


@cached(maxsize=64)
def _lag_index(taps: tuple[int, ...], shift: tuple[int, ...], length: tuple[int, ...],
               device: torch.device) -> tuple[torch.Tensor, ...]:
    r"""Per axis the lags :math:`(j + \text{shift}) \bmod L`, :math:`0 \le j <` ``taps``, as an
    open mesh (cached on ``device``): ``c[:, *index]`` picks the taps of a circular
    cross-correlation ``c``."""
    lags = [(torch.arange(t) + sh) % n for t, sh, n in zip(taps, shift, length)]
    return tuple(index.to(device) for index in torch.meshgrid(*lags, indexing="ij"))


def _sum_conj_products(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    r""":math:`\sum_n \overline{a_n}\, b_n` over the first axis, accumulated sample by sample:
    no tensor of all the products is made (with ``a.conj()`` a conjugated copy of ``a`` would
    be, and the products then summed: three passes over memory instead of one)."""
    total = a.new_zeros(a.shape[1:])
    for a_n, b_n in zip(a, b):
        total.addcmul_(a_n.conj(), b_n)
    return total

r"""ConvNorm computed spatially: the full convolution, then the per-channel filter.

The direct convolution gives :math:`y = a \star x` of size :math:`L` (zero padding
:math:`m - 1`, or the circular padding); its half spectrum is multiplied by one spectrum
per channel,

.. math:: M_k(\omega) = \hat v_k(\omega)\,\hat\rho_k(\omega)\,e^{2\pi i \langle\omega, c\rangle/L},

which also carries the crop offset :math:`c` as a phase, so that the crop becomes "keep the
first samples"; the inverse transform is evaluated on the strided output grid only.

The transforms are dense DFT matrix products for small 2D sizes on the policy's
``dense_transform_devices``, a CPU by default (:attr:`~convnorm._policy.Plan.dense_transforms`),
whose inverse matrices keep
only the output rows and columns :math:`s t`, so crop and stride cost nothing; otherwise
``rfftn``/``irfftn``, with a stride :math:`s` that divides :math:`L` along the first axis
folded into the spectrum (the DFT of :math:`z[s\,\cdot]` is the mean of the :math:`s`
aliased sub-spectra), so that the inverse FFT runs at size :math:`L/s` there.

With the stop-gradient the filter has a hand-written backward (:class:`_SpectralFilter`);
without it, autograd differentiates the same operations, through :math:`\hat v` too.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ._caches import cached
from ._geometry import CONV, LayerGeometry
from ._transforms import DenseDFT, dense_dft, kernel_basis, shifted_kernel_spectrum


def spatial_conv_norm(input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, geometry: LayerGeometry,
                      gain: torch.Tensor, affine_weight: torch.Tensor, shift: tuple[int, ...], dense: bool,
                      products_by_sample: bool, stop_gradient: bool) -> torch.Tensor:
    r"""The layer's output: the full convolution of ``input`` by ``weight``, filtered per
    channel by the normalizer ``gain`` (:math:`\hat v`, ``(C_out, *half spectrum)``) and the
    affine kernel ``affine_weight`` (``(C_out, *taps)``, tap 0 at lag ``shift`` from the output
    sample), cropped, strided, plus ``bias``; transformed by dense DFT matrices if ``dense``
    (2D), else by FFTs, with the affine gradient's products summed sample by sample if
    ``products_by_sample`` (dense only); the gradient does not flow through ``gain`` if
    ``stop_gradient``."""
    conv = CONV[weight.dim() - 2]
    if geometry.padding_mode == "circular":
        pad = [p for p in reversed(geometry.padding) for _ in range(2)]
        y = conv(F.pad(input, pad, mode="circular"), weight, None, 1, 0, geometry.dilation, geometry.groups)
    else:
        y = conv(input, weight, None, 1, tuple(m - 1 for m in geometry.kernel), geometry.dilation, geometry.groups)
    if stop_gradient:
        z = _SpectralFilter.apply(y, affine_weight, gain, geometry, shift, dense, products_by_sample)
    else:  # autograd differentiates through v-hat too
        z = _filtered(y, gain * shifted_kernel_spectrum(affine_weight, shift, geometry.length), geometry, dense)[1]
    return z if bias is None else z + bias.reshape(-1, *([1] * len(geometry.size)))


def _dense_rfft2(y: torch.Tensor, dft: DenseDFT) -> torch.Tensor:
    """``rfftn(y, dim=(-2, -1))`` by two matrix products (complex result)."""
    half = torch.view_as_complex((y @ dft.rfft_cols).unflatten(-1, (-1, 2)))
    return torch.matmul(dft.dft_rows, half)


def _dense_irfft2_sample(spectrum: torch.Tensor, dft: DenseDFT) -> torch.Tensor:
    """``irfftn`` of a half spectrum, evaluated at the output grid ``s t`` only."""
    return torch.view_as_real(torch.matmul(dft.idft_rows, spectrum)).flatten(-2) @ dft.irfft_cols


def _sample(spectrum: torch.Tensor, geometry: LayerGeometry) -> torch.Tensor:
    r"""Inverse ``rfftn`` of ``spectrum`` at size :math:`L`, then ``z[s t]`` for ``t < out_size``.

    A stride dividing the first axis of a 2D signal is folded into the spectrum: the DFT
    of :math:`z[s\,\cdot]` is the mean of the :math:`s` aliased sub-spectra."""
    length, stride, out_size = geometry.length, geometry.stride, geometry.out_size
    d = len(length)
    first = stride[0]
    if d == 2 and first > 1 and length[0] % first == 0:
        spectrum = spectrum.unflatten(-2, (first, length[0] // first)).mean(-3)
        z = torch.fft.irfft(torch.fft.ifft(spectrum, dim=-2), n=length[1], dim=-1)
        return z[..., : out_size[0], : (out_size[1] - 1) * stride[1] + 1 : stride[1]]
    z = torch.fft.irfftn(spectrum, s=length, dim=tuple(range(-d, 0)))
    return z[(..., *(slice(0, (o - 1) * s + 1, s) for o, s in zip(out_size, stride)))]


def _embed_spectrum(grad: torch.Tensor, geometry: LayerGeometry) -> torch.Tensor:
    r"""``rfftn`` of the adjoint of :func:`_sample`'s sampling: ``grad`` placed at positions
    ``s t`` of a zero signal of size :math:`L`. The spectrum of a signal upsampled by
    :math:`s` along an axis is the spectrum at size :math:`L/s` repeated :math:`s` times."""
    length, stride = geometry.length, geometry.stride
    d = len(length)
    first = stride[0]
    fold = d == 2 and first > 1 and length[0] % first == 0
    size = (length[0] // first if fold else length[0],) + tuple(length[1:])
    steps = (1 if fold else first,) + tuple(stride[1:])
    dims = tuple(range(-d, 0))
    if all(s == 1 for s in steps):  # placed at the start of each axis: rfftn's zero padding does it
        spectrum = torch.fft.rfftn(grad, s=size, dim=dims)
    else:
        full = grad.new_zeros(*grad.shape[:-d], *size)
        full[(..., *(slice(0, (o - 1) * s + 1, s) for o, s in zip(grad.shape[-d:], steps)))] = grad
        spectrum = torch.fft.rfftn(full, dim=dims)
    return spectrum.repeat(*([1] * (spectrum.dim() - 2)), first, 1) if fold else spectrum


def _filtered(y: torch.Tensor, multiplier: torch.Tensor, geometry: LayerGeometry,
              dense: bool) -> tuple[torch.Tensor, torch.Tensor]:
    r"""``(Y, z)``: the half spectrum :math:`Y` of ``y`` and
    :math:`z = \operatorname{sample}_s(\mathcal F^{-1}[M Y])`, by dense DFT matrices if ``dense``,
    else FFTs. Differentiable by autograd (used as such without stop-gradient)."""
    if dense:
        dft = dense_dft(geometry.length, geometry.stride, geometry.out_size, y.dtype, y.device)
        spectrum = _dense_rfft2(y, dft)
        return spectrum, _dense_irfft2_sample(spectrum * multiplier, dft)
    spectrum = torch.fft.rfftn(y, dim=tuple(range(-len(geometry.length), 0)))
    return spectrum, _sample(spectrum * multiplier, geometry)


class _SpectralFilter(torch.autograd.Function):
    r""":math:`z = \operatorname{sample}_s\bigl(\mathcal F^{-1}[\hat v \hat\rho\, \mathcal F y]\bigr)` with
    a hand-written backward that keeps only what it needs: the (small) multiplier
    :math:`M = \hat v \hat\rho` for the input gradient, plus the half spectrum :math:`Y` of
    the conv output (about the size of :math:`y`; keeping it saves a transform) when the
    affine kernel needs a gradient.

    Backward: the map is real-linear in :math:`y` with adjoint
    :math:`\mathcal F^{-1}[\overline{M}\,\mathcal F \operatorname{embed}_s(g)]` (with dense
    matrices: the transposed, conjugate-transposed matrices in reverse order). Affine kernel:
    with :math:`G` the gradient of the product :math:`MY` (real coordinates), the gradient of
    :math:`M` is :math:`\sum_n \overline{Y} G`, pulled back to :math:`\rho` through the small
    map :math:`\rho \mapsto \hat v \hat\rho` (with FFTs: the equivalent circular cross-correlation
    :math:`\partial/\partial\rho_k[j] = \sum_{n,t} \operatorname{embed}_s(g)[t]\,(v_k * y)[t + j + \text{shift}]`).
    """

    @staticmethod
    def forward(ctx, y, affine_weight, gain, geometry, shift, dense, products_by_sample):
        multiplier = gain * shifted_kernel_spectrum(affine_weight, shift, geometry.length)
        ctx.geometry, ctx.shift, ctx.dense, ctx.products_by_sample = geometry, shift, dense, products_by_sample
        spectrum, z = _filtered(y, multiplier, geometry, dense)
        ctx.save_for_backward(spectrum if ctx.needs_input_grad[1] else None, gain, multiplier)
        ctx.taps = tuple(affine_weight.shape[1:])
        return z

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad):
        spectrum, gain, multiplier = ctx.saved_tensors
        geometry = ctx.geometry
        grad_y = grad_affine = None
        if ctx.dense:
            dft = dense_dft(geometry.length, geometry.stride, geometry.out_size, grad.dtype, grad.device)
            # Adjoint of _dense_irfft2_sample: gradient of the product spectrum M Y.
            grad_product = torch.matmul(dft.idft_rows_h,
                                        torch.view_as_complex((grad @ dft.irfft_cols_t).unflatten(-1, (-1, 2))))
            if ctx.needs_input_grad[0]:  # adjoint of _dense_rfft2 applied to conj(M) G
                grad_y = (torch.view_as_real(torch.matmul(dft.dft_rows_h, grad_product * multiplier.conj())).flatten(-2)
                          @ dft.rfft_cols_t)
            if ctx.needs_input_grad[1]:
                # M = v * sum_j rho[j] E_j, so d/d rho[j] = Re sum_w conj(dM) v E_j, with dM = sum_n conj(Y) G.
                products = (_sum_conj_products(spectrum, grad_product) if ctx.products_by_sample
                            else (spectrum.conj() * grad_product).sum(0))
                weighted = torch.view_as_real(products * gain).flatten(1)
                basis = kernel_basis(ctx.taps, ctx.shift, geometry.length, grad.dtype, grad.device)
                grad_affine = (weighted @ basis.T).reshape(-1, *ctx.taps)
            return grad_y, grad_affine, None, None, None, None, None
        dims = tuple(range(-len(geometry.length), 0))
        grad_spectrum = _embed_spectrum(grad, geometry)
        if ctx.needs_input_grad[0]:
            grad_y = torch.fft.irfftn(grad_spectrum * multiplier.conj(), s=geometry.length, dim=dims)
        if ctx.needs_input_grad[1]:
            cross = (grad_spectrum.conj() * spectrum).sum(0) * gain
            cross = torch.fft.irfftn(cross, s=geometry.length, dim=dims)  # c[tau] = sum_t g[t] (v*y)[t + tau]
            grad_affine = cross[(slice(None), *_lag_index(ctx.taps, ctx.shift, geometry.length, grad.device))]
        return grad_y, grad_affine, None, None, None, None, None


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

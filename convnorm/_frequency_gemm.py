r"""ConvNorm in the frequency domain by matrix products only: the GPU's form of
:mod:`convnorm._frequency_domain`, in the autocast dtype (bfloat16, float16) on tensor cores.

The layer is one complex :math:`C_\text{in} \times C_\text{out}` product per frequency
:math:`\omega` of the input's DFT at the normalization size :math:`L` (see
:mod:`convnorm._frequency_domain` for the derivation):

.. math::

    Z_{\cdot k}(\omega) = \sum_i X_{\cdot i}(\omega)\, G_{ik}(\omega), \qquad
    G_{ik}(\omega) = M_k(\omega)\, A_{ki}(\omega), \qquad M_k = \hat v_k\, \hat\rho_k,

with :math:`A_{ki}` the kernels' spectra (the full correlation's phase included) and
:math:`\hat\rho_k` the affine kernel's (the crop's phase included). :math:`\hat v` and
:math:`\hat\rho` are folded into the kernels' spectra once per call, so the data pass through
four real transforms and one batched matrix product:

1. the input's DFT along axis 0 (zero-padded to :math:`L_0`, half spectrum:
   :math:`K_0 = L_0 // 2 + 1` rows), one real product with a ``(2 K_0, n_0)`` matrix;
2. its DFT along axis 1 (zero-padded to :math:`L_1`), one real product with a
   ``(2 L_1, 2 n_1)`` matrix acting on the real and imaginary planes at once;
3. per frequency, :math:`[X_r, X_i]\,[[G_r, G_i], [-G_i, G_r]] = [Z_r, Z_i]`: one batched
   product over the :math:`F = K_0 L_1` frequencies, :math:`N \times 2C_\text{in}` by
   :math:`2C_\text{in} \times 2C_\text{out}`;
4. the inverse DFT along axis 1 evaluated at the output columns :math:`s_1 v` only, one real
   product with a ``(2 O_1, 2 L_1)`` matrix;
5. the inverse along axis 0 at the output rows :math:`s_0 u` only, the real part taken and the
   half spectrum's rows weighted (1 at :math:`k_0 = 0` and :math:`L_0/2`, 2 elsewhere), one real
   product with a ``(O_0, 2 K_0)`` matrix. The crop and the stride cost nothing: the inverse
   is evaluated where the output is.

Layout. The channels stay the last, unit-stride axis throughout (channels-last), with the real
and imaginary parts of a sample next to each other along it (``(…, 2, C)``), so every product
reads unit-stride rows with no copy except two: the input to channels-last (none if it already
is) and the products' output from frequency-major to sample-major before step 4. Every
transform matrix is scaled by :math:`1/\sqrt{L_a}` forward and backward (unitary), so the spectra
stay within :math:`\sqrt{n_0 n_1}` of the input's values: float16's range holds them.

Precision. Under ``torch.autocast`` the data, the transform matrices and :math:`G` are rounded to
the autocast dtype and every product runs there with float32 accumulation (the matrix libraries'
default for half-precision products), so nearly all the layer's multiply-adds run on tensor
cores. :math:`\hat v`, the spectra :math:`A` and :math:`\hat\rho` and their product :math:`G` are
computed in float32 (float64 for float64 data), :math:`A` by FFTs of the zero-padded kernels:
:math:`\hat v` reaches :math:`\varepsilon^{-1/2}` where a low-pass kernel's spectrum vanishes,
and an :math:`A` rounded to bfloat16 there would have its absolute rounding error
(:math:`2^{-9} \|a\|`, not :math:`2^{-9} |A|`) amplified by it; :math:`G` itself is bounded
(:math:`\sum_i |G_{ik}|^2 \le |\hat\rho_k|^2`: a tight frame's spectrum), so rounding it, and
everything after it, is not amplified. The FFTs are float32 whatever TensorFloat-32 setting the
matrix library has.

Gradients. Everything is plain differentiable operations, so autograd takes the backward pass:
its products run in the dtype their operands were saved in, the autocast dtype. With the
stop-gradient :math:`\hat v` comes in as a constant: the weight's gradient flows through
:math:`A` only, the affine kernel's through :math:`\hat\rho`. No host synchronisation and no
branch on values, so a CUDA graph can capture it and ``torch.compile`` traces it.

Every frequency of the half spectrum is computed, the self-conjugate rows' repeats included
(:math:`L_1 - 1` or so of :math:`K_0 L_1`): one batched product over all, no gather.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import torch

from ._caches import cached
from ._geometry import LayerGeometry
from .dft import dft_angles


class ProductsConstants(NamedTuple):
    """The fixed matrices of one layer geometry, in the products' dtype, and the kernels'
    placement (see :func:`products_constants`)."""

    rows_in: torch.Tensor
    """``(2 K_0, n_0)``: the DFT along axis 0, rows (frequency, real/imaginary)."""
    cols_in: torch.Tensor
    """``(2 L_1, 2 n_1)``: the DFT along axis 1 of complex rows, rows (frequency,
    real/imaginary), columns (real/imaginary, position)."""
    cols_out: torch.Tensor
    """``(2 O_1, 2 L_1)``: the inverse along axis 1 at the output columns, rows
    (real/imaginary, column), columns (frequency, real/imaginary)."""
    rows_out: torch.Tensor
    """``(O_0, 2 K_0)``: the inverse along axis 0 at the output rows, real part only, the half
    spectrum's weights included; columns (frequency, real/imaginary)."""
    v_hat_index: torch.Tensor
    """``(K_0 L_1,)``: for each frequency :math:`(k_0, \\omega_1)` here, the index of
    :math:`\\hat v`'s value on the ``rfftn`` grid ``(L_0, L_1 // 2 + 1)`` (:math:`\\hat v` is even)."""
    length: tuple[int, ...]
    """The normalization size :math:`L`."""
    kernel_shift: tuple[int, ...]
    """The lag of the kernels' tap 0 in the full correlation: :math:`1 - m` (zeros), :math:`-p` (circular)."""
    affine_shift: tuple[int, ...]
    """The lag of the affine kernel's tap 0: the crop minus the kernel's centre."""


def products_constants(geometry: LayerGeometry, affine_taps: tuple[int, ...], dtype: torch.dtype,
                       device: torch.device) -> ProductsConstants:
    """The :class:`ProductsConstants` of a layer of ``geometry`` with an affine kernel of
    ``affine_taps``, its transforms in ``dtype`` (the products' dtype) on ``device``."""
    if geometry.padding_mode == "circular":
        kernel_shift = tuple(-p for p in geometry.padding)
    else:
        kernel_shift = tuple(1 - m for m in geometry.kernel)
    affine_shift = tuple(c - (t - 1) // 2 for c, t in zip(geometry.offset, affine_taps))
    return _constants(geometry.size, geometry.length, geometry.stride, geometry.out_size, kernel_shift,
                      affine_shift, dtype, device)


@cached(maxsize=32)
def _constants(size: tuple[int, ...], length: tuple[int, ...], stride: tuple[int, ...], out_size: tuple[int, ...],
               kernel_shift: tuple[int, ...], affine_shift: tuple[int, ...], dtype: torch.dtype,
               device: torch.device) -> ProductsConstants:
    r"""The matrices, from angles reduced in integers and computed in float64, then rounded
    to ``dtype``. Forward :math:`e^{-2\pi i \omega t / L}`, inverse :math:`e^{+2\pi i \omega t / L}`,
    each scaled by :math:`1/\sqrt{L_a}` per axis (the inverse's real part weighted by the half
    spectrum's 1 or 2)."""
    (n0, n1), (l0, l1), (s0, s1), (o0, o1) = size, length, stride, out_size
    k0 = l0 // 2 + 1
    theta = dft_angles(torch.arange(k0), torch.arange(n0), l0)                       # (K0, n0)
    rows_in = torch.stack([theta.cos(), -theta.sin()], 1).reshape(2 * k0, n0) / math.sqrt(l0)
    phi = dft_angles(torch.arange(l1), torch.arange(n1), l1)                          # (L1, n1)
    c, s = phi.cos(), phi.sin()  # X_r = c Y_r + s Y_i, X_i = c Y_i - s Y_r
    cols_in = torch.stack([torch.stack([c, s], 1), torch.stack([-s, c], 1)], 1).reshape(2 * l1, 2 * n1) / math.sqrt(l1)
    psi = dft_angles(torch.arange(o1) * s1, torch.arange(l1), l1)                     # (O1, L1)
    c, s = psi.cos(), psi.sin()  # V_r = c Z_r - s Z_i, V_i = s Z_r + c Z_i
    cols_out = torch.stack([torch.stack([c, -s], 2), torch.stack([s, c], 2)]).reshape(2 * o1, 2 * l1) / math.sqrt(l1)
    chi = dft_angles(torch.arange(o0) * s0, torch.arange(k0), l0)                     # (O0, K0)
    weight = torch.full((k0,), 2.0, dtype=torch.float64)
    weight[0] = 1
    if l0 % 2 == 0:
        weight[-1] = 1
    rows_out = (torch.stack([chi.cos(), -chi.sin()], 2) * weight[:, None]).reshape(o0, 2 * k0) / math.sqrt(l0)
    k1 = l1 // 2 + 1
    rows, columns = torch.arange(k0)[:, None], torch.arange(l1)
    mirrored = columns > l1 // 2  # a column beyond the rfftn grid's: read the negative frequency
    index = torch.where(mirrored, (-rows % l0) * k1 + (l1 - columns) % l1, rows * k1 + columns)

    def rounded(matrix: torch.Tensor) -> torch.Tensor:
        return matrix.to(dtype=dtype, device=device)

    return ProductsConstants(rounded(rows_in), rounded(cols_in), rounded(cols_out), rounded(rows_out),
                             index.reshape(-1).to(device), length, kernel_shift, affine_shift)


def _spectra(weight: torch.Tensor, affine_weight: torch.Tensor,
             constants: ProductsConstants) -> tuple[torch.Tensor, ...]:
    r"""The real and imaginary parts of the FFTs (half spectrum along axis 0) of the kernels
    ``(K_0, L_1, C_in, C_out)`` and of the affine kernels ``(K_0, L_1, 1, C_out)``, each placed
    at its lags (``kernel_shift``, ``affine_shift``) in a zero signal of size :math:`L`: the
    conjugates of :math:`\sum_j a[j]\, e^{2\pi i \langle \omega, j + \text{shift}\rangle / L}`.
    Both kinds placed frequency-major (the spatial axes first: the kernels are small, their
    spectra large, so it is the kernels that are transposed), then transformed by one FFT."""
    l0, l1 = constants.length
    (m0, m1), (t0, t1) = weight.shape[2:], affine_weight.shape[1:]
    kernels = torch.constant_pad_nd(weight.permute(2, 3, 1, 0), (0, 0, 0, 0, 0, l1 - m1, 0, l0 - m0))
    affine = torch.constant_pad_nd(affine_weight.permute(1, 2, 0), (0, 0, 0, l1 - t1, 0, l0 - t0))
    placed = torch.cat([kernels.roll(constants.kernel_shift, dims=(0, 1)),
                        affine.roll(constants.affine_shift, dims=(0, 1)).unsqueeze(2)], 2)
    spectrum = torch.view_as_real(torch.fft.rfftn(placed, dim=(1, 0)))
    real, imaginary = spectrum[..., 0], spectrum[..., 1]
    c_in = weight.shape[1]
    return real[:, :, :c_in], imaginary[:, :, :c_in], real[:, :, c_in:], imaginary[:, :, c_in:]


def folded_kernels(weight: torch.Tensor, affine_weight: torch.Tensor, v_hat: torch.Tensor,
                   constants: ProductsConstants, dtype: torch.dtype) -> torch.Tensor:
    r"""``(F, 2 C_\text{in}, 2 C_\text{out})`` in ``dtype``: per frequency the real form
    :math:`[[G_r, G_i], [-G_i, G_r]]` of :math:`G_{ik} = \hat v_k \hat\rho_k A_{ki}`, computed in
    the dtype of ``weight`` (float32 or float64) and rounded once. ``v_hat`` is
    ``(C_\text{out}, L_0, L_1 // 2 + 1)`` on the ``rfftn`` grid. With the FFTs
    :math:`F_a = \bar A` and :math:`F_\rho = \bar{\hat\rho}` (:func:`_spectra`) and
    :math:`\hat v` real, :math:`G = \overline{P}` with :math:`P = \hat v F_\rho F_a`, so the block
    is :math:`[[P_r, -P_i], [P_i, P_r]]`: no conjugate is materialised (autograd keeps the FFT's
    output, not a negated copy of it)."""
    c_out, c_in = weight.shape[:2]
    weight, affine_weight = weight.to(v_hat.dtype), affine_weight.to(v_hat.dtype)
    f_r, f_i, t_r, t_i = _spectra(weight, affine_weight, constants)  # (K0, L1, C_in, C_out), (K0, L1, 1, C_out)
    v = v_hat.reshape(c_out, -1)[:, constants.v_hat_index].T.reshape(t_r.shape)
    m_r, m_i = v * t_r, v * t_i
    p_r = (f_r * m_r - f_i * m_i).flatten(0, 1)                                        # (F, C_in, C_out)
    p_i = (f_i * m_r + f_r * m_i).flatten(0, 1)
    return torch.cat([torch.cat([p_r, -p_i], 2), torch.cat([p_i, p_r], 2)], 1).to(dtype)


def frequency_gemm_conv_norm(input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
                             affine_weight: torch.Tensor, v_hat: torch.Tensor,
                             constants: ProductsConstants) -> torch.Tensor:
    r"""The layer's output ``(N, C_\text{out}, O_0, O_1)`` in the dtype of ``constants``'
    matrices, in ``input``'s memory format (channels-last or contiguous): ``input``
    ``(N, C_\text{in}, n_0, n_1)``, ``weight`` and ``affine_weight`` ``(C_\text{out}, *taps)`` in
    the dtype of the kernels' spectra (float32 or float64), ``v_hat`` as :func:`folded_kernels`
    takes it, ``bias`` ``(C_\text{out},)`` or None; the steps of the module docstring."""
    dtype = constants.rows_in.dtype
    n, c_in, n0, n1 = input.shape
    c_out = weight.shape[0]
    k0, l1 = constants.rows_in.shape[0] // 2, constants.cols_in.shape[0] // 2
    o0, o1 = constants.rows_out.shape[0], constants.cols_out.shape[0] // 2
    kernels = folded_kernels(weight, affine_weight, v_hat, constants, dtype)
    rows = input.to(dtype).permute(0, 2, 3, 1).reshape(n, n0, n1 * c_in)      # channels-last: (N, n0, n1 C)
    half = torch.matmul(constants.rows_in, rows).view(n * k0, 2 * n1, c_in)   # (N K0, (re/im, t1), C)
    spectrum = torch.matmul(constants.cols_in, half).view(n, k0 * l1, 2 * c_in)   # (N, F, (re/im, C))
    products = torch.bmm(spectrum.transpose(0, 1), kernels)                   # (F, N, (re/im, C_out))
    by_sample = products.view(k0, l1, n, 2 * c_out).permute(2, 0, 1, 3).reshape(n * k0, 2 * l1, c_out)
    columns = torch.matmul(constants.cols_out, by_sample).view(n, 2 * k0, o1 * c_out)  # (N, (K0, re/im), O1 C)
    out = torch.matmul(constants.rows_out, columns).view(n, o0, o1, c_out)
    if bias is not None:
        out = out + bias.to(dtype)
    out = out.permute(0, 3, 1, 2)  # channels-last memory
    channels_last = not input.is_contiguous() and input.is_contiguous(memory_format=torch.channels_last)
    return out if channels_last else out.contiguous()


__all__ = ["ProductsConstants", "folded_kernels", "frequency_gemm_conv_norm", "products_constants"]

r"""ConvNorm computed entirely in the frequency domain (2D, one group): the CPU path for
small maps and strided layers.

:func:`convnorm.functional.conv_norm` normalizes the *full*, unstrided convolution
:math:`y = a \star x` of size :math:`L = n + m - 1`. In the spatial domain that costs a
convolution with :math:`L^2` outputs per channel, :math:`(L/n)^2` times a ``Conv2d`` with
padding and :math:`s^2 (L/n)^2` times a strided one. In the frequency domain the whole layer
is one complex matrix product per frequency :math:`\omega` of the ``rfftn`` grid of size
:math:`L` (:math:`F = L_0 (L_1 // 2 + 1)` frequencies):

.. math::

    Z_{\cdot k}(\omega) = G_k(\omega) \sum_i X_{\cdot i}(\omega)\, A_{ki}(\omega), \qquad
    A_{ki}(\omega) = \sum_j a_{ki}[j]\, e^{2\pi i \langle \omega, j - c\rangle / L}, \qquad
    G_k = \hat v_k\, \hat\rho_k\, e^{2\pi i \langle\omega, \text{shift}\rangle / L},

with :math:`X` the DFT of the input zero-padded to :math:`L` (so the circular correlation is
the full linear one: the wrapped samples are the zero padding), :math:`c = m - 1` for zero
padding and :math:`c = p` for circular padding, :math:`\hat v_k` the normalizer, and
:math:`G_k` the affine kernel's spectrum with the crop offset as a phase. The output is the
inverse DFT evaluated on the strided output grid only (dense matrices, so crop and stride
are free). Per frequency this costs :math:`8 N C_\text{in} C_\text{out}` real flops against
:math:`2 m^2 N C_\text{in} C_\text{out}` per output sample for the direct convolution.

Implementation. The complex products run as real ones on stacked real and imaginary parts,
:math:`[X_r; X_i]\,[A_r; A_i]^\top` (one batched ``bmm`` per chunk of frequencies), and the
kernel spectra :math:`A` are built chunk by chunk from the weights by one small matrix
product with a cached basis into one buffer (and the chunk's products into another), both
reused by every chunk, so no tensor of :math:`F C_\text{out} C_\text{in}` complex numbers is
ever allocated (large fresh allocations page-fault on every step on Linux). The products
with :math:`G` (and, backward, with :math:`\bar G` and the affine kernel's
:math:`\partial G`) are taken chunk by chunk too, while the chunk is in cache, into
buffers reused by every chunk as well. The
backward pass (hand-written, stop-gradient: :math:`\hat v` is a constant) uses, per
frequency, :math:`\partial X = \partial U \bar A`, :math:`\partial A = \partial U^\top \bar X`
with :math:`\partial U = \bar G\, \partial Z`, and :math:`\partial G = \sum_n \partial Z\, \bar U`;
the gradients of the real weights and affine kernels are the real parts of the same bases'
adjoints.
"""
from __future__ import annotations

import math

import torch

CHUNK_BYTES = 8 * 2**20
"""Size of the kernel spectra built at once (bytes): small enough to stay in the processor's
cache while the ``bmm`` reads them."""


def _chunks(frequencies: int, bytes_per_frequency: int) -> list[slice]:
    """``range(frequencies)`` cut into the fewest consecutive slices holding at most
    ``CHUNK_BYTES`` of kernel spectra each (at least one frequency), of sizes differing by
    at most one."""
    count = -(-frequencies // max(1, CHUNK_BYTES // bytes_per_frequency))
    bounds = [frequencies * i // count for i in range(count + 1)]
    return [slice(a, b) for a, b in zip(bounds, bounds[1:])]


def _workspace(like: torch.Tensor, chunks: list[slice], *shapes: tuple[int, ...]) -> list[torch.Tensor]:
    """One flat buffer per shape, for ``(f, *shape)`` with ``f`` the largest chunk, reused by
    every chunk through ``out=``, so the chunk loop allocates nothing."""
    f = max(part.stop - part.start for part in chunks)
    return [like.new_empty(f * math.prod(shape)) for shape in shapes]


def _to_frequency_major(t: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """``(N, C, n_0, K)`` complex (columns transformed) → rows transformed by ``rows``
    ``(L_0, n_0)``, laid out ``(L_0 K, N, C)``: one matrix per frequency."""
    n, c, n0, k = t.shape
    return (rows @ t.permute(2, 3, 0, 1).reshape(n0, -1)).reshape(rows.shape[0] * k, n, c)


def _from_frequency_major(t: torch.Tensor, rows: torch.Tensor, cols: torch.Tensor) -> torch.Tensor:
    """``(L_0 K, N, C)`` complex → ``rows @ ·`` along the first axis, then ``· @ cols`` on
    the interleaved real/imaginary last axis: ``(N, C, O_0, O_1)`` real."""
    _, n, c = t.shape
    o0, l0 = rows.shape
    k = t.shape[0] // l0
    t = torch.view_as_real((rows @ t.reshape(l0, -1)).reshape(o0, k, n, c))
    return t.permute(2, 3, 0, 1, 4).reshape(n, c, o0, 2 * k) @ cols


def _stacked_spectrum(x: torch.Tensor, cols: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """DFT of ``x`` ``(N, C, n_0, n_1)`` zero-padded to ``L`` by ``cols`` ``(n_1, 2K)`` then ``rows``
    ``(L_0, n_0)``, as ``(F, 2N, C)``: per frequency the real parts of the N samples stacked
    on their imaginary parts."""
    n, c, n0, n1 = x.shape
    spectrum = torch.view_as_complex((x.reshape(-1, n1) @ cols).unflatten(-1, (-1, 2)))
    x_hat = _to_frequency_major(spectrum.reshape(n, c, n0, -1), rows)                   # (F, N, C)
    return torch.view_as_real(x_hat).permute(0, 3, 1, 2).reshape(x_hat.shape[0], 2 * n, c)


class FrequencyDomainConvNorm(torch.autograd.Function):
    r"""``z = sample(F^{-1}[G ⊙ (X A^T)])``, see the module docstring.

    ``forward(x, weight, affine_weight, gain, constants)`` with ``x`` ``(N, C_in, n_0, n_1)``,
    ``weight`` ``(C_out, C_in, m_0, m_1)``, ``affine_weight`` ``(C_out, *taps)``, ``gain``
    :math:`\hat v` ``(C_out, L_0, K)`` (no gradient) and ``constants`` =
    ``(in_cols, in_rows, out_rows, out_cols, in_cols_t, in_rows_h, out_rows_h, out_cols_t,
    weight_basis, affine_basis)``: the input ``rfft`` columns ``(n_1, 2K)`` and DFT rows
    ``(L_0, n_0)``, the inverse evaluated on the output grid (``(O_0, L_0)``, ``(2K, O_1)``),
    their adjoints, and the kernel bases ``(taps, 2F)`` (real/imaginary interleaved) of
    ``convnorm.functional._kernel_basis``.
    """

    @staticmethod
    def forward(ctx, x, weight, affine_weight, gain, constants):
        in_cols, in_rows, out_rows, out_cols = constants[:4]
        weight_basis, affine_basis = constants[8:]
        n, c_in = x.shape[:2]
        c_out = weight.shape[0]
        frequencies = gain[0].numel()
        stacked = _stacked_spectrum(x, in_cols, in_rows)                                 # [X_r; X_i]
        weight_t = weight.reshape(c_out * c_in, -1).T
        complex_dtype = torch.complex128 if x.dtype == torch.float64 else torch.complex64
        u = torch.empty(frequencies, n, c_out, dtype=complex_dtype, device=x.device)  # X A^T, by chunks
        u_re, u_im = u.real, u.imag
        affine = torch.view_as_complex((affine_weight.reshape(c_out, -1) @ affine_basis).reshape(c_out, -1, 2))
        g = (gain.reshape(c_out, -1) * affine).T[:, None, :]                              # G, (F, 1, C_out)
        z = torch.empty_like(u)                                                           # G U
        chunks = _chunks(frequencies, 2 * c_out * c_in * x.element_size())
        spectra, products = _workspace(x, chunks, (2 * c_out, c_in), (2 * n, 2 * c_out))
        for part in chunks:
            f = part.stop - part.start
            a = torch.mm(weight_basis[:, 2 * part.start:2 * part.stop].T, weight_t,
                         out=spectra[:2 * f * c_out * c_in].view(2 * f, -1)).view(f, 2 * c_out, c_in)
            # [X_r; X_i] [A_r; A_i]^T, (f, 2N, 2C_out)
            r = torch.bmm(stacked[part], a.transpose(1, 2), out=products[:f * 4 * n * c_out].view(f, 2 * n, -1))
            u_re[part].copy_(r[:, :n, :c_out]).sub_(r[:, n:, c_out:])
            u_im[part].copy_(r[:, :n, c_out:]).add_(r[:, n:, :c_out])
            torch.mul(u[part], g[part], out=z[part])  # while the chunk is in cache
        ctx.save_for_backward(x, u, weight, affine_weight, gain, g)  # x, not its spectrum: x is kept anyway
        ctx.constants = constants
        return _from_frequency_major(z, out_rows, out_cols)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad):
        x, u, weight, affine_weight, gain, g = ctx.saved_tensors
        in_cols, in_rows = ctx.constants[:2]
        in_cols_t, in_rows_h, out_rows_h, out_cols_t, weight_basis, affine_basis = ctx.constants[4:]
        stacked = _stacked_spectrum(x, in_cols, in_rows)
        frequencies, n2, c_in = stacked.shape
        n, c_out = n2 // 2, weight.shape[0]
        grad_z = torch.view_as_complex((grad @ out_cols_t).unflatten(-1, (-1, 2)))
        grad_z = _to_frequency_major(grad_z, out_rows_h)                                  # (F, N, C_out)
        weight_t = weight.reshape(c_out * c_in, -1).T
        grad_stacked = torch.empty_like(stacked) if ctx.needs_input_grad[0] else None
        grad_weight = torch.zeros(weight_t.shape, dtype=weight.dtype, device=weight.device)
        grad_g = g.new_empty(frequencies, c_out) if ctx.needs_input_grad[2] else None
        chunks = _chunks(frequencies, 2 * c_out * c_in * stacked.element_size())
        spectra, blocks = _workspace(stacked, chunks, (2 * c_out, c_in), (2 * n, 2 * c_out))
        (products,) = _workspace(grad_z, chunks, (n, c_out))
        for part in chunks:
            f = part.stop - part.start
            basis = weight_basis[:, 2 * part.start:2 * part.stop]
            product = products[:f * n * c_out].view(f, n, c_out)
            if grad_g is not None:  # dG = sum_n dZ conj(U), while the chunk is in cache
                torch.sum(torch.mul(grad_z[part], u[part].conj(), out=product), 1, out=grad_g[part])
            grad_u = torch.mul(grad_z[part], g[part].conj(), out=product)                 # dU = conj(G) dZ
            # W = [[dU_r, dU_i], [dU_i, -dU_r]]: [dX_r; dX_i] = W [A_r; A_i], [dA_r; dA_i] = W^T [X_r; X_i]
            w = blocks[:f * 4 * n * c_out].view(f, 2 * n, 2 * c_out)
            w[:, :n, :c_out].copy_(grad_u.real)
            w[:, :n, c_out:].copy_(grad_u.imag)
            w[:, n:, :c_out].copy_(grad_u.imag)
            w[:, n:, c_out:].copy_(grad_u.real).neg_()
            a = spectra[:2 * f * c_out * c_in].view(f, 2 * c_out, c_in)
            if ctx.needs_input_grad[0]:
                torch.mm(basis.T, weight_t, out=a.view(2 * f, -1))
                torch.bmm(w, a, out=grad_stacked[part])
            if ctx.needs_input_grad[1]:  # the spectra's buffer is free again: dA goes there
                grad_weight.addmm_(basis, torch.bmm(w.transpose(1, 2), stacked[part], out=a).view(2 * f, -1))
        grad_x = grad_w = grad_affine = None
        if ctx.needs_input_grad[0]:
            grad_x_hat = torch.complex(grad_stacked[:, :n], grad_stacked[:, n:])
            grad_x = _from_frequency_major(grad_x_hat, in_rows_h, in_cols_t)
        if ctx.needs_input_grad[1]:
            grad_w = grad_weight.T.reshape(weight.shape)
        if grad_g is not None:  # d rho = Re(conj(basis) v dG)
            grad_g = grad_g * gain.reshape(c_out, -1).T
            grad_affine = (torch.view_as_real(grad_g.T.contiguous()).reshape(c_out, -1) @ affine_basis.T)
            grad_affine = grad_affine.reshape(affine_weight.shape)
        return grad_x, grad_w, grad_affine, None, None

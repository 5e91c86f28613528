r"""ConvNorm computed entirely in the frequency domain (2D, one group, no dilation,
stop-gradient): the CPU computation for maps up to 32x32 and for strided layers (see
:class:`~convnorm._policy.ComputationPolicy`).

The appendix procedure normalizes the *full*, unstrided convolution :math:`y = a \star x` of
size :math:`L = n + m - 1`. In the spatial domain that costs a convolution with :math:`L^2`
outputs per channel, :math:`(L/n)^2` times a ``Conv2d`` with padding and :math:`s^2 (L/n)^2`
times a strided one. In the frequency domain the whole layer is one complex matrix product
per frequency :math:`\omega` of the ``rfftn`` grid of size :math:`L`
(:math:`F = L_0 (L_1 // 2 + 1)` frequencies):

.. math::

    Z_{\cdot k}(\omega) = M_k(\omega) \sum_i X_{\cdot i}(\omega)\, A_{ki}(\omega), \qquad
    A_{ki}(\omega) = \sum_j a_{ki}[j]\, e^{2\pi i \langle \omega, j - c\rangle / L}, \qquad
    M_k = \hat v_k\, \hat\rho_k\, e^{2\pi i \langle\omega, \text{shift}\rangle / L},

with :math:`X` the DFT of the input zero-padded to :math:`L` (so the circular correlation is
the full linear one: the wrapped samples are the zero padding), :math:`c = m - 1` for zero
padding and :math:`c = p` for circular padding, :math:`\hat v_k` the normalizer, and
:math:`M_k` the multiplier: the normalizer times the affine kernel's spectrum, with the crop
offset as a phase. The output is the inverse DFT evaluated on the strided output grid only
(dense matrices, so crop and stride are free). Per frequency this costs
:math:`8 N C_\text{in} C_\text{out}` real flops against :math:`2 m^2 N C_\text{in} C_\text{out}`
per output sample for the direct convolution.

Only half the plane is computed. Everything here is real, so :math:`Z(-\omega) =
\overline{Z(\omega)}`; the ``rfftn`` grid keeps one of each such pair except in its
self-conjugate columns (:math:`\omega_1 = 0`, and :math:`\omega_1 = L_1/2` for even
:math:`L_1`), which hold both :math:`(\omega_0, \omega_1)` and :math:`(-\omega_0, \omega_1)`.
:func:`frequency_layout` orders the grid column by column with those repeats at the two
ends, so the products run over one contiguous slice of distinct frequencies
(:math:`\lfloor (L_0 - 1)/2 \rfloor` fewer per self-conjugate column: 20 instead of 24 at
:math:`L = 6`, 580 instead of 612 at :math:`L = 34`), and the repeats are filled in as
conjugates before the inverse transform (their gradients folded back in the backward pass).

Small maps (at most ``dense_2d_max_pixels`` pixels: the 8x8 and 4x4 maps of a CIFAR
ResNet) are transformed instead by one real matrix product each, with the dense 2D map
between the pixels and the real and imaginary parts of the distinct frequencies
(:math:`2F_d \times n_0 n_1`, built once by applying the per-axis transforms to unit
inputs, so it is the same map; on the output side the repeats are folded into it). The
product reads the input transposed and writes the frequency-major layout directly; for
such maps the per-axis products are too small for the matrix library.

Implementation. Every spectrum is *planar*: per frequency a real ``(2N, C)`` block, the real
parts of the N samples above their imaginary parts, never a complex tensor. The per-axis
transforms are real matrix products on these planes, so they need no layout copies: the
columns' ``rfft`` is computed transposed, as ``(2K, N C n_0)`` (real planes above imaginary
ones), which the row transforms (one ``bmm`` per plane, all columns :math:`k` at once) read
as transposed matrices and turn directly into the frequency-major planar layout; the
inverse transform does the same in reverse. (Complex interleaved spectra would need two
transposing copies of the whole spectrum in each direction.)
The complex products run as real ones on the stacked parts,
:math:`[X_r; X_i]\,[A_r; A_i]^\top` (one batched ``bmm`` per chunk of frequencies), and the
kernel spectra :math:`A` are built chunk by chunk from the weights by one small matrix
product with a cached basis into one buffer (and the chunk's products into another), both
reused by every chunk, so no tensor of :math:`F C_\text{out} C_\text{in}` complex numbers is
ever allocated (large fresh allocations page-fault on every step on Linux). The products
with :math:`M` (and, backward, with :math:`\bar M` and the affine kernel's
:math:`\partial M`) are taken chunk by chunk too, while the chunk is in cache, into
buffers reused by every chunk as well. The forward pass keeps the input's stacked spectrum at
the distinct frequencies (about :math:`(L/n)^2` times the input's size) for the backward pass, which then
transforms nothing but the output gradient. The
backward pass (hand-written, stop-gradient: :math:`\hat v` is a constant) uses, per
frequency, :math:`\partial X = \partial U \bar A`, :math:`\partial A = \partial U^\top \bar X`
with :math:`\partial U = \bar M\, \partial Z`, and :math:`\partial M = \sum_n \partial Z\, \bar U`;
the gradients of the real weights and affine kernels are the real parts of the same bases'
adjoints.
"""
from __future__ import annotations

from typing import NamedTuple

import torch

from ._caches import cached
from ._geometry import LayerGeometry, plane_sizes
from ._transforms import dense_dft, kernel_basis


def frequency_domain_constants(geometry: LayerGeometry, affine_taps: tuple[int, ...], dtype: torch.dtype,
                               device: torch.device, dense_input: bool, dense_output: bool) -> FrequencyDomainConstants:
    """The :class:`FrequencyDomainConstants` of a layer of ``geometry`` with an affine kernel of
    ``affine_taps`` (tap 0 read at the crop offset minus its centre), computing in ``dtype``
    on ``device``; the input and the output transformed by one dense 2D map each if
    ``dense_input``/``dense_output``."""
    if geometry.padding_mode == "circular":
        conv_shift = tuple(-p for p in geometry.padding)
    else:
        conv_shift = tuple(1 - m for m in geometry.kernel)
    shift = tuple(c - (t - 1) // 2 for c, t in zip(geometry.offset, affine_taps))
    size, length, stride, out_size, kernel = (plane_sizes(sizes) for sizes in (
        geometry.size, geometry.length, geometry.stride, geometry.out_size, geometry.kernel))
    return _constants(size, length, stride, out_size, kernel, plane_sizes(conv_shift), affine_taps, plane_sizes(shift),
                      dtype, device, dense_input, dense_output)


class FrequencyLayout(NamedTuple):
    """Order of the ``rfftn`` grid's frequencies used by :class:`FrequencyDomainConvNorm`
    (see :func:`frequency_layout`)."""

    rows: torch.Tensor
    """``(K, L_0)``: for each column :math:`\\omega_1`, its rows :math:`\\omega_0` in order."""
    grid: torch.Tensor
    """``(F,)``: the ``rfftn`` grid index :math:`\\omega_0 K + \\omega_1` of each position."""
    distinct: slice
    """The positions of the distinct frequencies, one contiguous slice."""
    repeats: torch.Tensor
    """Positions of the repeated frequencies (outside ``distinct``)."""
    mirrors: torch.Tensor
    """For each of ``repeats``, the position (inside ``distinct``) of its negative."""


@cached(maxsize=64)
def frequency_layout(length: tuple[int, int]) -> FrequencyLayout:
    r"""Column-major order of the ``rfftn`` grid of size :math:`L`, :math:`K = L_1 // 2 + 1`
    columns of :math:`L_0` rows, with each repeated frequency :math:`(\omega_0, \omega_1)`,
    :math:`\omega_0 > L_0 // 2`, of a self-conjugate column (the negative of
    :math:`(L_0 - \omega_0, \omega_1)`) at an end: column 0 lists its rows as
    :math:`L_0//2 + 1, \dots, L_0 - 1, 0, \dots, L_0//2` (repeats first), the other columns
    in natural order (in column :math:`L_1/2`, the last, repeats last). The distinct
    frequencies are then positions :math:`r` to :math:`F - r'`, with
    :math:`r = \lfloor (L_0 - 1)/2 \rfloor` and :math:`r' = r` for even :math:`L_1 \ge 2`,
    else 0."""
    l0, l1 = length
    k = l1 // 2 + 1
    half = l0 // 2
    repeated = l0 - half - 1
    rows = torch.arange(l0).repeat(k, 1)
    rows[0] = torch.cat([torch.arange(half + 1, l0), torch.arange(half + 1)])
    grid = (rows * k + torch.arange(k)[:, None]).reshape(-1)
    position = torch.empty_like(grid)
    position[grid] = torch.arange(grid.numel())
    last_repeats = l1 % 2 == 0 and k > 1
    repeats = torch.cat([torch.arange(repeated),
                         torch.arange(k * l0 - repeated, k * l0) if last_repeats else torch.arange(0)])
    columns = grid[repeats] % k
    mirrors = position[(-(grid[repeats] // k) % l0) * k + columns]
    return FrequencyLayout(rows, grid, slice(repeated, k * l0 - (repeated if last_repeats else 0)), repeats, mirrors)


class FrequencyDomainConstants(NamedTuple):
    """The fixed matrices of one layer geometry (see :func:`_constants`).
    Real and imaginary parts are kept in separate planes ("planar"), and the per-axis
    transforms are real matrices acting on them, so no transform needs a layout copy."""

    layout: FrequencyLayout
    in_cols: torch.Tensor
    """``(2K, n_1)``: ``rfft`` of the zero-padded input rows, real parts (rows ``0..K-1``)
    above imaginary parts (rows ``K..2K-1``)."""
    in_rows: torch.Tensor
    """``(2, K, 2 L_0, n_0)``: per plane :math:`p` (real, imaginary) of the column spectrum and
    per column :math:`k`, the DFT of the zero-padded rows in layout order, as the real map to
    the interleaved real and imaginary parts of each row frequency."""
    out_rows: torch.Tensor
    """``(2, K, 2 L_0, O_0)``: per output plane and column, the inverse DFT evaluated on the
    output rows, from the interleaved real and imaginary parts (the transpose of the real map)."""
    out_cols: torch.Tensor
    """``(2K, O_1)``: the inverse ``rfft`` evaluated on the output columns, rows as ``in_cols``."""
    weight_basis: torch.Tensor
    """``(taps, 2 F_d)``: the kernel spectra's basis at the distinct frequencies."""
    affine_basis: torch.Tensor
    """``(affine taps, 2 F_d)``: the affine kernel's basis there."""
    distinct_grid: torch.Tensor
    """``(F_d,)``: the ``rfftn`` grid index of each distinct frequency."""
    in_dense: torch.Tensor | None
    """``(2 F_d, n_0 n_1)``: the input's 2D DFT at the distinct frequencies, real and
    imaginary rows, as one real matrix (small inputs), or ``None``."""
    out_dense: torch.Tensor | None
    """``(2 F_d, O_0 O_1)``: the real-linear map from the distinct frequencies' real and
    imaginary parts to the output, the repeated frequencies folded in (small outputs), or
    ``None``."""
    chunks: tuple[slice, ...] = ()
    """The consecutive slices of the distinct frequencies whose kernel spectra are built at
    once (:func:`chunked`)."""
    largest_chunk: int = 0
    """The most frequencies in one of ``chunks``: the size of the buffers they share."""


def _planar_map(matrix: torch.Tensor) -> torch.Tensor:
    r"""``(K, R, C)`` complex :math:`M` → ``(2, K, 2R, C)`` real: plane 0 maps a real input
    :math:`a` to :math:`M a` and plane 1 an imaginary input :math:`i b` to :math:`i M b`, each
    with the real and imaginary part of every output row interleaved."""
    real, imag = matrix.real, matrix.imag
    k, r, c = matrix.shape
    return torch.stack([torch.stack([real, imag], 2), torch.stack([-imag, real], 2)]).reshape(2, k, 2 * r, c)


def _planar_columns(interleaved: torch.Tensor) -> torch.Tensor:
    """``(2K, ·)`` rows interleaved (real, imaginary per column frequency) → real rows above
    imaginary rows."""
    return interleaved.unflatten(0, (-1, 2)).transpose(0, 1).reshape(interleaved.shape).contiguous()


@cached(maxsize=32)
def _constants(size: tuple[int, int], length: tuple[int, int], stride: tuple[int, int], out_size: tuple[int, int],
               taps: tuple[int, int], conv_shift: tuple[int, int], affine_taps: tuple[int, ...], shift: tuple[int, int],
               dtype: torch.dtype, device: torch.device, dense_in: bool, dense_out: bool) -> FrequencyDomainConstants:
    """The constants of one layer geometry in :func:`frequency_layout`'s order: an input of
    ``size``, a kernel of ``taps`` whose tap 0 sits at lag ``conv_shift``, an affine kernel of
    ``affine_taps`` at lag ``shift``; the dense 2D maps for the input (``dense_in``) and the
    output (``dense_out``)."""
    dft = dense_dft(length, stride, out_size, dtype, device)
    weight_basis = kernel_basis(taps, conv_shift, length, dtype, device)
    affine_basis = kernel_basis(affine_taps, shift, length, dtype, device)
    rfft_cols, dft_rows, idft_rows, irfft_cols = dft.rfft_cols, dft.dft_rows, dft.idft_rows, dft.irfft_cols
    order = frequency_layout(length)
    layout = order._replace(rows=order.rows.to(dft_rows.device), grid=order.grid.to(dft_rows.device),
                            repeats=order.repeats.to(dft_rows.device),
                            mirrors=order.mirrors.to(dft_rows.device))  # indices on the matrices' device
    n0, n1 = size
    distinct = layout.grid[layout.distinct]

    def at_distinct(basis: torch.Tensor) -> torch.Tensor:
        return basis.unflatten(1, (-1, 2))[:, distinct].flatten(1)

    constants = FrequencyDomainConstants(
        layout, _planar_columns(rfft_cols[:n1].T), _planar_map(dft_rows[:, :n0][layout.rows]),
        _planar_map(idft_rows[:, layout.rows].permute(1, 2, 0).conj().resolve_conj()), _planar_columns(irfft_cols),
        at_distinct(weight_basis), at_distinct(affine_basis), distinct, None, None)
    # The dense 2D maps are the per-axis transforms applied to unit inputs: the same map, exactly.
    frequencies = distinct.numel()
    pixels = n0 * n1
    if dense_in:
        units = torch.eye(pixels, dtype=rfft_cols.dtype, device=rfft_cols.device).view(pixels, 1, n0, n1)
        spectrum = _planes_forward(units, constants.in_cols, constants.in_rows).view(layout.grid.numel(), 2, pixels)
        constants = constants._replace(in_dense=spectrum[layout.distinct].reshape(2 * frequencies, pixels))
    o0, o1 = idft_rows.shape[0], irfft_cols.shape[1]
    if dense_out:
        units = torch.zeros(layout.grid.numel(), 2, 2 * frequencies, dtype=rfft_cols.dtype, device=rfft_cols.device)
        index = torch.arange(frequencies, device=rfft_cols.device)
        units[layout.distinct.start + index, 0, 2 * index] = 1      # the real part of frequency f alone ...
        units[layout.distinct.start + index, 1, 2 * index + 1] = 1  # ... and its imaginary part
        constants = constants._replace(out_dense=_inverse_transform(units.view(-1, 4 * frequencies, 1), constants)
                                       .view(2 * frequencies, o0 * o1))
    return constants


def chunked(constants: FrequencyDomainConstants, frequencies_per_chunk: int | None) -> FrequencyDomainConstants:
    """``constants`` with the distinct frequencies cut into chunks of at most
    ``frequencies_per_chunk`` (None: one chunk), as :func:`_chunks` cuts them."""
    chunks = tuple(_chunks(constants.distinct_grid.numel(), frequencies_per_chunk))
    return constants._replace(chunks=chunks, largest_chunk=max(part.stop - part.start for part in chunks))


def _chunks(frequencies: int, frequencies_per_chunk: int | None) -> list[slice]:
    """``range(frequencies)`` cut into the fewest consecutive slices of at most
    ``frequencies_per_chunk`` each, of sizes differing by at most one (one slice if None)."""
    if frequencies_per_chunk is None:
        return [slice(0, frequencies)]
    count = -(-frequencies // frequencies_per_chunk)
    bounds = [frequencies * i // count for i in range(count + 1)]
    return [slice(a, b) for a, b in zip(bounds, bounds[1:])]


def _planes_forward(t: torch.Tensor, cols: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """Real ``(N, C, a, b)`` → ``(K, 2 L_0, N C)``: the per-column transform ``cols``
    ``(2K, b)`` computed transposed, as ``(2K, N C a)`` (real planes above imaginary ones),
    which the per-plane row maps ``rows`` ``(2, K, 2 L_0, a)`` read as transposed matrices,
    one ``bmm`` per plane, into the frequency-major planar layout."""
    _, k, _, a = rows.shape
    columns = (cols @ t.reshape(-1, t.shape[-1]).T).view(2, k, -1, a)
    out = torch.bmm(rows[0], columns[0].transpose(1, 2))
    return out.baddbmm_(rows[1], columns[1].transpose(1, 2))


def _planes_backward(spectrum: torch.Tensor, rows: torch.Tensor, cols: torch.Tensor,
                     shape: tuple[int, ...], functional: bool) -> torch.Tensor:
    """The transpose of :func:`_planes_forward`'s map: ``(F, 2N, C)`` in the layout's order →
    real ``shape`` ``(N, C, a, b)``, one ``bmm`` per plane writing the column spectra, then
    one product with ``cols`` ``(2K, b)``; ``functional``: without writing into a view (the
    compiled form; the caller knows which form it is in, so the check is not repeated here)."""
    _, k, l2, a = rows.shape
    nc = spectrum[0].numel() // 2
    transposed = spectrum.view(k, l2, nc).transpose(1, 2)
    if functional:  # no writes into views: see FrequencyDomainConvNorm
        columns = torch.stack([torch.bmm(transposed, rows[plane]) for plane in range(2)])
    else:
        columns = spectrum.new_empty(2, k, nc, a)
        for plane in range(2):
            torch.bmm(transposed, rows[plane], out=columns[plane])
    return (columns.view(2 * k, nc * a).T @ cols).view(shape)


def _inverse_transform(z_all: torch.Tensor, constants: FrequencyDomainConstants) -> torch.Tensor:
    """``(F, 2N, C)`` planar in the layout's order, its distinct frequencies filled in →
    ``(N, C, O_0, O_1)`` real: the inverse DFT on the output grid, each repeated frequency
    taken as its mirror's conjugate (filled in here, or folded into ``out_dense``)."""
    layout = constants.layout
    _, n2, c = z_all.shape
    n = n2 // 2
    o0, o1 = constants.out_rows.shape[-1], constants.out_cols.shape[1]
    if constants.out_dense is not None:
        return (z_all[layout.distinct].reshape(constants.out_dense.shape[0], n * c).T
                @ constants.out_dense).view(n, c, o0, o1)
    planes = z_all.view(z_all.shape[0], 2, n * c)
    planes[layout.repeats, 0] = planes[layout.mirrors, 0]
    planes[layout.repeats, 1] = -planes[layout.mirrors, 1]
    return _planes_backward(z_all, constants.out_rows, constants.out_cols, (n, c, o0, o1), functional=False)


def _with_repeats(z: torch.Tensor, constants: FrequencyDomainConstants) -> torch.Tensor:
    """``(F_d, 2N, C)`` planar at the distinct frequencies → ``(F, 2N, C)`` in the layout's order,
    each repeated frequency its mirror's conjugate: :func:`_inverse_transform`'s filling in,
    without writing into a view (the repeats lie before and after the distinct ones)."""
    layout = constants.layout
    start = layout.distinct.start
    if layout.repeats.numel() == 0:
        return z
    mirrored = _conjugate(z.view(z.shape[0], 2, -1).index_select(0, layout.mirrors - start)).view(-1, *z.shape[1:])
    return torch.cat([mirrored[:start], z, mirrored[start:]])


def _conjugate(planes: torch.Tensor) -> torch.Tensor:
    """``(F, 2, ·)`` planar (real, imaginary) → its conjugate."""
    return torch.cat([planes[:, :1], -planes[:, 1:]], 1)


def _inverse_transform_functional(z: torch.Tensor, constants: FrequencyDomainConstants) -> torch.Tensor:
    """:func:`_inverse_transform` of the distinct frequencies ``z`` ``(F_d, 2N, C)`` alone,
    without writing into a view (the compiled form)."""
    _, n2, c = z.shape
    n = n2 // 2
    o0, o1 = constants.out_rows.shape[-1], constants.out_cols.shape[1]
    if constants.out_dense is not None:
        return (z.reshape(constants.out_dense.shape[0], n * c).T @ constants.out_dense).view(n, c, o0, o1)
    return _planes_backward(_with_repeats(z, constants), constants.out_rows, constants.out_cols, (n, c, o0, o1),
                            functional=True)


def _inverse_transform_adjoint(grad: torch.Tensor, constants: FrequencyDomainConstants,
                               functional: bool) -> torch.Tensor:
    """Adjoint of :func:`_inverse_transform`: ``(N, C, O_0, O_1)`` → ``(F_d, 2N, C)`` planar
    (the gradients of the real parts above those of the imaginary parts); ``functional``: without
    writing into a view (the compiled form)."""
    layout = constants.layout
    n, c = grad.shape[:2]
    if constants.out_dense is not None:
        rows, pixels = constants.out_dense.shape
        return (constants.out_dense @ grad.reshape(n * c, pixels).T).view(rows // 2, 2 * n, c)
    grad_z = _planes_forward(grad, constants.out_cols, constants.out_rows)              # (K, 2 L_0, N C)
    frequencies = layout.grid.numel()
    planes = grad_z.view(frequencies, 2, n * c)
    if functional:  # no writes into views: see FrequencyDomainConvNorm
        folded = planes[layout.distinct].index_add(0, layout.mirrors - layout.distinct.start,
                                                   _conjugate(planes.index_select(0, layout.repeats)))
        return folded.view(-1, 2 * n, c)
    planes[:, 0].index_add_(0, layout.mirrors, planes[layout.repeats, 0])   # the repeats are conj(mirrors)
    planes[:, 1].index_add_(0, layout.mirrors, planes[layout.repeats, 1], alpha=-1)
    return grad_z.view(frequencies, 2 * n, c)[layout.distinct]


def _stacked_spectrum_adjoint(grad_all: torch.Tensor, constants: FrequencyDomainConstants,
                              size: tuple[int, int], functional: bool) -> torch.Tensor:
    """Adjoint of :func:`_stacked_spectrum`: ``(F, 2N, C)`` in the layout's order, zero at the
    repeated frequencies (which :func:`_stacked_spectrum` does not return) → ``(N, C, n_0, n_1)``."""
    _, n2, c = grad_all.shape
    n = n2 // 2
    if constants.in_dense is not None:
        rows = constants.in_dense.shape[0]
        return (grad_all[constants.layout.distinct].view(rows, n * c).T @ constants.in_dense).view(n, c, *size)
    return _planes_backward(grad_all, constants.in_rows, constants.in_cols, (n, c, *size), functional)


def _kernel_spectra(constants: FrequencyDomainConstants, part: slice, weight_t: torch.Tensor,
                    c_in: int) -> torch.Tensor:
    """``(f, 2 C_out, C_in)``: :math:`[A_r; A_i]` at the ``f`` distinct frequencies ``part``, from
    the weights ``weight_t`` ``(taps, C_out C_in)``."""
    return (constants.weight_basis[:, 2 * part.start:2 * part.stop].T @ weight_t).view(part.stop - part.start, -1,
                                                                                        c_in)


def _products_functional(stacked: torch.Tensor, weight_t: torch.Tensor, multiplier: torch.Tensor,
                         constants: FrequencyDomainConstants) -> tuple[torch.Tensor, torch.Tensor]:
    r"""The compiled form of the forward pass's products: :math:`U = X A^\top` and :math:`Z = M U`,
    ``(F_d, 2N, C_out)`` each, planar, chunk by chunk, joined by ``torch.cat`` instead of written
    into views of shared buffers."""
    n = stacked.shape[1] // 2
    c_out = multiplier.shape[-1]
    us, zs = [], []
    for part in constants.chunks:
        a = _kernel_spectra(constants, part, weight_t, stacked.shape[2])
        r = torch.bmm(stacked[part], a.transpose(1, 2))                                  # (f, 2N, 2C_out)
        u_r = r[:, :n, :c_out] - r[:, n:, c_out:]
        u_i = r[:, :n, c_out:] + r[:, n:, :c_out]
        m_r, m_i = multiplier[part, 0], multiplier[part, 1]
        us.append(torch.cat([u_r, u_i], 1))
        zs.append(torch.cat([u_r * m_r - u_i * m_i, u_i * m_r + u_r * m_i], 1))
    return torch.cat(us), torch.cat(zs)


def _products_adjoint_functional(ctx, grad_z: torch.Tensor, stacked: torch.Tensor, u: torch.Tensor,
                                 weight: torch.Tensor, weight_t: torch.Tensor, affine_weight: torch.Tensor,
                                 v_hat: torch.Tensor, multiplier: torch.Tensor) -> tuple:
    """The compiled form of :meth:`FrequencyDomainConvNorm.backward` after the output gradient's
    transform ``grad_z``: the same products, chunk by chunk, joined by ``torch.cat`` instead of
    written into views of shared buffers."""
    constants = ctx.constants
    layout = constants.layout
    n2, c_in = stacked.shape[1:]
    n, c_out = n2 // 2, weight.shape[0]
    grad_stacked, grad_multiplier = [], []
    grad_weight = None
    for part in constants.chunks:
        f = part.stop - part.start
        dz_r, dz_i, m_r, m_i = grad_z[part, :n], grad_z[part, n:], multiplier[part, 0], multiplier[part, 1]
        if ctx.needs_input_grad[2]:  # dM = sum_n dZ conj(U)
            u_r, u_i = u[part, :n], u[part, n:]
            grad_multiplier.append(torch.stack([(grad_z[part] * u[part]).sum(1), (dz_i * u_r - dz_r * u_i).sum(1)], 1))
        du_r, du_i = dz_r * m_r + dz_i * m_i, dz_i * m_r - dz_r * m_i                     # dU = conj(M) dZ
        w = torch.cat([torch.cat([du_r, du_i], 2), torch.cat([du_i, -du_r], 2)], 1)       # (f, 2N, 2C_out)
        if ctx.needs_input_grad[0]:
            grad_stacked.append(torch.bmm(w, _kernel_spectra(constants, part, weight_t, c_in)))
        if ctx.needs_input_grad[1]:
            term = constants.weight_basis[:, 2 * part.start:2 * part.stop] @ torch.bmm(w.transpose(1, 2),
                                                                                        stacked[part]).view(2 * f, -1)
            grad_weight = term if grad_weight is None else grad_weight + term
    grad_x = grad_w = grad_affine = None
    if ctx.needs_input_grad[0]:  # the repeated frequencies of X were not used: zero gradient
        distinct = torch.cat(grad_stacked)
        grad_all = torch.cat([distinct.new_zeros(layout.distinct.start, n2, c_in), distinct,
                              distinct.new_zeros(layout.grid.numel() - layout.distinct.stop, n2, c_in)])
        grad_x = _stacked_spectrum_adjoint(grad_all, constants, ctx.size, functional=True)
    if grad_weight is not None:
        grad_w = grad_weight.T.reshape(weight.shape)
    if grad_multiplier:  # d rho = Re(conj(basis) v-hat dM)
        grad_spectrum = torch.cat(grad_multiplier) * v_hat.permute(1, 2, 0)
        grad_affine = (grad_spectrum.permute(2, 0, 1).reshape(c_out, -1) @ constants.affine_basis.T).reshape(
            affine_weight.shape)
    return grad_x, grad_w, grad_affine, None


class FrequencyDomainConvNorm(torch.autograd.Function):
    r"""``z = sample(F^{-1}[M ⊙ (X A^T)])``, see the module docstring.

    ``forward(x, weight, affine_weight, (v_hat, constants))`` with ``x`` ``(N, C_in, n_0, n_1)``,
    ``weight`` ``(C_out, C_in, m_0, m_1)``, ``affine_weight`` ``(C_out, *taps)``, ``v_hat``
    :math:`\hat v` ``(C_out, L_0, K)`` and the layer geometry's :class:`FrequencyDomainConstants`,
    its chunks set (:func:`chunked`); ``v_hat`` rides with the constants because it takes no
    gradient (one argument less to ``apply``, which passes a Python frame per argument). Spectra are planar: per
    frequency ``(2N, C)``, the real parts of the N samples above their imaginary parts. The
    kernel spectra of a chunk are built into one buffer and its products into another, both
    reused by every chunk (``out=``), so the chunk loop allocates nothing.

    Under ``torch.compile`` the same products are written without a write into a view
    (:func:`_products_functional`, :func:`_products_adjoint_functional`, the repeated frequencies
    by :func:`_with_repeats`): each chunk's parts joined by ``torch.cat``. Traced as written
    for eager, every ``out=`` or ``copy_`` into a slice of a shared buffer and every ``index_put``
    on one becomes a ``slice_scatter`` of the whole buffer, each reading the one before, which
    inductor inlines into one another: scalar C++ loops of nested conditionals and integer
    divisions, whose code and compile time grow with every write (``benchmarks/bench_compile.py``'s
    training step then compiled in many times a plain network's time and ran slower than eager on a
    CPU). Compiled, the buffers are the compiler's business anyway.
    """

    @staticmethod
    def forward(ctx, x, weight, affine_weight, v_hat_and_constants):
        v_hat, constants = v_hat_and_constants
        layout = constants.layout
        n, c_in, n0, n1 = x.shape
        c_out = weight.shape[0]
        # [X_r; X_i]: the DFT of x zero-padded to L at the distinct frequencies, (F_d, 2N, C_in)
        if constants.in_dense is not None:  # rows (f, real/imaginary) x columns (n, c): the stacked layout
            stacked = (constants.in_dense @ x.reshape(n * c_in, n0 * n1).T).view(constants.distinct_grid.numel(), 2 * n,
                                                                                     c_in)
        else:
            stacked = _planes_forward(x, constants.in_cols, constants.in_rows).view(layout.grid.numel(), 2 * n,
                                                                                    c_in)[layout.distinct]
        frequencies = stacked.shape[0]
        weight_t = weight.reshape(c_out * c_in, -1).T
        affine = (affine_weight.reshape(c_out, -1) @ constants.affine_basis).view(c_out, frequencies, 2)
        v_hat = v_hat.reshape(c_out, -1)[:, constants.distinct_grid, None]                # (C_out, F_d, 1)
        multiplier = v_hat * affine                                                       # M, (C_out, F_d, 2)
        multiplier = multiplier.permute(1, 2, 0).unsqueeze(2).contiguous()                # (F_d, 2, 1, C_out)
        if torch.compiler.is_dynamo_compiling():  # no writes into views: see the class docstring
            u, z = _products_functional(stacked, weight_t, multiplier, constants)
            out = _inverse_transform_functional(z, constants)
        else:
            u = x.new_empty(frequencies, 2 * n, c_out)                                    # [U_r; U_i], U = X A^T
            z_all = x.new_empty(layout.grid.numel(), 2 * n, c_out)
            z = z_all[layout.distinct]                                                    # [Z_r; Z_i], Z = M U
            f_max = constants.largest_chunk
            spectra, products = x.new_empty(f_max * 2 * c_out * c_in), x.new_empty(f_max * 4 * n * c_out)
            for part in constants.chunks:
                f = part.stop - part.start
                a = torch.mm(constants.weight_basis[:, 2 * part.start:2 * part.stop].T, weight_t,
                             out=spectra[:2 * f * c_out * c_in].view(2 * f, -1)).view(f, 2 * c_out, c_in)
                # [X_r; X_i] [A_r; A_i]^T, (f, 2N, 2C_out)
                r = torch.bmm(stacked[part], a.transpose(1, 2),
                              out=products[:f * 4 * n * c_out].view(f, 2 * n, 2 * c_out))
                u_r, u_i, m_r, m_i = u[part, :n], u[part, n:], multiplier[part, 0], multiplier[part, 1]
                torch.sub(r[:, :n, :c_out], r[:, n:, c_out:], out=u_r)  # U_r = X_r A_r^T - X_i A_i^T
                torch.add(r[:, :n, c_out:], r[:, n:, :c_out], out=u_i)  # U_i = X_r A_i^T + X_i A_r^T
                torch.mul(u_r, m_r, out=z[part, :n]).addcmul_(u_i, m_i, value=-1)  # while the chunk is in cache
                torch.mul(u_i, m_r, out=z[part, n:]).addcmul_(u_r, m_i)
            out = _inverse_transform(z_all, constants)
        if any(ctx.needs_input_grad):
            ctx.save_for_backward(stacked, u, weight, affine_weight, v_hat, multiplier)
            ctx.constants = constants
            ctx.size = (n0, n1)
        return out

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad):
        stacked, u, weight, affine_weight, v_hat, multiplier = ctx.saved_tensors
        constants = ctx.constants
        layout = constants.layout
        frequencies, n2, c_in = stacked.shape
        n, c_out = n2 // 2, weight.shape[0]
        compiling = torch.compiler.is_dynamo_compiling()  # no writes into views: see the class docstring
        grad_z = _inverse_transform_adjoint(grad, constants, compiling)                   # [dZ_r; dZ_i]
        weight_t = weight.reshape(c_out * c_in, -1).T
        if compiling:
            return _products_adjoint_functional(ctx, grad_z, stacked, u, weight, weight_t, affine_weight, v_hat,
                                                multiplier)
        grad_all = grad_stacked = None
        if ctx.needs_input_grad[0]:  # the repeated frequencies of X were not used: zero gradient
            grad_all = stacked.new_empty(layout.grid.numel(), n2, c_in)
            grad_all[:layout.distinct.start].zero_()
            grad_all[layout.distinct.stop:].zero_()
            grad_stacked = grad_all[layout.distinct]
        grad_weight = torch.zeros(weight_t.shape, dtype=weight.dtype, device=weight.device)
        grad_multiplier = multiplier.new_empty(frequencies, 2, c_out) if ctx.needs_input_grad[2] else None
        f_max = constants.largest_chunk
        spectra, blocks = stacked.new_empty(f_max * 2 * c_out * c_in), stacked.new_empty(f_max * 4 * n * c_out)
        for part in constants.chunks:
            f = part.stop - part.start
            basis = constants.weight_basis[:, 2 * part.start:2 * part.stop]
            w = blocks[:f * 4 * n * c_out].view(f, 2 * n, 2 * c_out)
            dz_r, dz_i, m_r, m_i = grad_z[part, :n], grad_z[part, n:], multiplier[part, 0], multiplier[part, 1]
            if grad_multiplier is not None:  # dM = sum_n dZ conj(U), while the chunk is in cache (w as scratch)
                u_r, u_i = u[part, :n], u[part, n:]
                products = torch.mul(grad_z[part], u[part], out=w[:, :, :c_out])
                torch.sum(products, 1, out=grad_multiplier[part, 0])
                products = torch.mul(dz_i, u_r, out=w[:, :n, c_out:])
                torch.sum(products.addcmul_(dz_r, u_i, value=-1), 1, out=grad_multiplier[part, 1])
            # W = [[dU_r, dU_i], [dU_i, -dU_r]] with dU = conj(M) dZ:
            # [dX_r; dX_i] = W [A_r; A_i], [dA_r; dA_i] = W^T [X_r; X_i]
            torch.mul(dz_r, m_r, out=w[:, :n, :c_out]).addcmul_(dz_i, m_i)
            torch.mul(dz_i, m_r, out=w[:, :n, c_out:]).addcmul_(dz_r, m_i, value=-1)
            w[:, n:, :c_out].copy_(w[:, :n, c_out:])
            torch.neg(w[:, :n, :c_out], out=w[:, n:, c_out:])
            a = spectra[:2 * f * c_out * c_in].view(f, 2 * c_out, c_in)
            if grad_stacked is not None:
                torch.mm(basis.T, weight_t, out=a.view(2 * f, -1))
                torch.bmm(w, a, out=grad_stacked[part])
            if ctx.needs_input_grad[1]:  # the spectra's buffer is free again: dA goes there
                grad_weight.addmm_(basis, torch.bmm(w.transpose(1, 2), stacked[part], out=a).view(2 * f, -1))
        grad_x = grad_w = grad_affine = None
        if grad_all is not None:
            grad_x = _stacked_spectrum_adjoint(grad_all, constants, ctx.size, functional=False)
        if ctx.needs_input_grad[1]:
            grad_w = grad_weight.T.reshape(weight.shape)
        if grad_multiplier is not None:  # d rho = Re(conj(basis) v-hat dM)
            grad_spectrum = grad_multiplier * v_hat.permute(1, 2, 0)
            grad_affine = grad_spectrum.permute(2, 0, 1).reshape(c_out, -1) @ constants.affine_basis.T
            grad_affine = grad_affine.reshape(affine_weight.shape)
        return grad_x, grad_w, grad_affine, None

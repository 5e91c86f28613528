r"""The Triton kernels of :mod:`convnorm._fused_filter`: the spatial computation's per-channel
filter, forward and backward, each fused into one kernel. Importing this module decorates the
kernels, which is when triton reads ``TRITON_INTERPRET``, so :mod:`convnorm._fused_filter`
imports it when a kernel is first launched. Without triton it imports all the same (the
package's modules all do), with the kernels left plain functions that nothing launches.

Notation (planar real form of :class:`~convnorm._transforms.DenseDFT`): per sample and
channel a tile :math:`y` (:math:`L_0 \times L_1`), :math:`K = L_1/\!/2 + 1` and

* columns :math:`C^R[t, k] = \cos(2\pi tk/L_1)`, :math:`C^I[t, k] = -\sin(2\pi tk/L_1)` (``rfft_cols``);
* rows :math:`D^R[a, b] = \cos(2\pi ab/L_0)`, :math:`D^I[a, b] = -\sin(2\pi ab/L_0)` (``dft_rows``);
* inverse rows :math:`I^R + iI^I = ` ``idft_rows`` (:math:`O_0 \times L_0`, output rows :math:`s_0 u` only);
* inverse columns :math:`E^R, E^I` (:math:`K \times O_1`): the rows of ``irfft_cols`` that
  multiply the real and the imaginary parts of the spectrum;
* the channel's multiplier :math:`M^R + iM^I` (:math:`L_0 \times K`); :math:`\circ` is the
  elementwise product.

Every matrix is zero-padded to the kernels' power-of-two block sizes, so the padded rows and
columns of every product are zero and only the loads of ``y``, ``g`` and ``M`` and the stores
need masks. Every product accumulates in float32 (``tl.dot``'s ``input_precision`` is the
caller's choice).
"""
from __future__ import annotations

try:
    import triton
    import triton.language as tl
    jit = triton.jit
except ImportError:  # convnorm._fused_filter refuses to launch without triton
    def jit(kernel):
        """The kernel undecorated (triton absent)."""
        return kernel


@jit
def _load_planes(pointer, ROWS: tl.constexpr, COLS: tl.constexpr):
    """The real and imaginary planes of a padded ``(2, ROWS, COLS)`` contiguous matrix."""
    offsets = tl.arange(0, ROWS)[:, None] * COLS + tl.arange(0, COLS)[None, :]
    return tl.load(pointer + offsets), tl.load(pointer + ROWS * COLS + offsets)


@jit
def _load_planes_transposed(pointer, ROWS: tl.constexpr, COLS: tl.constexpr):
    """The planes of a padded ``(2, COLS, ROWS)`` contiguous matrix, transposed to ``(ROWS, COLS)``
    by the load's indexing (a matrix is loaded once per program, so its layout costs nothing)."""
    offsets = tl.arange(0, ROWS)[:, None] + tl.arange(0, COLS)[None, :] * ROWS
    return tl.load(pointer + offsets), tl.load(pointer + ROWS * COLS + offsets)


@jit
def _tile(stride0, stride1, rows, cols, ROWS: tl.constexpr, COLS: tl.constexpr):
    """The offsets (through the strides) and the mask of a ``(rows, cols)`` tile in a
    ``(ROWS, COLS)`` block."""
    i = tl.arange(0, ROWS)[:, None]
    j = tl.arange(0, COLS)[None, :]
    return i * stride0 + j * stride1, (i < rows) & (j < cols)


@jit
def _load_multiplier(real_ptr, imag_ptr, channel, L0, K, L0P: tl.constexpr, KP: tl.constexpr):
    """The planes of channel ``channel`` (an int64) of a ``(C, L0, K)`` contiguous multiplier,
    zero-padded to ``(L0P, KP)``."""
    offsets, mask = _tile(K, 1, L0, K, L0P, KP)
    offsets += channel * L0 * K
    return tl.load(real_ptr + offsets, mask=mask, other=0.0), tl.load(imag_ptr + offsets, mask=mask, other=0.0)


@jit
def _spectrum(tile, cr, ci, dr, di, PRECISION: tl.constexpr):
    r"""The half spectrum :math:`Y` of a float32 tile :math:`y`: :math:`H = y C` (columns), then
    :math:`Y = D H` (rows), as real and imaginary planes:
    :math:`Y^R = D^R H^R - D^I H^I`, :math:`Y^I = D^R H^I + D^I H^R`."""
    hr = tl.dot(tile, cr, input_precision=PRECISION)
    hi = tl.dot(tile, ci, input_precision=PRECISION)
    yr = tl.dot(dr, hr, input_precision=PRECISION) - tl.dot(di, hi, input_precision=PRECISION)
    yi = tl.dot(dr, hi, input_precision=PRECISION) + tl.dot(di, hr, input_precision=PRECISION)
    return yr, yi


@jit
def forward_kernel(y_ptr, z_ptr, multiplier_real_ptr, multiplier_imag_ptr, bias_ptr, columns_ptr, rows_ptr,
                   inverse_rows_ptr, inverse_columns_ptr, N, L0, L1, K, O0, O1,
                   y_sn, y_sc, y_s0, y_s1, z_sn, z_sc, z_s0, z_s1, samples_per_program,
                   L0P: tl.constexpr, L1P: tl.constexpr, KP: tl.constexpr, O0P: tl.constexpr, O1P: tl.constexpr,
                   HAS_BIAS: tl.constexpr, PRECISION: tl.constexpr):
    r"""Program ``(c, j)``: channel :math:`c`, samples :math:`j B \le n < \min((j + 1)B, N)`
    (:math:`B` = ``samples_per_program``). The matrices and the multiplier are loaded once; per
    sample one read of the tile :math:`y_{nc}` (through its strides, any dtype, as float32), then

    .. math:: Y = D(yC), \quad P = M \circ Y, \quad Q = I P, \quad
              z = Q^R E^R + Q^I E^I\ (+\, b_c)

    (complex products in planes: :math:`P^R = M^R \circ Y^R - M^I \circ Y^I`,
    :math:`P^I = M^R \circ Y^I + M^I \circ Y^R`, :math:`Q^R = I^R P^R - I^I P^I`,
    :math:`Q^I = I^R P^I + I^I P^R`) and one write of :math:`z_{nc}` (:math:`O_0 \times O_1`,
    through its strides, in its dtype)."""
    channel = tl.program_id(0).to(tl.int64)
    first = tl.program_id(1).to(tl.int64) * samples_per_program
    last = tl.minimum(first + samples_per_program, N)
    cr, ci = _load_planes(columns_ptr, L1P, KP)
    dr, di = _load_planes(rows_ptr, L0P, L0P)
    ir, ii = _load_planes(inverse_rows_ptr, O0P, L0P)
    er, ei = _load_planes(inverse_columns_ptr, KP, O1P)
    mr, mi = _load_multiplier(multiplier_real_ptr, multiplier_imag_ptr, channel, L0, K, L0P, KP)
    y_offsets, y_mask = _tile(y_s0, y_s1, L0, L1, L0P, L1P)
    z_offsets, z_mask = _tile(z_s0, z_s1, O0, O1, O0P, O1P)
    for n in range(first, last):  # n is an int64: every offset is computed in int64
        tile = tl.load(y_ptr + n * y_sn + channel * y_sc + y_offsets, mask=y_mask, other=0.0).to(tl.float32)
        yr, yi = _spectrum(tile, cr, ci, dr, di, PRECISION)
        pr = mr * yr - mi * yi
        pi = mr * yi + mi * yr
        qr = tl.dot(ir, pr, input_precision=PRECISION) - tl.dot(ii, pi, input_precision=PRECISION)
        qi = tl.dot(ir, pi, input_precision=PRECISION) + tl.dot(ii, pr, input_precision=PRECISION)
        z = tl.dot(qr, er, input_precision=PRECISION) + tl.dot(qi, ei, input_precision=PRECISION)
        if HAS_BIAS:
            z += tl.load(bias_ptr + channel).to(tl.float32)
        tl.store(z_ptr + n * z_sn + channel * z_sc + z_offsets, z.to(z_ptr.dtype.element_ty), mask=z_mask)


@jit
def backward_kernel(g_ptr, y_ptr, grad_y_ptr, products_ptr, multiplier_real_ptr, multiplier_imag_ptr, columns_ptr,
                    rows_ptr, inverse_rows_ptr, inverse_columns_ptr, N, C, L0, L1, K, O0, O1,
                    g_sn, g_sc, g_s0, g_s1, y_sn, y_sc, y_s0, y_s1, grad_y_sn, grad_y_sc, grad_y_s0, grad_y_s1,
                    samples_per_program, L0P: tl.constexpr, L1P: tl.constexpr, KP: tl.constexpr,
                    O0P: tl.constexpr, O1P: tl.constexpr, NEED_GRAD_Y: tl.constexpr, NEED_PRODUCTS: tl.constexpr,
                    PRECISION: tl.constexpr):
    r"""Program ``(c, j)`` as in :func:`forward_kernel`. Per sample one read of
    :math:`g = \partial\mathcal L/\partial z_{nc}`, whose pull-back through the inverse transform
    is the gradient :math:`\Gamma` of the product spectrum :math:`P`:

    .. math:: G^R = g E^{R\top},\ G^I = g E^{I\top}, \qquad
              \Gamma^R = I^{R\top} G^R + I^{I\top} G^I,\ \Gamma^I = I^{R\top} G^I - I^{I\top} G^R.

    If ``NEED_GRAD_Y``, the adjoint of the forward transform applied to
    :math:`A = \Gamma \circ \overline M` (:math:`D` is symmetric, so :math:`D^H = D^R - iD^I`),
    written through the strides of ``grad_y``:

    .. math:: A^R = M^R \circ \Gamma^R + M^I \circ \Gamma^I,\ A^I = M^R \circ \Gamma^I - M^I \circ \Gamma^R,
              \quad B^R = D^R A^R + D^I A^I,\ B^I = D^R A^I - D^I A^R,
              \quad \partial\mathcal L/\partial y_{nc} = B^R C^{R\top} + B^I C^{I\top}.

    If ``NEED_PRODUCTS``, :math:`Y` recomputed from a read of :math:`y_{nc}` and the sum over the
    program's samples of :math:`\overline Y \circ \Gamma`
    (:math:`S^R \mathrel{+}= Y^R \circ \Gamma^R + Y^I \circ \Gamma^I`,
    :math:`S^I \mathrel{+}= Y^R \circ \Gamma^I - Y^I \circ \Gamma^R`), stored once at the end at
    ``products[:, j, c]`` of a ``(2, J, C, L0, K)`` float32 buffer (no atomics: the caller sums
    over :math:`j`)."""
    channel = tl.program_id(0).to(tl.int64)
    block = tl.program_id(1).to(tl.int64)
    first = block * samples_per_program
    last = tl.minimum(first + samples_per_program, N)
    irt, iit = _load_planes_transposed(inverse_rows_ptr, L0P, O0P)
    ert, eit = _load_planes_transposed(inverse_columns_ptr, O1P, KP)
    mr, mi = _load_multiplier(multiplier_real_ptr, multiplier_imag_ptr, channel, L0, K, L0P, KP)
    g_offsets, g_mask = _tile(g_s0, g_s1, O0, O1, O0P, O1P)
    y_offsets, y_mask = _tile(y_s0, y_s1, L0, L1, L0P, L1P)
    dr, di = _load_planes(rows_ptr, L0P, L0P)  # symmetric: also the transposes
    if NEED_GRAD_Y:
        crt, cit = _load_planes_transposed(columns_ptr, KP, L1P)
        grad_y_offsets, _ = _tile(grad_y_s0, grad_y_s1, L0, L1, L0P, L1P)
    if NEED_PRODUCTS:
        cr, ci = _load_planes(columns_ptr, L1P, KP)
        sr = tl.zeros((L0P, KP), dtype=tl.float32)
        si = tl.zeros((L0P, KP), dtype=tl.float32)
    for n in range(first, last):  # n is an int64: every offset is computed in int64
        g = tl.load(g_ptr + n * g_sn + channel * g_sc + g_offsets, mask=g_mask, other=0.0).to(tl.float32)
        gr = tl.dot(g, ert, input_precision=PRECISION)
        gi = tl.dot(g, eit, input_precision=PRECISION)
        gpr = tl.dot(irt, gr, input_precision=PRECISION) + tl.dot(iit, gi, input_precision=PRECISION)
        gpi = tl.dot(irt, gi, input_precision=PRECISION) - tl.dot(iit, gr, input_precision=PRECISION)
        if NEED_GRAD_Y:
            ar = mr * gpr + mi * gpi
            ai = mr * gpi - mi * gpr
            br = tl.dot(dr, ar, input_precision=PRECISION) + tl.dot(di, ai, input_precision=PRECISION)
            bi = tl.dot(dr, ai, input_precision=PRECISION) - tl.dot(di, ar, input_precision=PRECISION)
            grad_y = tl.dot(br, crt, input_precision=PRECISION) + tl.dot(bi, cit, input_precision=PRECISION)
            tl.store(grad_y_ptr + n * grad_y_sn + channel * grad_y_sc + grad_y_offsets,
                     grad_y.to(grad_y_ptr.dtype.element_ty), mask=y_mask)
        if NEED_PRODUCTS:
            tile = tl.load(y_ptr + n * y_sn + channel * y_sc + y_offsets, mask=y_mask, other=0.0)
            yr, yi = _spectrum(tile.to(tl.float32), cr, ci, dr, di, PRECISION)
            sr += yr * gpr + yi * gpi
            si += yr * gpi - yi * gpr
    if NEED_PRODUCTS:
        plane = tl.num_programs(1).to(tl.int64) * C * L0 * K
        offsets, mask = _tile(K, 1, L0, K, L0P, KP)
        offsets += (block * C + channel) * L0 * K
        tl.store(products_ptr + offsets, sr, mask=mask)
        tl.store(products_ptr + plane + offsets, si, mask=mask)

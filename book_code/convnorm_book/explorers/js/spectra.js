// The numbers behind the explorers, computed in the reader's browser: DFTs, kernel power
// spectra, the ConvNorm normalizer and symmetric eigenvalues, all in float64.
//
// Each function mirrors a function of the Python package (named in its comment), which stays
// the reference: tests/book/test_explorers_parity.py runs these in Node.js on the same inputs and
// compares. A script, not a module: it adds its functions to the namespace object `CX` that
// the page (or the test) provides.
(function (CX) {
  "use strict";

  // A base64 string of little-endian float64 values (numpy's '<f8' bytes) as a Float64Array.
  function decodeFloat64(text) {
    const binary = atob(text);
    const bytes = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    return new Float64Array(bytes.buffer);
  }

  // cos and sin of 2*pi*j/n for j = 0..n-1, computed as numpy does: (2 * pi * j) / n.
  const twiddleCache = new Map();
  function twiddles(n) {
    let table = twiddleCache.get(n);
    if (!table) {
      const cos = new Float64Array(n), sin = new Float64Array(n);
      for (let j = 0; j < n; j++) {
        const angle = (2 * Math.PI * j) / n;
        cos[j] = Math.cos(angle);
        sin[j] = Math.sin(angle);
      }
      table = { cos, sin };
      twiddleCache.set(n, table);
    }
    return table;
  }

  function smallestFactor(n) {
    for (let p = 2; p * p <= n; p++) if (n % p === 0) return p;
    return n;
  }

  // Mixed-radix Cooley-Tukey (decimation in time): the length-n DFT of x[off + q*stride] into
  // y[yOff .. yOff + n), with the twiddles of the top length `total`. A prime length is summed
  // directly, so every length works; the cost is O(n * sum of n's prime factors).
  function transform(xr, xi, off, stride, n, yr, yi, yOff, total, sign, table) {
    const p = smallestFactor(n), step = total / n;
    if (p === n) {
      for (let k = 0; k < n; k++) {
        let sr = 0, si = 0;
        for (let q = 0; q < n; q++) {
          const j = ((q * k) % n) * step, c = table.cos[j], s = sign * table.sin[j];
          const ar = xr[off + q * stride], ai = xi[off + q * stride];
          sr += ar * c - ai * s;
          si += ar * s + ai * c;
        }
        yr[yOff + k] = sr;
        yi[yOff + k] = si;
      }
      return;
    }
    const m = n / p;
    for (let q = 0; q < p; q++) transform(xr, xi, off + q * stride, stride * p, m, yr, yi, yOff + q * m, total, sign, table);
    if (p === 2) {  // the butterfly y[k], y[k + m] = a +- w^k b
      for (let k = 0; k < m; k++) {
        const c = table.cos[k * step], s = sign * table.sin[k * step];
        const ar = yr[yOff + k], ai = yi[yOff + k], br = yr[yOff + m + k], bi = yi[yOff + m + k];
        const tr = br * c - bi * s, ti = br * s + bi * c;
        yr[yOff + k] = ar + tr;
        yi[yOff + k] = ai + ti;
        yr[yOff + m + k] = ar - tr;
        yi[yOff + m + k] = ai - ti;
      }
      return;
    }
    const tr = new Float64Array(p), ti = new Float64Array(p);
    for (let k = 0; k < m; k++) {
      for (let q = 0; q < p; q++) {
        tr[q] = yr[yOff + q * m + k];
        ti[q] = yi[yOff + q * m + k];
      }
      for (let r = 0; r < p; r++) {
        const out = k + r * m;
        let sr = 0, si = 0;
        for (let q = 0; q < p; q++) {
          const j = ((q * out) % n) * step, c = table.cos[j], s = sign * table.sin[j];
          sr += tr[q] * c - ti[q] * s;
          si += tr[q] * s + ti[q] * c;
        }
        yr[yOff + out] = sr;
        yi[yOff + out] = si;
      }
    }
  }

  // The DFT X[w] = sum_t x[t] exp(-2 pi i w t / n) (numpy.fft.fft), or with inverse = true the
  // inverse transform (1/n) sum_w X[w] exp(+2 pi i w t / n) (numpy.fft.ifft). Returns {re, im}.
  function fft(re, im, inverse) {
    const n = re.length;
    const outRe = new Float64Array(n), outIm = new Float64Array(n);
    const imag = im || new Float64Array(n);
    transform(re, imag, 0, 1, n, outRe, outIm, 0, n, inverse ? 1 : -1, twiddles(n));
    if (inverse) {
      for (let j = 0; j < n; j++) {
        outRe[j] /= n;
        outIm[j] /= n;
      }
    }
    return { re: outRe, im: outIm };
  }

  // The 2D DFT of a row-major rows x cols array (numpy.fft.fft2 / ifft2): rows, then columns.
  function fft2(re, im, rows, cols, inverse) {
    const outRe = new Float64Array(rows * cols), outIm = new Float64Array(rows * cols);
    const imag = im || new Float64Array(rows * cols);
    const lineRe = new Float64Array(Math.max(rows, cols)), lineIm = new Float64Array(Math.max(rows, cols));
    for (let r = 0; r < rows; r++) {
      const row = fft(re.subarray(r * cols, (r + 1) * cols), imag.subarray(r * cols, (r + 1) * cols), inverse);
      outRe.set(row.re, r * cols);
      outIm.set(row.im, r * cols);
    }
    for (let c = 0; c < cols; c++) {
      const colRe = lineRe.subarray(0, rows), colIm = lineIm.subarray(0, rows);
      for (let r = 0; r < rows; r++) {
        colRe[r] = outRe[r * cols + c];
        colIm[r] = outIm[r * cols + c];
      }
      const col = fft(colRe, colIm, inverse);
      for (let r = 0; r < rows; r++) {
        outRe[r * cols + c] = col.re[r];
        outIm[r * cols + c] = col.im[r];
      }
    }
    return { re: outRe, im: outIm };
  }

  // The DFT of a kernel zero-padded to length n, at the `bins` first frequencies (n for the
  // full spectrum, n // 2 + 1 for numpy.fft.rfft), summed over its taps directly.
  function kernelDft(taps, n, bins) {
    const count = bins === undefined ? n : bins;
    const table = twiddles(n);
    const re = new Float64Array(count), im = new Float64Array(count);
    for (let w = 0; w < count; w++) {
      let sr = 0, si = 0;
      for (let t = 0; t < taps.length; t++) {
        const j = (t * w) % n;
        sr += taps[t] * table.cos[j];
        si -= taps[t] * table.sin[j];
      }
      re[w] = sr;
      im[w] = si;
    }
    return { re, im };
  }

  // The 2D DFT of a row-major kh x kw kernel zero-padded to n1 x n2 (numpy.fft.fft2(k, s=(n1, n2))).
  function kernelDft2(taps, kh, kw, n1, n2) {
    const t1 = twiddles(n1), t2 = twiddles(n2);
    const re = new Float64Array(n1 * n2), im = new Float64Array(n1 * n2);
    for (let w1 = 0; w1 < n1; w1++) {
      for (let w2 = 0; w2 < n2; w2++) {
        let sr = 0, si = 0;
        for (let i = 0; i < kh; i++) {
          const j1 = (i * w1) % n1;
          for (let j = 0; j < kw; j++) {
            const j2 = (j * w2) % n2;
            // exp(-i(x + y)) = (cos x cos y - sin x sin y) - i (sin x cos y + cos x sin y)
            const c = t1.cos[j1] * t2.cos[j2] - t1.sin[j1] * t2.sin[j2];
            const s = t1.sin[j1] * t2.cos[j2] + t1.cos[j1] * t2.sin[j2];
            sr += taps[i * kw + j] * c;
            si -= taps[i * kw + j] * s;
          }
        }
        re[w1 * n2 + w2] = sr;
        im[w1 * n2 + w2] = si;
      }
    }
    return { re, im };
  }

  // The summed autocorrelation r[tau] = sum_i sum_t a_i[t] a_i[t + tau] of the kernels of one
  // output channel (convnorm.fourier.kernel_autocorrelation), for 1D kernels (shape [k]) or 2D
  // ones (shape [kh, kw]), each a row-major array; lag tau is stored at tau + k - 1 per axis.
  function autocorrelation(kernels, shape) {
    const [kh, kw] = shape.length === 1 ? [1, shape[0]] : shape;
    const lh = 2 * kh - 1, lw = 2 * kw - 1;
    const r = new Float64Array(lh * lw);
    for (const a of kernels) {
      for (let s1 = 0; s1 < kh; s1++) for (let s2 = 0; s2 < kw; s2++) {
        const x = a[s1 * kw + s2];
        for (let t1 = 0; t1 < kh; t1++) for (let t2 = 0; t2 < kw; t2++) {
          r[(t1 - s1 + kh - 1) * lw + (t2 - s2 + kw - 1)] += x * a[t1 * kw + t2];
        }
      }
    }
    return r;
  }

  // Angles 2*pi*((tau * w) mod n)/n of convnorm.fourier._cosine_basis, lags tau = -(k-1)..k-1.
  function lagAngles(k, n, bins) {
    const lags = 2 * k - 1, angle = new Float64Array(lags * bins);
    for (let l = 0; l < lags; l++) {
      const tau = l - (k - 1);
      for (let w = 0; w < bins; w++) angle[l * bins + w] = (2 * Math.PI * ((((tau * w) % n) + n) % n)) / n;
    }
    return angle;
  }

  const basisCache = new Map();
  // The cosine basis cos(2*pi*<w, tau>/n) of convnorm.fourier._cosine_basis, cached per geometry.
  function cosineBasis(shape, size, onesided) {
    const key = `${shape}|${size}|${onesided}`;
    let basis = basisCache.get(key);
    if (basis) return basis;
    if (shape.length === 1) {
      const bins = onesided ? Math.floor(size[0] / 2) + 1 : size[0];
      basis = lagAngles(shape[0], size[0], bins).map(Math.cos);
    } else {
      const [kh, kw] = shape, [n1, n2] = size;
      const b2 = onesided ? Math.floor(n2 / 2) + 1 : n2;
      const a1 = lagAngles(kh, n1, n1), a2 = lagAngles(kw, n2, b2);
      const lh = 2 * kh - 1, lw = 2 * kw - 1, bins = n1 * b2;
      basis = new Float64Array(lh * lw * bins);
      for (let l1 = 0; l1 < lh; l1++) for (let l2 = 0; l2 < lw; l2++) {
        const row = (l1 * lw + l2) * bins;
        for (let w1 = 0; w1 < n1; w1++) for (let w2 = 0; w2 < b2; w2++) {
          basis[row + w1 * b2 + w2] = Math.cos(a1[l1 * n1 + w1] + a2[l2 * b2 + w2]);
        }
      }
    }
    if (basisCache.size > 32) basisCache.clear();
    basisCache.set(key, basis);
    return basis;
  }

  // The power spectrum s(w) = sum_i |a_i^(w)|^2 of the kernels of one output channel at signal
  // size `size` ([n] or [n1, n2]), as convnorm.fourier.kernel_power_spectrum computes it: the
  // cosine transform of the summed autocorrelation, clamped at 0. `onesided` keeps the rfft
  // half of the last axis. Row-major, length n (or n1 * n2, or the halves).
  function powerSpectrum(kernels, shape, size, onesided) {
    const r = autocorrelation(kernels, shape);
    const basis = cosineBasis(shape, size, onesided);
    const bins = basis.length / r.length;
    const s = new Float64Array(bins);
    for (let l = 0; l < r.length; l++) {
      const weight = r[l];
      if (weight === 0) continue;
      const row = l * bins;
      for (let w = 0; w < bins; w++) s[w] += weight * basis[row + w];
    }
    for (let w = 0; w < bins; w++) if (s[w] < 0) s[w] = 0;
    return s;
  }

  // The ConvNorm normalizer v^(w) = (s(w) + eps)^(-1/2) (convnorm.fourier.normalizer_spectrum).
  function normalizer(s, eps) {
    return s.map((value) => 1 / Math.sqrt(value + eps));
  }

  // True where convnorm.allpass.normalizer_filter refuses a spectrum (eps = 0): the smallest
  // gain is within sqrt(machine epsilon) of zero relative to the largest, or not finite.
  function vanishes(vHat) {
    let max = -Infinity, min = Infinity;
    for (const value of vHat) {
      max = Math.max(max, value);
      min = Math.min(min, value);
    }
    return !(max * Math.sqrt(Number.EPSILON) < min);
  }

  // The ratio of the largest to the smallest of `values` (Infinity when the smallest is 0).
  function conditionNumber(values) {
    let max = -Infinity, min = Infinity;
    for (const value of values) {
      max = Math.max(max, value);
      min = Math.min(min, value);
    }
    return min > 0 ? max / min : Infinity;
  }

  function hypot(a, b) {
    const x = Math.abs(a), y = Math.abs(b);
    if (x > y) return x * Math.sqrt(1 + (y / x) * (y / x));
    return y === 0 ? 0 : y * Math.sqrt(1 + (x / y) * (x / y));
  }

  // The eigenvalues of a symmetric n x n matrix (row-major), ascending, as numpy.linalg.eigvalsh:
  // Householder reduction to tridiagonal form, then the implicit QL iteration with Wilkinson
  // shifts. Backward stable, so each eigenvalue is within a few units of rounding of ||A||.
  function symmetricEigenvalues(matrix, n) {
    const a = Float64Array.from(matrix), d = new Float64Array(n), e = new Float64Array(n);
    for (let i = n - 1; i > 0; i--) {
      const l = i - 1;
      let h = 0, scale = 0;
      if (l > 0) {
        for (let k = 0; k <= l; k++) scale += Math.abs(a[i * n + k]);
        if (scale === 0) {
          e[i] = a[i * n + l];
        } else {
          for (let k = 0; k <= l; k++) {
            a[i * n + k] /= scale;
            h += a[i * n + k] * a[i * n + k];
          }
          const f = a[i * n + l];
          const g = f >= 0 ? -Math.sqrt(h) : Math.sqrt(h);
          e[i] = scale * g;
          h -= f * g;
          a[i * n + l] = f - g;
          let sum = 0;
          for (let j = 0; j <= l; j++) {
            let gj = 0;
            for (let k = 0; k <= j; k++) gj += a[j * n + k] * a[i * n + k];
            for (let k = j + 1; k <= l; k++) gj += a[k * n + j] * a[i * n + k];
            e[j] = gj / h;
            sum += e[j] * a[i * n + j];
          }
          const hh = sum / (h + h);
          for (let j = 0; j <= l; j++) {
            const fj = a[i * n + j];
            const gj = (e[j] -= hh * fj);
            for (let k = 0; k <= j; k++) a[j * n + k] -= fj * e[k] + gj * a[i * n + k];
          }
        }
      } else {
        e[i] = a[i * n + l];
      }
      d[i] = h;
    }
    for (let i = 0; i < n; i++) d[i] = a[i * n + i];
    for (let i = 1; i < n; i++) e[i - 1] = e[i];
    e[n - 1] = 0;
    for (let l = 0; l < n; l++) {
      for (let iteration = 0; ; iteration++) {
        let m = l;
        for (; m < n - 1; m++) {
          const dd = Math.abs(d[m]) + Math.abs(d[m + 1]);
          if (Math.abs(e[m]) <= Number.EPSILON * dd) break;
        }
        if (m === l) break;
        if (iteration === 60) throw new Error("symmetricEigenvalues: no convergence");
        let g = (d[l + 1] - d[l]) / (2 * e[l]);
        let r = hypot(g, 1);
        g = d[m] - d[l] + e[l] / (g + (g >= 0 ? Math.abs(r) : -Math.abs(r)));
        let s = 1, c = 1, p = 0, i = m - 1;
        for (; i >= l; i--) {
          let f = s * e[i];
          const b = c * e[i];
          e[i + 1] = r = hypot(f, g);
          if (r === 0) {
            d[i + 1] -= p;
            e[m] = 0;
            break;
          }
          s = f / r;
          c = g / r;
          g = d[i + 1] - p;
          r = (d[i] - g) * s + 2 * c * b;
          p = s * r;
          d[i + 1] = g + p;
          g = c * r - b;
        }
        if (r === 0 && i >= l) continue;
        d[l] -= p;
        e[l] = g;
        e[m] = 0;
      }
    }
    return d.sort();
  }

  Object.assign(CX, {
    decodeFloat64, fft, fft2, kernelDft, kernelDft2, autocorrelation, powerSpectrum, normalizer, vanishes,
    conditionNumber, symmetricEigenvalues,
  });
})(CX);

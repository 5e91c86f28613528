// Chapter 5's explorer: a 3x3 kernel's 2D magnitude spectrum before and after ConvNorm, and a
// photograph filtered by each (circular padding). view() mirrors
// convnorm_book.chapters.two_dimensions.kernel_filter_view.
(function (CX) {
  "use strict";

  // The photo's circular 3x3 cross-correlation (torch's conv2d after circular padding by 1).
  function correlate(kernel, photo, rows, cols) {
    const out = new Float64Array(rows * cols);
    for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) {
      let sum = 0;
      for (let i = 0; i < 3; i++) {
        const row = ((r + i - 1 + rows) % rows) * cols;
        for (let j = 0; j < 3; j++) sum += kernel[3 * i + j] * photo[row + ((c + j - 1 + cols) % cols)];
      }
      out[r * cols + c] = sum;
    }
    return out;
  }

  // |a^| and v^ |a^| on the full rows x cols frequency grid (zero frequency first), the photo
  // filtered by the kernel, and by the ConvNorm layer (each frequency of the filtered photo
  // multiplied by v^ = (s + eps)^(-1/2)).
  function view(kernel, photo, rows, cols, eps) {
    const aHat = CX.kernelDft2(kernel, 3, 3, rows, cols);
    const vHat = CX.normalizer(CX.powerSpectrum([kernel], [3, 3], [rows, cols], false), eps);
    const magnitude = aHat.re.map((re, w) => Math.hypot(re, aHat.im[w]));
    const normalized = magnitude.map((value, w) => value * vHat[w]);
    const filtered = correlate(kernel, photo, rows, cols);
    const spectrum = CX.fft2(filtered, null, rows, cols, false);
    const normed = CX.fft2(spectrum.re.map((re, w) => re * vHat[w]), spectrum.im.map((im, w) => im * vHat[w]), rows, cols, true).re;
    return { magnitude, normalized, filtered, normed };
  }

  // numpy.fft.fftshift of a rows x cols grid: zero frequency in the centre.
  function shifted(values, rows, cols) {
    const out = new Float64Array(rows * cols), dr = Math.floor(rows / 2), dc = Math.floor(cols / 2);
    for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) out[((r + dr) % rows) * cols + ((c + dc) % cols)] = values[r * cols + c];
    return out;
  }

  function range(values) {
    let low = Infinity, high = -Infinity;
    for (const v of values) {
      low = Math.min(low, v);
      high = Math.max(high, v);
    }
    return [low, high];
  }

  function mount(root, config) {
    const ui = CX.ui.frame(root, config.title);
    const [rows, cols] = config.photo_shape, photo = CX.decodeFloat64(config.photo);
    const magma = Uint8Array.from(atob(config.magma), (ch) => ch.charCodeAt(0));
    const presets = config.presets;
    const state = { photo_shape: [rows, cols], preset: config.preset, kernel: presets[config.preset].slice(), eps: config.eps };
    const panels = [0, 1, 2, 3].map(() => CX.ui.panel(ui.plots, "canvas"));
    const f = CX.plot.format;
    const redraw = () => {
      const r = view(state.kernel, photo, rows, cols, state.eps);
      const vmax = Math.max(range(r.magnitude)[1], 1);
      [[r.magnitude, "$|â(ω)|$"], [r.normalized, "after ConvNorm, $v̂(ω)\u2009|â(ω)|$"]].forEach(([values, name], i) => {
        CX.plot.image(panels[i].canvas, shifted(values, rows, cols), rows, cols, magma, 0, vmax);
        const [low, high] = range(values);
        panels[i].caption(name, `ω = 0 in the centre; black 0 … yellow ${f(vmax, 3)}; values ${f(low, 3)} to ${f(high, 3)}`);
      });
      [[r.filtered, "the photograph filtered by $a$"], [r.normed, "… by its ConvNorm layer"]].forEach(([values, name], i) => {
        const [low, high] = range(values);
        CX.plot.image(panels[2 + i].canvas, values, rows, cols, CX.plot.GRAY, low, high);
        panels[2 + i].caption(name, `black ${f(low, 3)} … white ${f(high, 3)}`);
      });
      const [low, high] = range(r.magnitude);
      CX.ui.readouts(ui.readout, [["max $|â|$", high], ["min $|â|$", low], ["max $v̂\u2009|â|$", range(r.normalized)[1]]]);
      CX.ui.record(root, state);
    };
    CX.ui.kernelEditor(ui.controls, root, {
      state, presets, taps: 9, label: (t) => `$a[${Math.floor(t / 3)}, ${t % 3}]$`, min: -5, max: 5, grid: true,
      onChange: redraw,
    });
    CX.ui.slider(ui.controls, root, {
      name: "eps", label: "$ε$", values: config.eps_values, value: state.eps,
      onInput: (v) => { state.eps = v; redraw(); },
    });
    redraw();
  }

  CX.explorers.kernelFilter = { view, mount };
})(CX);

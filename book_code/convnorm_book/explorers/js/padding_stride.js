// Chapter 4's explorer: how padding p and stride s change the Gram matrix Q_k Q_k^T of each
// normalised output channel. view() mirrors
// convnorm_book.chapters.convolution_padding_stride.padding_stride_view (the operator of
// convnorm.reference.conv_norm_reference, built there column by column).
(function (CX) {
  "use strict";

  // The Gram matrix G = Q_k Q_k^T of output channel `kernels` (C_I rows of m taps) of the
  // four-step layer at signal length n. Column (i, c) of Q_k is input channel i, sample c:
  //   zeros:    Q_k[t, (i, c)] = h_i[(tau_t - (m - 1) - c) mod L],  L = n + m - 1, tau_t = m - 1 - p + s t,
  //   circular: Q_k[t, (i, c)] = h_i[(tau_t - p - c) mod L],        L = n,         tau_t = s t,
  // with h_i[d] = sum_j v[(d + j) mod L] a_i[j] and v the normalizer at length L. So
  // G[r, r + k] = sum_i sum_e h_i[e] h_i[e + s k] over the n indices e = tau_r - shift - c, and one
  // running sum per lag s k gives every entry of that diagonal: O(C_I n (n + L)) in all.
  function channelGram(kernels, m, n, padding, stride, mode) {
    const length = mode === "zeros" ? n + m - 1 : n;
    const v = CX.fft(CX.normalizer(CX.powerSpectrum(kernels, [m], [length], false), 0), null, true).re;
    const h = kernels.map((a) => Float64Array.from({ length }, (_, d) => {
      let sum = 0;
      for (let j = 0; j < m; j++) sum += v[(d + j) % length] * a[j];
      return sum;
    }));
    const rows = mode === "zeros" ? Math.floor((n + 2 * padding - m) / stride) + 1 : Math.floor((n - 1) / stride) + 1;
    const shift = mode === "zeros" ? m - 1 : padding, first = (mode === "zeros" ? m - 1 - padding : 0) - shift;
    const low = first - n + 1, span = stride * (rows - 1) + n;  // e runs over low .. low + span - 1
    const wrap = (e) => ((e % length) + length) % length;
    const gram = new Float64Array(rows * rows), running = new Float64Array(span + 1);
    for (let k = 0; k < rows; k++) {
      for (let x = 0; x < span; x++) {
        let product = 0;
        for (const hi of h) product += hi[wrap(low + x)] * hi[wrap(low + x + stride * k)];
        running[x + 1] = running[x] + product;
      }
      for (let r = 0; r + k < rows; r++) {
        const start = stride * r;  // e from low + s r to low + s r + n - 1
        gram[r * rows + r + k] = gram[(r + k) * rows + r] = running[start + n] - running[start];
      }
    }
    return { gram, rows };
  }

  // For every output channel: the eigenvalues of Q_k Q_k^T (ascending) and the tight-frame
  // distance ||Q_k Q_k^T - I||_2 = max |lambda - 1| (convnorm.padding.tight_frame_distance).
  // `weight` is [C_O][C_I][m].
  function view(weight, n, padding, stride, mode) {
    const m = weight[0][0].length;
    const eigenvalues = [], distances = [];
    for (const kernels of weight) {
      const { gram, rows } = channelGram(kernels, m, n, padding, stride, mode);
      const lambda = CX.symmetricEigenvalues(gram, rows);
      eigenvalues.push(lambda);
      distances.push(Math.max(Math.abs(lambda[0] - 1), Math.abs(lambda[rows - 1] - 1)));
    }
    return { eigenvalues, distances };
  }

  function mount(root, config) {
    const ui = CX.ui.frame(root, config.title);
    const weights = Object.fromEntries(Object.entries(config.weights).map(([m, flat]) => {
      const [cOut, cIn] = config.shape, values = CX.decodeFloat64(flat), size = Number(m);
      return [m, Array.from({ length: cOut }, (_, k) => Array.from({ length: cIn }, (_, i) => values.slice((k * cIn + i) * size, (k * cIn + i + 1) * size)))];
    }));
    const state = { mode: config.mode, m: config.m, padding: config.padding, stride: config.stride, n: config.n };
    const gramPlot = CX.ui.panel(ui.plots, "svg"), errorPlot = CX.ui.panel(ui.plots, "svg");
    // The views of every zero padding p = 0..m-1 at one (m, n, s): the curves of the second plot,
    // and the first plot's view whenever the padding is zeros (so moving p recomputes nothing).
    const zeroViews = new Map();
    const zeros = () => {
      const key = `${state.m}|${state.n}|${state.stride}`;
      if (!zeroViews.has(key)) {
        if (zeroViews.size > 64) zeroViews.clear();
        zeroViews.set(key, Array.from({ length: state.m }, (_, p) => view(weights[state.m], state.n, p, state.stride, "zeros")));
      }
      return zeroViews.get(key);
    };
    const redraw = () => {
      const weight = weights[state.m];
      const circular = state.mode === "circular";
      if (circular && state.m % 2 === 0) {
        CX.ui.say(ui.message, "Circular padding needs an odd kernel ($p = (m − 1)/2$): choose $m$ = 3 or 5, or zero padding.");
        return;
      }
      if (circular) state.padding = (state.m - 1) / 2;
      padding.set(state.padding);
      padding.enable(!circular);
      CX.ui.say(ui.message, "");
      const curves = zeros();
      const r = circular ? view(weight, state.n, state.padding, state.stride, "circular") : curves[state.padding];
      gramPlot.draw(CX.plot.lines({
        title: `Gram spectrum: ${r.eigenvalues[0].length} outputs, $p$ = ${state.padding}, $s$ = ${state.stride}`,
        xlabel: "index (ascending order)", ylabel: "eigenvalue of $Q_k Q_k^⊤$", ylim: [0, null],
        hlines: [{ y: 1 }],
        series: r.eigenvalues.map((lambda, k) => ({ x: Array.from(lambda, (_, j) => j), y: lambda, label: `channel $k$ = ${k}`, marker: "o" })),
      }));
      const paddings = curves.map((_, p) => p);
      errorPlot.draw(CX.plot.lines({
        title: `zero padding, stride $s$ = ${state.stride}: error against $p$`,
        xlabel: "padding $p$", ylabel: "$‖Q_k Q_k^⊤ − I‖_2$", ylim: [0, null], xlim: [-0.2, state.m - 0.8], xinteger: true,
        vlines: circular ? [] : [{ x: state.padding }],
        series: weight.map((_, k) => ({ x: paddings, y: curves.map((c) => c.distances[k]), label: `channel $k$ = ${k}`, marker: "o" })),
      }));
      CX.ui.readouts(ui.readout, r.distances.map((d, k) => [`$‖Q_${k} Q_${k}^⊤ − I‖_2$`, d]));
      CX.ui.record(root, state);
    };
    CX.ui.select(ui.controls, root, {
      name: "mode", label: "padding mode", options: ["zeros", "circular"], value: state.mode,
      onChange: (v) => { state.mode = v; redraw(); },
    });
    CX.ui.slider(ui.controls, root, {
      name: "m", label: "kernel length $m$", min: 2, max: config.max_m, step: 1, value: state.m, format: String,
      onInput: (v) => {
        state.m = v;
        padding.input.max = v - 1;
        state.padding = Math.min(state.padding, v - 1);
        redraw();
      },
    });
    const padding = CX.ui.slider(ui.controls, root, {
      name: "padding", label: "padding $p$", min: 0, max: state.m - 1, step: 1, value: state.padding, format: String,
      onInput: (v) => { state.padding = v; redraw(); },
    });
    for (const [name, label, min, max] of [["stride", "stride $s$", 1, config.max_stride], ["n", "signal length $n$", 8, config.max_n]]) {
      CX.ui.slider(ui.controls, root, {
        name, label, min, max, step: 1, value: state[name], format: String,
        onInput: (v) => { state[name] = v; redraw(); },
      });
    }
    redraw();
  }

  CX.explorers.paddingStride = { view, mount };
})(CX);

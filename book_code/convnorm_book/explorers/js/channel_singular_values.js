// Chapter 3's explorer: the singular values of one output channel A_k and of its normalised
// Q_k = P_k A_k, for C_I random kernels of length m. view() mirrors
// convnorm_book.chapters.multichannel_tight_frames.channel_singular_value_pair.
(function (CX) {
  "use strict";

  // `draws` holds the seed's standard normal draws (numpy's default_rng(seed).standard_normal);
  // the kernels are the first C_I * m of them, scaled by 1 / sqrt(C_I m), one row per channel.
  function view(cIn, m, n, draws) {
    const scale = Math.sqrt(cIn * m);
    const kernels = Array.from({ length: cIn }, (_, i) => draws.slice(i * m, (i + 1) * m).map((x) => x / scale));
    const s = CX.powerSpectrum(kernels, [m], [n], false);
    const vHat = CX.normalizer(s, 0);
    const descending = (values) => Float64Array.from(values).sort().reverse();
    const sigmaA = descending(s.map(Math.sqrt));
    const sigmaQ = descending(s.map((value, w) => Math.sqrt(value * vHat[w] * vHat[w])));
    return {
      sigmaA, sigmaQ, singular: CX.vanishes(vHat),
      kappaA: CX.conditionNumber(sigmaA), kappaQ: CX.conditionNumber(sigmaQ),
    };
  }

  function mount(root, config) {
    const ui = CX.ui.frame(root, config.title);
    const n = config.n, draws = config.draws.map(CX.decodeFloat64);
    const state = { n, c_in: config.c_in, m: config.m, seed: config.seed };
    const plot = CX.ui.panel(ui.plots, "svg");
    const index = Array.from({ length: n }, (_, i) => i);
    const redraw = () => {
      const r = view(state.c_in, state.m, n, draws[state.seed]);
      plot.draw(CX.plot.lines({
        title: `$C_I$ = ${state.c_in} random kernels of length $m$ = ${state.m}, $n$ = ${n}`,
        xlabel: "index $i$ (descending order)", ylabel: "singular value $σ_i$", ylim: [0, null],
        series: [
          { x: index, y: r.sigmaA, label: "$A_k$", marker: "o" },
          { x: index, y: r.sigmaQ, label: "$Q_k = P_k A_k$", marker: "s", dash: "5 3" },
        ],
      }));
      CX.ui.say(ui.message, r.singular ? "The power spectrum vanishes at some frequency: $P_k$ does not exist for this draw." : "");
      CX.ui.readouts(ui.readout, [["$κ(A_k)$", r.kappaA], ["$κ(Q_k)$", r.kappaQ]]);
      CX.ui.record(root, state);
    };
    const controls = [["c_in", "channels $C_I$", 1, config.max_c_in], ["m", "kernel length $m$", 1, n], ["seed", "random seed", 0, draws.length - 1]];
    for (const [name, label, min, max] of controls) {
      CX.ui.slider(ui.controls, root, {
        name, label, min, max, step: 1, value: state[name], format: String,
        onInput: (v) => { state[name] = v; redraw(); },
      });
    }
    redraw();
  }

  CX.explorers.channelSingularValues = { view, mount };
})(CX);

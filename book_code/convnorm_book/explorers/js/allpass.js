// Chapter 2's explorer: a kernel a, its normalizer v and its all-pass filter g = v * a.
// view() mirrors convnorm_book.chapters.all_pass_filters.allpass_view.
(function (CX) {
  "use strict";

  // Spectra on the n // 2 + 1 rfft frequencies (a^, v^, g^ = a^ v^), the impulse responses
  // a (zero-padded), v and g (length n), kappa(C_a) = max|a^| / min|a^| and kappa(Q(a)) from |g^|.
  // `singular` is true where the package refuses eps = 0 (C_a C_a^T singular to working precision).
  function view(kernel, n, eps) {
    const bins = Math.floor(n / 2) + 1;
    const aFull = CX.kernelDft(kernel, n);
    const vFull = CX.normalizer(CX.powerSpectrum([kernel], [kernel.length], [n], false), eps);
    const singular = eps === 0 && CX.vanishes(vFull);
    const gRe = aFull.re.map((re, w) => re * vFull[w]), gIm = aFull.im.map((im, w) => im * vFull[w]);
    const a = new Float64Array(n);
    a.set(kernel);
    const v = CX.fft(vFull, null, true).re, g = CX.fft(gRe, gIm, true).re;
    const aAbs = new Float64Array(bins), gAbs = new Float64Array(bins), aAngle = new Float64Array(bins), gAngle = new Float64Array(bins);
    for (let w = 0; w < bins; w++) {
      aAbs[w] = Math.hypot(aFull.re[w], aFull.im[w]);
      gAbs[w] = Math.hypot(gRe[w], gIm[w]);
      aAngle[w] = Math.atan2(aFull.im[w], aFull.re[w]);
      gAngle[w] = Math.atan2(gIm[w], gRe[w]);
    }
    return {
      a, v, g, singular,
      aHat: { re: aFull.re.slice(0, bins), im: aFull.im.slice(0, bins) },
      gHat: { re: gRe.slice(0, bins), im: gIm.slice(0, bins) },
      vHat: vFull.slice(0, bins),
      aAbs, gAbs, aAngle, gAngle,
      kappaA: CX.conditionNumber(aAbs), kappaQ: CX.conditionNumber(gAbs),
    };
  }

  function mount(root, config) {
    const ui = CX.ui.frame(root, config.title);
    const presets = config.presets, n = config.n;
    const state = { n, preset: config.preset, kernel: presets[config.preset].slice(), eps: config.eps };
    const panels = ["magnitudes", "phases", "normalizer", "a", "v", "g"].map(() => CX.ui.panel(ui.plots, "svg"));
    const omega = Array.from({ length: Math.floor(n / 2) + 1 }, (_, w) => w);
    const index = Array.from({ length: n }, (_, t) => t);
    const redraw = () => {
      const r = view(state.kernel, n, state.eps);
      const axis = "frequency $ω$";
      panels[0].draw(CX.plot.lines({ title: "magnitude spectra", xlabel: axis, ylabel: "magnitude", ylim: [0, null], series: [
        { x: omega, y: r.aAbs, label: "$|â|$", marker: "o" }, { x: omega, y: r.gAbs, label: "$|ĝ|$", marker: "s", dash: "5 3" }] }));
      panels[1].draw(CX.plot.lines({ title: "phases", xlabel: axis, ylabel: "phase (radians)", ylim: [-3.3, 3.3], series: [
        { x: omega, y: r.aAngle, label: "$∠â$", marker: "o" }, { x: omega, y: r.gAngle, label: "$∠ĝ$", marker: "s", dash: "5 3" }] }));
      panels[2].draw(CX.plot.lines({ title: "normalizer $v̂$", xlabel: axis, ylabel: "gain", ylog: true, series: [
        { x: omega, y: r.vHat, label: "$v̂$", marker: "o", color: CX.plot.COLORS[2] }] }));
      [["kernel $a$", r.a], ["normalizer $v$", r.v], ["all-pass filter $g$", r.g]].forEach(([name, signal], i) => {
        panels[3 + i].draw(CX.plot.lines({ title: name, xlabel: "tap index $j$", ylabel: "value", series: [
          { x: index, y: signal, marker: "o", stem: true }] }));
      });
      CX.ui.say(ui.message, r.singular
        ? "$|â|$ vanishes at some frequency: $C_a C_a^⊤$ is singular and $P$ does not exist (the package raises a ValueError). Raise $ε$."
        : "");
      CX.ui.readouts(ui.readout, [["$κ(C_a)$", r.kappaA], ["$κ(Q(a))$", r.kappaQ]]);
      CX.ui.record(root, state);
    };
    CX.ui.kernelEditor(ui.controls, root, {
      state, presets, taps: config.taps, label: (t) => `$a_${t}$`, min: -2, max: 2, onChange: redraw,
    });
    CX.ui.slider(ui.controls, root, {
      name: "eps", label: "$ε$", values: config.eps_values, value: state.eps,
      onInput: (v) => { state.eps = v; redraw(); },
    });
    redraw();
  }

  CX.explorers.allpass = { view, mount };
})(CX);

// The intro's explorer: a 3-tap kernel's magnitude spectrum before and after ConvNorm.
// view() mirrors convnorm_book.chapters.intro.kernel_spectrum_view.
(function (CX) {
  "use strict";

  // |a^| and |a^ v^| on the n // 2 + 1 rfft frequencies, v^ = s^(-1/2) with eps = 0.
  function view(kernel, n) {
    const bins = Math.floor(n / 2) + 1;
    const aHat = CX.kernelDft(kernel, n, bins);
    const vHat = CX.normalizer(CX.powerSpectrum([kernel], [kernel.length], [n], true), 0);
    const before = new Float64Array(bins), after = new Float64Array(bins);
    for (let w = 0; w < bins; w++) {
      before[w] = Math.hypot(aHat.re[w], aHat.im[w]);
      after[w] = Math.hypot(aHat.re[w] * vHat[w], aHat.im[w] * vHat[w]);
    }
    return { before, after, vHat };
  }

  function mount(root, config) {
    const ui = CX.ui.frame(root, config.title);
    const state = { kernel: config.kernel.slice(), n: config.n };
    const plot = CX.ui.panel(ui.plots, "svg");
    const redraw = () => {
      const { before, after, vHat } = view(state.kernel, state.n);
      const freq = Array.from(before, (_, w) => w / state.n);
      const peak = Math.max(...before);
      plot.draw(CX.plot.lines({
        title: `kernel $a$ = (${state.kernel.map((v) => v.toFixed(2)).join(", ")}), $n$ = ${state.n}`,
        xlabel: "frequency (cycles per sample)", ylabel: "magnitude",
        ylim: [0, Math.max(1.2, 1.1 * peak)],
        series: [
          { x: freq, y: before, label: "kernel, $|â(ω)|$" },
          { x: freq, y: after, label: "after ConvNorm, $|â(ω)\u2009v̂(ω)|$", dash: "6 4" },
        ],
      }));
      CX.ui.say(ui.message, CX.vanishes(vHat)
        ? "$â$ vanishes (numerically) at some frequency: ConvNorm is undefined there, and the dashed curve has a gap or a spike. Chapter 2 adds a regulariser $ε$ for this case."
        : "");
      CX.ui.readouts(ui.readout, [["$κ(C_a)$", CX.conditionNumber(before)], ["$κ$ after ConvNorm", CX.conditionNumber(after)]]);
      CX.ui.record(root, state);
    };
    state.kernel.forEach((value, t) => {
      CX.ui.slider(ui.controls, root, {
        name: `a${t}`, label: `$a_${t}$`, min: -1, max: 1, step: 0.05, value,
        onInput: (v) => { state.kernel[t] = v; redraw(); },
      });
    });
    CX.ui.slider(ui.controls, root, {
      name: "n", label: "signal length $n$", min: 8, max: 256, step: 8, value: state.n, format: String,
      onInput: (v) => { state.n = v; redraw(); },
    });
    redraw();
  }

  CX.explorers.kernelSpectrum = { view, mount };
})(CX);

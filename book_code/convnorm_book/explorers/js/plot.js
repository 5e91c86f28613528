// Drawing for the explorers: line and stem plots as SVG (scaled to the width of the page),
// images on a canvas. Colours are matplotlib's default cycle, so the live plots look like the
// book's static figures. A script that adds `CX.plot` to the namespace object `CX`.
(function (CX) {
  "use strict";

  const COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"];
  const WIDTH = 320, HEIGHT = 215;
  const MARGIN = { left: 46, right: 8, top: 22, bottom: 36 };

  function escape(text) {
    return String(text).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  }

  // Labels are written as the book writes its symbols: text with formulas between $ signs, in
  // which `_x` / `_{xy}` is a subscript, `^x` / `^{xy}` a superscript, a single letter (Latin or
  // Greek, with its accents) is italic and a longer word ("max") upright. mathRuns() cuts a label
  // into runs {text, italic, level} (level -1: subscript, 0: on the line, 1: superscript);
  // plainText() is the label as plain text ("$κ(C_{ab})$" -> "κ(C_ab)"), for accessible names.
  function mathRuns(label) {
    const runs = [];
    const push = (text, level) => {
      for (const [token] of text.matchAll(/(?:\p{L}\p{M}*)+|[^\p{L}]+/gu)) {
        const letters = token.match(/\p{L}/gu);
        const italic = letters !== null && letters.length === 1 && !/[Α-Ω]/u.test(token);
        runs.push({ text: token, italic, level });
      }
    };
    String(label).split("$").forEach((part, i) => {
      if (i % 2 === 0) {
        if (part) runs.push({ text: part, italic: false, level: 0 });
        return;
      }
      let k = 0;
      while (k < part.length) {
        if (part[k] === "_" || part[k] === "^") {
          const level = part[k] === "_" ? -1 : 1;
          let end, argument;
          if (part[k + 1] === "{") {
            end = part.indexOf("}", k + 2);
            argument = part.slice(k + 2, end);
            end += 1;
          } else {
            end = k + 2;
            while (end < part.length && /\p{M}/u.test(part[end])) end++;
            argument = part.slice(k + 1, end);
          }
          push(argument, level);
          k = end;
        } else {
          let end = k;
          while (end < part.length && part[end] !== "_" && part[end] !== "^") end++;
          push(part.slice(k, end), 0);
          k = end;
        }
      }
    });
    return runs;
  }

  function plainText(label) {
    return String(label).replace(/[$]/g, "").replace(/[_^]\{([^}]*)\}/g, (match, group) => match[0] + group);
  }

  // A label as the content of an SVG <text>: tspans, raised or lowered with dy (font size `size`).
  function svgMath(label, size = 11) {
    let out = "", offset = 0;
    for (const run of mathRuns(label)) {
      const target = run.level < 0 ? 0.3 * size : run.level > 0 ? -0.4 * size : 0;
      const attributes = [];
      if (target !== offset) attributes.push(`dy="${(target - offset).toFixed(2)}"`);
      if (run.level !== 0) attributes.push('font-size="75%"');
      if (run.italic) attributes.push('font-style="italic" class="cx-math"');
      offset = target;
      out += `<tspan${attributes.length ? " " + attributes.join(" ") : ""}>${escape(run.text)}</tspan>`;
    }
    return out;
  }

  // A number in at most `digits` significant digits, without trailing zeros ("1.5e-06", "inf").
  function format(value, digits = 4) {
    if (value === Infinity) return "∞";
    if (value === -Infinity) return "-∞";
    if (Number.isNaN(value)) return "undefined";
    if (value === 0) return "0";
    const magnitude = Math.abs(value);
    if (magnitude >= 1e5 || magnitude < 1e-3) {
      const [mantissa, exponent] = value.toExponential(digits - 1).split("e");
      return `${String(Number(mantissa))}e${exponent.replace("+", "")}`;
    }
    return String(Number(value.toPrecision(digits)));
  }

  // About `count` round tick values (1, 2 or 5 times a power of ten) covering [low, high].
  function ticks(low, high, count = 5) {
    const span = high - low;
    if (!(span > 0)) return [low];
    const raw = span / count, power = 10 ** Math.floor(Math.log10(raw));
    const step = [1, 2, 5, 10].map((f) => f * power).find((s) => s >= raw);
    const values = [];
    for (let v = Math.ceil(low / step - 1e-9) * step; v <= high + step * 1e-9; v += step) values.push(Math.abs(v) < step * 1e-9 ? 0 : v);
    return values;
  }

  function finiteRange(series, log) {
    let low = Infinity, high = -Infinity;
    for (const s of series) {
      for (const v of s.y) {
        if (!Number.isFinite(v) || (log && v <= 0)) continue;
        low = Math.min(low, v);
        high = Math.max(high, v);
      }
    }
    if (low === Infinity) return log ? [0.1, 10] : [0, 1];
    if (low === high) return log ? [low / 10, high * 10] : [low - 0.5, high + 0.5];
    return [low, high];
  }

  // An SVG line plot. spec: {title, xlabel, ylabel, ylog, ylim: [low | null, high | null],
  // xlim, xinteger (ticks at integers only), series: [{x, y, label, color, dash, marker: "o" | "s" | null, stem: bool}],
  // hlines: [{y, color, dash}], vlines: [{x, color, dash}]}. Non-finite values leave gaps.
  function lines(spec) {
    const log = !!spec.ylog;
    const [autoLow, autoHigh] = finiteRange(spec.series, log);
    let low = spec.ylim && spec.ylim[0] != null ? spec.ylim[0] : autoLow;
    let high = spec.ylim && spec.ylim[1] != null ? spec.ylim[1] : autoHigh;
    if (log) {
      low = Math.log10(low);
      high = Math.log10(high);
      low = Math.floor(low);
      high = Math.ceil(high) === low ? low + 1 : Math.ceil(high);
    } else if (!spec.ylim || spec.ylim[1] == null) {
      high += 0.05 * (high - low);
    }
    let xLow = Infinity, xHigh = -Infinity;
    for (const s of spec.series) for (const x of s.x) {
      xLow = Math.min(xLow, x);
      xHigh = Math.max(xHigh, x);
    }
    if (spec.xlim) [xLow, xHigh] = spec.xlim;
    if (xLow === xHigh) [xLow, xHigh] = [xLow - 1, xHigh + 1];
    const plotW = WIDTH - MARGIN.left - MARGIN.right, plotH = HEIGHT - MARGIN.top - MARGIN.bottom;
    const px = (x) => MARGIN.left + ((x - xLow) / (xHigh - xLow)) * plotW;
    const py = (y) => {
      const v = log ? Math.log10(y) : y;
      return MARGIN.top + (1 - (v - low) / (high - low)) * plotH;
    };
    const inside = (y) => Number.isFinite(y) && (!log || y > 0);
    const clampY = (y) => Math.min(MARGIN.top + plotH + 4, Math.max(MARGIN.top - 4, y));
    const parts = [];
    parts.push(`<rect x="${MARGIN.left}" y="${MARGIN.top}" width="${plotW}" height="${plotH}" fill="none" stroke="currentColor" stroke-opacity="0.6"/>`);
    const yTicks = log ? Array.from({ length: high - low + 1 }, (_, i) => low + i) : ticks(low, high);
    for (const t of yTicks) {
      const y = MARGIN.top + (1 - (t - low) / (high - low)) * plotH;
      const label = log ? `1e${t}` : format(t, 3);
      parts.push(`<line x1="${MARGIN.left - 3}" x2="${MARGIN.left + plotW}" y1="${y}" y2="${y}" stroke="currentColor" stroke-opacity="0.12"/>`);
      parts.push(`<text x="${MARGIN.left - 5}" y="${y + 3.5}" text-anchor="end">${label}</text>`);
    }
    for (const t of ticks(xLow, xHigh, 6).filter((v) => !spec.xinteger || Number.isInteger(v))) {
      const x = px(t);
      parts.push(`<line x1="${x}" x2="${x}" y1="${MARGIN.top + plotH}" y2="${MARGIN.top + plotH + 3}" stroke="currentColor"/>`);
      parts.push(`<text x="${x}" y="${MARGIN.top + plotH + 14}" text-anchor="middle">${format(t, 3)}</text>`);
    }
    for (const h of spec.hlines || []) {
      if (!inside(h.y)) continue;
      parts.push(`<line x1="${MARGIN.left}" x2="${MARGIN.left + plotW}" y1="${py(h.y)}" y2="${py(h.y)}" stroke="${h.color || "gray"}" stroke-dasharray="${h.dash || "2 3"}"/>`);
    }
    for (const v of spec.vlines || []) {
      parts.push(`<line x1="${px(v.x)}" x2="${px(v.x)}" y1="${MARGIN.top}" y2="${MARGIN.top + plotH}" stroke="${v.color || "gray"}" stroke-dasharray="${v.dash || "2 3"}"/>`);
    }
    const legend = [], drawn = [];
    spec.series.forEach((s, index) => {
      const color = s.color || COLORS[index % COLORS.length];
      const dash = s.dash ? ` stroke-dasharray="${s.dash}"` : "";
      const points = [];
      if (s.stem) {
        const base = py(log ? 10 ** low : Math.min(Math.max(0, low), high));
        let stems = "";
        for (let i = 0; i < s.x.length; i++) {
          if (!inside(s.y[i])) continue;
          const x = px(s.x[i]), y = clampY(py(s.y[i]));
          stems += `M${x.toFixed(2)},${base.toFixed(2)}V${y.toFixed(2)}`;
          points.push([x, y]);
        }
        parts.push(`<path d="${stems}" stroke="${color}" fill="none"/>`);
        parts.push(`<line x1="${MARGIN.left}" x2="${MARGIN.left + plotW}" y1="${base}" y2="${base}" stroke="currentColor" stroke-opacity="0.4"/>`);
      } else {
        let path = "", pen = false;
        for (let i = 0; i < s.x.length; i++) {
          if (!inside(s.y[i])) {
            pen = false;
            continue;
          }
          const x = px(s.x[i]), y = clampY(py(s.y[i]));
          path += `${pen ? "L" : "M"}${x.toFixed(2)},${y.toFixed(2)}`;
          pen = true;
          points.push([x, y]);
        }
        parts.push(`<path d="${path}" fill="none" stroke="${color}" stroke-width="1.6"${dash}/>`);
      }
      if (s.marker && points.length <= 130) {
        // All markers of a series as one path: squares, or circles drawn as two arcs.
        const d = points.map(([x, y]) => (s.marker === "s"
          ? `M${(x - 2.2).toFixed(2)},${(y - 2.2).toFixed(2)}h4.4v4.4h-4.4z`
          : `M${(x - 2.3).toFixed(2)},${y.toFixed(2)}a2.3,2.3 0 1,0 4.6,0a2.3,2.3 0 1,0 -4.6,0`)).join("");
        parts.push(`<path d="${d}" fill="${color}"/>`);
      }
      if (s.label) legend.push([s.label, color, dash]);
      drawn.push(...points);
    });
    if (legend.length) {
      // The legend goes in the corner of the plot that covers the fewest data points.
      const w = 30 + 6 * Math.max(...legend.map(([label]) => plainText(label).length)), h = 6 + 13 * legend.length;
      const corners = [[MARGIN.left + plotW - w - 4, MARGIN.top + 4], [MARGIN.left + plotW - w - 4, MARGIN.top + plotH - h - 4],
        [MARGIN.left + 4, MARGIN.top + 4], [MARGIN.left + 4, MARGIN.top + plotH - h - 4]];
      const covered = ([x0, y0]) => drawn.filter(([x, y]) => x >= x0 - 4 && x <= x0 + w + 4 && y >= y0 - 4 && y <= y0 + h + 4).length;
      const [x0, y0] = corners.reduce((best, corner) => (covered(corner) < covered(best) ? corner : best));
      parts.push(`<rect x="${x0}" y="${y0}" width="${w}" height="${h}" class="cx-legend"/>`);
      legend.forEach(([label, color, dash], i) => {
        const y = y0 + 9.5 + 13 * i;
        parts.push(`<line x1="${x0 + 4}" x2="${x0 + 20}" y1="${y}" y2="${y}" stroke="${color}" stroke-width="2"${dash}/>`);
        parts.push(`<text x="${x0 + 24}" y="${y + 3.5}">${svgMath(label)}</text>`);
      });
    }
    if (spec.title) parts.push(`<text x="${MARGIN.left + plotW / 2}" y="14" text-anchor="middle" class="cx-title">${svgMath(spec.title, 12)}</text>`);
    if (spec.xlabel) parts.push(`<text x="${MARGIN.left + plotW / 2}" y="${HEIGHT - 6}" text-anchor="middle">${svgMath(spec.xlabel)}</text>`);
    if (spec.ylabel) parts.push(`<text transform="translate(11 ${MARGIN.top + plotH / 2}) rotate(-90)" text-anchor="middle">${svgMath(spec.ylabel)}</text>`);
    const name = escape(plainText(spec.title || spec.ylabel || "plot"));
    return `<svg viewBox="0 0 ${WIDTH} ${HEIGHT}" role="img" aria-label="${name}" class="cx-svg"><title>${name}</title>${parts.join("")}</svg>`;
  }

  // Draw a row-major rows x cols array on `canvas` (one canvas pixel per value) with `lut`
  // (a Uint8Array of 256 RGB triples) between vmin and vmax, as matplotlib's imshow does.
  function image(canvas, values, rows, cols, lut, vmin, vmax) {
    canvas.width = cols;
    canvas.height = rows;
    const context = canvas.getContext("2d");
    const pixels = context.createImageData(cols, rows);
    const span = vmax > vmin ? vmax - vmin : 1;
    for (let i = 0; i < rows * cols; i++) {
      const level = Math.max(0, Math.min(255, Math.floor(((values[i] - vmin) / span) * 256)));
      pixels.data[4 * i] = lut[3 * level];
      pixels.data[4 * i + 1] = lut[3 * level + 1];
      pixels.data[4 * i + 2] = lut[3 * level + 2];
      pixels.data[4 * i + 3] = 255;
    }
    context.putImageData(pixels, 0, 0);
  }

  // The grey ramp, as a lookup table for image().
  const GRAY = Uint8Array.from({ length: 768 }, (_, i) => Math.floor(i / 3));

  CX.plot = { lines, image, format, ticks, mathRuns, plainText, svgMath, GRAY, COLORS };
})(CX);

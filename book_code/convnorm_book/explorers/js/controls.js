// Controls and layout for the explorers: labelled native sliders and menus (so they work
// with the keyboard: Tab to reach, arrow keys / Home / End to move), a plot area, and a
// readout line announced to screen readers. A script that adds `CX.ui` to the namespace `CX`.
(function (CX) {
  "use strict";

  function element(tag, attributes = {}, parent = null) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attributes)) {
      if (key === "text") node.textContent = value;
      else node.setAttribute(key, value);
    }
    if (parent) parent.appendChild(node);
    return node;
  }

  // Append `label` to `parent` typeset as the book writes its symbols (see CX.plot.mathRuns):
  // italic single letters, subscripts and superscripts. Returns `parent`.
  function math(parent, label) {
    for (const run of CX.plot.mathRuns(label)) {
      let node = document.createTextNode(run.text);
      if (run.italic) {
        const italic = element("i", { class: "cx-math" });
        italic.appendChild(node);
        node = italic;
      }
      if (run.level !== 0) {
        const shifted = element(run.level < 0 ? "sub" : "sup");
        shifted.appendChild(node);
        node = shifted;
      }
      parent.appendChild(node);
    }
    return parent;
  }

  // Replace the content of `node` by the typeset `label`.
  function say(node, label) {
    node.textContent = "";
    math(node, label);
  }

  // The explorer's skeleton inside `root`: a title, a controls area, the plots, the readout.
  function frame(root, title) {
    root.textContent = "";
    math(element("p", { class: "cx-heading" }, root), title);
    const controls = element("div", { class: "cx-controls" }, root);
    const message = element("p", { class: "cx-message", role: "status" }, root);
    const plots = element("div", { class: "cx-plots" }, root);
    const readout = element("p", { class: "cx-readout", "aria-live": "polite" }, root);
    return { controls, plots, readout, message };
  }

  // A labelled range slider with the current value printed beside it. With `values` (a list),
  // the slider steps through them (e.g. 0, 1e-12, ..., 1); otherwise min/max/step.
  // `onInput(value)` runs on every move. Returns {input, value(), set(value)}.
  function slider(parent, root, { name, label, min, max, step, value, values, format, onInput }) {
    const id = `${root.id}-${name}`;
    const row = element("div", { class: "cx-control" }, parent);
    math(element("label", { for: id }, row), label);
    const show = format || ((v) => CX.plot.format(v));
    const input = element("input", values
      ? { type: "range", id, min: 0, max: values.length - 1, step: 1, value: Math.max(0, values.indexOf(value)) }
      : { type: "range", id, min, max, step, value }, row);
    const output = element("output", { for: id }, row);
    const current = () => (values ? values[Number(input.value)] : Number(input.value));
    const refresh = () => {
      output.textContent = show(current());
      input.setAttribute("aria-valuetext", show(current()));
    };
    input.addEventListener("input", () => {
      refresh();
      onInput(current());
    });
    refresh();
    return {
      input,
      value: current,
      // Move the slider to `v` (the nearest step) without calling onInput; `shown` overrides the text.
      set(v, shown) {
        input.value = values ? Math.max(0, values.indexOf(v)) : v;
        refresh();
        if (shown !== undefined) {
          output.textContent = shown;
          input.setAttribute("aria-valuetext", shown);
        }
      },
      enable(on) {
        input.disabled = !on;
      },
    };
  }

  // A labelled drop-down menu; `onChange(value)` runs when the choice changes.
  function select(parent, root, { name, label, options, value, onChange }) {
    const id = `${root.id}-${name}`;
    const row = element("div", { class: "cx-control" }, parent);
    math(element("label", { for: id }, row), label);
    const menu = element("select", { id }, row);
    for (const option of options) element("option", { value: option, text: option }, menu);
    menu.value = value;
    menu.addEventListener("change", () => onChange(menu.value));
    return { input: menu, value: () => menu.value, set: (v) => { menu.value = v; } };
  }

  // A kernel editor: a preset menu and one slider per tap, editing state.kernel and state.preset.
  // Choosing a preset loads its exact taps (each slider shows its tap, placed at the nearest
  // step); moving a slider switches to "custom". With `grid`, the sliders get their own block
  // (three per row where they fit). `label(t)` names tap t; `onChange()` runs after every edit.
  function kernelEditor(parent, root, { state, presets, taps, label, min, max, grid, onChange }) {
    const tap = (t) => (t < state.kernel.length ? state.kernel[t] : 0);
    const menu = select(parent, root, {
      name: "preset", label: "kernel", options: ["custom", ...Object.keys(presets)], value: state.preset,
      onChange: (name) => {
        state.preset = name;
        if (name === "custom") return;
        state.kernel = presets[name].slice();
        show();
        onChange();
      },
    });
    const box = grid ? element("div", { class: "cx-taps", role: "group", "aria-label": "the taps of the kernel" }, parent) : parent;
    const sliders = Array.from({ length: taps }, (_, t) => slider(box, root, {
      name: `a${t}`, label: label(t), min, max, step: 0.05, value: tap(t),
      onInput: (v) => {
        while (state.kernel.length <= t) state.kernel.push(0);
        state.kernel[t] = v;
        state.preset = "custom";
        menu.set("custom");
        onChange();
      },
    }));
    const show = () => sliders.forEach((s, t) => s.set(tap(t), CX.plot.format(tap(t), 3)));
    show();
  }

  // A plot slot in the plot area: an SVG container (`svg`) or a captioned canvas (`canvas`).
  function panel(plots, kind, caption) {
    const figure = element("div", { class: `cx-panel cx-${kind}` }, plots);
    if (kind === "svg") return { figure, draw: (svg) => { figure.innerHTML = svg; } };
    const label = element("p", { class: "cx-caption" }, figure);
    const canvas = element("canvas", { role: "img" }, figure);
    const scale = element("p", { class: "cx-scale" }, figure);
    return {
      figure, canvas,
      caption(text, scaleText = "") {
        say(label, text);
        canvas.setAttribute("aria-label", CX.plot.plainText(text));
        scale.textContent = scaleText;
      },
    };
  }

  // Show the readout items [[label, value], ...]: each label typeset, each value printed to 4
  // digits, its full float64 value kept in data-value and the label's plain text in data-name
  // (for tests, and for readers who inspect the page).
  function readouts(readout, items) {
    readout.textContent = "";
    items.forEach(([label, value], i) => {
      if (i > 0) readout.appendChild(document.createTextNode(",   "));
      math(readout, label);
      readout.appendChild(document.createTextNode(" = "));
      element("span", { class: "cx-value", "data-name": CX.plot.plainText(label), "data-value": String(value), text: CX.plot.format(value) }, readout);
    });
  }

  // Record the explorer's current setting on its root (data-state, JSON), so a test can
  // compute the same setting with the Python package.
  function record(root, state) {
    root.setAttribute("data-state", JSON.stringify(state));
  }

  CX.ui = { element, math, say, frame, slider, select, kernelEditor, panel, readouts, record };
})(CX);

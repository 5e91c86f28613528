// Run the explorers' browser-side computations in Node.js, for tests/book/test_explorers_parity.py.
// Reads {"sources": [file, ...], "calls": [[name, [arg, ...]], ...]} as JSON on stdin, where
// name is a path in the namespace CX ("fft", "explorers.allpass.view"); writes the results as
// JSON, typed arrays as lists and non-finite numbers as the strings "Infinity", "-Infinity", "NaN".
// Arguments that are lists of numbers arrive as Float64Arrays (nested lists: at the leaves).
"use strict";
const fs = require("fs");

const input = JSON.parse(fs.readFileSync(0, "utf8"));
const CX = { explorers: {} };
for (const file of input.sources) new Function("CX", fs.readFileSync(file, "utf8"))(CX);

function plain(value) {
  if (typeof value === "number") return Number.isFinite(value) ? value : String(value);
  if (ArrayBuffer.isView(value) || Array.isArray(value)) return Array.from(value, plain);
  if (value && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plain(v)]));
  return value;
}

function typed(value) {
  if (!Array.isArray(value)) return value;
  return value.length && value.every((v) => typeof v === "number") ? Float64Array.from(value) : value.map(typed);
}

const results = input.calls.map(([name, args]) => {
  const path = name.split("."), method = path.pop();
  const owner = path.reduce((object, key) => object[key], CX);
  return plain(owner[method](...args.map(typed)));
});
process.stdout.write(JSON.stringify(results));

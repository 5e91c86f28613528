"""Time one redraw of each explorer in headless Chromium (the browser and CPU are recorded).

Builds a page with the book's five explorers at their largest sizes (1D signals of length
n = 256; chapter 4's n up to 64, each setting new so that nothing comes from its cache;
chapter 5's photograph at 64x64 and at the chapter's 96x96), moves one control of each
``--repeats`` times and records, per explorer, the median, the 90th percentile and the
largest time from the control's input event to the end of the page's style and layout
(computation, drawing, DOM update; not the paint that follows), with the machine's load
average. Writes ``benchmarks/results/bench_explorers.json``.

Usage: ``python benchmarks/bench_explorers.py [--repeats R] [--out FILE]``.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

# this checkout's packages, not other installed copies
sys.path[:0] = [str(Path(__file__).resolve().parents[1] / folder) for folder in (".", "lab", "book_code")]

from convnorm_book.chapters import (  # noqa: E402
    all_pass_filters,
    convolution_padding_stride,
    intro,
    multichannel_tight_frames,
    two_dimensions,
)
from convnorm_book.headless_browser import Browser  # noqa: E402
from convnorm_lab.training.results import (  # noqa: E402
    cpu_info,  # noqa: E402
    provenance,
    save_results,
)

#: (explorer, control moved, values it takes in turn, setting) for each timed explorer.
CASES = [
    (lambda: intro.kernel_spectrum_explorer(n=256), "a1", [0.55, 0.5], "intro, n = 256"),
    (lambda: all_pass_filters.allpass_explorer(n=256, taps=5), "a3", [0.05, 0.1], "chapter 2, n = 256"),
    (lambda: multichannel_tight_frames.singular_value_explorer(n=256, c_in=8, m=64), "seed", [1, 2],
     "chapter 3, n = 256, C_I = 8, m = 64"),
    (lambda: convolution_padding_stride.padding_stride_explorer(n=64, m=5, padding=2, max_n=64), "n",
     list(range(64, 7, -1)), "chapter 4, m = 5, n = 64, 63, ... (each new: 2 channels x 5 paddings)"),
    (lambda: two_dimensions.kernel_filter_explorer(two_dimensions.load_photo(64, grayscale=True)), "a4", [0.3, 0.25],
     "chapter 5, 64x64"),
    (lambda: two_dimensions.kernel_filter_explorer(two_dimensions.load_photo(96, grayscale=True)), "a4", [0.3, 0.25],
     "chapter 5, 96x96"),
]

MEASURE = """
(async ([index, control, values, repeats]) => {
  const root = document.querySelectorAll(".cx-explorer")[index];
  const input = document.getElementById(`${root.id}-${control}`);
  const times = [];
  for (let i = 0; i < repeats; i++) {
    input.value = values[i % values.length];
    const start = performance.now();
    input.dispatchEvent(new Event("input"));
    document.body.getBoundingClientRect();  // forces style and layout
    times.push(performance.now() - start);
    await new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));
  }
  return times;
})
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=40)
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("results") / "bench_explorers.json")
    args = parser.parse_args()
    started = time.perf_counter()
    explorers = [make() for make, *_ in CASES]
    with tempfile.TemporaryDirectory() as folder, Browser() as browser:
        page = Path(folder) / "explorers.html"
        page.write_text("<!doctype html><html><head><meta charset='utf-8'></head><body style='max-width:50rem'>"
                        + "\n".join(e.html() for e in explorers) + "</body></html>")
        browser.open(page)
        if browser.page_errors():
            raise SystemExit(f"the page raised: {browser.page_errors()}")
        version = browser.call("Browser.getVersion")["product"]
        rows = []
        for index, (_, control, values, setting) in enumerate(CASES):
            times = browser.evaluate(f"{MEASURE}({json.dumps([index, control, values, args.repeats])})")
            rows.append({"explorer": explorers[index].name, "setting": setting, "control": control,
                         "median_ms": round(statistics.median(times), 3),
                         "p90_ms": round(statistics.quantiles(times, n=10)[-1], 3), "max_ms": round(max(times), 3),
                         "repeats": args.repeats})
            print(f"{setting:>75}: median {rows[-1]['median_ms']:6.2f} ms, 90% {rows[-1]['p90_ms']:6.2f} ms, "
                  f"max {rows[-1]['max_ms']:6.2f} ms")
    block = provenance("bench_explorers", f"{args.repeats} redraws", 0, None, time.perf_counter() - started, "cpu")
    block.update({"browser": f"{version}, headless", "cpu": cpu_info(),
                  "measured": "input event to the end of style and layout (compute, draw, DOM update; no paint)"})
    print(f"{version} on {block['cpu']['model']} ({', '.join(block['cpu']['instruction_sets'])}); "
          f"written to {save_results(args.out, block, {'redraws': rows})}")


if __name__ == "__main__":
    main()

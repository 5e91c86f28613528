"""convnorm_book.chapters.intro: the opening picture of a deep stack, and the spectrum explorer's numbers."""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
import yaml
from matplotlib.text import Annotation

from convnorm_book.chapters.intro import (
    APPENDICES,
    BUILDS_ON,
    PATHS,
    chapter_number,
    compare_stacks,
    kernel_spectrum_explorer,
    kernel_spectrum_view,
    plot_reading_path,
    plot_stack_energy,
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("stacked", [False, True])
def test_the_opening_picture_has_its_legend_beside_the_curves_or_under_them_on_a_phone(stacked):
    runs = compare_stacks(torch.ones(1, 1, 8, dtype=torch.float64), depth=2, taps=3, scales=(0.5, 2.0))
    fig = plot_stack_energy(runs, stacked=stacked)
    (ax,) = fig.axes
    assert len(ax.get_lines()) == len(runs)  # the energies of every run (drawn by deep_stack.draw_energies)
    anchor = ax.get_legend().get_bbox_to_anchor().transformed(ax.transAxes.inverted())
    assert anchor.y0 < 0 if stacked else anchor.x0 > 1
    plt.close(fig)


@pytest.mark.parametrize("m, n", [(3, 64), (4, 33), (2, 7)])
def test_the_view_is_the_kernels_spectrum_before_and_a_flat_one_after(rng, m, n):
    a = rng.standard_normal(m)
    before, after = kernel_spectrum_view(a, n)
    np.testing.assert_allclose(before, np.abs(np.fft.rfft(a, n)))
    np.testing.assert_allclose(after, 1)


@pytest.mark.parametrize("call, message", [
    (lambda: kernel_spectrum_view([1.0, 2.0, 3.0], 2), "larger than the signal size"),
    (lambda: kernel_spectrum_view([[1.0]], 4), "non-empty 1D"),
    (lambda: kernel_spectrum_view([1.0, np.nan], 8), "kernel"),
    (lambda: kernel_spectrum_explorer(kernel=(1, 2)), "kernel"),
])
def test_bad_settings_are_refused_by_name(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_the_reading_path_names_every_chapter_and_appendix_once_with_the_number_the_book_prints():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [chapter["file"].removeprefix("book/") for part in toc["parts"] for chapter in part["chapters"]]
    drawn = [page for pages in PATHS.values() for page, _ in pages]
    assert sorted(drawn) == sorted(page for page in files if page not in ("notation", "api", "references"))
    numbered = [chapter["file"].removeprefix("book/") for part in toc["parts"] if part.get("numbered")
                for chapter in part["chapters"]]
    chapters = [page for page in numbered if page.startswith("part")]
    assert [chapter_number(page) for page in chapters] == [str(n) for n in range(len(chapters))]
    assert [chapter_number(page) for page in numbered if page.startswith("appendix")] == ["A", "B"]
    assert list(APPENDICES) == [page for page in numbered if page.startswith("appendix")]
    assert all(source in drawn and target in drawn for source, target in BUILDS_ON)


@pytest.mark.parametrize("stacked", [False, True])
def test_the_reading_path_draws_a_box_per_page_and_an_arrow_per_step(stacked):
    fig = plot_reading_path(stacked=stacked)
    (ax,) = fig.axes
    pages = sum(len(p) for p in PATHS.values())
    assert len(ax.patches) == pages
    arrows = [text for text in ax.texts if isinstance(text, Annotation)]
    assert len(arrows) == pages - len(PATHS) + len(BUILDS_ON)  # each column's steps, then the dashed ones
    boxed = [text for text in ax.texts if not isinstance(text, Annotation) and text.get_text() not in PATHS]
    labels = [text.get_text().replace("\n", " ") for text in boxed]
    assert "6  the layer" in labels and "A  computing it fast" in labels
    renderer = fig.canvas.get_renderer()
    for box, text in zip(ax.patches, boxed, strict=True):
        inside = box.get_window_extent(renderer)
        drawn = text.get_window_extent(renderer)
        assert inside.x0 <= drawn.x0 and drawn.x1 <= inside.x1, f"{text.get_text()!r} sticks out of its box"
    plt.close(fig)

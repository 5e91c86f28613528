"""convnorm_book.phone_and_desktop: one figure drawn at a desktop's width and at a phone's, the screen choosing."""
from __future__ import annotations

import base64
import io
import re

import matplotlib.pyplot as plt
from PIL import Image

from convnorm_book.phone_and_desktop import phone_and_desktop


def plot_two_panels(stacked: bool = False) -> plt.Figure:
    """Two panels side by side, or with ``stacked`` one under the other (as the book's ``plot_*`` functions)."""
    fig, _ = plt.subplots(*((2, 1) if stacked else (1, 2)), figsize=(4, 6) if stacked else (8, 3))
    return fig


def test_a_figure_for_phones_and_desktops_shows_each_drawing_at_its_width():
    """phone_and_desktop draws a plot twice, side by side and stacked; the HTML shows the stacked
    drawing below 600 px, the other above, and leaves the alt text to the build (the caption)."""
    open_before = set(plt.get_fignums())
    figure = phone_and_desktop(plot_two_panels)
    desktop, phone = (Image.open(io.BytesIO(png)).size for png in (figure.desktop, figure.phone))
    assert desktop[0] > desktop[1] and phone[1] > phone[0]  # a wide drawing and a tall one
    html = figure._repr_html_()
    sources = re.findall(r'(?:srcset|src)="data:image/png;base64,([^"]+)"', html)
    assert [base64.b64decode(s) for s in sources] == [figure.phone, figure.desktop]
    assert '<source media="(max-width: 599.98px)"' in html and 'alt=""' in html
    assert figure._repr_png_() == figure.desktop
    assert set(plt.get_fignums()) == open_before  # both drawings closed: nothing else reaches the page

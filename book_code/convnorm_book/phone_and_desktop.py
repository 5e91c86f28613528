"""One figure drawn for a desktop's width and for a phone's, shown by the reader's screen.

Every ``plot_*`` function of the book that takes ``stacked`` draws its panels side by side, or
with ``stacked=True`` one under another (or the figure narrower), readable at a phone's width;
:func:`phone_and_desktop` draws both and returns them as one :class:`PhoneAndDesktopFigure`.
"""
from __future__ import annotations

import base64
import io

import matplotlib.pyplot as plt


class PhoneAndDesktopFigure:
    """One figure drawn twice: ``desktop`` (panels side by side) and ``phone`` (the same panels
    stacked, each readable at a phone's width). In a notebook and on the website (HTML) a screen
    narrower than 600 CSS pixels shows ``phone``, any other ``desktop``; elsewhere (a PNG) it is
    ``desktop``. The image's alt text is left empty here: the book's build writes the figure's
    caption into it (``book/_ext/figure_alt_text.py``). Both figures are closed.
    """

    PHONE_WIDTH = 600  # CSS pixels: below it, the phone drawing

    def __init__(self, desktop: plt.Figure, phone: plt.Figure, dpi: int = 100):
        self.desktop, self.phone = (_png(figure, dpi) for figure in (desktop, phone))
        plt.close(desktop)
        plt.close(phone)

    def _repr_png_(self) -> bytes:
        return self.desktop

    def _repr_html_(self) -> str:
        desktop, phone = (base64.b64encode(png).decode("ascii") for png in (self.desktop, self.phone))
        return (f'<picture class="cx-phone-and-desktop"><source media="(max-width: {self.PHONE_WIDTH - 0.02}px)" '
                f'srcset="data:image/png;base64,{phone}"><img src="data:image/png;base64,{desktop}" alt=""></picture>')


def _png(figure: plt.Figure, dpi: int) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight")
    return buffer.getvalue()


def phone_and_desktop(plot, *args, **kwargs) -> PhoneAndDesktopFigure:
    """``plot(*args, **kwargs)`` on a desktop and ``plot(*args, stacked=True, **kwargs)`` on a phone: any of
    the book's ``plot_*`` functions that take ``stacked`` (its panels one under another, or the figure
    narrower), as one :class:`PhoneAndDesktopFigure`."""
    return PhoneAndDesktopFigure(plot(*args, **kwargs), plot(*args, stacked=True, **kwargs))

"""Explorers: controls and plots that recompute in the reader's browser (JavaScript), on the
website as in Jupyter and Colab.

* :mod:`.page`: an explorer as one self-contained HTML output (its data and ``js/`` code);
* :mod:`.shared`: the ε values of the sliders and the condition number of the readouts, which
  several explorers share.

Each chapter's explorer (its opening state, its data) and the Python reference for every number it
shows (a ``*_view`` function, which its script in ``js/`` mirrors) live in the chapter's module of
:mod:`convnorm_book.chapters`.
"""

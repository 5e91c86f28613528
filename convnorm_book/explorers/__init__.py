"""Explorers: controls and plots that recompute in the reader's browser (JavaScript), on the
website as in Jupyter and Colab.

* :mod:`.chapters`: the book's five explorers (what a chapter displays);
* :mod:`.views`: what each shows, computed with the package, the reference for every number;
* :mod:`.page`: an explorer as one self-contained HTML output (its data and ``js/`` code).
"""

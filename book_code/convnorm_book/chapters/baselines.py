"""The book code of Chapter 7 (``book/part3/07-baselines.ipynb``): the paper's numbers, which the
chapter reads with :func:`~convnorm_book.results.paper_values.load_paper_values` (its layers and their
spectra are the package's own, imported from :mod:`convnorm`)."""
from __future__ import annotations

from convnorm_book.results.paper_values import load_paper_values
from convnorm_book.results.tables import Table

__all__ = ["load_paper_values", "Table"]

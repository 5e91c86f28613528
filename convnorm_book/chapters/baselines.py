"""The book code of Chapter 7 (``book/part3/07-baselines.ipynb``): the paper's numbers, which the
chapter reads with :func:`~convnorm_book.results.reference.load_reference` (its layers and their
spectra are the package's own, imported from :mod:`convnorm`)."""
from __future__ import annotations

from convnorm_book.results.reference import load_reference

__all__ = ["load_reference"]

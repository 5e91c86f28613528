"""The stored experiment records as the book shows them, one job per module:

* :mod:`~convnorm_book.results.records`: finding and reading the records, their
  provenance and scale, and what a reader must know before comparing them;
* :mod:`~convnorm_book.results.stats`: numbers over seeds, paired differences with
  t-intervals, verdicts;
* :mod:`~convnorm_book.results.tables`: tables beside the paper's values, read through
  each experiment's schema (:mod:`convnorm.experiments.schema`);
* :mod:`~convnorm_book.results.plots`: figures;
* :mod:`~convnorm_book.results.live`: training the experiments yourself (opt-in).
"""

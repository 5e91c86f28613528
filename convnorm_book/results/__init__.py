"""The stored experiment records as the book shows them, one job per module:

* :mod:`~convnorm_book.results.records`: finding and reading the records, their scale,
  and what a reader must know before comparing them with the paper;
* :mod:`~convnorm_book.results.reference`: the paper's values, and where each
  experiment's schema (:mod:`convnorm.experiments.schema`) finds a number in them;
* :mod:`~convnorm_book.results.stats`: numbers over seeds, differences paired by seed
  with t-intervals, verdicts;
* :mod:`~convnorm_book.results.tables`: our numbers beside the paper's, read through the
  schema, and the paired comparisons;
* :mod:`~convnorm_book.results.plots`: figures;
* :mod:`~convnorm_book.results.provenance`: the appendix's tables (presets, deviations
  from the paper's protocol, stored records, corrections, schemas);
* :mod:`~convnorm_book.results.live`: training the experiments yourself (opt-in).
"""

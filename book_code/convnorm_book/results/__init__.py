"""The stored experiment records as the book shows them, and the paper's claims set beside
them, one job per module:

* :mod:`~convnorm_book.results.records`: finding and reading the stored files (refusing
  bad ones, one line each), their scale, failed trainings, the pilot's records, and what a
  reader must know before comparing them with the paper (corrections by protocol version);
* :mod:`~convnorm_book.results.paper_values`: the paper's values, and where each
  experiment's schema (:mod:`convnorm_lab.experiments.schema`) finds a number in them;
* :mod:`~convnorm_book.results.words`: names, scales and numbers in a reader's words;
* :mod:`~convnorm_book.results.stats`: numbers over seeds, differences paired by seed
  with t-intervals and p-values, Holm's correction;
* :mod:`~convnorm_book.results.quantities`: the numbers a comparison reads per seed;
* :mod:`~convnorm_book.results.claims`: the kinds of the paper's claims (a difference with
  its sign, parity within a margin, or no claim), primary endpoints, and a study;
* :mod:`~convnorm_book.results.studies`: each experiment as the book reads it, declared
  once: where its claims are made, the paper's claims and its primary endpoints;
* :mod:`~convnorm_book.results.comparisons`: the claims set beside records, per chapter;
* :mod:`~convnorm_book.results.sizes`, :mod:`~convnorm_book.results.power`: what an
  interval says of a claim's size; the seeds a test needs;
* :mod:`~convnorm_book.results.endpoints`: the seeds each primary endpoint needs, and its test;
* :mod:`~convnorm_book.results.scope`: whether a scale can test a claim, and why (the one
  rule the plan, the glance table and the chapters read);
* :mod:`~convnorm_book.results.glance`: one row per claim of the paper beside our records
  (the page that opens Part IV);
* :mod:`~convnorm_book.results.prose`: what the records do not run, in a sentence;
* :mod:`~convnorm_book.results.findings`, :mod:`~convnorm_book.results.diagnosis`: the
  other facts the chapters state, computed;
* :mod:`~convnorm_book.results.checks`: records checked against their definitions;
* :mod:`~convnorm_book.results.tables`: our numbers beside the paper's, comparison grids;
* :mod:`~convnorm_book.results.plots`: figures (forest plots, curves, rates);
* :mod:`~convnorm_book.results.architecture`: the layers of the reduced scale's network;
* :mod:`~convnorm_book.results.archive`: what the JPEG copy cost;
* :mod:`~convnorm_book.results.deviations`, :mod:`~convnorm_book.results.provenance`: the
  appendix's tables (where each preset departs from the paper's protocol, what is recorded,
  schemas);
* :mod:`~convnorm_book.results.live`: training the experiments yourself (opt-in).

A chapter sets every claim of its experiments beside the records at once and shows them
claim by claim::

    PAPER_VALUES = paper_values.load_paper_values()
    NOISE = records.stored("label-noise")
    CHAPTER = comparisons.Chapter.of([ADVERSARIAL, SIMBA, NOISE, SCARCITY], PAPER_VALUES)
    tables.experiment_table(NOISE, PAPER_VALUES)             # ours beside the paper's, caveats
    found = CHAPTER("label-noise")
    tables.comparison_grid(found)                            # pairs x noise rates
    plots.forest(found)                                      # or the same as a figure
"""

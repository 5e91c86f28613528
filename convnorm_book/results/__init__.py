"""The stored experiment records as the book shows them, and the paper's claims tested on
them, one job per module:

* :mod:`~convnorm_book.results.records`: finding and reading the records (refusing bad
  files, one line each), their scale, diverged runs, and what a reader must know before
  comparing them with the paper (corrections by protocol version);
* :mod:`~convnorm_book.results.reference`: the paper's values, and where each
  experiment's schema (:mod:`convnorm.experiments.schema`) finds a number in them;
* :mod:`~convnorm_book.results.words`: names, scales and numbers in a reader's words;
* :mod:`~convnorm_book.results.stats`: numbers over seeds, differences paired by seed
  with t-intervals and p-values, equivalence tests, Holm's correction;
* :mod:`~convnorm_book.results.quantities`: the numbers a comparison reads per seed;
* :mod:`~convnorm_book.results.claims`: what the paper claims for every comparison
  (a difference with its sign, parity within a margin, or no claim), declared once;
* :mod:`~convnorm_book.results.verdicts`: the claims tested on records, beside the
  paper's effect and in size, and corrected together per chapter;
* :mod:`~convnorm_book.results.prose`: verdicts as sentences;
* :mod:`~convnorm_book.results.findings`: the other facts the chapters state, computed;
* :mod:`~convnorm_book.results.checks`: records checked against their definitions;
* :mod:`~convnorm_book.results.tables`: our numbers beside the paper's, verdict grids;
* :mod:`~convnorm_book.results.plots`: figures (forest plots of verdicts, curves, rates);
* :mod:`~convnorm_book.results.provenance`: the appendix's tables (presets, deviations
  from the paper's protocol, what is recorded, corrections, schemas);
* :mod:`~convnorm_book.results.live`: training the experiments yourself (opt-in).

A chapter tests every claim of its experiments at once and shows them claim by claim::

    REFERENCE = paper_values.load_paper_values()
    NOISE = records.stored("label-noise")
    CHAPTER = verdicts.Chapter.of([ADVERSARIAL, SIMBA, NOISE, SCARCITY], REFERENCE)
    Markdown(prose.multiplicity(CHAPTER))                    # how many comparisons, Holm
    tables.experiment_table(NOISE, REFERENCE)                # ours beside the paper's, caveats
    found = CHAPTER("label-noise")
    tables.verdict_grid(found, chapter=CHAPTER)              # pairs x noise rates
    plots.forest(found)                                      # or the same as a figure
    Markdown(prose.summary(found, CHAPTER))                  # the verdict in prose
"""

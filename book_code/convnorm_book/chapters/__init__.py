"""The book's code, one module per page that runs code: the figures, explorers and helpers that
page uses, named after its notebook (``book/part1/02-all-pass-filters.ipynb`` is
:mod:`.all_pass_filters`), which imports it in one line,
``from convnorm_book.chapters import all_pass_filters as book``. The layer's maths stays in
:mod:`convnorm`, which the notebooks import by name.

* :mod:`.intro`: the opening picture of a deep stack and the explorer of a kernel's spectrum;
* :mod:`.why_normalize` (Chapter 0): the deep stack's panels and table, the bound on gradient descent's iterations;
* :mod:`.circulant_matrices_and_the_dft` (Chapter 1): a circulant matrix, its eigenvectors, a
  kernel's spectrum, dense algebra timed against the FFT;
* :mod:`.all_pass_filters` (Chapter 2): a kernel, its normalizer and all-pass filter, and its explorer;
* :mod:`.multichannel_tight_frames` (Chapter 3): one channel's singular values, and their explorer;
* :mod:`.convolution_padding_stride` (Chapter 4): the four convolutions, and the padding and stride
  explorer;
* :mod:`.two_dimensions` (Chapter 5): the paper's Figure 2, a photograph through a layer, a 3x3
  kernel's 2D spectrum and its explorer;
* :mod:`.convnorm_in_pytorch` (Chapter 6): the layer's data flow, the timing records it reads;
* :mod:`.baselines` (Chapter 7): the paper's numbers;
* :mod:`.engineering_notes` (Appendix A): the recorded training-step times per device, and the one measured
  as the paper measured.

The back matter's *ConvNorm in practice* (``book/practitioner.ipynb``) has no module here: it is the
library's own page, whose cells run with :mod:`convnorm` alone and read their records as JSON.

Each module's ``__all__`` lists exactly the names its notebook uses; what several pages share lives
outside this package (:mod:`convnorm_book.deep_stack`, :mod:`convnorm_book.phone_and_desktop`,
:mod:`convnorm_book.explorers`), and no module here imports another. The chapters of Part IV and
Appendix B read their records through :mod:`convnorm_book.results`.
"""

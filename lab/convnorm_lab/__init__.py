"""The lab around ConvNorm: what the paper's experiments need beyond the layer.

Subpackages, each one job: :mod:`~convnorm_lab.data` (CIFAR, its splits and input pipeline),
:mod:`~convnorm_lab.models` (the networks and the registry of normalizations they compare),
:mod:`~convnorm_lab.baselines` (the orthogonal-weight methods ConvNorm is compared with),
:mod:`~convnorm_lab.training` (one training, its records and provenance),
:mod:`~convnorm_lab.attacks` (adversarial attacks) and :mod:`~convnorm_lab.experiments` (the
paper's experiments, their presets, and what a lent GPU trains). It depends on the
:mod:`convnorm` library and never the other way round.
"""

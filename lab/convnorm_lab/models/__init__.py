"""CIFAR ResNet18, VGG16 and a small net (:mod:`~convnorm_lab.models.nets`), built with any of
the normalizations the paper compares, each declared once in
:mod:`~convnorm_lab.models.normalizations`."""
from .nets import ARCHS, CIFAR_STATS, BasicBlock, PlainConvNet, ResNet18, Standardize, build_model, linear
from .normalizations import NORMALIZATIONS, NORMS, Norm, Normalization, NormOptions, conv_block

__all__ = ["ARCHS", "CIFAR_STATS", "NORMALIZATIONS", "NORMS", "BasicBlock", "Norm", "NormOptions", "Normalization",
           "PlainConvNet", "ResNet18", "Standardize", "build_model", "conv_block", "linear"]

"""CIFAR ResNet18, VGG16 and a small net, built with any of the normalizations the
paper compares (none, bn, convnorm, convnorm+bn, sn, oni, ocnn; cayley for timing)."""
from .factory import NORMS, NormOptions, conv_block, linear
from .nets import ARCHS, CIFAR_STATS, BasicBlock, PlainConvNet, ResNet18, Standardize, build_model

__all__ = ["ARCHS", "CIFAR_STATS", "NORMS", "BasicBlock", "NormOptions", "PlainConvNet", "ResNet18",
           "Standardize", "build_model", "conv_block", "linear"]

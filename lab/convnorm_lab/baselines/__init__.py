"""The weight-normalization baselines the paper compares ConvNorm with: spectral
normalization (SN), ONI, the OCNN orthogonality penalty, and the Cayley-transform
orthogonal convolution (for the run-time comparison)."""
from torch.nn.utils.parametrizations import spectral_norm

from .cayley import CayleyConv2d, cayley
from .ocnn import OCNNConv2d, OCNNRegularizer, kernel_orthogonality_penalty, ocnn_penalty
from .oni import ONI, ONI_SETTINGS, oni, oni_orthogonalize

__all__ = ["ONI", "ONI_SETTINGS", "CayleyConv2d", "OCNNConv2d", "OCNNRegularizer", "cayley",
           "kernel_orthogonality_penalty", "ocnn_penalty", "oni", "oni_orthogonalize", "spectral_norm"]

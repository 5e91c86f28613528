"""Argument checks of the attacks: images are pixels in [0, 1] (budgets, in the same units, are
checked with :func:`convnorm.validation.check_fraction`)."""
from __future__ import annotations

import torch


def check_images(name: str, images: torch.Tensor) -> torch.Tensor:
    """``images`` if it is a floating-point tensor with every value in [0, 1]; ``ValueError``
    otherwise (an attack clips to [0, 1], so an image outside it would move by more than the
    budget, and standardised images belong inside the model, not here)."""
    if not isinstance(images, torch.Tensor) or not images.is_floating_point():
        raise ValueError(f"{name} must be a floating-point tensor of pixels in [0, 1], got "
                         f"{getattr(images, 'dtype', type(images).__name__)}")
    if images.numel() and not bool(((images >= 0) & (images <= 1)).all()):
        raise ValueError(f"{name} must lie in [0, 1] (pixel values; standardise inside the model), got values "
                         f"in [{float(images.min()):.4g}, {float(images.max()):.4g}]")
    return images

"""The normalizations the experiments compare, as a small type.

A normalization is a base method applied to every convolution, optionally followed by
BatchNorm: ``Norm.parse("oni+bn") == Norm("oni", batchnorm=True)``. Records and presets
name it by its key (``"oni+bn"``, what :mod:`convnorm.models` builds); a reader by its
label (``"ONI+BN"``).
"""
from __future__ import annotations

from dataclasses import dataclass

#: each base method and its name for a reader (the paper's, "vanilla" for none)
BASE_LABELS = {"none": "vanilla", "bn": "BN", "convnorm": "ConvNorm", "sn": "SN", "oni": "ONI", "ocnn": "OCNN",
               "cayley": "Cayley"}
#: the bases that a BatchNorm may follow (none and bn are BatchNorm's own absence and presence)
_FOLLOWED = ("convnorm", "sn", "oni", "ocnn")


@dataclass(frozen=True)
class Norm:
    """A base method (``"none"``, ``"bn"``, ``"convnorm"``, ``"sn"``, ``"oni"``, ``"ocnn"`` or
    ``"cayley"``) and whether BatchNorm follows it."""

    base: str
    batchnorm: bool = False

    def __post_init__(self):
        if self.base not in BASE_LABELS:
            raise ValueError(f"a normalization's base must be one of {sorted(BASE_LABELS)}, got {self.base!r}")
        if self.batchnorm and self.base not in _FOLLOWED:
            raise ValueError(f"BatchNorm can follow only {', '.join(_FOLLOWED)}, not {self.base!r}")

    @classmethod
    def parse(cls, key: str) -> Norm:
        """The normalization a key names: ``"convnorm+bn"``, ``"sn"``, ``"none"``."""
        base, plus, rest = key.partition("+")
        if plus and rest != "bn":
            raise ValueError(f"a normalization key is BASE or BASE+bn, got {key!r}")
        return cls(base, bool(plus))

    @property
    def key(self) -> str:
        return f"{self.base}+bn" if self.batchnorm else self.base

    @property
    def label(self) -> str:
        return BASE_LABELS[self.base] + ("+BN" if self.batchnorm else "")


#: the four networks of the paper's training tables: vanilla, BN, ConvNorm, ConvNorm+BN
BASIC = tuple(Norm.parse(key) for key in ("none", "bn", "convnorm", "convnorm+bn"))

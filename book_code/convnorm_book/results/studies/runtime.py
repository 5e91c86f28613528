"""The run time (the paper's Table 8): read beside the paper's, with no claim tested."""
from __future__ import annotations

from convnorm_lab.experiments.catalog import RUNTIME

from ..claims import Study

STUDY = Study(RUNTIME, "in the timing")

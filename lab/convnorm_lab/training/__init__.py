"""The training loop, its configuration, and result files with provenance."""
from .results import cpu_info, device_name, git_commit, load_results, provenance, save_results
from .trainer import (
    History,
    TrainConfig,
    Trainer,
    TrainingDiverged,
    default_device,
    evaluate,
    paper_config,
    seed_everything,
)

__all__ = ["History", "TrainConfig", "Trainer", "TrainingDiverged", "cpu_info", "default_device", "device_name",
           "evaluate", "git_commit", "load_results", "paper_config", "provenance", "save_results", "seed_everything"]

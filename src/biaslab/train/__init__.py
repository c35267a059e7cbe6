"""Training: one loop for every lab, seeding, checkpoints."""

from biaslab.train.callbacks import EarlyStopping
from biaslab.train.config import TrainConfig
from biaslab.train.seed import derive_seed, seed_everything
from biaslab.train.trainer import Trainer, accuracy

__all__ = ["Trainer", "TrainConfig", "EarlyStopping", "accuracy", "seed_everything", "derive_seed"]

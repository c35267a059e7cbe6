"""Training: one loop for every lab, the recipes the labs share, seeding, checkpoints.

The callbacks a training runs besides its loop (:mod:`~biaslab.train.callbacks`), training across
processes (:mod:`~biaslab.train.distributed`), symmetries taught by training
(:mod:`~biaslab.train.invariance`), explicit penalties (:mod:`~biaslab.train.regularization`).
"""

from biaslab.train.averaging import WeightAveraging
from biaslab.train.callbacks import Callback, EarlyStopping, KeepBest, LogRecords, TrainingProgress
from biaslab.train.checkpoint import Checkpointing, TrainingState
from biaslab.train.config import OPTIMIZERS, SCHEDULES, Optimizer, Schedule, TrainConfig
from biaslab.train.recipes import (
    FitResult,
    LearningCurve,
    TrainSetup,
    fit_best_of_restarts,
    fit_classifier,
    fit_learning_curve,
    fit_reconstruction,
    fit_scratch,
    predict,
)
from biaslab.train.seed import derive_seed, seed_everything
from biaslab.train.steps import StepOutput
from biaslab.train.trainer import Trainer, accuracy

__all__ = [
    "OPTIMIZERS",
    "SCHEDULES",
    "Callback",
    "Checkpointing",
    "EarlyStopping",
    "FitResult",
    "KeepBest",
    "LearningCurve",
    "LogRecords",
    "Optimizer",
    "Schedule",
    "StepOutput",
    "TrainConfig",
    "TrainSetup",
    "Trainer",
    "TrainingProgress",
    "TrainingState",
    "WeightAveraging",
    "accuracy",
    "derive_seed",
    "fit_best_of_restarts",
    "fit_classifier",
    "fit_learning_curve",
    "fit_reconstruction",
    "fit_scratch",
    "predict",
    "seed_everything",
]

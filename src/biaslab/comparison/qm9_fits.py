"""The QM9 benchmark's fits, as tasks any executor can run (the ``qm9`` lab's): every model,
training-set size and seed through the comparison protocol, on QM9's own split.

For a config with the qm9 lab's keys (``target``, ``split``, ``train_sizes``, ``val_size``,
``test_size``, ``models``, ``hidden``, ``gbt_iterations``, ``loss``, ``epoch_molecules``,
``train``): :func:`split_of` reads QM9 and splits it once per process (a run cache),
:func:`prepared_subset` prepares one training subset (its molecules' graphs, its own
statistics: :func:`~biaslab.comparison.qm9.prepare_qm9`), and :func:`fit_qm9` (a task) fits one
model on it by :func:`~biaslab.comparison.protocol.fit_candidate` with the configured loss, a
torch model seeing its subset repeated to ``epoch_molecules`` per epoch, and returns the fit's
record: test, validation and training MAE, the mean predictor's, epochs, parameters (the trees'
nodes), seconds, and for EGNN on the largest subset its E(3) invariance error under a random
rotation-reflection and translation. Each model's fit on the largest subset with seed 0 is saved
under the run's ``models/`` when it ends (:func:`~biaslab.comparison.saving.fitted_files`), and
:func:`saved_preparation` is that subset's preparation: with them,
``biaslab.load_comparison`` and ``biaslab predict`` predict new molecules from their SMILES.
"""

from __future__ import annotations

import numpy as np

from biaslab.caches import run_cache
from biaslab.comparison.fitting import errors
from biaslab.comparison.protocol import Trial, fit_candidate
from biaslab.comparison.qm9 import prepare_qm9, qm9_candidates, tree_nodes
from biaslab.comparison.saving import fitted_files, preparation_files
from biaslab.data.molecule_splits import random_split, scaffold_split
from biaslab.data.qm9 import load_qm9
from biaslab.errors import ConfigError
from biaslab.evaluate.symmetry import invariance_error, on_field, random_isometry

__all__ = ["FULL_TRAIN", "THREE_D", "fit_qm9", "prepared_subset", "saved_preparation", "split_of"]

THREE_D = ("egnn",)  # reads coordinates; every other model sees only the 2-D graph
FULL_TRAIN = 110_000  # the benchmark's training molecules (Gilmer et al. 2017's split size)


@run_cache
def split_of(cfg, split_seed: int, rows_seed: int):
    """QM9 and its split: read once per process (the driver's and each worker's)."""
    data = load_qm9()  # featurised on first use, with a bar on a terminal only
    split = split_rule(data, cfg, split_seed).subsample(val=cfg.val_size, test=cfg.test_size, seed=rows_seed)
    if cfg.train_sizes[-1] > len(split.train):
        raise ConfigError(
            f"train_sizes={cfg.train_sizes}: the {cfg.split} split has {len(split.train)} training molecules"
        )
    return data, split


@run_cache
def prepared_subset(cfg, n: int, subset_seed: int, split_seed: int, rows_seed: int):
    """A training subset prepared once per process (its molecules' graphs, its own statistics),
    shared by every model."""
    data, split = split_of(cfg, split_seed, rows_seed)
    subset = split.subsample_train(n, subset_seed)
    return prepare_qm9(data, data.target(cfg.target), subset, rule=cfg.split, seed=split_seed)


def fit_qm9(task, model: str, n: int, seed: int) -> dict:
    """One model on one training subset with one seed: a task (``ctx.tasks``)."""
    cfg = task.cfg
    seeds = (task.seed_for("split"), task.seed_for("evaluation rows"))
    prepared = prepared_subset(cfg, n, task.seed_for("subset", seed), *seeds)
    (candidate,) = qm9_candidates((model,), cfg.hidden, gbt_iterations=cfg.gbt_iterations, loss=cfg.loss)
    return fit_record(task, cfg, candidate, prepared, seed, n)


def split_rule(data, cfg, seed: int):
    """The benchmark's split of QM9: random (110,000 training molecules, 10,000 validation, the
    rest test) or by Murcko scaffold (80/10/10)."""
    if cfg.split == "random":
        return random_split(
            len(data), min(FULL_TRAIN, len(data) - 2 * 10), min(10_000, len(data) // 10), seed
        )
    return scaffold_split(data.scaffold, (0.8, 0.1, 0.1), seed)


def fit_record(ctx, cfg, candidate, prepared, seed: int, n: int) -> dict:
    """One candidate on one training subset: a torch model sees its subset repeated to
    ``epoch_molecules`` per epoch (trees take no steps); the record of the fit, plain data."""
    tag = f"{candidate.name}-n{n}-s{seed}"
    repeat_to = cfg.epoch_molecules if candidate.engine == "torch" else None
    trained_on = prepared.train_subset(np.arange(n), repeat_to=repeat_to)
    result = fit_candidate(Trial(candidate, trained_on, cfg.train.training(), ctx.training(tag), cfg.loss))
    fitted = result.fitted
    train_error = errors(prepared.to_unit(fitted.outputs_on(prepared, "train")), prepared.targets["train"])
    extra = {}
    if candidate.name in THREE_D and seed == 0 and n == cfg.train_sizes[-1]:
        # A random rotation-reflection (det −1) and translation of every molecule's atoms.
        moved = on_field("pos", random_isometry(3, ctx.seed_for("rotation"), det=-1, shift_std=5.0))
        probe = prepared.store.batch(prepared.rows["test"][:64])
        extra["egnn_invariance_error"] = invariance_error(fitted.model, moved, probe)
    if seed == 0 and n == cfg.train_sizes[-1]:  # the model a prediction uses
        for path, content in fitted_files(result, candidate, prepared).items():
            ctx.save_file(path, content)  # in the run's models/ when this fit's result arrives
    trees = candidate.engine == "sklearn"  # parameters: the trees' nodes; epochs: boosting iterations
    return {
        "model": candidate.name,
        "train_size": n,
        "seed": seed,
        "test_mae": result.test["mae"],
        "val_mae": result.val["mae"],
        "train_mae": train_error["mae"],
        "test_rmse": result.test["rmse"],
        "baseline_test_mae": result.test["baseline_mae"],
        "epochs": fitted.model.n_iter_ if trees else len(fitted.history),
        "best_epoch": fitted.model.n_iter_ if trees else result.best_epoch,
        "parameters": tree_nodes(fitted.model) if trees else result.parameters,
        "train_seconds": result.train_seconds,
        "scores": result.scores(),  # without the fitted model, which stays in the task
        **extra,
    }


def saved_preparation(cfg, seeds: tuple[int, int, int], saved, recommended: str | None) -> dict[str, bytes]:
    """The run's ``models/`` preparation for the models saved on the largest subset (seed 0):
    its node and counts statistics and target scaling (:func:`prepared_subset`), the input
    schema (molecules, read from SMILES) and the catalog that rebuilds the models.

    Args:
        seeds: the subset's, the split's and the evaluation rows' seeds, as :func:`fit_qm9` drew them.
        saved: the names of the saved models; recommended: the recommended one's (or None).
    """
    from biaslab.data.input_schema import InputSchema

    prepared = prepared_subset(cfg, cfg.train_sizes[-1], *seeds)
    catalog = {"name": "qm9", "hidden": cfg.hidden, "gbt_iterations": cfg.gbt_iterations, "loss": cfg.loss}
    schema = InputSchema("molecule", ()).as_dict()
    return preparation_files(prepared, schema, (), list(saved), recommended, catalog)

"""A scientist's own model beside the guide's candidates, and the one try every candidate gets on a
small batch before any training (so that a broken factory is one line, before anything is written).

:func:`user_candidate` imports ``factory`` from ``"module:factory"`` or ``"path/to/file.py:factory"``;
:func:`check_candidate` builds a candidate and runs it on a few examples (arrays),
:func:`check_graph_candidate` on a few graphs.

:func:`chosen_candidates` keeps the guide's candidates the given names select, then adds the
user's, each tried on ``CHECK_ROWS`` rows; :func:`factory_file` is the file a ``file.py:factory``
spec names (one rule for the import, the run's input digests and the saved model's SHA-256).
A factory that raises, returns no module or estimator, or gives another shape than
(N, n_outputs) is one line naming it and the shapes.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import math
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from biaslab.comparison.candidates import Candidate, Task, candidates_for, slug
from biaslab.data.user_formats import where
from biaslab.errors import ConfigError
from biaslab.formatting import cut, quoted

__all__ = ["CHECK_ROWS", "check_candidate", "check_graph_candidate", "chosen_candidates", "user_candidate"]

CHECK_ROWS = 4  # rows a user's factory is tried on before any training


def chosen_candidates(data, models=(), own=()) -> list[Candidate]:
    """The decision guide's candidates for ``data`` (those ``models`` names, all when empty), then
    the user's own models (``"module:factory"`` specs), each tried on ``CHECK_ROWS`` rows: a
    broken factory, an unknown name or a molecule the graph models cannot read is one
    ConfigError line before any training."""
    offered = candidates_for(data.kind, task=data.task, has_positions=data.positions is not None)
    chosen = offered
    if models:
        by_name = {slug(c.name): c for c in offered}
        unknown = [m for m in models if slug(m) not in by_name]
        if unknown:
            raise ConfigError(
                f"models={','.join(models)}: no candidate {', '.join(unknown)} for {data.kind} data; "
                f"choose from {', '.join(c.name for c in offered)}"
            )
        chosen = [by_name[slug(m)] for m in dict.fromkeys(models)]
    mask = None if data.mask is None else data.mask[:CHECK_ROWS]
    mine = [user_candidate(spec) for spec in own]
    if data.x is None:  # graphs and molecules: a user's model reads a batch of graphs
        from biaslab.comparison.graph_store import UNREADABLE_ADVICE, sample_batch, unreadable_molecule

        graph_models = [c.name for c in chosen if c.reads in ("graph", "geometry")] + [c.name for c in mine]
        unreadable = unreadable_molecule(data) if data.kind == "molecule" and graph_models else None
        if unreadable:
            raise ConfigError(
                f"{unreadable}; {', '.join(graph_models)} read the notes' atom features (H, C, N, O, F): "
                f"{UNREADABLE_ADVICE}"
            )
        reads = "geometry" if data.positions is not None else "graph"
        mine = [replace(candidate, reads=reads) for candidate in mine]
        batch = sample_batch(data, CHECK_ROWS) if mine else None
        for candidate in mine:
            check_graph_candidate(candidate, batch, data.n_outputs, data.task)
        return chosen + mine
    for candidate in mine:
        check_candidate(candidate, data.x[:CHECK_ROWS], data.n_outputs, data.task, mask)
    return chosen + mine


def user_candidate(spec: str) -> Candidate:
    """A scientist's own model: ``"module:factory"`` (an importable module) or
    ``"path/to/file.py:factory"`` (a file, imported by its path).

    ``factory(input_shape, n_outputs)`` returns a fresh ``nn.Module`` mapping ``(N, *input_shape)``
    to ``(N, n_outputs)``. A factory with an attribute ``takes_mask = True`` is called as
    ``model(x, mask)`` on sets; otherwise it gets ``x`` alone, with the padding zeroed. On graphs
    and molecules ``input_shape`` is ``(F,)``, the node features, and the model maps a batch of
    graphs (:class:`~biaslab.data.qm9.MoleculeBatch`) to ``(num_graphs, n_outputs)``: a comparison
    sets its ``reads`` to ``"graph"`` (``"geometry"`` with coordinates).

    Returns:
        A torch :class:`Candidate` named after the factory, prior ``"your model"``.

    Raises:
        ConfigError: one line: no colon, no such file or module, an import that fails, no such
            attribute, an attribute that is not callable.
    """
    source, _, name = spec.rpartition(":") if isinstance(spec, str) else ("", "", "")
    if not source.strip() or not name.isidentifier():
        raise ConfigError(
            f"a model is given as MODULE:FACTORY or FILE.py:FACTORY (e.g. my_models.py:make_model), "
            f"not {quoted(spec)}"
        )
    path = factory_file(spec)
    module = _import_file(path) if path is not None else _import_module(source)
    where_ = where(source)
    if not hasattr(module, name):
        public = sorted(  # what the module itself defines, not what it imports
            n
            for n, v in vars(module).items()
            if callable(v) and not n.startswith("_") and getattr(v, "__module__", None) == module.__name__
        )
        found = f"; it defines {', '.join(public[:8])}" if public else ""
        raise ConfigError(f"{where_} has no {quoted(name)}{found}")
    factory = getattr(module, name)
    if not callable(factory):
        raise ConfigError(f"{where_}:{name} is a {type(factory).__name__}, not a function building a model")

    def build(input_shape: tuple[int, ...], n_outputs: int, task: Task) -> Any:
        try:
            return factory(tuple(input_shape), n_outputs)
        except SystemExit as exc:  # the user's code may not end biaslab
            raise ConfigError(f"{where_}:{name} {_exited(exc)} instead of returning a model") from None

    takes_mask = getattr(factory, "takes_mask", False) is True
    return Candidate(name, "your model", "torch", build, takes_mask=takes_mask, source=spec)


def factory_file(spec: str) -> Path | None:
    """The file a ``"file.py:factory"`` model spec names (a path: it ends in ``.py`` or has a
    folder); None for ``"module:factory"``, an installed module fixed by its package."""
    source = spec.rpartition(":")[0]
    return Path(source) if source.endswith(".py") or "/" in source or os.sep in source else None


def _import_module(name: str):
    try:
        with _own_command_line(name):
            return importlib.import_module(name)
    except SystemExit as exc:  # the user's code may not end biaslab
        raise ConfigError(f"importing module {quoted(name)}: it {_exited(exc)}") from None
    except ModuleNotFoundError as exc:
        if exc.name and name.split(".")[: len(exc.name.split("."))] == exc.name.split("."):
            raise ConfigError(
                f"no module named {quoted(name)}; give its file instead "
                f"(path/to/{name.rpartition('.')[2]}.py:FACTORY)"
            ) from None
        raise ConfigError(f"importing module {quoted(name)} failed: {_one_line(exc)}") from None
    except Exception as exc:  # the user's code: any failure is theirs to fix
        raise ConfigError(f"importing module {quoted(name)} failed: {_one_line(exc)}") from None


def _import_file(path: Path):
    if not path.is_file():
        raise ConfigError(f"no model file at {where(path)}")
    if path.suffix != ".py":
        raise ConfigError(f"{where(path)} is not a Python file (.py)")
    module_name = f"biaslab_user_model_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # dataclasses and pickling look their module up
    try:
        with _own_command_line(str(path)):
            spec.loader.exec_module(module)
    except SystemExit as exc:  # the user's code may not end biaslab
        sys.modules.pop(module_name, None)
        raise ConfigError(f"importing {where(path)}: it {_exited(exc)}") from None
    except Exception as exc:  # the user's code: any failure is theirs to fix
        sys.modules.pop(module_name, None)
        raise ConfigError(f"importing {where(path)} failed: {_one_line(exc)}") from None
    return module


@contextlib.contextmanager
def _own_command_line(program: str):
    """``sys.argv`` as ``[program]`` while a user's module is imported: a module that parses the
    command line at import sees none of biaslab's arguments, and a usage line it prints names
    its own file, never biaslab."""
    saved = sys.argv
    sys.argv = [program]
    try:
        yield
    finally:
        sys.argv = saved


def _exited(exc: SystemExit) -> str:
    """``"ended the program (exit code 2; a model file must not exit or parse the command line)"``."""
    return f"ended the program (exit code {exc.code!r}; a model file must not exit or parse the command line)"


def _one_line(exc: BaseException, limit: int = 200) -> str:
    """``TypeError: message`` on one line, cut to about ``limit`` characters."""
    return cut(" ".join(f"{type(exc).__name__}: {exc}".split()), limit)


# --------------------------------------------------------------------------- checking a candidate


def check_candidate(candidate: Candidate, x_sample, n_outputs: int, task: Task, mask_sample=None) -> None:
    """Build ``candidate`` and run it once on a small batch, before any training.

    Args:
        candidate: the candidate.
        x_sample: a few examples ``(N, *input_shape)`` (NumPy or torch).
        n_outputs: classes (classify) or 1 (regress).
        task: ``classify`` or ``regress``.
        mask_sample: ``(N, S)`` booleans for sets (True: a real element), passed when the
            candidate ``takes_mask``.

    Raises:
        ConfigError: one line naming the candidate: its factory raises, returns something other
            than an ``nn.Module`` (torch) or an estimator (sklearn), fails on the batch, or gives
            an output of another shape than ``(N, n_outputs)`` (the shapes expected and got).
    """
    x = torch.as_tensor(np.asarray(x_sample) if not torch.is_tensor(x_sample) else x_sample)
    x = x.to(torch.float32)
    if x.dim() < 2 or len(x) == 0:
        raise ValueError(f"x_sample must be a batch (N, *input_shape) with N >= 1, got {tuple(x.shape)}")
    label = f"candidate {quoted(candidate.name)}"
    input_shape = tuple(x.shape[1:])
    model = _built(candidate, input_shape, n_outputs, task, label, f"input shape {input_shape}")
    if candidate.engine == "sklearn":
        _check_estimator(label, model, x.reshape(len(x), -1).cpu().numpy(), n_outputs, task)
        return
    args = (x,)
    if candidate.takes_mask:
        mask = None if mask_sample is None else torch.as_tensor(np.asarray(mask_sample), dtype=torch.bool)
        args = (x, mask)

    def call(model: nn.Module) -> torch.Tensor:
        parameter = next(model.parameters(), None)
        device = parameter.device if parameter is not None else x.device
        return model(*(a if a is None else a.to(device) for a in args))

    out = _run_once(label, model, call, f"a batch of shape {tuple(x.shape)}")
    _check_output(label, x, out, (len(x), n_outputs), task)


def check_graph_candidate(candidate: Candidate, batch, n_outputs: int, task: Task) -> None:
    """:func:`check_candidate` for a model of graphs: build it for ``(F,)`` node features and run
    it once on ``batch`` (:func:`~biaslab.comparison.graph_store.sample_batch`), expecting
    ``(num_graphs, n_outputs)``.

    Raises:
        ConfigError: one line naming the candidate, as :func:`check_candidate`.
    """
    label = f"candidate {quoted(candidate.name)}"
    input_shape = (int(batch.x.shape[1]),)
    model = _built(candidate, input_shape, n_outputs, task, label, f"node features {input_shape}")
    out = _run_once(label, model, lambda m: m(batch), f"a batch of {batch.num_graphs} graphs")
    what = f"{batch.num_graphs} graphs"
    got = tuple(out.shape) if torch.is_tensor(out) else f"a {type(out).__name__}"
    if got != (batch.num_graphs, n_outputs):
        raise ConfigError(
            f"{label} maps {what} to {got}; expected {_expected((batch.num_graphs, n_outputs), task)}"
        )
    if not torch.isfinite(out).all():
        raise ConfigError(f"{label} gives NaN or infinite outputs on {what}")


def _built(candidate: Candidate, input_shape, n_outputs: int, task: Task, label: str, inputs: str):
    """``candidate.build(...)``; a factory that raises is one ConfigError line."""
    try:
        return candidate.build(input_shape, n_outputs, task)
    except ConfigError:  # already one line (a factory that ended the program)
        raise
    except Exception as exc:  # a user's factory: any failure is one line
        raise ConfigError(
            f"{label} could not be built for {inputs} with {n_outputs} outputs: {_one_line(exc)}"
        ) from None


def _run_once(label: str, model, call, batch: str) -> torch.Tensor:
    """``call(model)`` in eval mode without gradients; something not a torch module, or a model
    that fails on the batch, is one ConfigError line."""
    if not isinstance(model, nn.Module):
        raise ConfigError(f"{label}: its factory returned a {type(model).__name__}, not a torch.nn.Module")
    model.eval()
    try:
        with torch.no_grad():
            return call(model)
    except SystemExit as exc:  # the user's code may not end biaslab
        raise ConfigError(f"{label} {_exited(exc)} on {batch}") from None
    except Exception as exc:  # a user's model: any failure is one line
        raise ConfigError(f"{label} failed on {batch}: {_one_line(exc)}") from None


def _expected(shape: tuple[int, ...], task: str) -> str:
    return f"{shape} ({'one score per class' if task == 'classify' else 'one value per example'})"


def _check_output(label: str, x: torch.Tensor, out, shape: tuple[int, ...], task: str) -> None:
    got = tuple(out.shape) if torch.is_tensor(out) else f"a {type(out).__name__}"
    if got != shape:
        raise ConfigError(f"{label} maps input {tuple(x.shape)} to {got}; expected {_expected(shape, task)}")
    if not torch.isfinite(out).all():
        raise ConfigError(f"{label} gives NaN or infinite outputs on input {tuple(x.shape)}")


def _check_estimator(label: str, estimator, x: np.ndarray, n_outputs: int, task: str) -> None:
    """Fit on ``x`` with made-up targets (every class present) and check what it predicts."""
    needs = ("fit", "predict", "predict_proba") if task == "classify" else ("fit", "predict")
    if not all(callable(getattr(estimator, n, None)) for n in needs):
        raise ConfigError(
            f"{label}: its factory returned a {type(estimator).__name__}, not a scikit-learn "
            f"estimator with {', '.join(needs)}"
        )
    rows = max(len(x), n_outputs)
    x_fit = np.tile(x, (math.ceil(rows / len(x)), 1))[:rows]
    y_fit = np.arange(rows) % n_outputs if task == "classify" else np.linspace(-1.0, 1.0, rows)
    try:
        estimator.fit(x_fit, y_fit)
        out = estimator.predict_proba(x) if task == "classify" else estimator.predict(x)[:, None]
    except Exception as exc:  # any failure is one line
        raise ConfigError(f"{label} failed on a batch of shape {x.shape}: {_one_line(exc)}") from None
    _check_output(label, torch.as_tensor(x), torch.as_tensor(np.asarray(out)), (len(x), n_outputs), task)

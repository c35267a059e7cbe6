"""The files a run reads, fixed by their contents: a resume never mixes two inputs.

A run's config names some of its inputs by path (``compare``'s data file or folder, a user's
model file, an ``--ood`` set). A path says where the bytes were, not what they were: replace
``data.csv`` by a file of the same shape with other labels, and a resumed run would put the fits
made on the old file beside fits made on the new one. So a run records, in config.json, the
SHA-256 and size of every input its config names (config.json's ``inputs``, part of the run's
fingerprint), and ``--resume`` refuses an input whose contents changed, in one line naming it
(:func:`changed_input`), before a finished run is even reloaded.

A config takes part by defining ``input_files() -> {label: path}`` (the paths it will read; a
demo set or an empty setting is simply left out). A folder's digest is taken over its files' names
(relative, sorted) and contents, so a renamed, added, removed or edited image changes it. Files
are read in pieces (:func:`content_digest`), never whole.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from biaslab.errors import CheckpointError, DataFormatError

__all__ = ["changed_input", "content_digest", "input_digests"]

CHUNK = 1 << 20  # bytes read at a time: a digest never holds a whole file in memory


def _file_digest(path: Path) -> tuple[str, int]:
    digest, size = hashlib.sha256(), 0
    with path.open("rb") as handle:
        while block := handle.read(CHUNK):
            digest.update(block)
            size += len(block)
    return digest.hexdigest(), size


def content_digest(path: str | os.PathLike) -> dict[str, Any]:
    """``{"sha256": ..., "bytes": ...}`` of a file, or of a folder: the SHA-256 over each file's
    relative name and its own SHA-256, in sorted order, and the files' total size."""
    path = Path(path)
    try:
        if path.is_file():
            sha, size = _file_digest(path)
            return {"sha256": sha, "bytes": size}
        if path.is_dir():
            digest, total = hashlib.sha256(), 0
            for file in sorted(p for p in path.rglob("*") if p.is_file()):
                sha, size = _file_digest(file)
                digest.update(f"{file.relative_to(path).as_posix()}\0{sha}\n".encode())
                total += size
            return {"sha256": digest.hexdigest(), "bytes": total}
    except OSError as exc:
        raise DataFormatError(f"{path} cannot be read ({exc.strerror or type(exc).__name__})") from None
    raise DataFormatError(f"{path} is neither a file nor a folder")


def _named(cfg: Any) -> dict[str, str]:
    """``cfg.input_files()``: the inputs the config names by label (none without that method)."""
    return cfg.input_files() if hasattr(cfg, "input_files") else {}


def input_digests(cfg: Any) -> dict[str, dict[str, Any]]:
    """``{label: {"path", "sha256", "bytes"}}`` for every input the config names."""
    return {label: {"path": str(path), **content_digest(path)} for label, path in _named(cfg).items()}


def changed_input(saved: dict, cfg: Any, config_path: str | os.PathLike) -> None:
    """Refuse (one CheckpointError line) a resume whose inputs are not the ones the run started
    with: a file changed, gone, or an input the run did not record. ``saved`` is the run's
    config.json; a run from before inputs were recorded has none to compare."""
    if "inputs" not in saved:
        return
    recorded = saved["inputs"] if isinstance(saved["inputs"], dict) else {}
    for label, path in _named(cfg).items():
        before = recorded.get(label)
        if not isinstance(before, dict):
            raise CheckpointError(f"{config_path} records no digest of its {label} {path}; cannot resume")
        try:
            now = content_digest(path)
        except DataFormatError as exc:
            raise CheckpointError(
                f"the {label} of this run, {path}, is gone or unreadable ({exc}); cannot resume"
            ) from None
        if (now["sha256"], now["bytes"]) != (before.get("sha256"), before.get("bytes")):
            was = f"{before.get('bytes')} bytes, SHA-256 {str(before.get('sha256'))[:12]}…"
            raise CheckpointError(
                f"the {label} of this run, {path}, changed since the run started ({was}; now "
                f"{now['bytes']} bytes, {now['sha256'][:12]}…): resuming would mix results on two inputs; "
                "restore it, or start a new run"
            )

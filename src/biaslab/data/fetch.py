"""``biaslab data fetch``: download a data set's official files, check them, and cache them.

:func:`fetch` downloads the files :data:`~biaslab.data.sources.SOURCES` names for a data set,
refuses any whose size or checksum differs from the published one, and converts them into the
cache its loader reads (``mnist-raw.npz``, ``fashion-mnist-raw.npz``, ``animal-mnist.npz``,
``qm9-v1.npz`` in :func:`~biaslab.data.store.data_dir`), so every lab works unchanged. A data set
already cached is left alone: nothing is downloaded.

Files go to ``<data_dir()>/downloads/<name>/``: each is written to ``<file>.part``, renamed only
once checked, and the folder is removed once the cache is written. A download cut off (a lost
connection, Ctrl-C) is resumed where it stopped with an HTTP Range request, in the same call or
the next. A mirror (``mirror=`` or ``$BIASLAB_MIRROR``) replaces each data set's official base
URL: an institution's copy holding the same file names, ``{name}`` in it standing for the data
set's name (``https://example.org/data/{name}/``); ``file:///folder/`` works too.

Bounds: a download stops one byte past the file's published size (or, where none is published,
past the cap the source table gives it) and is refused; one file gets at most ``MAX_ATTEMPTS``
requests in a call; connecting and every read time out after ``TIMEOUT_S``; an attempt that
brings fewer than ``MIN_RATE`` bytes a second over ``SLOW_WINDOW_S`` seconds is broken off
(curl's ``--speed-limit``/``--speed-time``: a server that trickles a byte now and then would keep
every read inside its timeout for ever), and ``MAX_STALLS`` such or empty attempts in a row end the
download. Each of these ends in a :class:`DataFetchError` (one line; exit 2 on the command line).

A file whose size or checksum differs is removed and refused (a resumed part is retried once from
zero); a download stopped past its size is removed too, while one that broke off keeps its
``.part`` for the next call. One fetch per data set at a time (a :class:`~biaslab.locking.DirectoryLock`
on its downloads folder). Progress: a tqdm bar on a terminal, else a line every ``LINE_EVERY_S``.
"""

from __future__ import annotations

import http.client
import os
import shutil
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from biaslab.data.sources import SOURCES, RemoteFile, Source
from biaslab.data.store import data_dir
from biaslab.errors import ConfigError, DataFetchError, DataFormatError, DataMissingError
from biaslab.fileio import as_storage_error
from biaslab.formatting import tell
from biaslab.locking import DirectoryLock
from biaslab.version import __version__

__all__ = ["CHOICES", "MIRROR_ENV_VAR", "SOURCES", "DataFetchError", "Fetched", "fetch"]

CHOICES = (*SOURCES, "all")
MIRROR_ENV_VAR = "BIASLAB_MIRROR"
DOWNLOADS = "downloads"
TIMEOUT_S = 60.0  # for connecting and for each read of the socket (urlopen's timeout is both)
MAX_STALLS = 3  # attempts in a row that bring no byte (or are too slow) before a download is given up
MIN_RATE = 1024  # bytes a second, at the least, over each SLOW_WINDOW_S of an attempt
SLOW_WINDOW_S = 60.0
# Requests for one file in one call, those that bring bytes included. A link that breaks off now
# and then is resumed a few times; a server that breaks off at the same place every time (and
# ignores Range, so that each try starts over) would otherwise be asked without end. The bytes
# received are kept: the same command, run again, resumes from them.
MAX_ATTEMPTS = 10
CHUNK = 1 << 16
LINE_EVERY_S = 10.0  # progress lines when stderr is not a terminal


@dataclass(frozen=True)
class Fetched:
    """What :func:`fetch` did for one data set: ``downloaded`` False when it was already cached."""

    name: str
    title: str
    cache: Path
    downloaded: bool


def fetch(name: str = "all", mirror: str | None = None, progress: bool = True) -> list[Fetched]:
    """Download, check and cache a data set (or all of them) from its official source.

    Args:
        name: ``"mnist"``, ``"fashion-mnist"``, ``"animal-mnist"``, ``"qm9"`` or ``"all"``.
        mirror: a base URL replacing the official ones (``{name}`` becomes the data set's name);
            default ``$BIASLAB_MIRROR``, else the official sources.
        progress: show each download's progress on stderr (a bar on a terminal, otherwise a
            line every few seconds) and what is being done; False: silent.

    Returns:
        One :class:`Fetched` per data set, in the order of ``SOURCES``.

    Raises:
        ConfigError: an unknown name, or a mirror that is not an http(s):// or file:// URL.
        DataMissingError: the source cannot be reached (the message names the offline
            alternative) or answers with an error.
        DataFetchError: a source sent more than a file's published size (or its cap) — the file
            is removed and nothing is cached — or a download broke off too often.
        DataFormatError: a file's size or checksum is not the published one (it is removed and
            nothing is cached), or its content cannot be converted.
        RunLockedError: another process is fetching the same data set.
        StorageError: the data directory cannot be written.
    """
    if name not in CHOICES:
        raise ConfigError(f"unknown data set '{name}' (choices: {', '.join(CHOICES)})")
    names = list(SOURCES) if name == "all" else [name]
    mirror = _check_mirror(mirror if mirror is not None else os.environ.get(MIRROR_ENV_VAR), len(names))
    return [_fetch_one(SOURCES[n], mirror, progress) for n in names]


def _check_mirror(mirror: str | None, n_sets: int) -> str | None:
    """The mirror URL, checked; None for the official sources."""
    mirror = (mirror or "").strip()
    if not mirror:
        return None
    if urllib.parse.urlsplit(mirror).scheme not in ("http", "https", "file"):
        raise ConfigError(f"mirror {mirror!r} is not an http://, https:// or file:// URL")
    if n_sets > 1 and "{name}" not in mirror:
        raise ConfigError(
            f"mirror {mirror!r}: for several data sets it needs {{name}}, e.g. "
            "https://example.org/data/{name}/ (MNIST and Fashion-MNIST share their file names)"
        )
    return mirror


def _fetch_one(source: Source, mirror: str | None, progress: bool) -> Fetched:
    """Fetch one data set unless its cache is there; the downloads folder goes once it is."""
    if source.cache().is_file():
        return Fetched(source.name, source.title, source.cache(), downloaded=False)
    base = mirror.replace("{name}", source.name).rstrip("/") + "/" if mirror else source.base
    folder = data_dir() / DOWNLOADS / source.name
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise (as_storage_error(exc, folder) or exc) from None
    lock = DirectoryLock(folder / ".lock")
    lock.acquire(f"another `biaslab data fetch {source.name}` is running ({{holder}})")
    try:
        if source.cache().is_file():  # that other fetch finished meanwhile
            return Fetched(source.name, source.title, source.cache(), downloaded=False)
        _say(progress, f"{source.title}: downloading {len(source.files)} file(s) from {base}")
        for file in source.files:
            url = base + (file.name if mirror else file.path or file.name)
            _download(url, folder / file.name, file, source, progress)
        _say(progress, f"{source.title}: converting into {source.cache()}")
        source.convert(folder, base, progress)
    finally:
        lock.release()
    shutil.rmtree(folder, ignore_errors=True)
    try:
        folder.parent.rmdir()  # ``downloads/`` too, once no other data set's files are in it
    except OSError:
        pass
    return Fetched(source.name, source.title, source.cache(), downloaded=True)


def _say(progress: bool, line: str) -> None:
    """A line on stderr when progress is shown (escaped: a path or URL commands no terminal)."""
    if progress:
        tell(line)


# ----------------------------------------------------------------------------- one file


def _download(url: str, target: Path, file: RemoteFile, source: Source, progress: bool) -> Path:
    """``target``, downloaded from ``url`` through ``<target>.part`` and checked.

    A checked ``target`` an earlier call left (its conversion failed) is kept. A ``.part`` an
    earlier call left is resumed; should the whole then fail its check, it is downloaded once
    more from the start before the file is refused.

    Raises:
        DataFormatError: the file's size or checksum differs from the published one; the file
            is removed.
        DataFetchError: see :func:`_transfer`.
    """
    if target.is_file():
        if _problem(target, file) is None:
            return target
        target.unlink()
    part = target.with_name(target.name + ".part")
    resumed = part.is_file() and part.stat().st_size > 0
    _transfer(url, part, file, source, progress)
    problem = _problem(part, file)
    if problem is not None and resumed:
        part.unlink()
        _transfer(url, part, file, source, progress)
        problem = _problem(part, file)
    if problem is not None:
        part.unlink(missing_ok=True)
        raise DataFormatError(
            f"{source.title}: {file.name} from {url} {problem}: refused and removed, nothing was cached"
        )
    os.replace(part, target)
    return target


def _problem(path: Path, file: RemoteFile) -> str | None:
    """Why ``path`` is not ``file`` as published (its size, then its checksum); None if it is."""
    size = path.stat().st_size
    if file.size is not None and size != file.size:
        return f"has {size:,} bytes, not the published {file.size:,}"
    if size > file.limit:  # no size is published: its cap
        return f"has {size:,} bytes, more than the {file.limit:,} allowed for it"
    digest = file.digest_of(path)
    if digest != file.digest.lower():
        algorithm = {"sha256": "SHA-256", "md5": "MD5"}.get(file.algorithm, file.algorithm)
        return f"has {algorithm} {digest}, not the published {file.digest}"
    return None


def _transfer(url: str, part: Path, file: RemoteFile, source: Source, progress: bool) -> None:
    """Bring ``part`` to the whole of ``url``, resuming with Range requests where it breaks off.

    At most ``MAX_ATTEMPTS`` requests are made, and ``part`` never holds more than
    ``file.limit + 1`` bytes: one byte past the published size (or the cap) ends the download.

    Raises:
        DataMissingError: the server cannot be reached or answers with an error.
        DataFetchError: the server sent more than ``file.limit`` bytes (``part`` is removed); or
            the download broke off ``MAX_STALLS`` times in a row without a byte or too slowly,
            or ``MAX_ATTEMPTS`` times in all (``part`` is kept for the next call).
    """
    have = part.stat().st_size if part.is_file() else 0
    if have > file.limit:  # not a beginning of this file
        part.unlink()
        have = 0
    meter = _Progress(f"{source.title}: {file.name}", file.size, have, progress)
    attempts = stalls = 0
    started_over = slow = False  # the server answered a Range request with the whole file
    try:
        while file.size is None or have < file.size:
            if attempts == MAX_ATTEMPTS:
                raise DataFetchError(_broke_off(source, file, url, have, attempts, started_over))
            attempts += 1
            got, complete, restarted, slow = _attempt(url, part, have, file.limit, source, meter)
            started_over = started_over or restarted
            have = part.stat().st_size if part.is_file() else 0
            if have > file.limit:
                part.unlink()
                raise DataFetchError(_too_long(source, file, url, have))
            if complete:
                return
            stalls = 0 if got and not slow else stalls + 1
            if stalls >= MAX_STALLS:
                raise DataFetchError(_broke_off(source, file, url, have, attempts, started_over, slow))
    finally:
        meter.close()


def _too_long(source: Source, file: RemoteFile, url: str, have: int) -> str:
    """The message for a download stopped one byte past what the file may hold."""
    if file.size is not None:
        allowed = f"more than its published {file.size:,} bytes"
    else:
        allowed = f"more than {file.cap:,} bytes, the cap for this file (no size is published)"
    return (
        f"{source.title}: {file.name} from {url} sent {allowed}; stopped at {have:,} bytes: "
        "refused and removed, nothing was cached"
    )


def _broke_off(
    source: Source, file: RemoteFile, url: str, have: int, attempts: int, started_over: bool,
    slow: bool = False,
) -> str:  # fmt: skip
    """The message for a download given up after breaking off too often (or too slow)."""
    of = f" of {file.size:,}" if file.size is not None else ""
    if started_over:
        advice = "the server ignores HTTP Range, so each try started over; use a mirror (--mirror)"
    else:
        advice = f"{have:,}{of} bytes kept: run the same command again to resume it"
    how = f"broke off {attempts} time(s)"
    if slow:
        how += f", the last {MAX_STALLS} too slow (under {MIN_RATE:,} bytes/s for {SLOW_WINDOW_S:g} s)"
    return f"{source.title}: the download of {file.name} from {url} {how}; {advice}"


def _attempt(
    url: str, part: Path, have: int, limit: int, source: Source, meter: _Progress
) -> tuple[int, bool, bool, bool]:
    """One request for ``url`` from byte ``have`` on, appended to ``part``; read no further than
    one byte past ``limit`` bytes in ``part``.

    Returns:
        (bytes received, whether the file is now complete, whether the server sent the file
        from its start in answer to a Range request, whether it was broken off as too slow).
    """
    headers = {"User-Agent": f"biaslab/{__version__}"}
    if have:
        headers["Range"] = f"bytes={have}-"
    try:
        response = urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=TIMEOUT_S)
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and have:  # nothing left past ``have``: the part holds the whole file
            return 0, True, False, False
        raise DataMissingError(
            f"{source.title}: {url} answered HTTP {exc.code} {exc.reason}; offline: {source.offline}"
        ) from None
    except (OSError, http.client.HTTPException, ValueError) as exc:  # URLError is an OSError
        reason = getattr(exc, "reason", exc)
        reason = getattr(reason, "strerror", None) or str(reason) or type(exc).__name__
        raise DataMissingError(
            f"{source.title}: cannot download {url} ({reason}); offline: {source.offline}"
        ) from None
    with response:
        status = getattr(response, "status", None) or 200
        restarted = bool(have) and status != 206
        if restarted:  # the server sends the whole file again
            have = 0
            meter.restart()
        elif have and not response.headers.get("Content-Range", "").startswith(f"bytes {have}-"):
            part.unlink()  # another range than asked for: start afresh with the next attempt
            meter.restart()
            return 0, False, False, False
        length = response.headers.get("Content-Length")
        total = have + int(length) if length and length.isdigit() else None
        got, slow = _copy(response, part, append=have > 0, room=limit - have, meter=meter)
    return got, not slow and (total is None or have + got >= total), restarted, slow


def _copy(response, part: Path, append: bool, room: int, meter: _Progress) -> tuple[int, bool]:
    """Append (or write) the response's body to ``part`` until it ends, breaks off (a timeout
    included), has brought ``room + 1`` bytes (one more than the file can hold), or brings fewer
    than ``MIN_RATE`` bytes a second over a window of ``SLOW_WINDOW_S``.

    Returns:
        (the bytes received, whether the attempt was broken off as too slow).
    """
    read = getattr(response, "read1", response.read)  # what has arrived, not a full CHUNK's wait
    got = 0
    window_start, window_got = time.monotonic(), 0
    try:
        with open(part, "ab" if append else "wb") as out:
            while got <= room:
                try:
                    chunk = read(min(CHUNK, room + 1 - got))
                except (OSError, http.client.HTTPException):  # the connection broke off or timed out
                    break
                if not chunk:
                    break
                out.write(chunk)
                got += len(chunk)
                window_got += len(chunk)
                meter.update(len(chunk))
                elapsed = time.monotonic() - window_start
                if elapsed >= SLOW_WINDOW_S:
                    if window_got < MIN_RATE * elapsed:
                        return got, True
                    window_start, window_got = time.monotonic(), 0
    except OSError as exc:  # writing the part: a full disk, a read-only folder
        raise (as_storage_error(exc, part) or exc) from None
    return got, False


class _Progress:
    """A download's progress on stderr: a tqdm bar on a terminal, otherwise a line now and then."""

    def __init__(self, label: str, total: int | None, initial: int, enabled: bool):
        self.label, self.total, self.done, self.enabled = label, total, initial, enabled
        self.bar = None
        if enabled and sys.stderr.isatty():
            from tqdm.auto import tqdm

            self.bar = tqdm(
                desc=label, total=total, initial=initial, unit="B", unit_scale=True, unit_divisor=1024
            )
        self.next_line = time.monotonic() + LINE_EVERY_S

    def update(self, n: int) -> None:
        self.done += n
        if self.bar is not None:
            self.bar.update(n)
        elif self.enabled and time.monotonic() >= self.next_line:
            self.next_line = time.monotonic() + LINE_EVERY_S
            self._line()

    def restart(self) -> None:
        """The download starts again from its first byte."""
        self.done = 0
        if self.bar is not None:
            self.bar.reset(total=self.total)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
        elif self.enabled:
            self._line()

    def _line(self) -> None:
        of = f" of {self.total / 1e6:.1f} MB ({self.done / self.total:.0%})" if self.total else " MB"
        print(f"{self.label}: {self.done / 1e6:.1f}{of}", file=sys.stderr, flush=True)

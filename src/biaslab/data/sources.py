"""Where ``biaslab data fetch`` gets each data set, and how its files become the loaders' caches.

Each :class:`Source` names the official public files of one data set (their size and published
checksum), the cache its loader reads (:func:`~biaslab.data.mnist.load_mnist`,
:func:`~biaslab.data.ood.load_fashion_mnist`, :func:`~biaslab.data.ood.load_animal_mnist`,
:func:`~biaslab.data.qm9.load_qm9`), the conversion from one to the other, and the offline
alternative. :mod:`biaslab.data.fetch` downloads and checks the files; this module knows nothing
of the network.

Checksums: MNIST's and Fashion-MNIST's SHA-256 sums and sizes as public loaders record them (the
same files TensorFlow's mirror serves); Animal-MNIST's wheel's as PyPI publishes it. figshare
publishes only an MD5 for QM9's archive (no SHA-256), so that one is checked by MD5 and size; for
its list of uncharacterized molecules figshare publishes nothing we could check, so its indices
are compared with those qm9pack leaves out (the SHA-256 of the list, one index a line, ascending).

Sizes: a download stops one byte past a file's published size and is refused. A file with no
published size (QM9's ``uncharacterized.txt``) has a ``cap`` in the table instead, about ten
times its known size, so a source that sends without end is stopped there all the same.
Checksums are taken reading the file in pieces, never the whole of it at once.

:func:`xyz_row` reads one QM9 XYZ file as a row of qm9pack's layout, and
:func:`uncharacterized_indices` the list of molecules QM9 leaves out.
"""

from __future__ import annotations

import hashlib
import tarfile
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from biaslab.data import mnist, ood, qm9
from biaslab.data.store import data_dir
from biaslab.errors import DataFormatError
from biaslab.fileio import atomic_write_bytes

__all__ = ["SOURCES", "RemoteFile", "Source", "uncharacterized_indices", "xyz_row"]


@dataclass(frozen=True)
class RemoteFile:
    """One file to download and how to check it.

    Args:
        name: its name on disk and in a mirror.
        size: its size in bytes; None where none is published.
        digest: the hex digest the file must have.
        algorithm: ``"sha256"``, or ``"md5"`` where only that is published.
        path: its path under the official base URL when that is not ``name`` (figshare's
            file numbers); a mirror always serves ``name``.
        canonical: where the digest is of the file's content rather than of its bytes, the
            function giving that content from the file's lines (an open binary file).
        cap: where no size is published, the most bytes accepted (about ten times the file's
            known size); a download past it is refused. Required when ``size`` is None.
    """

    name: str
    size: int | None
    digest: str
    algorithm: str = "sha256"
    path: str = ""
    canonical: Callable[[Iterable[bytes]], bytes] | None = None
    cap: int | None = None

    def __post_init__(self):
        if self.size is None and self.cap is None:
            raise ValueError(f"{self.name}: a file with no published size needs a cap")

    @property
    def limit(self) -> int:
        """The most bytes a download of this file may bring: its published size, else its cap."""
        return self.size if self.size is not None else self.cap

    def digest_of(self, path: Path) -> str:
        """The hex digest of the file at ``path``, as this file's checksum is taken.

        The file is read in pieces (a megabyte, or a line for ``canonical``), never whole.
        """
        hasher = hashlib.new(self.algorithm, usedforsecurity=False)
        with open(path, "rb") as handle:
            if self.canonical is not None:
                hasher.update(self.canonical(handle))
                return hasher.hexdigest()
            while chunk := handle.read(1 << 20):
                hasher.update(chunk)
        return hasher.hexdigest()


@dataclass(frozen=True)
class Source:
    """A data set ``biaslab data fetch NAME`` knows.

    Args:
        name: the command's name for it (``"mnist"``).
        title: how messages name it (``"MNIST"``).
        base: the official base URL; a file's URL is ``base + (file.path or file.name)``.
        files: the files to download.
        cache_name: the cache file in :func:`~biaslab.data.store.data_dir` its loader reads.
        convert: ``convert(folder, source, progress)`` turns the checked files in ``folder`` into
            that cache; ``source`` is the URL they came from, stored in the cache.
        offline: the offline alternative, named when the network cannot be reached.
    """

    name: str
    title: str
    base: str
    files: tuple[RemoteFile, ...]
    cache_name: str
    convert: Callable[[Path, str, bool], None]
    offline: str

    def cache(self) -> Path:
        """The cache file its loader reads."""
        return data_dir() / self.cache_name


# ----------------------------------------------------------------------------- conversions


def _idx_cache(folder: Path, cache: Path, source: str) -> None:
    """MNIST's four IDX files (or Fashion-MNIST's) in ``folder`` into the cache ``cache``."""
    mnist.write_cache(cache, mnist.load_idx_dataset(folder), source)


ANIMAL_WHEEL = "animal_mnist-0.4-py3-none-any.whl"
ANIMAL_MEMBER = "/".join(("animal_mnist", *ood.ANIMAL_FILE))


def _animal_cache(folder: Path, source: str, progress: bool) -> None:
    """Animal-MNIST's images from the package's wheel (a zip) into its cache."""
    wheel = folder / ANIMAL_WHEEL
    try:
        with zipfile.ZipFile(wheel) as archive:
            raw = archive.read(ANIMAL_MEMBER)
    except (OSError, KeyError, zipfile.BadZipFile) as exc:
        raise DataFormatError(f"{wheel} does not hold {ANIMAL_MEMBER} ({exc})") from None
    pickled = atomic_write_bytes(folder / ood.ANIMAL_FILE[-1], raw)
    ood.load_animal_mnist(source=pickled)  # read without unpickling (its opcodes walked), then cached


QM9_ARCHIVE = "dsgdb9nsd.xyz.tar.bz2"
QM9_UNCHARACTERIZED = "uncharacterized.txt"
N_XYZ_FILES = 133_885
# The properties on an XYZ file's second line after "gdb", the index and the rotational
# constants A, B, C: mu, alpha, homo, lumo, gap, r2, zpve, U0, U, H, G, Cv, as qm9pack names them.
XYZ_COLUMNS = (
    "Dipole_debye",
    "Polarizability_bohr3",
    "HOMO_au",
    "LUMO_au",
    "HOMO_LUMO_gap_au",
    "R2_bohr2",
    "ZPVE_au",
    "InternalEnergy_0K_au",
    "InternalEnergy_298K_au",
    "Enthalphy_298K_au",
    "GibbsFreeEnergy_298K_au",
    "Heatcapacity_Cv_cal_mol_K",
)


def xyz_row(text: str, where: str) -> dict[str, str]:
    """One QM9 XYZ file as a row of qm9pack's CSV layout (the columns :func:`qm9.write_cache` reads).

    The file: line 1 the atom count n; line 2 ``gdb INDEX A B C mu alpha homo lumo gap r2 zpve U0
    U H G Cv`` (energies in hartree); n lines ``element x y z charge`` (ångström); the harmonic
    frequencies; the SMILES of GDB-17 and of the relaxed geometry; the two InChIs. Numbers may be
    written ``1.5*^-6`` (Mathematica's exponent), read as ``1.5e-6``. The GDB-17 SMILES is kept, as
    in qm9pack.

    Raises:
        DataFormatError: the text is not in this layout.
    """
    lines = text.replace("*^", "e").splitlines()
    try:
        n = int(lines[0])
        head = lines[1].split()
        atoms = [lines[2 + k].split() for k in range(n)]
        smiles = lines[n + 3].split()[0]
    except (ValueError, IndexError):
        raise DataFormatError(f"{where} is not a QM9 XYZ file") from None
    if n < 1 or len(head) != 5 + len(XYZ_COLUMNS) or head[0] != "gdb" or any(len(a) != 5 for a in atoms):
        raise DataFormatError(f"{where} is not a QM9 XYZ file (its first {n + 2} lines)")
    return {
        "Index": head[1],
        "SMILES": smiles,
        "Elements": "[" + ",".join(f"'{atom[0]}'" for atom in atoms) + "]",
        "XYZ_Ang": "[" + ",".join(f"[{x},{y},{z}]" for _, x, y, z, _ in atoms) + "]",
        **dict(zip(XYZ_COLUMNS, head[5:], strict=True)),
    }


def uncharacterized_indices(lines: Iterable[bytes]) -> bytes:
    """The QM9 indices ``uncharacterized.txt`` lists, one a line, ascending (what its checksum is of).

    The file: 9 lines of header, one line per molecule starting with its index, one closing line.
    ``lines``: its lines as bytes (an open binary file), read one at a time: what is kept is the
    indices, never the whole file.
    """
    indices, previous = [], None
    try:
        for number, line in enumerate(lines):
            row = line.decode("ascii")
            if number >= 10 and previous.strip():  # ``previous``: a row, not the header or the last line
                indices.append(int(previous.split()[0]))
            previous = row
    except (UnicodeDecodeError, ValueError):
        return b"(not a list of QM9 indices)"
    return "".join(f"{index}\n" for index in sorted(indices)).encode()


def _qm9_cache(folder: Path, source: str, progress: bool) -> None:
    """QM9's XYZ archive, less the uncharacterized molecules, into the cache load_qm9 reads."""
    from tqdm.auto import tqdm

    with open(folder / QM9_UNCHARACTERIZED, "rb") as listing:
        left_out = {int(line) for line in uncharacterized_indices(listing).split()}
    archive, rows = folder / QM9_ARCHIVE, []
    try:
        with tarfile.open(archive, "r|bz2") as tar:  # a stream: one pass over the archive
            for member in tqdm(tar, "QM9: reading XYZ files", N_XYZ_FILES, disable=not progress or None):
                handle = tar.extractfile(member) if member.name.endswith(".xyz") else None
                if handle is None:
                    continue
                row = xyz_row(handle.read().decode("ascii", "replace"), member.name)
                if int(row["Index"]) not in left_out:
                    rows.append((member.name, row))
    except (OSError, EOFError, tarfile.TarError) as exc:
        raise DataFormatError(f"cannot read {archive} ({exc})") from None
    rows.sort(key=lambda pair: int(pair[1]["Index"]))  # qm9pack's order
    qm9.write_cache(data_dir() / qm9.CACHE_NAME, rows, source, progress)


# ----------------------------------------------------------------------------- the table

# uncharacterized.txt is about 487 kB (3,054 rows of about 160 characters, as public copies of it
# hold); figshare publishes no size, so a download of it stops past about ten times that.
QM9_UNCHARACTERIZED_CAP = 5_000_000


def _idx_source(
    name: str, title: str, base: str, cache_name: str, offline: str, *checks: tuple[int, str]
) -> Source:
    """A data set of four gzipped IDX files in MNIST's layout, with their (size, SHA-256)."""
    names = [f"{idx}.gz" for idx in mnist._IDX_NAMES.values()]  # x_train, y_train, x_test, y_test
    return Source(
        name=name,
        title=title,
        base=base,
        files=tuple(RemoteFile(f, size, digest) for f, (size, digest) in zip(names, checks, strict=True)),
        cache_name=cache_name,
        convert=lambda folder, source, progress: _idx_cache(folder, data_dir() / cache_name, source),
        offline=offline,
    )


SOURCES: dict[str, Source] = {
    source.name: source
    for source in (
        # torchvision's copy of the official files (yann.lecun.com serves them no more)
        _idx_source(
            "mnist",
            "MNIST",
            "https://ossci-datasets.s3.amazonaws.com/mnist/",
            mnist.CACHE_NAME,
            mnist.PIP_HINT,
            (9_912_422, "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609"),
            (28_881, "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c"),
            (1_648_877, "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6"),
            (4_542, "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6"),
        ),
        # Zalando Research's official bucket; no package ships it
        _idx_source(
            "fashion-mnist",
            "Fashion-MNIST",
            "https://fashion-mnist.s3.eu-central-1.amazonaws.com/",
            ood.FASHION_CACHE_NAME,
            "copy its four IDX files into a folder and give --mirror file:///that/folder/",
            (26_421_880, "3aede38d61863908ad78613f6a32ed271626dd12800ba2636569512369268a84"),
            (29_515, "a04f17134ac03560a47e3764e11b92fc97de4d1bfaf8ba1a3aa29af54cc90845"),
            (4_422_102, "346e55b948d973a97e58d2351dde16a484bd415d4595297633bb08f03db6a073"),
            (5_148, "67da17c76eaffca5446c3361aaab5c3cd6d1c2608764d35dfb1850b086bf8dd5"),
        ),
        # the wheel of the PyPI package animal-mnist 0.4, its only source (SHA-256 as PyPI publishes it)
        Source(
            name="animal-mnist",
            title="Animal-MNIST",
            base="https://files.pythonhosted.org/packages/bb/ec/"
            "bd60c048875be7eb80f2ec83608551e34f0542e6fce8c4330b316a83992f/",
            files=(
                RemoteFile(
                    ANIMAL_WHEEL,
                    2_626_186,
                    "aeebf3d9de4552d6fd2d5701424e1a5b9020f8e5115d68df9db252f2f53ce2ce",
                ),
            ),
            cache_name=ood.ANIMAL_CACHE_NAME,
            convert=_animal_cache,
            offline=ood.ANIMAL_PIP_HINT,
        ),
        # the original archive on figshare (doi:10.6084/m9.figshare.978904)
        Source(
            name="qm9",
            title="QM9",
            base="https://ndownloader.figshare.com/files/",
            files=(
                RemoteFile(
                    QM9_ARCHIVE,
                    86_144_227,
                    "ad1ebd51ee7f5b3a6e32e974e5d54012",
                    algorithm="md5",
                    path="3195389",
                ),
                RemoteFile(
                    QM9_UNCHARACTERIZED,
                    None,
                    "c9e981ed67315c6abed91451baecb3cadd1d6970f48dbf64432b38ccab80f057",
                    path="3195404",
                    canonical=uncharacterized_indices,
                    cap=QM9_UNCHARACTERIZED_CAP,
                ),
            ),
            cache_name=qm9.CACHE_NAME,
            convert=_qm9_cache,
            offline=qm9.PIP_HINT,
        ),
    )
}

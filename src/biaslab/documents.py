"""The documents biaslab is built from, and how a claim cites them.

Every claim names where it comes from. Its ``source`` is one or more parts separated by ``"; "``,
each one of:

- a document by its short name and the place in it where the claim stands::

      workshop book §2.4 (The chain rule and backpropagation)
      workshop book, Day 2 lab step 5
      workshop book, Appendix A
      lecture notes §6, eq. 6.1
      ML-for-physics slides, 'Gradient descent'
      inductive-bias slides, 'Attention as the most flexible prior possible'

  (``§N.M``, with an optional heading in parentheses; ``eq. N.M``; a lab's step; an appendix; or
  a slide's title in quotes, as the slides print it);
- ``biaslab's target`` (a threshold no document prints), optionally followed by why;
- a paper with its year: ``Keskar et al. 2017``, ``Baldi & Hornik 1989``, ``Greydanus 2020``.

A claim that says a document *prints* a figure, formula or label quotes it in ``printed``, exactly
as printed; :func:`printed_problem` finds it in the text of the first document the source names.
:func:`source_problem` checks the form of a source without the texts (every run can check it);
:func:`place_problem` checks that the places it names exist in the texts.

The texts themselves are not part of biaslab: they lie in ``shared/seeds/`` beside a checkout
(:func:`seeds_folder`), whose README maps each file to its short name (:data:`DOCUMENTS`: four
short names for five files, the inductive-bias slides being two). Where no checkout lies around
the package, the tests that read the texts are skipped.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from pathlib import Path

__all__ = [
    "DOCUMENTS",
    "TARGET",
    "place_problem",
    "printed_problem",
    "seeds_folder",
    "source_parts",
    "source_problem",
]

# The short names of seeds/README.md, in the order a reader meets them.
DOCUMENTS = ("inductive-bias slides", "lecture notes", "ML-for-physics slides", "workshop book")
TARGET = "biaslab's target"

_DOCUMENT = re.compile(r"^(?P<doc>" + "|".join(map(re.escape, DOCUMENTS)) + r"),? (?P<where>.+)$")
_SECTION = re.compile(r"^§(?P<number>\d+(?:\.\d+)*)(?: \((?P<title>[^)]+)\))?")
_EQUATION = re.compile(r"\beqs?\. (?P<number>\d+\.\d+)")
_LAB = re.compile(r"^Day (?P<day>[1-5]) lab(?: steps? (?P<step>\d+))?")
_QUOTED = re.compile(r"^'(?P<title>[^']+)'")
_APPENDIX = re.compile(r"^Appendix (?P<letter>[A-Z])\b")
_PAPER = re.compile(
    r"^(?:[A-Z][\w'’.-]+(?: [A-Z][\w'’.-]+)?)"  # a name (two words at most: "Van Kampen")
    r"(?: et al\.| (?:&|and) [A-Z][\w'’-]+)?"  # et al., or a second author
    r",? \(?(?:19|20)\d\d[a-z]?\)?"  # the year
)


def source_parts(source: str) -> list[str]:
    """The parts of a source, split at ``"; "`` (a ``;`` inside parentheses does not split)."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(source):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == ";" and depth == 0:
            parts.append(source[start:i].strip())
            start = i + 1
    parts.append(source[start:].strip())
    return [p for p in parts if p]


def _where_problem(doc: str, where: str) -> str | None:
    """What is wrong with the place ``where`` in document ``doc`` (its form only), or None."""
    if _SECTION.match(where) or _LAB.match(where) or _QUOTED.match(where) or _APPENDIX.match(where):
        return None
    if where.startswith("eq. ") and _EQUATION.match(where):
        return None
    return (
        f"'{doc}, {where}' names no place: give §N.M, eq. N.M, 'Day N lab step M', 'Appendix A' or "
        "a slide's title in single quotes"
    )


def source_problem(source: str) -> str | None:
    """What is wrong with the form of ``source``, or None (see the module's docstring)."""
    if not source or not source.strip():
        return "the source is empty"
    for part in source_parts(source):
        document = _DOCUMENT.match(part)
        if document:
            problem = _where_problem(document["doc"], document["where"])
            if problem:
                return problem
        elif not (part.startswith(TARGET) or _PAPER.match(part)):
            return (
                f"source part '{part}' is neither a document ({', '.join(DOCUMENTS)}) with a "
                f'place, nor "{TARGET}", nor a paper with its year'
            )
    return None


def cited_documents(source: str) -> list[str]:
    """The short names of the documents ``source`` names, in order."""
    return [m["doc"] for m in map(_DOCUMENT.match, source_parts(source)) if m]


# -- the texts ----------------------------------------------------------------------------------
def seeds_folder(start: Path | None = None) -> Path | None:
    """``shared/seeds/`` beside the checkout holding ``start`` (default: this file), or None."""
    here = (start or Path(__file__)).resolve()
    for parent in here.parents:
        for candidate in (parent / "shared" / "seeds", parent / "seeds"):
            if (candidate / "README.md").is_file():
                return candidate
    return None


def normalized(text: str) -> str:
    """Text compared as a reader would: Unicode compatibility forms, one space for any run of
    white space, typographic quotes and dashes as plain ones, lower case."""
    text = unicodedata.normalize("NFKC", text)
    for fancy, plain in (("’", "'"), ("‘", "'"), ("“", '"'), ("”", '"'), ("–", "-"), ("—", "-")):
        text = text.replace(fancy, plain)
    return re.sub(r"\s+", " ", text).strip().lower()


@lru_cache(maxsize=4)
def texts(folder: Path) -> dict[str, list[str]]:
    """Short name -> the texts of its files (the inductive-bias slides have two versions),
    read from the table of ``folder/README.md``."""
    found: dict[str, list[str]] = {}
    for line in (folder / "README.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
        if len(cells) >= 2 and cells[1] in DOCUMENTS and (folder / cells[0]).is_file():
            found.setdefault(cells[1], []).append((folder / cells[0]).read_text(encoding="utf-8"))
    return found


def _occurs(needle: str, doc: str, folder: Path) -> bool:
    return any(normalized(needle) in normalized(text) for text in texts(folder).get(doc, []))


def _heading_exists(doc: str, number: str, folder: Path) -> bool:
    """Whether a line of ``doc`` is a heading: the section number ``number``, then a short title."""
    pattern = re.compile(rf"^{re.escape(number)}\s+[A-Z][^\t\n]{{0,80}}$", re.MULTILINE)
    return any(pattern.search(text) for text in texts(folder).get(doc, []))


def place_problem(source: str, folder: Path) -> str | None:
    """What place named in ``source`` the documents in ``folder`` lack, or None.

    ``§N.M (Title)``: a line of the document starts with ``N.M`` and, when a title is given, the
    title; ``eq. N.M``: the document prints ``(N.M)`` or ``\\tag{N.M}``; ``Day N lab step M``: the
    book's Day N has a lab with that step; a quoted slide title: the document prints it.
    """
    for part in source_parts(source):
        document = _DOCUMENT.match(part)
        if not document:
            continue
        doc, where = document["doc"], document["where"]
        section, quoted = _SECTION.match(where), _QUOTED.match(where)
        if section:
            if not _heading_exists(doc, section["number"], folder):
                return f"the {doc} have no section {section['number']}"
            title = section["title"]
            if title and not _occurs(f"{section['number']} {title}", doc, folder):
                return f"the {doc}' section {section['number']} is not headed '{title}'"
        elif quoted and not _occurs(quoted["title"], doc, folder):
            return f"the {doc} print no '{quoted['title']}'"
        appendix = _APPENDIX.match(where)
        if appendix:
            letter = appendix["letter"]
            if not (_occurs(f"Appendix {letter}", doc, folder) or _heading_exists(doc, letter, folder)):
                return f"the {doc} have no appendix {letter}"
        for equation in _EQUATION.finditer(where):
            number = equation["number"]
            if not (_occurs(f"({number})", doc, folder) or _occurs(f"\\tag{{{number}}}", doc, folder)):
                return f"the {doc} number no equation {equation['number']}"
        lab = _LAB.match(where)
        if lab and not _lab_step_exists(doc, int(lab["day"]), lab["step"], folder):
            return f"the {doc}' Day {lab['day']} lab has no step {lab['step']}"
    return None


def _lab_step_exists(doc: str, day: int, step: str | None, folder: Path) -> bool:
    """Whether ``doc`` opens a Day ``day`` notebook lab with a numbered step ``step``."""
    for text in texts(folder).get(doc, []):
        start = text.find(f"Open the Day {day} notebook")
        if start < 0:
            continue
        steps = text[start:].split("\nDay ", 1)[0].split("\n\n\n", 1)[0]
        if step is None or re.search(rf"^{step}\. ", steps, re.MULTILINE):
            return True
    return False


def printed_problem(printed: str, source: str, folder: Path) -> str | None:
    """Why ``printed`` is not found as printed in the first document ``source`` names, or None."""
    documents = cited_documents(source)
    if not documents:
        return f"printed text {printed!r} quoted, but the source '{source}' names no document"
    if not _occurs(printed, documents[0], folder):
        return f"the {documents[0]} do not print {printed!r}"
    return None

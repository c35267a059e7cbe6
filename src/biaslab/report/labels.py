"""Human labels for metrics: a record's from its dimensions, a flat key's by one rule
(``auroc_animal-mnist_msp`` -> "AUROC, Animal-MNIST, max softmax probability").

A metric recorded with its dimensions (:mod:`biaslab.records`) is labelled from them
(:func:`record_label`): its split's word and its measure head the label, every other dimension
follows after a comma, as the lab's word for a text value or its dimension's template filled
with a number. A metric recorded by its flat key alone is labelled from the key by one rule
(:func:`metric_label`), with the key itself in a tooltip:

1. The key is split at ``_`` into words (matched without regard to case).
2. From the left, the longest run of up to four words that the vocabulary knows becomes one
   *term* (``max_logit`` -> "max logit"). The vocabulary is the lab's own words (its ``WORDS``,
   written into its results.json: consulted first) and the shared ``MEASURES``, ``MODIFIERS``,
   ``PARAMETERS`` and ``NAMES`` (:mod:`biaslab.report.vocabulary`). A lab's name term that
   covers the whole key is the label, exactly as written.
3. A word the vocabulary does not know is split into a known prefix and a number (``lr0.1`` ->
   "learning rate 0.1", ``T5`` -> "T = 5", ``epoch1``) or a number and a unit (``0deg`` -> "0°");
   a bare number stays a number.
4. A parameter (``eps``, ``degree``, ``shift``, ...) takes the number that follows it:
   ``eps_0.1`` -> "ε = 0.1".
5. The first measure (accuracy, AUROC, loss, ...), together with the modifiers right before it
   (test, validation, final, ...), heads the label; the other terms follow in the key's order,
   each after a comma: ``mlp_test_accuracy`` -> "Test accuracy, MLP". A key without a measure
   is its terms after commas.
6. The first letter is capitalised, unless the first word already holds a capital (kNN).

A word that none of this explains stays as written; :func:`unknown_words` lists such words, and a
test keeps that list empty for every metric of every lab, so a new metric key brings its words.

Claims name where their expected value comes from in a few recurring terms (the documents' short
names, "biaslab's target"; see ``biaslab.documents``); :func:`source_notes` says what each means,
for the legend under a report's claims table.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from biaslab.records import words_from_json
from biaslab.report.vocabulary import MEASURES, MODIFIERS, NAMES, PARAMETERS, Term, measure, param

__all__ = ["SOURCE_TERMS", "labeller", "metric_label", "record_label", "source_notes", "unknown_words"]

Words = Mapping[str, Term | str]


_VOCABULARY: dict[str, Term] = {
    **{k: measure(v) for k, v in MEASURES.items()},
    **{k: Term(v, "modifier") for k, v in MODIFIERS.items()},
    **{k: param(v) for k, v in PARAMETERS.items()},
    **{k: Term(v) for k, v in NAMES.items()},
}
_LONGEST = 4  # words in the longest vocabulary entry tried
_NUMBER = re.compile(r"[+-]?\d+(\.\d+)?([eE][+-]?\d+)?")
_PREFIXED = re.compile(r"([a-z]+)(\d+(?:\.\d+)?(?:e-?\d+)?)")  # lr0.1, n10, t5, epoch1
_SUFFIXED = re.compile(r"(\d+(?:\.\d+)?)([a-z]+)")  # 0deg


def _as_term(entry: Term | str) -> Term:
    return entry if isinstance(entry, Term) else Term(entry)


def _lookup(words: list[str], lab_terms: dict[str, Term | str]) -> Term | None:
    """The lab's term, then the shared one, for ``words`` (lowercase) joined by ``_``."""
    key = "_".join(words)
    if key in lab_terms:
        return _as_term(lab_terms[key])
    return _VOCABULARY.get(key)


def _split_word(word: str) -> tuple[Term | None, str]:
    """A word the vocabulary lacks as (term, number): ``lr0.1`` -> (learning rate, "0.1"),
    ``0deg`` -> (°, "0"); a number, or a word nothing explains, as (None, word)."""
    if not _NUMBER.fullmatch(word):
        for pattern, prefix_first in ((_PREFIXED, True), (_SUFFIXED, False)):
            match = pattern.fullmatch(word)
            name, number = (match.groups() if prefix_first else match.groups()[::-1]) if match else ("", "")
            if name in _VOCABULARY:
                return _VOCABULARY[name], number
    return None, word


def _terms(key: str, words: Words | None) -> tuple[list[Term], list[str]]:
    """The terms of ``key`` (rule steps 2 to 4) and the words nothing explained."""
    lab_terms = {k.lower(): v for k, v in (words or {}).items()}
    written = [w for w in key.split("_") if w]  # as written: a word nothing explains shows so
    words = [w.lower() for w in written]
    terms: list[Term] = []
    unknown: list[str] = []
    i = 0
    while i < len(words):
        for n in range(min(_LONGEST, len(words) - i), 0, -1):
            term = _lookup(words[i : i + n], lab_terms)
            if term is not None:
                break
        if term is not None:
            i += n
            if term.kind == "param" and i < len(words) and _NUMBER.fullmatch(words[i]):
                term, i = Term(term.template.format(words[i])), i + 1
            terms.append(term)
            continue
        piece, rest = _split_word(words[i])
        if piece is None:
            terms.append(Term(written[i]))
            if not _NUMBER.fullmatch(rest):
                unknown.append(written[i])
        elif piece.kind == "param":
            terms.append(Term(piece.template.format(rest)))
        else:
            terms += [piece, Term(rest)]
        i += 1
    return terms, unknown


def _capitalised(text: str) -> str:
    first = text.split(" ", 1)[0]
    return text if any(c.isupper() for c in first) else text[:1].upper() + text[1:]


def metric_label(key: str, words: Words | None = None) -> str:
    """The label of metric ``key`` (see the module's rule).

    Args:
        key: the metric's key in results.json.
        words: the lab's own words (its ``WORDS``; results.json's ``"words"`` read by
            :func:`~biaslab.records.words_from_json`); None: the shared words only.

    Returns:
        The label; the key itself only when it is empty.
    """
    key = str(key)
    whole = {k.lower(): v for k, v in (words or {}).items()}.get(key.lower())
    if whole is not None and _as_term(whole).kind == "name":
        return _as_term(whole).text
    terms, _ = _terms(key, words)
    if not terms:
        return key
    first = next((i for i, t in enumerate(terms) if t.kind == "measure"), None)
    if first is None:
        return _capitalised(", ".join(t.text for t in terms))
    start = first
    while start > 0 and terms[start - 1].kind == "modifier":
        start -= 1
    head = " ".join(t.text for t in terms[start : first + 1])
    rest = [t.text for t in terms[:start] + terms[first + 1 :]]
    return _capitalised(", ".join([head, *rest]))


def record_label(record: Mapping, words: Words | None = None) -> str:
    """The label of a metric recorded with its dimensions (:mod:`biaslab.records`): its measure,
    after the words of the dimensions that narrow it (the ``split``, and any whose value is a
    modifier: best, final, mean...), then every other dimension after a comma: a text value as
    its word, a number filling its dimension's template.

    >>> record_label({"name": "accuracy", "dims": {"model": "cnn", "n": 200, "split": "test"}})
    'Test accuracy, CNN, n = 200'
    """
    lab = {k.lower(): _as_term(v) for k, v in (words or {}).items()}

    def term(text: str, shared: Mapping[str, str], kind: str) -> Term:
        known = lab.get(text.lower())
        return known if known is not None else Term(shared.get(text.lower(), text.replace("_", " ")), kind)

    head, rest = [], []
    for dim, value in (record.get("dims") or {}).items():
        if isinstance(value, str):
            modifier = term(value, MODIFIERS, "modifier" if value.lower() in MODIFIERS else "name")
            if dim == "split" or modifier.kind == "modifier":
                head.append(modifier.text)
            else:
                rest.append(term(value, NAMES, "name").text)
            continue
        template = lab[dim.lower()].template if dim.lower() in lab else PARAMETERS.get(dim.lower())
        rest.append((template or f"{dim} = {{}}").format(value))
    head.append(term(str(record.get("name", "")), MEASURES, "measure").text)
    return _capitalised(", ".join([" ".join(head), *rest]))


def labeller(results: Mapping) -> Callable[[str], str]:
    """The labels of one run's metrics: a key recorded with its dimensions by
    :func:`record_label`, any other by :func:`metric_label`, with the lab's words its
    results.json holds."""
    words = words_from_json(results.get("words"))
    records = results.get("records") if isinstance(results.get("records"), list) else []
    by_key = {r["key"]: r for r in records if isinstance(r, dict) and isinstance(r.get("key"), str)}

    def label(key: str) -> str:
        return record_label(by_key[key], words) if key in by_key else metric_label(key, words)

    return label


def unknown_words(key: str, words: Words | None = None) -> list[str]:
    """The words of ``key`` that no vocabulary explains (shown as written in its label)."""
    whole = {k.lower() for k in (words or {})}
    return [] if str(key).lower() in whole else _terms(str(key), words)[1]


# Where a claim's expected value comes from, in the words claims' sources use (first match wins).
SOURCE_TERMS = (
    ("workshop book", "\"Mathematical Foundations of Modern AI\", the five-day workshop book "
     "(sections 1.x-5.x, each day's lab steps)"),
    ("lecture notes", "\"Neural Networks and Inductive Biases\", the lecture notes (sections 1-7, numbered "
     "equations)"),
    ("ML-for-physics slides", "\"Machine Learning for Physics: Supervised Learning\", the slides, cited by a "
     "slide's title"),
    ("inductive-bias slides", "the inductive-bias lecture slides (\"Machine learning 101\"), cited by a "
     "slide's title"),
    ("biaslab's target", "a threshold biaslab sets where the documents print no number; what it rests on "
     "follows in brackets"),
)  # fmt: skip


def source_notes(sources) -> list[tuple[str, str]]:
    """What the source terms used by ``sources`` (claims' ``source`` texts) mean, each once, in
    :data:`SOURCE_TERMS`' order: the legend under a claims table."""
    used = " ".join(str(s).lower() for s in sources if s)
    return [
        (term, meaning)
        for term, meaning in SOURCE_TERMS
        if re.search(rf"(^|[\s(;]){re.escape(term.lower())}", used)
    ]

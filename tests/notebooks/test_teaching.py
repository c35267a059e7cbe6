"""What the notebooks teach with: formulas typeset in LaTeX, references that name the documents
(by short name and section, as biaslab.documents checks a claim's source), exercises each followed
by a folded solution, and cells that train on the lab's device.

The solutions are checked too: the notebook test (test_notebooks.py) executes every notebook with
each question answered and each stub filled by its solution's code
(:func:`biaslab.notebooks.solutions.solve`), and each check must say "correct".
"""

from __future__ import annotations

import ast
import re

import nbformat
import pytest

from biaslab.documents import place_problem, printed_problem, seeds_folder, source_problem
from biaslab.notebooks import NOTEBOOKS, notebook_path
from biaslab.notebooks.solutions import (
    SOLUTION_CLOSE,
    SOLUTION_OPEN,
    coding_cells,
    questions,
    solution_code,
    solve,
)


def read(name: str):
    return nbformat.read(notebook_path(name), as_version=4)


# Formulas ----------------------------------------------------------------------------------------

CODE = re.compile(r"```.*?```|`[^`\n]*`", re.DOTALL)  # fenced blocks and inline code spans
LINK_ADDRESS = re.compile(r"\]\([^)\s]*\)")
DISPLAY = re.compile(r"\$\$(.+?)\$\$", re.DOTALL)
INLINE = re.compile(r"\$([^$\n]+?)\$")

# Characters a formula is typed with in plain text, which LaTeX spells otherwise (\sigma, -, \nabla,
# ^2, ^\top, \hat{x}, ...): Greek letters, math symbols, super- and subscripts, the unicode minus.
UNICODE_MATH = re.compile(r"[\u0370-\u03ff\u1f00-\u1fff∇∂√≤≥≠≈∝⊙←→⇒·×⁰¹²³⁴-⁹₀-₉ᵀ−∈∑∏∞‖ẋ\u0302\u0304\u0307]")
# Shapes of a plain-text formula outside $...$: x_t, h_{l-1}, x^2, ^{...}, ||x||, softmax(z).
PLAIN_FORMULA = re.compile(
    r"(?<![\w\\])[A-Za-z]_(?:\{|[A-Za-z0-9](?![A-Za-z0-9]))|\^\{|[\w)]\^\w|\|\||"
    r"\b(?:sqrt|softmax|log|exp|tanh|sigmoid|argmax)\("
)
# The LaTeX commands the notebooks use, all known to MathJax (a new one is added here on purpose).
COMMANDS = set(
    """
    alpha beta gamma delta epsilon eta theta kappa lambda mu pi rho sigma phi omega psi Pi Sigma Omega bmod
    approx cdot cdots det dot exp frac hat in infty le ldots leftarrow ln log mapsto max mid min nabla odot
    partial pm prod sim sin cos sqrt star sum tanh times to top bar tfrac lfloor rfloor tilde oplus
    mathbb mathbf mathcal mathrm text underbrace left right big Big lVert rVert Vert quad qquad
    Phi tau varepsilon int arg propto
    """.split()
)


def math_of(markdown: str) -> tuple[list[str], list[str], str]:
    """The display spans ($$...$$), the inline spans ($...$) and the prose left around them, with
    code and link addresses taken out first."""
    text = LINK_ADDRESS.sub("]()", CODE.sub(" ", markdown))
    display, inline = [], []
    text = DISPLAY.sub(lambda m: display.append(m.group(1)) or " ", text)
    text = INLINE.sub(lambda m: inline.append(m.group(1)) or " ", text)
    return display, inline, text


def braces_balance(tex: str) -> bool:
    depth = 0
    for char in re.sub(r"\\[{}]", "", tex):
        depth += {"{": 1, "}": -1}.get(char, 0)
        if depth < 0:
            return False
    return depth == 0


def formula_faults(markdown: str) -> list[str]:
    """What keeps a markdown cell's formulas from being typeset LaTeX, as MathJax renders it."""
    display, inline, prose = math_of(markdown)
    faults = [f"plain-text formula {s!r}" for s in PLAIN_FORMULA.findall(prose)]
    faults += [
        f"unicode {c!r}: write it in LaTeX" for c in UNICODE_MATH.findall(prose + "".join(display + inline))
    ]
    faults += ["a $ without its pair"] * ("$" in prose)
    for span in display + inline:
        faults += [f"unbalanced braces in ${span}$"] * (not braces_balance(span))
        faults += [f"% (a TeX comment) in ${span}$"] * ("%" in span)
        faults += [f"* or <tag (read as markdown or HTML) in ${span}$"] * bool(
            re.search(r"\*|<[A-Za-z/]", span)
        )
        faults += [
            f"\\{c} is not among the known commands"
            for c in re.findall(r"\\([A-Za-z]+)", span)
            if c not in COMMANDS
        ]
    faults += [f"space inside the dollars of ${s}$" for s in inline if s != s.strip()]  # GitHub needs none
    return faults


@pytest.mark.parametrize(
    ("markdown", "fault"),
    [
        ("the MLP h_l = σ(W_l h_{l−1} + b_l)", "plain-text formula"),
        ("the gradient ∇f", "unicode"),
        ("$x_{t$", "unbalanced braces"),
        ("costs $5 and more", "without its pair"),
        ("$\\simga$", "not among the known commands"),
        ("$ x $", "space inside"),
        ("$y^*$", "read as markdown"),
        ("$a − b$", "unicode"),
        ("||x − g(f(x))||²", "plain-text formula"),
    ],
)
def test_the_formula_check_finds_plain_text_formulas(markdown, fault):
    assert any(fault in f for f in formula_faults(markdown)), formula_faults(markdown)


def test_the_formula_check_passes_latex_code_and_links():
    fine = (
        "[badge](https://x.org/Day1_Linear_Algebra.ipynb) `MLP((2, HIDDEN, 2))` ```python\nx_t = 1\n```"
        " $h_l = \\sigma(W_l h_{l-1} + b_l)$ and $$\\hat{x} = g(f(x))$$ — a 90° turn, 97%"
    )
    assert formula_faults(fine) == []


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_formulas_are_typeset_in_latex(name):
    for cell in read(name).cells:
        if cell.cell_type == "markdown":
            assert formula_faults(cell.source) == [], cell.source[:80]


# References --------------------------------------------------------------------------------------

# A loose reference ("notes, Day 1 (eq. 1.5)", "the slides"): the documents are cited by their short
# name and section (biaslab.documents), never as "notes" or "slides" alone.
LOOSE_REFERENCE = re.compile(r"(?i)(?<!lecture )\bnotes\b|\bthe slides\b|\bDay \d+ \(")
EQUATION = re.compile(r"(?i)\beqs?\.\s*\(?\d|\bequations?\s+\(?\d")  # only in a claim's source


class NotStatic(Exception):
    """An expression a reader cannot evaluate without running the notebook."""


def static_value(node: ast.expr, names: dict):
    """The value of a string built from literals, known names and f-strings (+ and tuples too)."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name) and node.id in names:
        return names[node.id]
    if isinstance(node, ast.JoinedStr):
        return "".join(str(static_value(v, names)) for v in node.values)
    if isinstance(node, ast.FormattedValue) and node.conversion == -1:
        spec = static_value(node.format_spec, names) if node.format_spec else ""
        return format(static_value(node.value, names), spec)
    if isinstance(node, ast.Tuple):
        return tuple(static_value(e, names) for e in node.elts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return static_value(node.left, names) + static_value(node.right, names)
    raise NotStatic(ast.unparse(node))


def claim_calls(notebook) -> list[dict]:
    """Every ``lab.claim(...)`` of the notebook's code cells, its ``source``, ``kind`` and
    ``printed`` evaluated from literals and the constants the cells above assign (``None`` where a
    keyword is missing, a :class:`NotStatic` where it cannot be read without running)."""
    names: dict = {}
    calls = []
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        tree = ast.parse(cell.source)
        for node in ast.walk(tree):
            func = getattr(node, "func", None)
            if isinstance(func, ast.Attribute) and ast.unparse(func) == "lab.claim":
                call = {"cell": cell.source[:60], "source": None, "kind": None, "printed": None}
                for keyword in node.keywords:
                    if keyword.arg in call:
                        try:
                            call[keyword.arg] = static_value(keyword.value, names)
                        except NotStatic as exc:
                            call[keyword.arg] = exc
                calls.append(call)
        for statement in tree.body:  # NAME = constant, A, B = c1, c2: known to the cells below
            if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
                target = statement.targets[0]
                targets = target.elts if isinstance(target, ast.Tuple) else [target]
                try:
                    value = static_value(statement.value, names)
                    values = value if isinstance(target, ast.Tuple) else (value,)
                except NotStatic:
                    values = (None,) * len(targets)
                for t, v in zip(targets, values):
                    if isinstance(t, ast.Name) and v is None:
                        names.pop(t.id, None)
                    elif isinstance(t, ast.Name):
                        names[t.id] = v
    return calls


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_references_name_the_documents(name):
    """No "notes, Day 1 (eq. 1.5)": prose names a document by its short name (the lecture notes, the
    ML-for-physics slides, ...). Every claim says what kind it is, and its source names the documents'
    places (§, eq., a lab's step, a slide's title), a paper, or biaslab's target, readable without
    running the notebook; where the documents are at hand, the places exist and a ``printed`` quote
    stands in the first document the source names."""
    notebook = read(name)
    for cell in notebook.cells:
        prose = cell.source if cell.cell_type == "markdown" else ""
        found = LOOSE_REFERENCE.search(cell.source) or EQUATION.search(prose)
        assert not found, found.group(0)
    calls = claim_calls(notebook)
    assert calls
    folder = seeds_folder()
    for call in calls:
        assert call["kind"] in ("finding", "check"), call
        assert isinstance(call["source"], str), call
        problem = source_problem(call["source"])
        if folder is not None:
            problem = problem or place_problem(call["source"], folder)
            if call["printed"] is not None:
                problem = problem or printed_problem(call["printed"], call["source"], folder)
        assert problem is None, (problem, call)


def test_claim_calls_read_sources_built_from_constants():
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell('BOOK = "workshop book §2.3"\nTOL, N = 1e-5, 3'),
        nbformat.v4.new_code_cell(
            'lab.claim("a", source=f"{BOOK}; biaslab\'s target ({TOL:g})", kind="check")\n'
            "for x in range(N):\n    lab.claim(x, source=label[x])"
        ),
    ]
    first, second = claim_calls(notebook)
    assert first["source"] == "workshop book §2.3; biaslab's target (1e-05)" and first["kind"] == "check"
    assert isinstance(second["source"], NotStatic) and second["kind"] is None


# Exercises ---------------------------------------------------------------------------------------

EXERCISE = re.compile(r"### Exercise (\d+) — \S")


def exercises_of(notebook) -> tuple[int, list[list]]:
    """The index of the "## Exercises" cell and the exercises after it, each its cells from its
    heading to its solution, up to the next section."""
    cells = notebook.cells
    start = next(
        i for i, c in enumerate(cells) if c.cell_type == "markdown" and c.source.startswith("## Exercises\n")
    )
    exercises: list[list] = []
    for cell in cells[start + 1 :]:
        if cell.cell_type == "markdown" and cell.source.startswith("## "):
            break
        if cell.cell_type == "markdown" and EXERCISE.match(cell.source):
            exercises.append([cell])
        else:
            assert exercises, f"a cell between '## Exercises' and the first exercise: {cell.source[:60]!r}"
            exercises[-1].append(cell)
    return start, exercises


def is_solution(cell) -> bool:
    return cell.cell_type == "markdown" and "<details>" in cell.source


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_coding_cells_are_a_stub_its_check_and_its_folded_solution(name):
    """The student writes the functions a stub names (each raises NotImplementedError with what to
    write); the next cell checks each against the library's own; the solution folds under it."""
    for stub, check, solution in coding_cells(read(name)):
        defined = re.findall(r"^def (\w+)\(", stub.source, re.MULTILINE)
        assert defined and stub.source.count('raise NotImplementedError("write ') == len(defined)
        assert check.cell_type == "code" and check.source.count("lab.check_code(") == len(defined)
        assert all(re.search(rf"\b{n}\b", check.source) for n in defined)
        assert solution.source.startswith(SOLUTION_OPEN) and solution.source.endswith(SOLUTION_CLOSE)
        assert re.findall(r"^def (\w+)\(", solution_code(solution), re.MULTILINE) == defined
    assert len(coding_cells(read(name))) >= 3  # at least three things to write each day


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_what_a_student_writes_never_overwrites_a_name_the_day_uses(name):
    """A stub's function named like a variable of the steps (``ece``, Step 4's dict of ECEs) would
    break every later cell that reads the variable once the student runs the stub."""
    notebook = read(name)
    own = {c.id for stub, check, solution in coding_cells(notebook) for c in (stub, check, solution)}
    elsewhere = "\n".join(c.source for c in notebook.cells if c.cell_type == "code" and c.id not in own)
    assigned = {
        target.id
        for node in ast.walk(ast.parse(elsewhere))
        for target in (node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)])
        if isinstance(target, ast.Name)
    } | {node.name for node in ast.walk(ast.parse(elsewhere)) if isinstance(node, ast.FunctionDef)}
    for stub, _, _ in coding_cells(notebook):
        written = set(re.findall(r"^def (\w+)\(", stub.source, re.MULTILINE))
        assert not written & assigned, written & assigned


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_each_day_ends_with_three_to_five_exercises_each_followed_by_its_solution(name):
    notebook = read(name)
    cells = notebook.cells
    start, exercises = exercises_of(notebook)
    assert 3 <= len(exercises) <= 5
    intro = cells[start].source  # explains both kinds and the folded solutions
    assert "A change to make" in intro and "lab.check" in intro and "**Solution**" in intro
    steps = [i for i, c in enumerate(cells) if c.cell_type == "markdown" and c.source.startswith("## Step ")]
    assert steps and max(steps) < start  # after the day's steps
    after = start + 1 + sum(len(e) for e in exercises)
    assert cells[after].source.startswith("## The day's experiments")  # then the opt-in runs,
    assert [c.cell_type for c in cells[after:]] == ["markdown", "code", "code"]  # the fixed last cells
    for k, (heading, *middle, solution) in enumerate(exercises, 1):
        assert int(EXERCISE.match(heading.source).group(1)) == k
        assert solution.source.startswith(SOLUTION_OPEN) and solution.source.endswith(SOLUTION_CLOSE), k
        assert solution.source.count("<details>") == 1 and not any(is_solution(c) for c in middle)
        if middle:  # a question: one code cell with its answer variable and the check
            (answer,) = middle
            assert answer.cell_type == "code" and answer.source.startswith(f"answer_{k} = None  # ")
            assert re.search(rf'lab\.check\(\s*"Exercise {k}",\s*answer_{k},\s*expected=', answer.source)
            assert solution_code(solution).splitlines()[-1].startswith(f"answer_{k} = ")
        else:  # a change to make: it names what to set
            assert re.search(r"(?i)\b(?:set|run)\s+`", heading.source), heading.source


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_solving_a_day_answers_every_question_and_fills_every_stub(name):
    notebook = read(name)
    exercises = sum(1 for _, *middle, _ in exercises_of(notebook)[1] if middle)
    asked, stubs = len(questions(notebook)), len(coding_cells(notebook))
    checks = solve(notebook)
    assert asked >= exercises and len(checks) == asked + stubs and all(checks.values())
    for variable, _, solution in questions(read(name)):  # a question's solution sets its variable
        assert solution_code(solution).splitlines()[-1].startswith(f"{variable} = ")
    for cell in notebook.cells:
        if cell.id in checks:
            assert "= None  # " not in cell.source.splitlines()[0]
            assert "NotImplementedError" not in cell.source
    assert not [c for c in notebook.cells if 'raise NotImplementedError("write ' in c.source]


# Device ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_the_cells_train_on_the_labs_device(name):
    """Every training takes ``lab.setup(tag)`` (the notebook's seed and device); an output the
    cell turns into NumPy comes back from the device first."""
    code = [c.source for c in read(name).cells if c.cell_type == "code"]
    assert not [s for s in code if re.search(r"\bTrainSetup\(|\bTrainer\(", s)]
    assert any("lab.setup(" in s for s in code)
    on_device = re.compile(r"\b(?:predict|reconstruction_error)\(")  # results on the model's device
    to_numpy = re.compile(r"(?<!\.cpu\(\))\.numpy\(\)")
    assert not [
        line for s in code for line in s.splitlines() if on_device.search(line) and to_numpy.search(line)
    ]

"""Evaluation traces (Wengert lists): a function as a list of primitive steps.

The notes explain both modes of automatic differentiation on a trace table. A
:class:`WengertList` holds such a trace and evaluates it three ways:

* the forward **primal** trace: each v_i from its arguments, with floats;
* the forward **tangent** trace: each v̇_i = ∂v_i/∂x · ẋ, by running the same steps on
  :class:`~biaslab.scratch.dual.Dual` numbers;
* the reverse **adjoint** trace: each v̄_i = ∂z/∂v_i, by running the steps on
  :class:`~biaslab.scratch.autodiff.Tensor` and calling ``backward()`` once.

Nothing is hard-coded: every number in the tables comes from the engines.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from biaslab.scratch.autodiff import Tensor
from biaslab.scratch.dual import Dual
from biaslab.scratch.functions import cos, sin

# op -> (evaluate, primal formula, tangent rule); {0}, {1} are the arguments' names.
OPS = {
    "add": (lambda a, b: a + b, "{0} + {1}", "{0}' + {1}'"),
    "mul": (lambda a, b: a * b, "{0} · {1}", "{0}'·{1} + {0}·{1}'"),
    "scale": (lambda c, a: c * a, "{0} · {1}", "{0} · {1}'"),
    "pow": (lambda a, k: a**k, "{0}^{1}", "{1}·{0}^({1}-1)·{0}'"),
    "sin": (lambda a: sin(a), "sin({0})", "cos({0})·{0}'"),
    "cos": (lambda a: cos(a), "cos({0})", "-sin({0})·{0}'"),
}


@dataclass(frozen=True)
class Step:
    """``name = op(*args)``; an argument is the name of an earlier value or a constant."""

    name: str
    op: str
    args: tuple


class WengertList:
    """A function of named inputs written as primitive steps; the last step is the output."""

    def __init__(self, inputs: Sequence[str], steps: Sequence[Step]):
        self.inputs = tuple(inputs)
        self.steps = tuple(steps)
        for step in self.steps:
            if step.op not in OPS:
                raise ValueError(f"unknown op '{step.op}' (known: {', '.join(OPS)})")

    @property
    def output(self) -> str:
        return self.steps[-1].name

    def evaluate(self, inputs: dict) -> dict:
        """Run the steps on any number type (float, Dual, Tensor); return every value by name."""
        values = dict(inputs)
        for step in self.steps:
            args = [values[a] if isinstance(a, str) else a for a in step.args]
            values[step.name] = OPS[step.op][0](*args)
        return values

    def formula(self, step: Step, column: int = 1) -> str:
        """The step's primal formula (column 1) or tangent rule (column 2) as text."""
        return OPS[step.op][column].format(*[a if isinstance(a, str) else f"{a:g}" for a in step.args])

    # -- the three tables ----------------------------------------------------------------
    def primal_table(self, x: Sequence[float]) -> list[list]:
        values = self.evaluate(dict(zip(self.inputs, map(float, x))))
        rows = [[name, "input", values[name]] for name in self.inputs]
        return rows + [[s.name, self.formula(s), float(values[s.name])] for s in self.steps]

    def tangent_table(self, x: Sequence[float], x_dot: Sequence[float]) -> list[list]:
        values = self.evaluate({n: Dual(float(v), float(d)) for n, v, d in zip(self.inputs, x, x_dot)})
        rows = [[f"{n}'", "seed", float(values[n].tangent)] for n in self.inputs]
        return rows + [
            [f"{s.name}'", self.formula(s, 2), float(values[s.name].tangent) + 0.0] for s in self.steps
        ]  # + 0.0 turns -0.0 into 0.0

    def adjoint_table(self, x: Sequence[float]) -> list[list]:
        """Adjoints from the output back to the inputs (the order reverse mode visits them)."""
        values = self.evaluate({n: Tensor(float(v), requires_grad=True) for n, v in zip(self.inputs, x)})
        values[self.output].backward()
        names = [s.name for s in reversed(self.steps)] + list(reversed(self.inputs))
        return [[f"{n}̄", f"∂{self.output}/∂{n}", float(values[n].grad)] for n in names]

    def gradient(self, x: Sequence[float]) -> list[float]:
        """∂output/∂inputs by reverse mode."""
        table = {row[0]: row[2] for row in self.adjoint_table(x)}
        return [table[f"{n}̄"] for n in self.inputs]


# The notes' example: z = 2·x0 + x0·sin(x1) + x1³.
NOTES_EXAMPLE = WengertList(
    inputs=("x0", "x1"),
    steps=(
        Step("v1", "sin", ("x1",)),
        Step("v2", "mul", ("x0", "v1")),
        Step("v3", "scale", (2.0, "x0")),
        Step("v4", "pow", ("x1", 3)),
        Step("v5", "add", ("v3", "v2")),
        Step("z", "add", ("v5", "v4")),
    ),
)

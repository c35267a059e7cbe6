"""Sequential depth: the longest chain of operations, each waiting for the one before.

The lecture notes §5.2: "even with gating, RNNs process sequences *sequentially*—you can't compute
h_{100} without first computing h_1 through h_{99}", while "Transformers process all positions in
parallel using attention". Both sentences are about the *critical path* of the computation: the
longest chain of operations in which each needs the previous one's output. No number of cores
shortens it; everything off it can run side by side.

:func:`sequential_depth` measures it on the graph autograd records during a forward pass: each
node is one differentiable operation, its edges lead to the operations that produced its inputs,
and the depth of an output is the number of nodes on the longest path from a leaf (an input or a
parameter) to it. It is a count, so a seed does not even enter: the same model and input length
always give the same depth, on any machine. A recurrent network's depth grows by a fixed number
of operations per time step; an attention layer's does not depend on the length at all.
:func:`forward_cost` gives both sides of a forward pass: that count, and the seconds it takes.
"""

from __future__ import annotations

import torch
from torch import nn

from biaslab.evaluate.timing import fastest_time

__all__ = ["forward_cost", "sequential_depth"]


def sequential_depth(output: torch.Tensor) -> int:
    """The number of operations on the longest path of autograd's graph that ends at ``output``.

    Leaves (``AccumulateGrad`` nodes of parameters and inputs that require gradients) are not
    operations and count 0; a tensor computed without autograd, or a leaf itself, has depth 0.
    Iterative (no recursion limit), each node visited once: O(nodes + edges).

    Args:
        output: a tensor computed with autograd enabled, e.g. a model's logits.
    """
    if not isinstance(output, torch.Tensor):
        raise TypeError(f"sequential_depth needs a tensor, got {type(output).__name__}")
    root = output.grad_fn
    if root is None:
        return 0
    depth: dict = {}  # node -> operations on the longest path from a leaf up to and including it
    stack = [(root, False)]
    while stack:  # depth-first, children before parents
        node, expanded = stack.pop()
        if node in depth:
            continue
        inputs = [child for child, _ in node.next_functions if child is not None]
        if expanded:
            own = 0 if not inputs and type(node).__name__ == "AccumulateGrad" else 1
            depth[node] = own + max((depth[child] for child in inputs), default=0)
            continue
        stack.append((node, True))
        stack.extend((child, False) for child in inputs if child not in depth)
    return depth[root]


def forward_cost(
    model: nn.Module, inputs: torch.Tensor, repeats: int = 3, device: str = "cpu"
) -> tuple[int, float]:
    """(operations on the longest chain, seconds) of ``model(inputs)``: the chain counted on the
    first two rows with autograd (it does not depend on the batch), the seconds the fastest of
    ``repeats`` passes over all of ``inputs`` on ``device`` without autograd, after a warm-up.

    Shapes:
        inputs ``(N, ...)``, as ``model`` reads them.
    """
    depth = sequential_depth(model(inputs[:2]))
    model, inputs = model.to(device).eval(), inputs.to(device)
    with torch.no_grad():
        model(inputs)  # a warm-up: first-call allocations
        return depth, fastest_time(lambda: model(inputs), repeats)

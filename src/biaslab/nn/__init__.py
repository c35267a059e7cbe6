"""PyTorch primitives, one inductive bias per file."""

from biaslab.nn.mlp import MLP, count_parameters

__all__ = ["MLP", "count_parameters"]

"""PyTorch primitives, one inductive bias per file."""

from biaslab.nn.mlp import MLP, count_parameters, mlp_memory_bytes

__all__ = ["MLP", "count_parameters", "mlp_memory_bytes"]

"""PyTorch primitives, one inductive bias per file: ``mlp`` (none), ``conv`` (locality and
translation equivariance), ``recurrent`` (order), ``sets`` and ``graph`` (permutation symmetry),
``attention`` / ``transformer`` (learned, content-dependent relevance); ``blocks`` assembles
models from them; ``normalization`` (batch norm, layer norm) standardises activations.

Also: ``embedding`` (a learned lookup table), ``residual`` (plain and residual depth),
``readout`` (Set2Set), ``geometric`` (EGNN, E(n) equivariance), ``group_conv`` (p4 group
convolution, quarter turns), ``graph_transformer`` and ``molecules`` (the QM9 model zoo, one
regressor per bias). Most layers are tested equal to their torch or torch-geometric namesakes.

One rule every library function keeps (:func:`~biaslab.nn.mlp.device_of`): inputs follow the
model (the device of its parameters, else its buffers, else the CPU), and random draws come from
the caller's generator (the CPU's by default, so a seed draws the same numbers on every device).
"""

from biaslab.nn.attention import MultiHeadAttention, scaled_dot_product_attention
from biaslab.nn.blocks import GNN, SequenceClassifier, SequenceTagger
from biaslab.nn.conv import CNN, conv_operation_count, conv_output_size, conv_parameter_count, receptive_field
from biaslab.nn.graph import GATConv, GCNConv, MessagePassing, MPNNConv, SAGEConv
from biaslab.nn.group_conv import C4CNN, C4GroupConv, C4LiftingConv
from biaslab.nn.mlp import MLP, count_parameters, device_of, linear_parameter_count, mlp_memory_bytes
from biaslab.nn.normalization import BatchNorm, LayerNorm
from biaslab.nn.recurrent import GRU, LSTM, RNN, ElmanCell, GRUCell, LSTMCell, chrono_init
from biaslab.nn.sets import DeepSets, DeepSetsLayer
from biaslab.nn.transformer import (
    EncoderBlock,
    LearnedPositionalEncoding,
    SinusoidalPositionalEncoding,
    TransformerConfig,
    TransformerEncoder,
)

__all__ = [
    "C4CNN",
    "CNN",
    "GNN",
    "GRU",
    "LSTM",
    "MLP",
    "RNN",
    "BatchNorm",
    "C4GroupConv",
    "C4LiftingConv",
    "DeepSets",
    "DeepSetsLayer",
    "ElmanCell",
    "EncoderBlock",
    "GATConv",
    "GCNConv",
    "GRUCell",
    "LSTMCell",
    "LayerNorm",
    "LearnedPositionalEncoding",
    "MPNNConv",
    "MessagePassing",
    "MultiHeadAttention",
    "SAGEConv",
    "SequenceClassifier",
    "SequenceTagger",
    "SinusoidalPositionalEncoding",
    "TransformerConfig",
    "TransformerEncoder",
    "chrono_init",
    "conv_operation_count",
    "conv_output_size",
    "conv_parameter_count",
    "count_parameters",
    "device_of",
    "linear_parameter_count",
    "mlp_memory_bytes",
    "receptive_field",
    "scaled_dot_product_attention",
]

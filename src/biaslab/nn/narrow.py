"""Narrow deep ReLU networks: every hidden layer ``width`` units, ``depth`` of them.

The ML-for-physics slides, 'Universal approximation theorem: depth', quote Hanin and Sellke
(2017): the minimal width for deep ReLU networks to approximate any continuous real-valued
function of d inputs is d + 1. In one dimension that is width 2, and width 1 is not enough: a
width-1 layer maps one number to one number, h ↦ max(0, w h + b), which is monotone, and a
composition of monotone maps is monotone, so a width-1 network of any depth computes a monotone
function of x.

:func:`narrow_relu_mlp` builds such a network as a :class:`~biaslab.nn.mlp.MLP` of sizes
``(inputs, width, ..., width, outputs)``,

    h_0 = x,   h_l = max(0, W_l h_{l−1} + b_l)  (l = 1..depth),   y = W_{depth+1} h_depth + b_{depth+1},

with a start that keeps its units alive. At torch's default start a narrow deep ReLU network
collapses to a constant with high probability (Lu et al. 2019: once every unit of one layer is
0 on every input, nothing after it gets a gradient), which would test the start rather than
the width. Here the weights are drawn as LeCun's, W_l ~ N(0, 1/fan_in), and every hidden bias
starts at ``start_bias`` > 0, so most units start positive on inputs of order one; the output
bias starts at 0.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from biaslab.nn.mlp import MLP

__all__ = ["narrow_relu_mlp"]


def narrow_relu_mlp(
    width: int, depth: int, inputs: int = 1, outputs: int = 1, start_bias: float = 0.5
) -> MLP:
    """A ReLU MLP with ``depth`` hidden layers of ``width`` units, drawn from torch's global
    generator (seed it first: ``ctx.init_model`` does).

    Args:
        width: units in every hidden layer (1 makes a monotone function of a scalar input).
        depth: hidden layers, at least 1.
        inputs, outputs: the input and output sizes (default 1 each: a function of one number).
        start_bias: every hidden bias's starting value (default 0.5); the output bias starts at 0.

    Shapes:
        input ``(n, inputs)`` -> output ``(n, outputs)``.
    """
    for name, value in (("width", width), ("depth", depth), ("inputs", inputs), ("outputs", outputs)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name}={value!r}: give a whole number >= 1")
    if not math.isfinite(start_bias):
        raise ValueError(f"start_bias={start_bias!r}: give a finite number")
    model = MLP((inputs, *(width,) * depth, outputs), activation="relu")
    linears = [m for m in model.layers if isinstance(m, nn.Linear)]
    with torch.no_grad():
        for i, linear in enumerate(linears):
            linear.weight.normal_(0.0, 1.0 / math.sqrt(linear.in_features))  # LeCun: N(0, 1/fan_in)
            linear.bias.fill_(start_bias if i < len(linears) - 1 else 0.0)
    return model

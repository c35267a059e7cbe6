"""From first principles, in NumPy alone (no torch import anywhere in this package).

* :class:`Tensor` — reverse-mode automatic differentiation on NumPy arrays (``autodiff.py``);
* :class:`Dual` — forward mode with dual numbers, and ``jacobian`` / ``gradient`` / ``hessian``
  (``dual.py``); ``sin, cos, ...`` work on floats, arrays, Duals and Tensors (``functions.py``);
* :class:`TwoLayerMLP` — the notes' MLP with its five hand-written backprop formulas (``mlp.py``);
* :class:`SGD` (momentum, Nesterov) and :class:`Adam` on NumPy parameters (``optim.py``);
* ``fit`` — our own training loop (``loop.py``); ``numerical_gradient`` (``gradcheck.py``).

Also ``trace.py`` (Wengert lists), ``TwoLayerMLP.layers()``, and ``LoopConfig`` (``loop.py``), the
training part of a lab that trains with the NumPy loop.
"""

from biaslab.scratch.autodiff import (
    Tensor,
    log_softmax,
    no_grad,
    softmax,
    softmax_cross_entropy,
)
from biaslab.scratch.dual import Dual, gradient, hessian, jacobian
from biaslab.scratch.functions import cos, exp, log, relu, sigmoid, sin, stack, tanh
from biaslab.scratch.gradcheck import check_gradients, numerical_gradient
from biaslab.scratch.loop import fit
from biaslab.scratch.mlp import TwoLayerMLP
from biaslab.scratch.optim import SGD, Adam

__all__ = [
    "SGD",
    "Adam",
    "Dual",
    "Tensor",
    "TwoLayerMLP",
    "check_gradients",
    "cos",
    "exp",
    "fit",
    "gradient",
    "hessian",
    "jacobian",
    "log",
    "log_softmax",
    "no_grad",
    "numerical_gradient",
    "relu",
    "sigmoid",
    "sin",
    "softmax",
    "softmax_cross_entropy",
    "stack",
    "tanh",
]

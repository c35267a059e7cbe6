"""Recurrent networks: one cell applied at every step of a sequence.

    h_t = tanh(W_xh x_t + b_xh + W_hh h_{t-1} + b_hh)                                  (eq. 5.6)

The inductive bias is order with weight sharing over time: the same weights read x_1, x_2, ...
in turn, so a sequence and its reversal are different inputs, and a sequence of any length costs
the same parameters. The LSTM and the GRU keep the loop and gate the update (σ the sigmoid):

    LSTM:  i, f, o = σ(W_· x_t + b_i· + U_· h_{t-1} + b_h·),  g = tanh(W_g x_t + b_ig + U_g h_{t-1} + b_hg),
           c_t = f ⊙ c_{t-1} + i ⊙ g,   h_t = o ⊙ tanh(c_t)
    GRU:   r, z = σ(W_· x_t + b_i· + U_· h_{t-1} + b_h·),
           n = tanh(W_n x_t + b_in + r ⊙ (U_n h_{t-1} + b_hn)),   h_t = (1 - z) ⊙ n + z ⊙ h_{t-1}

Every gate is written out here (no torch.nn.RNN/LSTM/GRU, no fused kernels). Parameter names,
shapes and gate order are torch's (``weight_ih_l0`` of shape (4H, I) with rows i, f, g, o for the
LSTM and r, z, n for the GRU; ``..._reverse`` for the backward direction), so
``load_state_dict(torch_module.state_dict())`` works; :func:`copy_from_torch` and ``from_torch``
check the configuration first. ``reset_parameters`` draws what torch draws from the same seed.

:class:`ElmanCell`, :class:`LSTMCell` and :class:`GRUCell` gate by gate; :class:`RNN`,
:class:`LSTM` and :class:`GRU` (layers, bidirectional, ``lengths``); :func:`chrono_init` sets the
forget gates near 1 for long memories.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from biaslab.checks import is_integer

_State = tuple[torch.Tensor, ...]  # (h,) for the Elman RNN and the GRU, (h, c) for the LSTM
_GATES = {"tanh": 1, "relu": 1, "lstm": 4, "gru": 3}
_NONLINEARITIES = {"tanh": torch.tanh, "relu": torch.relu}
_SUFFIXES = ("", "_reverse")


def _step(
    mode: str, gi: torch.Tensor, state: _State, w_hh: torch.Tensor, b_hh: torch.Tensor | None
) -> _State:
    """One application of the cell; ``gi = W_ih x_t + b_ih`` is computed for all steps at once."""
    gh = F.linear(state[0], w_hh, b_hh)  # (N, G*H): W_hh h_{t-1} + b_hh
    if mode == "lstm":
        i, f, g, o = (gi + gh).chunk(4, dim=-1)  # 4 x (N, H), torch's gate order
        c = torch.sigmoid(f) * state[1] + torch.sigmoid(i) * torch.tanh(g)  # c_t = f⊙c_{t-1} + i⊙g
        return torch.sigmoid(o) * torch.tanh(c), c  # h_t = o⊙tanh(c_t)
    if mode == "gru":
        i_r, i_z, i_n = gi.chunk(3, dim=-1)  # 3 x (N, H)
        h_r, h_z, h_n = gh.chunk(3, dim=-1)  # 3 x (N, H)
        r, z = torch.sigmoid(i_r + h_r), torch.sigmoid(i_z + h_z)
        n = torch.tanh(i_n + r * h_n)  # the reset gate scales U_n h + b_hn, as in torch
        return ((1 - z) * n + z * state[0],)
    return (_NONLINEARITIES[mode](gi + gh),)  # eq. 5.6


def _check_sizes(**sizes: int) -> None:
    for name, value in sizes.items():
        if not is_integer(value) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")


def _check_nonlinearity(nonlinearity: str) -> str:
    if nonlinearity not in _NONLINEARITIES:
        raise ValueError(f"nonlinearity must be one of {sorted(_NONLINEARITIES)}, got {nonlinearity!r}")
    return nonlinearity


class _TorchLayout:
    """torch's parameter names, shapes, order and initialisation: weights copy both ways."""

    hidden_size: int

    def reset_parameters(self) -> None:
        bound = 1 / math.sqrt(self.hidden_size)
        for p in self.parameters():  # in registration order, as torch draws them
            nn.init.uniform_(p, -bound, bound)

    @classmethod
    def from_torch(cls, torch_module: nn.Module):
        """A module with ``torch_module``'s configuration (``batch_first`` included), dtype and weights."""
        names = inspect.signature(cls.__init__).parameters
        kwargs = {name: getattr(torch_module, name) for name in names if hasattr(torch_module, name)}
        model = cls(**kwargs).to(next(torch_module.parameters()))
        return copy_from_torch(model, torch_module)


class _Cell(_TorchLayout, nn.Module):
    mode = "tanh"

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True):
        super().__init__()
        _check_sizes(input_size=input_size, hidden_size=hidden_size)
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        rows = _GATES[self.mode] * hidden_size
        self.weight_ih = nn.Parameter(torch.empty(rows, input_size))
        self.weight_hh = nn.Parameter(torch.empty(rows, hidden_size))
        self.register_parameter("bias_ih", nn.Parameter(torch.empty(rows)) if bias else None)
        self.register_parameter("bias_hh", nn.Parameter(torch.empty(rows)) if bias else None)
        self.reset_parameters()

    def extra_repr(self) -> str:
        return f"{self.input_size}, {self.hidden_size}, mode={self.mode!r}, bias={self.bias}"

    def _cell(self, x: torch.Tensor, state: _State | None) -> _State:
        if x.dim() != 2 or x.shape[1] != self.input_size:
            raise ValueError(f"expected input of shape (N, {self.input_size}), got {tuple(x.shape)}")
        shape = (x.shape[0], self.hidden_size)
        state = state or tuple(x.new_zeros(shape) for _ in range(2 if self.mode == "lstm" else 1))
        for s in state:
            if tuple(s.shape) != shape:
                raise ValueError(f"expected a state of shape {shape}, got {tuple(s.shape)}")
        if len(state) != (2 if self.mode == "lstm" else 1):
            raise ValueError("the LSTM cell's state is a pair (h, c)")
        return _step(
            self.mode, F.linear(x, self.weight_ih, self.bias_ih), state, self.weight_hh, self.bias_hh
        )


class ElmanCell(_Cell):
    """The Elman cell of eq. 5.6, ``h' = tanh(W_ih x + b_ih + W_hh h + b_hh)``; torch's ``RNNCell``.

    Args:
        input_size: features I of each step.
        hidden_size: state size H.
        bias: learn ``b_ih`` and ``b_hh`` (default True).
        nonlinearity: ``"tanh"`` (default) or ``"relu"``.

    Shapes:
        ``x (N, I)``, ``h (N, H)`` (zeros when None) -> ``h' (N, H)``.
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh"):
        self.mode = _check_nonlinearity(nonlinearity)
        super().__init__(input_size, hidden_size, bias)

    @property
    def nonlinearity(self) -> str:
        return self.mode

    def forward(self, x: torch.Tensor, h: torch.Tensor | None = None) -> torch.Tensor:
        return self._cell(x, None if h is None else (h,))[0]


class LSTMCell(_Cell):
    """The LSTM cell: input, forget, cell and output gates; torch's ``LSTMCell`` layout (i, f, g, o).

    Args: ``input_size``, ``hidden_size``, ``bias=True``, as :class:`ElmanCell`'s.

    Shapes:
        ``x (N, I)``, ``state = (h, c)`` each ``(N, H)`` (zeros when None) -> ``(h', c')``.
    """

    mode = "lstm"

    def forward(self, x: torch.Tensor, state: tuple[torch.Tensor, torch.Tensor] | None = None) -> _State:
        return self._cell(x, None if state is None else tuple(state))


class GRUCell(_Cell):
    """The GRU cell: reset and update gates and a candidate; torch's ``GRUCell`` layout (r, z, n).

    Args: ``input_size``, ``hidden_size``, ``bias=True``, as :class:`ElmanCell`'s.

    Shapes:
        ``x (N, I)``, ``h (N, H)`` (zeros when None) -> ``h' (N, H)``.
    """

    mode = "gru"

    def forward(self, x: torch.Tensor, h: torch.Tensor | None = None) -> torch.Tensor:
        return self._cell(x, None if h is None else (h,))[0]


class _Recurrent(_TorchLayout, nn.Module):
    mode = "tanh"

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        *,
        bidirectional: bool = False,
        batch_first: bool = True,
        bias: bool = True,
        dropout: float = 0.0,
    ):
        super().__init__()
        _check_sizes(input_size=input_size, hidden_size=hidden_size, num_layers=num_layers)
        if not 0 <= dropout < 1:
            raise ValueError(f"dropout must be in [0, 1), got {dropout!r}")
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bidirectional, self.batch_first, self.bias = bidirectional, batch_first, bias
        self.dropout = dropout
        self.num_directions = 2 if bidirectional else 1
        rows = _GATES[self.mode] * hidden_size
        for layer in range(num_layers):  # torch's registration order, so that the same seed draws the same
            columns = input_size if layer == 0 else self.num_directions * hidden_size
            for suffix in _SUFFIXES[: self.num_directions]:
                shapes = {"weight_ih": (rows, columns), "weight_hh": (rows, hidden_size)}
                shapes |= {"bias_ih": (rows,), "bias_hh": (rows,)} if bias else {}
                for name, shape in shapes.items():
                    self.register_parameter(f"{name}_l{layer}{suffix}", nn.Parameter(torch.empty(shape)))
        self.reset_parameters()

    def extra_repr(self) -> str:
        return (
            f"{self.input_size}, {self.hidden_size}, num_layers={self.num_layers}, mode={self.mode!r}, "
            f"bidirectional={self.bidirectional}, batch_first={self.batch_first}, dropout={self.dropout}"
        )

    def _weights(self, layer: int, direction: int) -> list[torch.Tensor | None]:
        key = f"_l{layer}{_SUFFIXES[direction]}"
        return [getattr(self, name + key, None) for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]

    def _mask(self, lengths, steps: int, batch: int, device) -> torch.Tensor:
        lengths = torch.as_tensor(lengths, device="cpu")
        if lengths.shape != (batch,) or lengths.dtype.is_floating_point or lengths.dtype == torch.bool:
            raise ValueError(f"lengths must be {batch} integers (one per sequence), got {lengths.tolist()}")
        if lengths.min() < 1 or lengths.max() > steps:
            raise ValueError(f"lengths must lie in 1..{steps} (the padded length), got {lengths.tolist()}")
        return (torch.arange(steps)[:, None] < lengths[None, :]).unsqueeze(-1).to(device)  # (T, N, 1)

    def _scan(self, gi, state: _State, w_hh, b_hh, reverse: bool, mask) -> tuple[torch.Tensor, _State]:
        """The same cell at every step, forward or backward in time; ``gi`` is ``(T, N, G*H)``."""
        steps = gi.unbind(0)  # T x (N, G*H); one backward for all (indexing gi[t] would cost T² memory)
        outputs: list[torch.Tensor | None] = [None] * len(steps)  # filled in time order or reversed
        for t in reversed(range(len(steps))) if reverse else range(len(steps)):
            new = _step(self.mode, steps[t], state, w_hh, b_hh)
            if mask is not None:  # past a sequence's end the state is held and the output is 0
                new = tuple(torch.where(mask[t], n, s) for n, s in zip(new, state))
                outputs[t] = torch.where(mask[t], new[0], 0.0)
            else:
                outputs[t] = new[0]
            state = new
        return torch.stack(outputs), state  # (T, N, H)

    def _forward(self, x: torch.Tensor, hx: _State | None, lengths) -> tuple[torch.Tensor, _State]:
        layout = "(N, T, I)" if self.batch_first else "(T, N, I)"
        if x.dim() != 3 or x.shape[-1] != self.input_size or 0 in x.shape:
            raise ValueError(
                f"expected input of shape {layout} with I = {self.input_size}, got {tuple(x.shape)}"
            )
        if self.batch_first:
            x = x.transpose(0, 1)  # (N, T, I) -> (T, N, I)
        steps, batch = x.shape[:2]
        shape = (self.num_layers * self.num_directions, batch, self.hidden_size)
        hx = hx or tuple(x.new_zeros(shape) for _ in range(2 if self.mode == "lstm" else 1))
        for h in hx:
            if tuple(h.shape) != shape:
                raise ValueError(f"expected an initial state of shape {shape}, got {tuple(h.shape)}")
        mask = None if lengths is None else self._mask(lengths, steps, batch, x.device)  # (T, N, 1)
        finals: list[_State] = []
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(self.num_directions):
                k = layer * self.num_directions + direction
                w_ih, w_hh, b_ih, b_hh = self._weights(layer, direction)
                gi = F.linear(x, w_ih, b_ih)  # (T, N, G*H): the input half of every gate, all steps at once
                out, last = self._scan(gi, tuple(h[k] for h in hx), w_hh, b_hh, direction == 1, mask)
                outputs.append(out)
                finals.append(last)
            x = torch.cat(outputs, dim=-1)  # (T, N, D*H): forward then backward features
            if self.dropout and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, self.training)
        if self.batch_first:
            x = x.transpose(0, 1)  # (T, N, D*H) -> (N, T, D*H)
        return x, tuple(torch.stack(parts) for parts in zip(*finals))  # each (D*num_layers, N, H)


class RNN(_Recurrent):
    """The Elman RNN of eq. 5.6 over whole sequences, layer by layer; torch's ``nn.RNN``.

    Args:
        input_size: features I of each step.
        hidden_size: state size H of each layer and direction.
        num_layers: stacked layers; layer l > 0 reads layer l-1's outputs (default 1).
        nonlinearity: ``"tanh"`` (default) or ``"relu"``.
        bidirectional: also run a second cell from the last step to the first; its outputs are
            concatenated after the forward ones (default False).
        batch_first: inputs and outputs are ``(N, T, ·)``, else ``(T, N, ·)`` (default True,
            unlike torch; keyword-only, like every argument after ``num_layers``).
        bias: learn ``b_ih`` and ``b_hh`` (default True).
        dropout: dropout on each layer's outputs except the last, in training (default 0.0).

    ``forward(x, hx=None, lengths=None)``: ``hx`` is the initial state (zeros when None);
    ``lengths`` the true length of each padded sequence (None: all T steps). With ``lengths`` the
    result is torch's on a packed sequence: a sequence's state stops at its last step (where the
    backward direction starts) and its outputs past it are 0.

    Shapes (batch_first; D = 2 if bidirectional else 1):
        ``x (N, T, I)``, ``hx (D*num_layers, N, H)`` -> ``output (N, T, D*H)``, the last layer's
        states at every step, and ``h_n (D*num_layers, N, H)``, row ``layer*D + direction``.
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        *,
        nonlinearity: str = "tanh",
        bidirectional: bool = False,
        batch_first: bool = True,
        bias: bool = True,
        dropout: float = 0.0,
    ):
        self.mode = _check_nonlinearity(nonlinearity)
        kwargs = {
            "bidirectional": bidirectional,
            "batch_first": batch_first,
            "bias": bias,
            "dropout": dropout,
        }
        super().__init__(input_size, hidden_size, num_layers, **kwargs)

    @property
    def nonlinearity(self) -> str:
        return self.mode

    def forward(self, x: torch.Tensor, hx: torch.Tensor | None = None, lengths: Sequence[int] | None = None):
        output, (h_n,) = self._forward(x, None if hx is None else (hx,), lengths)
        return output, h_n


class LSTM(_Recurrent):
    """The LSTM over whole sequences, layer by layer; torch's ``nn.LSTM`` (without ``proj_size``).

    Args and ``forward``: as :class:`RNN`'s, without ``nonlinearity``; the state is a pair.

    Shapes (batch_first; D = 2 if bidirectional else 1):
        ``x (N, T, I)``, ``hx = (h_0, c_0)`` each ``(D*num_layers, N, H)`` -> ``output (N, T, D*H)``
        and ``(h_n, c_n)``, each ``(D*num_layers, N, H)``.
    """

    mode = "lstm"

    def forward(self, x: torch.Tensor, hx: _State | None = None, lengths: Sequence[int] | None = None):
        if hx is not None and len(hx) != 2:
            raise ValueError("the LSTM's initial state is a pair (h_0, c_0)")
        output, (h_n, c_n) = self._forward(x, None if hx is None else tuple(hx), lengths)
        return output, (h_n, c_n)


class GRU(_Recurrent):
    """The GRU over whole sequences, layer by layer; torch's ``nn.GRU``.

    Args and ``forward``: as :class:`RNN`'s, without ``nonlinearity``.

    Shapes (batch_first; D = 2 if bidirectional else 1):
        ``x (N, T, I)``, ``hx (D*num_layers, N, H)`` -> ``output (N, T, D*H)`` and
        ``h_n (D*num_layers, N, H)``.
    """

    mode = "gru"

    def forward(self, x: torch.Tensor, hx: torch.Tensor | None = None, lengths: Sequence[int] | None = None):
        output, (h_n,) = self._forward(x, None if hx is None else (hx,), lengths)
        return output, h_n


RECURRENT = {"rnn": RNN, "lstm": LSTM, "gru": GRU}


def chrono_init(lstm: nn.Module, max_length: int, generator: torch.Generator | None = None) -> nn.Module:
    """Chrono initialisation (Tallec & Ollivier 2018) of an :class:`LSTM` or :class:`LSTMCell`:
    forget-gate biases b_f = log(u), u ~ U[1, max_length − 1], input-gate biases b_i = −b_f.

    With torch's default biases the forget gate starts near σ(0) = 1/2, so the cell state — and
    the gradient along it — halves at every step: after 100 steps nothing is left. Chrono
    initialisation spreads the gates' characteristic memory times 1/(1 − f) over 1..max_length,
    so the cell can carry information, and gradient, across the whole sequence from the start.
    Weights are untouched; the biases of every layer and direction are set in place.
    """
    if max_length < 3:
        raise ValueError(f"max_length must be at least 3, got {max_length}")
    hidden = lstm.hidden_size
    with torch.no_grad():
        for name, bias in lstm.named_parameters():
            if not name.startswith("bias_"):
                continue
            if name.startswith("bias_hh"):  # the ih bias carries the whole initial value
                bias[: 2 * hidden].zero_()
                continue
            # Drawn on the generator's device (the CPU for torch's global one), then moved to the bias.
            device = "cpu" if generator is None else generator.device
            u = torch.rand(hidden, generator=generator, dtype=bias.dtype, device=device).to(bias.device)
            u = u * (max_length - 2) + 1
            bias[hidden : 2 * hidden] = torch.log(u)  # forget gate (rows i, f, g, o)
            bias[:hidden] = -torch.log(u)  # input gate
    return lstm


_TORCH_TWIN = {ElmanCell: nn.RNNCell, LSTMCell: nn.LSTMCell, GRUCell: nn.GRUCell}
_TORCH_TWIN |= {RNN: nn.RNN, LSTM: nn.LSTM, GRU: nn.GRU}


def copy_from_torch(module: nn.Module, torch_module: nn.Module) -> nn.Module:
    """Copy ``torch_module``'s weights into ``module`` (its biaslab twin, same sizes); returns ``module``.

    Raises ValueError when ``torch_module`` is not the twin (``nn.LSTM`` for :class:`LSTM`, ...)
    or differs in a size, bias, directions, layers or non-linearity, or has ``proj_size``.
    """
    twin = _TORCH_TWIN.get(type(module))
    if twin is None or not isinstance(torch_module, twin):
        expected = twin.__name__ if twin else "a biaslab recurrent module"
        raise ValueError(
            f"cannot copy a {type(torch_module).__name__} into a {type(module).__name__}: expected {expected}"
        )
    if getattr(torch_module, "proj_size", 0):
        raise ValueError("LSTMs with proj_size have no biaslab twin")
    for key in ("input_size", "hidden_size", "num_layers", "bidirectional", "bias", "nonlinearity"):
        if hasattr(module, key) and getattr(module, key) != getattr(torch_module, key):
            raise ValueError(
                f"{key} differs: {getattr(module, key)!r} here, {getattr(torch_module, key)!r} in torch"
            )
    with torch.no_grad():
        module.load_state_dict(torch_module.state_dict())
    return module

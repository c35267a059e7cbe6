"""Convolution: locality and weight sharing, hence translation equivariance; pooling, invariance.

A convolutional layer (a cross-correlation, as in PyTorch) applies one small kernel at every
position of its input:

    y[i] = Σ_k w[k]·x[i+k] + b          (per output channel, summed over input channels)

Each output sees only a window of k inputs (locality) and every window uses the same w (weight
sharing), so shifting the input shifts the output: conv(T_s x) = T_s conv(x), translation
equivariance. Exact for cyclic shifts with circular padding and stride 1; zero padding breaks it
at the borders and a stride or pooling S keeps it only for shifts that are multiples of S.
Pooling over a window, and a global pool over all positions, make the output (approximately,
exactly for the global pool of equivariant features) invariant to the shift.

Along each spatial dimension, an input of size H, padding P, kernel k, dilation d and stride S gives

    H_out = ⌊(H + 2P − d(k−1) − 1)/S⌋ + 1      (= ⌊(H + 2P − k)/S⌋ + 1 for d = 1)

and a stack of layers (convolutions or pools) has the receptive field r_L, where

    r_0 = 1, j_0 = 1,   r_l = r_{l−1} + (k_l − 1)·d_l·j_{l−1},   j_l = j_{l−1}·s_l

(j_l, the jump, is the distance in input positions between neighbouring outputs of layer l), that
is r = 1 + Σ_l (k_l − 1)·d_l·Π_{j<l} s_j.

:class:`CNN`: conv → activation → pooling blocks, 1-D or 2-D, a global pool or a flatten, an MLP
head (``features()``; ``embedding()``, the head's input). The formulas above are
:func:`conv_output_size`, :func:`receptive_field` and :func:`effective_stride`, with
:func:`conv_parameter_count` and :func:`conv_operation_count`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn

from biaslab.checks import is_integer
from biaslab.nn.mlp import ACTIVATIONS, MLP

CONV = {1: nn.Conv1d, 2: nn.Conv2d}
POOL = {"max": {1: nn.MaxPool1d, 2: nn.MaxPool2d}, "avg": {1: nn.AvgPool1d, 2: nn.AvgPool2d}}
PADDING_MODES = ("zeros", "circular", "reflect", "replicate")


def _check_int(name: str, value: object, minimum: int) -> int:
    if not is_integer(value):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}")
    return value


def conv_output_size(
    size: int, kernel_size: int, stride: int = 1, padding: int = 0, dilation: int = 1
) -> int:
    """Output length of a convolution or pooling along one dimension: ⌊(H + 2P − d(k−1) − 1)/S⌋ + 1.

    Args:
        size: the input length H.
        kernel_size: k.
        stride: S (default 1).
        padding: P, added on both sides (default 0).
        dilation: d, the spacing between kernel taps (default 1).

    Example: ``conv_output_size(28, 3, padding=1)`` is 28; ``conv_output_size(28, 2, stride=2)`` is 14.
    """
    size = _check_int("size", size, 1)
    kernel_size = _check_int("kernel_size", kernel_size, 1)
    stride = _check_int("stride", stride, 1)
    padding = _check_int("padding", padding, 0)
    dilation = _check_int("dilation", dilation, 1)
    span = dilation * (kernel_size - 1) + 1
    if span > size + 2 * padding:
        raise ValueError(
            f"the kernel spans {span} positions (kernel_size={kernel_size}, dilation={dilation}) but "
            f"the padded input has only {size + 2 * padding} (size={size}, padding={padding}): "
            "the output would be empty"
        )
    return (size + 2 * padding - span) // stride + 1


def _layer_specs(layers: Sequence[Sequence[int]]) -> list[tuple[int, int, int]]:
    specs = []
    for i, layer in enumerate(layers):
        if len(layer) not in (2, 3):
            raise ValueError(f"layer {i} must be (kernel_size, stride) or (kernel_size, stride, dilation)")
        k, s, d = (*layer, 1) if len(layer) == 2 else layer
        specs.append(
            (_check_int("kernel_size", k, 1), _check_int("stride", s, 1), _check_int("dilation", d, 1))
        )
    return specs


def receptive_field(layers: Sequence[Sequence[int]]) -> int:
    """Input positions (per dimension) one output unit of a stack depends on: 1 + Σ (k_l − 1)·d_l·j_{l−1}.

    Args:
        layers: ``(kernel_size, stride)`` or ``(kernel_size, stride, dilation)`` per layer, first
            layer first; a pool of size p is ``(p, p)``. An empty stack has receptive field 1.

    Example: three 3x3 convolutions have ``receptive_field([(3, 1)] * 3) == 7``; with a 2x2 pool
    after the first, ``receptive_field([(3, 1), (2, 2), (3, 1), (3, 1)]) == 12``.
    """
    field, jump = 1, 1
    for k, s, d in _layer_specs(layers):
        field += (k - 1) * d * jump
        jump *= s
    return field


def effective_stride(layers: Sequence[Sequence[int]]) -> int:
    """The jump j_L = Π s_l: input positions between neighbouring outputs of the stack."""
    return math.prod(s for _, s, _ in _layer_specs(layers))


def conv_parameter_count(
    in_channels: int, out_channels: int, kernel_size: int | Sequence[int], bias: bool = True, dims: int = 2
) -> int:
    """Parameters of one convolution: in·out·Πk weights, plus ``out`` biases when ``bias``.

    Args:
        in_channels, out_channels: channel counts.
        kernel_size: an int (the same along each of ``dims`` dimensions) or one size per dimension.
        bias: count the biases (default True); ``bias=False`` gives the weights alone.
        dims: the number of spatial dimensions when ``kernel_size`` is an int (default 2).

    Example: a 3x3 convolution from 64 to 128 channels has 64·128·9 = 73,728 weights, 73,856
    parameters with biases.
    """
    in_channels = _check_int("in_channels", in_channels, 1)
    out_channels = _check_int("out_channels", out_channels, 1)
    if isinstance(kernel_size, int):
        kernel = (_check_int("kernel_size", kernel_size, 1),) * _check_int("dims", dims, 1)
    else:
        kernel = tuple(_check_int("kernel_size", k, 1) for k in kernel_size)
        if not kernel:
            raise ValueError("kernel_size must not be empty")
    return in_channels * out_channels * math.prod(kernel) + (out_channels if bias else 0)


def conv_operation_count(
    input_size: Sequence[int],
    kernel_size: int | Sequence[int],
    in_channels: int = 1,
    out_channels: int = 1,
    stride: int = 1,
    padding: int = 0,
    bias: bool = False,
) -> int:
    """Arithmetic operations of one convolution's forward pass: multiplications plus additions.

    Each output value is a dot product of the kernel (in·Πk weights) with its window: in·Πk
    multiplications and in·Πk − 1 additions, plus one for a bias. The number of outputs per
    channel is Π_d :func:`conv_output_size` along each dimension.

    Example: the horizontal difference y[r, c] = x[r, c+1] − x[r, c], a 1x2 kernel on a 320x280
    (width x height) image, costs 319·280 outputs x 3 = 267,960 operations.
    """
    sizes = tuple(_check_int("input_size", n, 1) for n in input_size)
    kernel = (kernel_size,) * len(sizes) if isinstance(kernel_size, int) else tuple(kernel_size)
    if len(kernel) != len(sizes):
        raise ValueError(f"kernel_size {kernel} and input_size {sizes} need one entry per dimension")
    outputs = math.prod(conv_output_size(n, k, stride, padding) for n, k in zip(sizes, kernel))
    window = _check_int("in_channels", in_channels, 1) * math.prod(kernel)
    per_output = 2 * window - 1 + (1 if bias else 0)
    return outputs * _check_int("out_channels", out_channels, 1) * per_output


class CNN(nn.Module):
    """Convolution → activation → pooling blocks, a global pool (or a flatten), then an MLP head.

    Args:
        in_channels: channels of the input (1 for MNIST).
        channels: output channels of each convolution block (default ``(32, 64)``).
        num_classes: outputs of the head (default 10).
        kernel_size: kernel size of every convolution (default 3).
        dims: 1 for sequences ``(N, C, L)``, 2 for images ``(N, C, H, W)`` (default 2).
        pool: ``"max"`` (default), ``"avg"`` or None: the pooling after each block.
        pool_size: window and stride of that pooling (default 2).
        padding: ``"same"`` (default: d(k−1)/2 on each side, odd kernels; the size is kept at
            stride 1) or an int.
        padding_mode: ``"zeros"`` (default), ``"circular"``, ``"reflect"`` or ``"replicate"``.
        activation: as for :class:`MLP` (default ``"relu"``), after every convolution and hidden
            layer of the head.
        global_pool: ``"avg"`` (default), ``"max"`` or None: pool the last feature maps over all
            positions to ``(N, C)``, or flatten them (None; then ``input_size`` is needed).
        input_size: spatial size of the input, an int or one per dimension; only for
            ``global_pool=None``.
        head: hidden widths of the MLP head (default ``()``, a single linear layer).
        dropout: dropout after each hidden layer of the head (default 0.0).
        stride: stride of every convolution (default 1).
        dilation: dilation of every convolution (default 1).

    With ``padding_mode="circular"``, ``stride=1`` and ``pool=None``, :meth:`features` is exactly
    equivariant to cyclic shifts (``torch.roll``) and, with a global pool, the logits are exactly
    invariant to them.

    Shapes:
        input ``(N, in_channels, L)`` or ``(N, in_channels, H, W)`` -> output ``(N, num_classes)``;
        :meth:`features` gives ``(N, channels[-1], *output_shape(...)[1:])``; :meth:`embedding`
        ``(N, channels[-1])`` with a global pool, ``(N, prod(output_shape(...)))`` without.
    """

    def __init__(
        self,
        in_channels: int,
        channels: Sequence[int] = (32, 64),
        num_classes: int = 10,
        kernel_size: int = 3,
        dims: int = 2,
        pool: str | None = "max",
        pool_size: int = 2,
        padding: str | int = "same",
        padding_mode: str = "zeros",
        activation: str = "relu",
        global_pool: str | None = "avg",
        input_size: int | Sequence[int] | None = None,
        head: Sequence[int] = (),
        dropout: float = 0.0,
        stride: int = 1,
        dilation: int = 1,
    ):
        super().__init__()
        if dims not in CONV:
            raise ValueError(f"dims must be 1 (sequences) or 2 (images), got {dims!r}")
        if not channels:
            raise ValueError("channels must name at least one convolution block")
        for name, value in (("pool", pool), ("global_pool", global_pool)):
            if value not in (*POOL, None):
                raise ValueError(f"{name} must be 'max', 'avg' or None, got {value!r}")
        if padding_mode not in PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {PADDING_MODES}, got {padding_mode!r}")
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}, got {activation!r}")
        kernel_size = _check_int("kernel_size", kernel_size, 1)
        dilation = _check_int("dilation", dilation, 1)
        if padding == "same":
            if kernel_size % 2 == 0:
                raise ValueError(f"padding='same' needs an odd kernel_size, got {kernel_size}; pass an int")
            padding = dilation * (kernel_size - 1) // 2
        elif isinstance(padding, str):
            raise ValueError(f"padding must be 'same' or an int, got {padding!r}")
        self.dims = dims
        self.padding = _check_int("padding", padding, 0)
        self.stride = _check_int("stride", stride, 1)
        self.kernel_size, self.dilation = kernel_size, dilation
        self.pool_size = _check_int("pool_size", pool_size, 1) if pool else 1
        self.global_pool = global_pool
        in_channels = _check_int("in_channels", in_channels, 1)
        self.channels = (in_channels, *(_check_int("channels", c, 1) for c in channels))

        blocks: list[nn.Module] = []
        for c_in, c_out in zip(self.channels[:-1], self.channels[1:]):
            blocks.append(
                CONV[dims](
                    c_in, c_out, kernel_size, stride, self.padding, dilation, padding_mode=padding_mode
                )
            )
            blocks.append(ACTIVATIONS[activation]())
            if pool and self.pool_size > 1:
                blocks.append(POOL[pool][dims](self.pool_size))
        self.blocks = nn.Sequential(*blocks)

        if global_pool is not None:
            head_in = self.channels[-1]
        elif input_size is None:
            raise ValueError("global_pool=None flattens the feature maps: pass input_size to size the head")
        else:
            head_in = math.prod(self.output_shape(input_size))
        self.head = MLP((head_in, *head, _check_int("num_classes", num_classes, 1)), activation, dropout)

    def layer_specs(self) -> list[tuple[int, int, int]]:
        """``(kernel_size, stride, dilation)`` of each convolution and pool, for :func:`receptive_field`."""
        conv = (self.kernel_size, self.stride, self.dilation)
        pool = [(self.pool_size, self.pool_size, 1)] if self.pool_size > 1 else []
        return [spec for _ in self.channels[1:] for spec in [conv, *pool]]

    @property
    def receptive_field(self) -> int:
        """Input positions (per dimension) one unit of the last feature maps sees."""
        return receptive_field(self.layer_specs())

    def output_shape(self, input_size: int | Sequence[int]) -> tuple[int, ...]:
        """Shape ``(C, *spatial)`` of :meth:`features` for one input of spatial size ``input_size``."""
        sizes = [input_size] * self.dims if isinstance(input_size, int) else list(input_size)
        if len(sizes) != self.dims:
            raise ValueError(f"input_size needs {self.dims} spatial sizes, got {input_size!r}")
        for _ in self.channels[1:]:
            sizes = [
                conv_output_size(h, self.kernel_size, self.stride, self.padding, self.dilation) for h in sizes
            ]
            if self.pool_size > 1:
                sizes = [conv_output_size(h, self.pool_size, self.pool_size) for h in sizes]
        return (self.channels[-1], *sizes)

    def reset_parameters(self) -> None:
        for module in self.blocks:
            if isinstance(module, (nn.Conv1d, nn.Conv2d)):
                module.reset_parameters()
        self.head.reset_parameters()

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """The last block's feature maps, before any global pool: ``(N, channels[-1], *spatial)``."""
        if x.dim() != self.dims + 2:
            raise ValueError(f"a {self.dims}-D CNN needs input (N, C, {'L' if self.dims == 1 else 'H, W'})")
        return self.blocks(x)

    def embedding(self, x: torch.Tensor) -> torch.Tensor:
        """The vector the head reads: :meth:`features` pooled over all positions (``global_pool``)
        or flattened, ``(N, D)``; with ``head=()`` these are the penultimate features."""
        h = self.features(x)  # (N, C, L) or (N, C, H, W)
        if self.global_pool == "avg":
            return h.flatten(2).mean(dim=2)  # (N, C, H*W) -> (N, C)
        if self.global_pool == "max":
            return h.flatten(2).amax(dim=2)  # (N, C, H*W) -> (N, C)
        return h.flatten(1)  # (N, C, H, W) -> (N, C*H*W)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.embedding(x))  # (N, num_classes)

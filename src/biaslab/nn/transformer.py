"""The Transformer encoder: attention and an MLP per token, in pre-norm residual blocks.

    h ← h + Attn(LN(h)),   h ← h + MLP(LN(h))          (the residual form h + F(Norm(h)), eq. 3.1)

Attention mixes information across positions by content (``biaslab.nn.attention``, eq. 6.4); the
MLP and the LayerNorms act on each token alone. Nothing in a block knows where a token sits, so
without a positional encoding (and without a causal mask) the encoder is permutation equivariant:
permuting the input tokens permutes the output tokens. Adding PE[pos] to each token breaks the
symmetry, which is what lets the model use order:

    PE[pos, 2i] = sin(pos / 10000^{2i/d}),   PE[pos, 2i+1] = cos(pos / 10000^{2i/d})   (Vaswani et al.)

:class:`TransformerEncoder` (from a :class:`TransformerConfig`: tokens or real values; pooling mean,
cls, last or none) stacks pre-norm :class:`EncoderBlock` s with sinusoidal or learned positions;
``attention_weights(x)`` gives every block's weights, (B, L, H, T, T), equal to
``torch.nn.MultiheadAttention``'s on the same parameters (tested).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import torch
from torch import nn

from biaslab.nn.attention import MultiHeadAttention

POSITIONAL = ("sinusoidal", "learned", None)
POOLING = ("mean", "cls", "last", None)


def _check_length(T: int, max_len: int, what: str = "sequence length") -> None:
    if T > max_len:
        raise ValueError(f"{what} {T} exceeds max_len={max_len}; build the model with max_len >= {T}")


def sinusoidal_embedding(positions: torch.Tensor, dim: int, base: float = 10000.0) -> torch.Tensor:
    """Vaswani et al.'s encoding of (integer or real) positions: sin(p / base^{2i/d}) in the even
    and cos(p / base^{2i/d}) in the odd features (odd widths drop the last cosine), in float64
    (float32 on Apple's MPS, which has no float64), on the positions' device.

    Shapes:
        positions (N,) -> (N, dim).
    """
    device = positions.device
    dtype = torch.float32 if device.type == "mps" else torch.float64
    inv_freq = torch.exp(torch.arange(0, dim, 2, dtype=dtype, device=device) * (-math.log(base) / dim))
    angles = positions.to(dtype)[:, None] * inv_freq  # (N, ceil(dim/2)): p / base^{2i/d}
    out = torch.zeros(len(positions), dim, dtype=dtype, device=device)
    out[:, 0::2] = torch.sin(angles)
    out[:, 1::2] = torch.cos(angles[:, : dim // 2])
    return out


class SinusoidalPositionalEncoding(nn.Module):
    """Adds the fixed Vaswani encoding PE[pos] to each token (no parameters).

    Args:
        dim: model width C (odd widths drop the last cosine).
        max_len: longest sequence accepted (default 512).

    Shapes:
        ``(B, T, C)`` -> ``(B, T, C)``, T ≤ max_len; ``.pe`` is the ``(max_len, C)`` table.
    """

    def __init__(self, dim: int, max_len: int = 512):
        super().__init__()
        if dim < 1 or max_len < 1:
            raise ValueError(f"dim and max_len must be positive, got {dim}, {max_len}")
        self.dim, self.max_len = dim, max_len
        pe = sinusoidal_embedding(torch.arange(max_len), dim)  # (max_len, C)
        self.register_buffer("pe", pe.to(torch.get_default_dtype()), persistent=False)

    def reset_parameters(self) -> None:
        """Nothing to reset: the table is fixed."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _check_length(x.size(-2), self.max_len)
        if x.size(-1) != self.dim:
            raise ValueError(f"expected {self.dim} features, got {x.size(-1)}")
        return x + self.pe[: x.size(-2)].to(x.dtype)  # (B, T, C) + (T, C)


class LearnedPositionalEncoding(nn.Module):
    """Adds a learned vector per position (GPT-2's ``wpe``), initialized N(0, 0.02²).

    Args:
        dim: model width C.
        max_len: longest sequence accepted (default 512).

    Shapes:
        ``(B, T, C)`` -> ``(B, T, C)``, T ≤ max_len.
    """

    def __init__(self, dim: int, max_len: int = 512):
        super().__init__()
        if dim < 1 or max_len < 1:
            raise ValueError(f"dim and max_len must be positive, got {dim}, {max_len}")
        self.dim, self.max_len = dim, max_len
        self.weight = nn.Parameter(torch.empty(max_len, dim))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        nn.init.normal_(self.weight, std=0.02)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _check_length(x.size(-2), self.max_len)
        if x.size(-1) != self.dim:
            raise ValueError(f"expected {self.dim} features, got {x.size(-1)}")
        return x + self.weight[: x.size(-2)]  # (B, T, C) + (T, C)


class EncoderBlock(nn.Module):
    """A pre-norm Transformer block: h ← h + Attn(LN(h)); h ← h + MLP(LN(h)) (eq. 3.1's form).

    The same computation as ``torch.nn.TransformerEncoderLayer(norm_first=True,
    activation="gelu", batch_first=True)`` (see :meth:`from_torch`).

    Args:
        dim: model width C.
        heads: attention heads; must divide ``dim``.
        mlp_ratio: hidden width of the MLP over ``dim`` (default 4.0).
        dropout: on the attention weights, inside the MLP and on both residual branches (default 0.0).
        causal: token t attends only to tokens ≤ t (default False).
        norm_eps: LayerNorm's ε (default 1e-5).

    Shapes:
        ``(B, T, C)`` -> ``(B, T, C)``; ``key_padding_mask`` ``(B, T)``, True = padding.
    """

    def __init__(
        self,
        dim: int,
        heads: int,
        mlp_ratio: float = 4.0,
        dropout: float = 0.0,
        causal: bool = False,
        norm_eps: float = 1e-5,
    ):
        super().__init__()
        hidden = round(mlp_ratio * dim)
        if hidden < 1:
            raise ValueError(f"mlp_ratio * dim must be at least 1, got {mlp_ratio} * {dim}")
        self.causal = causal
        self.ln1 = nn.LayerNorm(dim, eps=norm_eps)
        self.attn = MultiHeadAttention(dim, heads, dropout=dropout)
        self.drop1 = nn.Dropout(dropout)
        self.ln2 = nn.LayerNorm(dim, eps=norm_eps)
        self.mlp = nn.Sequential(
            nn.Linear(dim, hidden),
            nn.GELU(),
            nn.Dropout(dropout),
            nn.Linear(hidden, dim),
            nn.Dropout(dropout),
        )

    def reset_parameters(self) -> None:
        for module in (self.ln1, self.attn, self.ln2, self.mlp[0], self.mlp[3]):
            module.reset_parameters()

    @classmethod
    def from_torch(cls, layer: nn.TransformerEncoderLayer, causal: bool = False) -> EncoderBlock:
        """A copy of a ``TransformerEncoderLayer(norm_first=True, activation="gelu",
        batch_first=True)`` (same sizes, dropout, dtype, device and weights)."""
        if not layer.norm_first:
            raise ValueError("only pre-norm layers (norm_first=True) match an EncoderBlock")
        if getattr(layer, "activation_relu_or_gelu", 0) != 2:
            raise ValueError("only activation='gelu' matches an EncoderBlock")
        if not layer.self_attn.batch_first:
            raise ValueError("only batch_first=True layers match an EncoderBlock")
        dim = layer.self_attn.embed_dim
        weight = layer.linear1.weight
        block = cls(
            dim,
            layer.self_attn.num_heads,
            mlp_ratio=layer.linear1.out_features / dim,
            dropout=layer.dropout.p,
            causal=causal,
            norm_eps=layer.norm1.eps,
        ).to(device=weight.device, dtype=weight.dtype)
        with torch.no_grad():
            block.attn.copy_from_torch(layer.self_attn)
            for mine, theirs in (
                (block.ln1, layer.norm1),
                (block.ln2, layer.norm2),
                (block.mlp[0], layer.linear1),
                (block.mlp[3], layer.linear2),
            ):
                mine.weight.copy_(theirs.weight)
                mine.bias.copy_(theirs.bias)
        return block

    def forward(
        self, x: torch.Tensor, key_padding_mask: torch.Tensor | None = None, return_weights: bool = False
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        """The block's output, and with ``return_weights`` the attention weights ``(B, H, T, T)``."""
        a, weights = self.attn(
            self.ln1(x),
            key_padding_mask=key_padding_mask,
            need_weights=return_weights,
            average_attn_weights=False,
            causal=self.causal,
        )
        x = x + self.drop1(a)  # h ← h + Attn(LN(h))
        x = x + self.mlp(self.ln2(x))  # h ← h + MLP(LN(h))
        return (x, weights) if return_weights else x


@dataclass(frozen=True)
class TransformerConfig:
    """The sizes of a :class:`TransformerEncoder`.

    Exactly one of ``vocab_size`` (integer tokens ``(B, T)``, a token embedding) and ``input_dim``
    (real-valued sequences ``(B, T, input_dim)``, a Linear projection; ``(B, T)`` when
    ``input_dim=1``, e.g. MNIST-1D signals) is set. ``positional=None`` with ``causal=False`` and
    ``pool`` None / "mean" / "cls" leaves no trace of position: the encoder is permutation
    equivariant (pool None) or invariant (pooled).

    ``pool``: how a sequence becomes one vector before the head: "mean" over the non-padding
    tokens, "cls" (a learned token prepended; it counts against ``max_len``), "last" (the last
    non-padding token; the natural choice with ``causal``), or None (one output per token).
    """

    vocab_size: int | None = None
    input_dim: int | None = None
    dim: int = 64
    heads: int = 4
    layers: int = 2
    max_len: int = 512
    positional: Literal["sinusoidal", "learned"] | None = "sinusoidal"
    dropout: float = 0.0
    causal: bool = False
    num_classes: int | None = None
    pool: Literal["mean", "cls", "last"] | None = None
    mlp_ratio: float = 4.0

    def __post_init__(self) -> None:
        if (self.vocab_size is None) == (self.input_dim is None):
            raise ValueError("set exactly one of vocab_size (integer tokens) and input_dim (real values)")
        for key in ("vocab_size", "input_dim", "num_classes"):
            value = getattr(self, key)
            if value is not None and value < 1:
                raise ValueError(f"{key} must be positive, got {value}")
        for key in ("dim", "heads", "layers", "max_len"):
            if getattr(self, key) < 1:
                raise ValueError(f"{key} must be positive, got {getattr(self, key)}")
        if self.dim % self.heads:
            raise ValueError(f"heads={self.heads} must divide dim={self.dim}")
        if self.positional not in POSITIONAL:
            raise ValueError(f"positional must be one of {POSITIONAL}, got {self.positional!r}")
        if self.pool not in POOLING:
            raise ValueError(f"pool must be one of {POOLING}, got {self.pool!r}")
        if self.pool == "cls" and self.causal:
            raise ValueError("pool='cls' with causal=True: the first token sees nothing; use pool='last'")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must lie in [0, 1), got {self.dropout}")
        if self.mlp_ratio <= 0:
            raise ValueError(f"mlp_ratio must be positive, got {self.mlp_ratio}")


class TransformerEncoder(nn.Module):
    """Embedding, positional encoding, pre-norm blocks, final LayerNorm, optional pooled head.

    Args:
        config: a :class:`TransformerConfig`.

    Shapes:
        tokens ``(B, T)`` (integer) or values ``(B, T, input_dim)`` / ``(B, T)`` ->
        ``(B, T, C)`` (pool None, no head), ``(B, T, num_classes)`` (pool None, head),
        ``(B, C)`` or ``(B, num_classes)`` (pooled); ``key_padding_mask`` ``(B, T)``, True = padding.
    """

    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.config = c = config
        if c.vocab_size is not None:
            self.embed: nn.Module = nn.Embedding(c.vocab_size, c.dim)
        else:
            self.embed = nn.Linear(c.input_dim, c.dim)
        self.cls_token = nn.Parameter(torch.empty(1, 1, c.dim)) if c.pool == "cls" else None
        self.pos: nn.Module | None = None
        if c.positional == "sinusoidal":
            self.pos = SinusoidalPositionalEncoding(c.dim, c.max_len)
        elif c.positional == "learned":
            self.pos = LearnedPositionalEncoding(c.dim, c.max_len)
        self.drop = nn.Dropout(c.dropout)
        self.blocks = nn.ModuleList(
            EncoderBlock(c.dim, c.heads, c.mlp_ratio, c.dropout, c.causal) for _ in range(c.layers)
        )
        self.ln_f = nn.LayerNorm(c.dim)
        self.head = nn.Linear(c.dim, c.num_classes) if c.num_classes is not None else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Torch's default for each layer; learned positions and the CLS token N(0, 0.02²)."""
        for module in (self.embed, self.pos, *self.blocks, self.ln_f, self.head):
            if module is not None:
                module.reset_parameters()
        if self.cls_token is not None:
            nn.init.normal_(self.cls_token, std=0.02)

    def _embed(self, x: torch.Tensor) -> torch.Tensor:
        c = self.config
        if c.vocab_size is not None:
            if x.dim() != 2 or x.is_floating_point():
                raise ValueError(f"expected integer tokens (B, T), got {x.dtype} {tuple(x.shape)}")
            return self.embed(x)  # (B, T) -> (B, T, C)
        if x.dim() == 2 and c.input_dim == 1:
            x = x.unsqueeze(-1)  # (B, T) -> (B, T, 1)
        if x.dim() != 3 or x.size(-1) != c.input_dim:
            raise ValueError(f"expected values (B, T, {c.input_dim}), got shape {tuple(x.shape)}")
        return self.embed(x)  # (B, T, input_dim) -> (B, T, C)

    def forward(
        self, x: torch.Tensor, key_padding_mask: torch.Tensor | None = None, return_weights: bool = False
    ) -> torch.Tensor | tuple[torch.Tensor, list[torch.Tensor]]:
        """The encoding (or logits); with ``return_weights`` also each block's ``(B, H, T, T)``
        attention weights (T counts the CLS token, first, when ``pool="cls"``)."""
        c = self.config
        h = self._embed(x)  # (B, T, C)
        B, T, _ = h.shape
        if key_padding_mask is not None and (
            key_padding_mask.shape != (B, T) or key_padding_mask.dtype != torch.bool
        ):
            raise ValueError(
                f"key_padding_mask must be boolean (B, T) = {(B, T)}, True = padding; "
                f"got {key_padding_mask.dtype} {tuple(key_padding_mask.shape)}"
            )
        if self.cls_token is not None:
            _check_length(T + 1, c.max_len, "sequence length (with the CLS token)")
            h = torch.cat([self.cls_token.expand(B, 1, -1), h], dim=1)  # (B, 1 + T, C)
            if key_padding_mask is not None:
                key_padding_mask = torch.cat([key_padding_mask.new_zeros(B, 1), key_padding_mask], dim=1)
        else:
            _check_length(T, c.max_len)
        if self.pos is not None:
            h = self.pos(h)
        h = self.drop(h)
        all_weights = []
        for block in self.blocks:
            if return_weights:
                h, weights = block(h, key_padding_mask, return_weights=True)
                all_weights.append(weights)
            else:
                h = block(h, key_padding_mask)
        h = self.ln_f(h)  # (B, T', C)
        h = self._pool(h, key_padding_mask)
        out = self.head(h) if self.head is not None else h
        return (out, all_weights) if return_weights else out

    def attention_weights(
        self, x: torch.Tensor, key_padding_mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Every block's attention weights as one tensor (those :meth:`forward` returns with
        ``return_weights``, stacked), so ``train.recipes.predict(model, x, "attention_weights")``
        reads them in batches.

        Shapes:
            x as for :meth:`forward` -> ``(B, L, H, T, T)``: block l, head h, query t, key s (T
            counts the CLS token, first, when ``pool="cls"``); each row sums to 1.
        """
        _, weights = self(x, key_padding_mask, return_weights=True)
        return torch.stack(weights, dim=1)

    def _pool(self, h: torch.Tensor, key_padding_mask: torch.Tensor | None) -> torch.Tensor:
        pool = self.config.pool
        if pool is None:
            return h  # (B, T, C)
        if pool == "cls":
            return h[:, 0]  # (B, C)
        keep = None if key_padding_mask is None else ~key_padding_mask  # (B, T)
        if pool == "mean":
            if keep is None:
                return h.mean(dim=1)  # (B, C)
            weights = keep.to(h.dtype).unsqueeze(-1)  # (B, T, 1)
            return (h * weights).sum(1) / weights.sum(1).clamp(min=1.0)  # (B, C)
        if keep is None:
            return h[:, -1]  # (B, C)
        last = keep.long().cumsum(1).argmax(1)  # (B,): index of the last non-padding token
        return h[torch.arange(h.size(0), device=h.device), last]  # (B, C)

"""Attention: a learned, content-dependent relevance between positions.

    Attention(Q, K, V) = softmax(Q Kᵀ / √d_k + M) V                                  (eq. 6.4)

Each query scores every key by a dot product, the scores become weights by a softmax over the
keys, and the output is the weighted mean of the values. The additive mask M (0 where a query may
look, −∞ where it may not) encodes structure: causal (t sees ≤ t), a local window, padding.

Without positional information self-attention is *permutation equivariant*: permuting the input
rows permutes the output rows the same way. Which position a token came from is invisible; only
masks or positional encodings (``biaslab.nn.transformer``) can break the symmetry.

Mask conventions (one for the whole library):
    * a boolean attention mask is True where a query **may attend** to a key (as in
      ``torch.nn.functional.scaled_dot_product_attention``; the **opposite** of the boolean
      ``attn_mask`` of ``torch.nn.MultiheadAttention``, where True means "blocked"); a floating
      mask is added to the scores (it is M itself). The builders below return boolean masks.
    * a key padding mask is True where a key is **padding** (ignored), as in torch.
    * a query whose keys are all masked gets weights 0 and output 0, never NaN.

:class:`MultiHeadAttention` computes what ``torch.nn.MultiheadAttention`` does, given the same
weights (``from_torch``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn

from biaslab.checks import is_integer


def causal_mask(T: int, S: int | None = None, *, device: torch.device | str | None = None) -> torch.Tensor:
    """Boolean ``(T, S)`` mask, True where query i may attend to key j, i.e. j ≤ i (S defaults to T)."""
    return window_mask(T, None, causal=True, S=S, device=device)


def window_mask(
    T: int,
    window: int | None,
    causal: bool = False,
    *,
    S: int | None = None,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    """Boolean ``(T, S)`` mask, True where |i − j| ≤ ``window`` (and j ≤ i when ``causal``).

    ``window=None`` is an unlimited window (all True, or the causal mask). Query i and key j are
    aligned at the top left, as torch's ``is_causal`` does when T ≠ S.
    """
    S = T if S is None else S
    if T < 1 or S < 1:
        raise ValueError(f"mask sizes must be positive, got T={T}, S={S}")
    if window is not None and (not is_integer(window) or window < 0):
        raise ValueError(f"window must be a non-negative integer (|i - j| <= window), got {window!r}")
    i = torch.arange(T, device=device)[:, None]  # (T, 1)
    j = torch.arange(S, device=device)[None, :]  # (1, S)
    allowed = torch.ones(T, S, dtype=torch.bool, device=device)
    if window is not None:
        allowed &= (i - j).abs() <= window
    if causal:
        allowed &= j <= i
    return allowed


def padding_mask(
    lengths: Sequence[int] | torch.Tensor, S: int, *, device: torch.device | str | None = None
) -> torch.Tensor:
    """Boolean key padding mask ``(N, S)``: True at positions ≥ ``lengths[n]`` (the padding)."""
    lengths = torch.as_tensor(lengths, device=device)
    if lengths.dim() != 1 or lengths.is_floating_point() or lengths.dtype == torch.bool:
        raise ValueError(f"lengths must be a 1-D sequence of integers, got shape {tuple(lengths.shape)}")
    if len(lengths) and (lengths.min() < 0 or lengths.max() > S):
        raise ValueError(f"lengths must lie in 0..S={S}, got {lengths.tolist()}")
    return torch.arange(S, device=lengths.device)[None, :] >= lengths[:, None]  # (N, S)


def _check_mask(mask: torch.Tensor, name: str, shape: torch.Size) -> None:
    if mask.dtype != torch.bool and not mask.is_floating_point():
        raise ValueError(f"{name} must be boolean or floating (additive), got {mask.dtype}")
    try:
        ok = torch.broadcast_shapes(mask.shape, shape) == shape
    except RuntimeError:
        ok = False
    if not ok:
        raise ValueError(
            f"{name} of shape {tuple(mask.shape)} does not broadcast to the scores' shape {tuple(shape)}"
        )


def scaled_dot_product_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    causal: bool = False,
    window: int | None = None,
    key_padding_mask: torch.Tensor | None = None,
    dropout: float = 0.0,
    generator: torch.Generator | None = None,
    return_weights: bool = False,
    scale: float | None = None,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """softmax(Q Kᵀ / √d_k + M) V (eq. 6.4), written out; every mask folds into M.

    Args:
        q: queries ``(..., T, d_k)``.
        k: keys ``(..., S, d_k)``.
        v: values ``(..., S, d_v)``.
        mask: boolean (True = may attend) or additive float, broadcastable to ``(..., T, S)``
            (default None).
        causal: query i sees only keys j ≤ i (default False).
        window: query i sees only keys with |i − j| ≤ window; combines with ``causal`` (default None).
        key_padding_mask: ``(N, S)`` (N the leading batch dimension of q) or ``(S,)``; boolean
            True = padding, or additive float (default None).
        dropout: probability of zeroing an attention weight, the rest scaled by 1/(1 − p); the
            caller decides when (e.g. only in training) (default 0.0).
        generator: random generator for the dropout, on any device (default: torch's global one
            on q's device).
        return_weights: also return the attention weights (default False).
        scale: the factor on Q Kᵀ (default 1/√d_k).

    Returns:
        the output ``(..., T, d_v)``, and with ``return_weights`` the weights ``(..., T, S)``
        (before dropout; each row sums to 1, or is all 0 where every key is masked: such queries
        output 0).
    """
    if q.dim() < 2 or k.dim() < 2 or v.dim() < 2:
        raise ValueError("q, k and v need at least 2 dimensions (..., sequence, features)")
    if q.size(-1) != k.size(-1):
        raise ValueError(f"q and k must share the feature size d_k, got {q.size(-1)} and {k.size(-1)}")
    if k.size(-2) != v.size(-2):
        raise ValueError(f"k and v must have the same length S, got {k.size(-2)} and {v.size(-2)}")
    if not 0.0 <= dropout < 1.0:
        raise ValueError(f"dropout must lie in [0, 1), got {dropout}")
    T, S = q.size(-2), k.size(-2)
    scale = 1.0 / math.sqrt(q.size(-1)) if scale is None else scale
    scores = (q @ k.transpose(-2, -1)) * scale  # (..., T, d) @ (..., d, S) -> (..., T, S)
    masked = False
    if mask is not None:
        _check_mask(mask, "mask", scores.shape)
        if mask.dtype == torch.bool:
            scores = scores.masked_fill(~mask, -math.inf)
        else:
            scores = scores + mask
        masked = True
    if causal or window is not None:
        allowed = window_mask(T, window, causal=causal, S=S, device=scores.device)  # (T, S)
        scores = scores.masked_fill(~allowed, -math.inf)
        masked = True
    if key_padding_mask is not None:
        if key_padding_mask.dim() == 2 and scores.dim() >= 3:
            # (N, S) -> (N, 1, ..., 1, S): one row per batch element, shared by heads and queries
            key_padding_mask = key_padding_mask.view(
                key_padding_mask.size(0), *[1] * (scores.dim() - 2), key_padding_mask.size(1)
            )
        elif key_padding_mask.dim() != 1:
            raise ValueError(
                f"key_padding_mask must be (N, S) or (S,), got shape {tuple(key_padding_mask.shape)}"
            )
        _check_mask(key_padding_mask, "key_padding_mask", scores.shape)
        if key_padding_mask.dtype == torch.bool:
            scores = scores.masked_fill(key_padding_mask, -math.inf)
        else:
            scores = scores + key_padding_mask
        masked = True
    if masked:
        dead = torch.isneginf(scores).all(dim=-1, keepdim=True)  # (..., T, 1): no key left
        weights = torch.softmax(scores.masked_fill(dead, 0.0), dim=-1).masked_fill(dead, 0.0)
    else:
        weights = torch.softmax(scores, dim=-1)  # (..., T, S)
    attended = weights
    if dropout > 0.0:
        # Drawn where the generator lives (a CPU generator gives the same mask on every device).
        device = weights.device if generator is None else generator.device
        keep = torch.rand(weights.shape, generator=generator, device=device).to(weights.device) >= dropout
        attended = weights * keep / (1.0 - dropout)
    out = attended @ v  # (..., T, S) @ (..., S, d_v) -> (..., T, d_v)
    return (out, weights) if return_weights else out


class MultiHeadAttention(nn.Module):
    """Multi-head attention: h heads attend in parallel subspaces, their outputs concatenated.

        head_i = Attention(X W_Q^i, Y W_K^i, Y W_V^i),   MHA(X, Y) = [head_1, ..., head_h] W_O

    Y = X is self-attention, another sequence cross-attention. The same computation (and, through
    :meth:`from_torch`, the same weights) as ``torch.nn.MultiheadAttention``, except that a
    boolean ``attn_mask`` is True where attending is **allowed** (see the module docstring).

    Args:
        embed_dim: model width E (queries' features and output).
        num_heads: number of heads H; must divide E (each head has D = E / H features).
        bias: biases in the four projections (default True).
        dropout: dropout on the attention weights in training (default 0.0).
        kdim: features of the keys (default E).
        vdim: features of the values (default E).
        batch_first: inputs are ``(B, T, E)``; False: ``(T, B, E)`` (default True).

    Shapes:
        query ``(B, T, E)``, key ``(B, S, kdim)``, value ``(B, S, vdim)`` (or ``(T, E)``
        unbatched) -> output ``(B, T, E)`` and weights ``(B, T, S)`` (averaged over heads) or
        ``(B, H, T, S)`` (per head).
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        bias: bool = True,
        dropout: float = 0.0,
        kdim: int | None = None,
        vdim: int | None = None,
        batch_first: bool = True,
    ):
        super().__init__()
        if embed_dim < 1 or num_heads < 1:
            raise ValueError(f"embed_dim and num_heads must be positive, got {embed_dim}, {num_heads}")
        if embed_dim % num_heads:
            raise ValueError(f"num_heads={num_heads} must divide embed_dim={embed_dim}")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must lie in [0, 1), got {dropout}")
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.head_dim = embed_dim // num_heads
        self.kdim = embed_dim if kdim is None else kdim
        self.vdim = embed_dim if vdim is None else vdim
        self.dropout, self.batch_first = dropout, batch_first
        self.q_proj = nn.Linear(embed_dim, embed_dim, bias=bias)  # Q = X W_Q
        self.k_proj = nn.Linear(self.kdim, embed_dim, bias=bias)  # K = Y W_K
        self.v_proj = nn.Linear(self.vdim, embed_dim, bias=bias)  # V = Y W_V
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias)  # W_O
        self.reset_parameters()

    @property
    def _qkv_same_embed_dim(self) -> bool:
        return self.kdim == self.embed_dim and self.vdim == self.embed_dim

    def reset_parameters(self) -> None:
        """Torch's initialization: Xavier-uniform W_Q, W_K, W_V (one (3E, E) matrix when
        kdim = vdim = E, as torch stacks them), zero biases, W_O as a default ``Linear``."""
        projections = (self.q_proj, self.k_proj, self.v_proj)
        if self._qkv_same_embed_dim:
            bound = math.sqrt(6.0 / (self.embed_dim + 3 * self.embed_dim))  # fan_in E, fan_out 3E
            for proj in projections:
                nn.init.uniform_(proj.weight, -bound, bound)
        else:
            for proj in projections:
                nn.init.xavier_uniform_(proj.weight)
        self.out_proj.reset_parameters()
        for proj in (*projections, self.out_proj):
            if proj.bias is not None:
                nn.init.zeros_(proj.bias)

    @classmethod
    def from_torch(cls, mha: nn.MultiheadAttention) -> MultiHeadAttention:
        """A copy of ``mha`` (same sizes, dtype, device and weights)."""
        weight = mha.out_proj.weight
        model = cls(
            mha.embed_dim,
            mha.num_heads,
            bias=mha.in_proj_bias is not None,
            dropout=mha.dropout,
            kdim=mha.kdim,
            vdim=mha.vdim,
            batch_first=mha.batch_first,
        ).to(device=weight.device, dtype=weight.dtype)
        return model.copy_from_torch(mha)

    @torch.no_grad()
    def copy_from_torch(self, mha: nn.MultiheadAttention) -> MultiHeadAttention:
        """Copy the weights of ``torch.nn.MultiheadAttention`` into this module; returns self."""
        if mha.bias_k is not None or mha.add_zero_attn:
            raise ValueError("add_bias_kv and add_zero_attn have no counterpart here")
        sizes = (mha.embed_dim, mha.num_heads, mha.kdim, mha.vdim)
        if sizes != (self.embed_dim, self.num_heads, self.kdim, self.vdim):
            raise ValueError(
                f"sizes differ: torch has (embed_dim, num_heads, kdim, vdim) = {sizes}, this module "
                f"{(self.embed_dim, self.num_heads, self.kdim, self.vdim)}"
            )
        if (mha.in_proj_bias is None) != (self.q_proj.bias is None):
            raise ValueError("one module has biases and the other has not")
        if mha._qkv_same_embed_dim:
            weights = mha.in_proj_weight.chunk(3)  # (3E, E) -> 3 x (E, E)
        else:
            weights = (mha.q_proj_weight, mha.k_proj_weight, mha.v_proj_weight)
        biases = mha.in_proj_bias.chunk(3) if mha.in_proj_bias is not None else (None,) * 3
        for proj, w, b in zip((self.q_proj, self.k_proj, self.v_proj), weights, biases):
            proj.weight.copy_(w)
            if b is not None:
                proj.bias.copy_(b)
        self.out_proj.weight.copy_(mha.out_proj.weight)
        if self.out_proj.bias is not None:
            self.out_proj.bias.copy_(mha.out_proj.bias)
        return self

    def forward(
        self,
        query: torch.Tensor,
        key: torch.Tensor | None = None,
        value: torch.Tensor | None = None,
        key_padding_mask: torch.Tensor | None = None,
        need_weights: bool = True,
        attn_mask: torch.Tensor | None = None,
        average_attn_weights: bool = True,
        causal: bool = False,
        window: int | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Attend from ``query`` to ``key``/``value`` (both default to ``query``: self-attention).

        ``attn_mask`` is ``(T, S)``, ``(B·H, T, S)`` (torch's layout) or broadcastable to
        ``(B, H, T, S)``; boolean True = may attend, or additive. ``key_padding_mask`` is ``(B, S)``,
        True = padding. ``causal`` and ``window`` add the masks of :func:`window_mask`.
        Returns ``(output, weights)``, weights None unless ``need_weights``.
        """
        key = query if key is None else key
        value = key if value is None else value
        unbatched = query.dim() == 2
        if unbatched:
            query, key, value = query[None], key[None], value[None]  # (1, T, E)
            if key_padding_mask is not None and key_padding_mask.dim() == 1:
                key_padding_mask = key_padding_mask[None]  # (1, S)
        elif query.dim() != 3 or key.dim() != 3 or value.dim() != 3:
            raise ValueError("query, key and value must all be (B, T, E) or all (T, E)")
        elif not self.batch_first:
            query, key, value = (x.transpose(0, 1) for x in (query, key, value))  # (T, B, E) -> (B, T, E)
        for name, x, size in (("query", query, self.embed_dim), ("key", key, self.kdim)):
            if x.size(-1) != size:
                raise ValueError(f"{name} must have {size} features, got {x.size(-1)}")
        if value.size(-1) != self.vdim:
            raise ValueError(f"value must have {self.vdim} features, got {value.size(-1)}")
        (B, T, _), S = query.shape, key.size(1)
        if key.shape[:2] != value.shape[:2] or key.size(0) != B:
            raise ValueError(
                f"batch and length disagree: query {tuple(query.shape)}, key {tuple(key.shape)}, "
                f"value {tuple(value.shape)}"
            )
        H, D = self.num_heads, self.head_dim
        q = self.q_proj(query).view(B, T, H, D).transpose(1, 2)  # (B, H, T, D)
        k = self.k_proj(key).view(B, S, H, D).transpose(1, 2)  # (B, H, S, D)
        v = self.v_proj(value).view(B, S, H, D).transpose(1, 2)  # (B, H, S, D)
        if attn_mask is not None and attn_mask.dim() == 3:
            if attn_mask.size(0) != B * H:
                raise ValueError(
                    f"a 3-D attn_mask must be (B·H, T, S) = ({B * H}, {T}, {S}), got {tuple(attn_mask.shape)}"
                )
            attn_mask = attn_mask.view(B, H, *attn_mask.shape[1:])  # (B·H, T, S) -> (B, H, T, S)
        out, weights = scaled_dot_product_attention(
            q,
            k,
            v,
            mask=attn_mask,
            causal=causal,
            window=window,
            key_padding_mask=key_padding_mask,
            dropout=self.dropout if self.training else 0.0,
            return_weights=True,
        )  # (B, H, T, D), (B, H, T, S)
        out = self.out_proj(out.transpose(1, 2).reshape(B, T, H * D))  # (B, T, H·D): heads concatenated
        if not need_weights:
            weights = None
        elif average_attn_weights:
            weights = weights.mean(dim=1)  # (B, T, S)
        if unbatched:
            out = out[0]  # (T, E)
            weights = None if weights is None else weights[0]
        elif not self.batch_first:
            out = out.transpose(0, 1)  # (B, T, E) -> (T, B, E)
        return out, weights

"""Attention from scratch against torch's: SDPA, the mask builders, multi-head attention."""

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from biaslab.nn.attention import (
    MultiHeadAttention,
    causal_mask,
    padding_mask,
    scaled_dot_product_attention,
    window_mask,
)

SHAPES = [  # (q shape, k shape, v feature size)
    ((2, 5, 8), (2, 5, 8), 8),  # self-attention sizes
    ((2, 3, 6, 4), (2, 3, 6, 4), 4),  # multi-head (B, H, T, d)
    ((2, 3, 4, 4), (2, 3, 7, 4), 5),  # T < S, d_v ≠ d_k
    ((3, 7, 6), (3, 4, 6), 2),  # T > S
]


def _qkv(q_shape, k_shape, dv, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(q_shape, generator=g, dtype=dtype)
    k = torch.randn(k_shape, generator=g, dtype=dtype)
    v = torch.randn((*k_shape[:-1], dv), generator=g, dtype=dtype)
    return q, k, v


def _permutation_error(f, x, seed=0):
    """max |f(x[:, π]) − f(x)[:, π]| for a random permutation π of the sequence axis."""
    perm = torch.randperm(x.size(1), generator=torch.Generator().manual_seed(seed))
    return (f(x[:, perm]) - f(x)[:, perm]).abs().max().item()


@pytest.mark.parametrize(("q_shape", "k_shape", "dv"), SHAPES)
def test_sdpa_equals_torch_without_mask_and_with_causal(q_shape, k_shape, dv):
    q, k, v = _qkv(q_shape, k_shape, dv)
    torch.testing.assert_close(
        scaled_dot_product_attention(q, k, v), F.scaled_dot_product_attention(q, k, v), atol=1e-6, rtol=0
    )
    torch.testing.assert_close(
        scaled_dot_product_attention(q, k, v, causal=True),
        F.scaled_dot_product_attention(q, k, v, is_causal=True),
        atol=1e-6,
        rtol=0,
    )


@pytest.mark.parametrize(("q_shape", "k_shape", "dv"), SHAPES)
def test_sdpa_equals_torch_with_boolean_and_additive_masks(q_shape, k_shape, dv):
    q, k, v = _qkv(q_shape, k_shape, dv, seed=1)
    T, S = q_shape[-2], k_shape[-2]
    window = window_mask(T, 1, S=S)  # boolean, True = may attend
    torch.testing.assert_close(
        scaled_dot_product_attention(q, k, v, mask=window),
        F.scaled_dot_product_attention(q, k, v, attn_mask=window),
        atol=1e-6,
        rtol=0,
    )
    # the window argument is the same mask
    torch.testing.assert_close(
        scaled_dot_product_attention(q, k, v, window=1),
        scaled_dot_product_attention(q, k, v, mask=window),
        atol=0,
        rtol=0,
    )
    additive = torch.randn(T, S, dtype=q.dtype, generator=torch.Generator().manual_seed(2))
    additive[:, -1] = -math.inf  # never the whole row
    torch.testing.assert_close(
        scaled_dot_product_attention(q, k, v, mask=additive),
        F.scaled_dot_product_attention(q, k, v, attn_mask=additive),
        atol=1e-6,
        rtol=0,
    )


def test_window_combines_with_causal_and_key_padding_is_a_mask_on_keys():
    q, k, v = _qkv((2, 6, 4), (2, 6, 4), 3)
    both = window_mask(6, 2, causal=True)
    assert torch.equal(both, causal_mask(6) & window_mask(6, 2))
    torch.testing.assert_close(
        scaled_dot_product_attention(q, k, v, causal=True, window=2),
        F.scaled_dot_product_attention(q, k, v, attn_mask=both),
        atol=1e-6,
        rtol=0,
    )
    pad = padding_mask([6, 4], 6)  # (2, 6), True = padding
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=~pad[:, None, :])  # (2, 1, S)
    torch.testing.assert_close(
        scaled_dot_product_attention(q, k, v, key_padding_mask=pad), expected, atol=1e-6, rtol=0
    )
    additive_pad = torch.zeros(2, 6, dtype=q.dtype).masked_fill(pad, -math.inf)
    torch.testing.assert_close(
        scaled_dot_product_attention(q, k, v, key_padding_mask=additive_pad), expected, atol=1e-6, rtol=0
    )


def test_weights_rows_sum_to_one_and_respect_the_masks():
    q, k, v = _qkv((2, 3, 5, 4), (2, 3, 7, 4), 4)
    out, w = scaled_dot_product_attention(q, k, v, causal=True, return_weights=True)
    assert w.shape == (2, 3, 5, 7) and out.shape == (2, 3, 5, 4)
    torch.testing.assert_close(w.sum(-1), torch.ones(2, 3, 5, dtype=w.dtype))
    assert (w[..., ~causal_mask(5, 7)] == 0).all()
    torch.testing.assert_close(out, w @ v)


def test_fully_masked_rows_give_zeros_not_nan_and_finite_gradients():
    q, k, v = (t.requires_grad_() for t in _qkv((2, 4, 3), (2, 4, 3), 3))
    mask = torch.ones(4, 4, dtype=torch.bool)
    mask[1] = False  # query 1 may attend to nothing
    pad = torch.tensor([[False] * 4, [True] * 4])  # the second sequence is all padding
    out, w = scaled_dot_product_attention(q, k, v, mask=mask, key_padding_mask=pad, return_weights=True)
    assert torch.isfinite(out).all() and torch.isfinite(w).all()
    assert (out[:, 1] == 0).all() and (w[:, 1] == 0).all() and (out[1] == 0).all()
    torch.testing.assert_close(w[0, [0, 2, 3]].sum(-1), torch.ones(3, dtype=w.dtype))
    out.sum().backward()
    assert all(torch.isfinite(t.grad).all() for t in (q, k, v))
    # an additive mask of −∞ everywhere, and a left-padded causal row, behave the same
    out = scaled_dot_product_attention(q, k, v, mask=torch.full((4, 4), -math.inf, dtype=q.dtype))
    assert (out == 0).all()
    left_pad = torch.tensor([[True, False, False, False]] * 2)
    out = scaled_dot_product_attention(q, k, v, causal=True, key_padding_mask=left_pad)
    assert (out[:, 0] == 0).all() and torch.isfinite(out).all()


def test_dropout_uses_the_generator_and_keeps_the_expectation():
    q, k, v = _qkv((1, 3, 4), (1, 3, 4), 4)
    a = scaled_dot_product_attention(q, k, v, dropout=0.5, generator=torch.Generator().manual_seed(7))
    b = scaled_dot_product_attention(q, k, v, dropout=0.5, generator=torch.Generator().manual_seed(7))
    assert torch.equal(a, b) and not torch.allclose(a, scaled_dot_product_attention(q, k, v))
    _, w = scaled_dot_product_attention(q, k, v, dropout=0.5, return_weights=True)
    torch.testing.assert_close(w.sum(-1), torch.ones(1, 3, dtype=w.dtype))  # weights before dropout


def test_mask_builders():
    assert torch.equal(causal_mask(4), torch.ones(4, 4, dtype=torch.bool).tril())
    assert torch.equal(causal_mask(2, 3), torch.tensor([[True, False, False], [True, True, False]]))
    i, j = torch.arange(5)[:, None], torch.arange(5)[None, :]
    assert torch.equal(window_mask(5, 1), (i - j).abs() <= 1)
    assert window_mask(3, None).all()
    assert torch.equal(
        padding_mask(torch.tensor([3, 1, 0]), 3), torch.tensor([[0, 0, 0], [0, 1, 1], [1, 1, 1]]).bool()
    )


def _torch_pair(embed_dim=8, num_heads=2, dtype=torch.float64, seed=0, **kwargs):
    torch.manual_seed(seed)
    ref = nn.MultiheadAttention(embed_dim, num_heads, batch_first=True, dtype=dtype, **kwargs)
    with torch.no_grad():  # non-zero biases, so that copying them is tested too
        for name, p in ref.named_parameters():
            if "bias" in name:
                p.normal_()
    return ref, MultiHeadAttention.from_torch(ref)


@pytest.mark.parametrize(("dtype", "tol"), [(torch.float64, 1e-6), (torch.float32, 1e-5)])
def test_mha_equals_torch_self_attention_outputs_weights_and_gradients(dtype, tol):
    ref, mine = _torch_pair(dtype=dtype)
    x = torch.randn(3, 5, 8, dtype=dtype, generator=torch.Generator().manual_seed(1))
    pad = padding_mask([5, 3, 4], 5)
    for kwargs in ({}, {"key_padding_mask": pad}):
        out_ref, w_ref = ref(x, x, x, **kwargs)
        out, w = mine(x, **kwargs)
        torch.testing.assert_close(out, out_ref, atol=tol, rtol=0)
        torch.testing.assert_close(w, w_ref, atol=tol, rtol=0)
        _, w_ref = ref(x, x, x, average_attn_weights=False, **kwargs)
        _, w = mine(x, average_attn_weights=False, **kwargs)
        assert w.shape == (3, 2, 5, 5)
        torch.testing.assert_close(w, w_ref, atol=tol, rtol=0)
    ref(x, x, x, key_padding_mask=pad)[0].square().sum().backward()
    mine(x, key_padding_mask=pad)[0].square().sum().backward()
    q_ref, k_ref, v_ref = ref.in_proj_weight.grad.chunk(3)
    for got, want in (
        (mine.q_proj.weight.grad, q_ref),
        (mine.k_proj.weight.grad, k_ref),
        (mine.v_proj.weight.grad, v_ref),
        (
            torch.cat([mine.q_proj.bias.grad, mine.k_proj.bias.grad, mine.v_proj.bias.grad]),
            ref.in_proj_bias.grad,
        ),
        (mine.out_proj.weight.grad, ref.out_proj.weight.grad),
        (mine.out_proj.bias.grad, ref.out_proj.bias.grad),
    ):
        torch.testing.assert_close(got, want, atol=10 * tol, rtol=0)


def test_mha_equals_torch_cross_attention_with_kdim_vdim_and_masks():
    ref, mine = _torch_pair(embed_dim=6, num_heads=3, kdim=4, vdim=5)
    assert not ref._qkv_same_embed_dim
    g = torch.Generator().manual_seed(2)
    query = torch.randn(2, 3, 6, generator=g, dtype=torch.float64, requires_grad=True)
    key = torch.randn(2, 7, 4, generator=g, dtype=torch.float64)
    value = torch.randn(2, 7, 5, generator=g, dtype=torch.float64)
    pad = padding_mask([7, 5], 7)
    blocked = ~window_mask(3, 2, S=7)  # torch's boolean attn_mask is True where blocked
    additive = torch.randn(2 * 3, 3, 7, generator=g, dtype=torch.float64)  # (B·H, T, S)
    cases = [
        ({}, {}),
        ({"key_padding_mask": pad}, {"key_padding_mask": pad}),
        ({"attn_mask": blocked, "key_padding_mask": pad}, {"attn_mask": ~blocked, "key_padding_mask": pad}),
        ({"attn_mask": additive}, {"attn_mask": additive}),
    ]
    for torch_kwargs, my_kwargs in cases:
        out_ref, w_ref = ref(query, key, value, **torch_kwargs)
        out, w = mine(query, key, value, **my_kwargs)
        torch.testing.assert_close(out, out_ref, atol=1e-6, rtol=0)
        torch.testing.assert_close(w, w_ref, atol=1e-6, rtol=0)
    (grad_ref,) = torch.autograd.grad(ref(query, key, value, key_padding_mask=pad)[0].sum(), query)
    (grad,) = torch.autograd.grad(mine(query, key, value, key_padding_mask=pad)[0].sum(), query)
    torch.testing.assert_close(grad, grad_ref, atol=1e-6, rtol=0)
    for name in ("q", "k", "v"):
        torch.testing.assert_close(getattr(mine, f"{name}_proj").weight, getattr(ref, f"{name}_proj_weight"))


def test_mha_causal_flag_equals_torch_with_a_causal_mask_and_layouts_agree():
    ref, mine = _torch_pair()
    x = torch.randn(2, 6, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    causal = nn.Transformer.generate_square_subsequent_mask(6, dtype=torch.float64)
    out_ref, w_ref = ref(x, x, x, attn_mask=causal, is_causal=True)
    out, w = mine(x, causal=True)
    torch.testing.assert_close(out, out_ref, atol=1e-6, rtol=0)
    torch.testing.assert_close(w, w_ref, atol=1e-6, rtol=0)
    # sequence-first and unbatched inputs give the same numbers
    seq_first = MultiHeadAttention.from_torch(ref)
    seq_first.batch_first = False
    torch.testing.assert_close(seq_first(x.transpose(0, 1))[0].transpose(0, 1), mine(x)[0])
    out_one, w_one = mine(x[1])
    torch.testing.assert_close(out_one, mine(x)[0][1])
    assert w_one.shape == (6, 6)
    assert mine(x, need_weights=False)[1] is None


def test_reset_parameters_follows_torch():
    mine = MultiHeadAttention(16, 4)
    bound = math.sqrt(6 / (16 + 48))  # Xavier on the stacked (3E, E) matrix
    for proj in (mine.q_proj, mine.k_proj, mine.v_proj):
        assert proj.weight.abs().max() <= bound and proj.weight.abs().max() > 0.8 * bound
        assert (proj.bias == 0).all()
    assert (mine.out_proj.bias == 0).all()
    cross = MultiHeadAttention(16, 4, kdim=8)
    assert cross.k_proj.weight.abs().max() <= math.sqrt(6 / (8 + 16))


def test_self_attention_is_permutation_equivariant_and_a_causal_mask_breaks_it():
    _, mine = _torch_pair(dtype=torch.float32)
    x = torch.randn(2, 9, 8, generator=torch.Generator().manual_seed(4))
    assert _permutation_error(lambda t: mine(t)[0], x) <= 1e-5
    assert _permutation_error(lambda t: mine(t, causal=True)[0], x) > 1e-2


def test_bad_arguments_raise_clear_errors():
    q, k, v = _qkv((2, 4, 3), (2, 5, 3), 3)
    with pytest.raises(ValueError, match="share the feature size"):
        scaled_dot_product_attention(q, k[..., :2], v)
    with pytest.raises(ValueError, match="same length S"):
        scaled_dot_product_attention(q, k, v[:, :4])
    with pytest.raises(ValueError, match="does not broadcast"):
        scaled_dot_product_attention(q, k, v, mask=torch.ones(4, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match="boolean or floating"):
        scaled_dot_product_attention(q, k, v, mask=torch.ones(4, 5, dtype=torch.long))
    with pytest.raises(ValueError, match="window must be"):
        scaled_dot_product_attention(q, k, v, window=-1)
    with pytest.raises(ValueError, match="dropout"):
        scaled_dot_product_attention(q, k, v, dropout=1.0)
    with pytest.raises(ValueError, match="key_padding_mask"):
        scaled_dot_product_attention(q, k, v, key_padding_mask=torch.zeros(3, 5, dtype=torch.bool))
    with pytest.raises(ValueError, match="lengths must lie"):
        padding_mask([2, 6], 5)
    with pytest.raises(ValueError, match="must divide"):
        MultiHeadAttention(10, 3)
    mha = MultiHeadAttention(8, 2)
    with pytest.raises(ValueError, match="query must have 8 features"):
        mha(torch.randn(2, 3, 6))
    with pytest.raises(ValueError, match=r"\(B·H, T, S\)"):
        mha(torch.randn(2, 3, 8), attn_mask=torch.zeros(3, 3, 3))
    with pytest.raises(ValueError, match="add_bias_kv"):
        MultiHeadAttention.from_torch(nn.MultiheadAttention(8, 2, add_bias_kv=True))
    with pytest.raises(ValueError, match="sizes differ"):
        mha.copy_from_torch(nn.MultiheadAttention(8, 4))

"""Positional encodings, the pre-norm block against torch's, and the encoder's symmetry."""

import math

import pytest
import torch
from torch import nn

from biaslab.nn.attention import padding_mask
from biaslab.nn.transformer import (
    EncoderBlock,
    LearnedPositionalEncoding,
    SinusoidalPositionalEncoding,
    TransformerConfig,
    TransformerEncoder,
)


def _permutation_error(f, x, seed=0, permute_output=True):
    """max |f(x[:, π]) − f(x)[:, π]| (or − f(x) when the output is pooled) for a random π."""
    perm = torch.randperm(x.size(1), generator=torch.Generator().manual_seed(seed))
    want = f(x)[:, perm] if permute_output else f(x)
    return (f(x[:, perm]) - want).abs().max().item()


def _encoder(seed=0, **kwargs):
    torch.manual_seed(seed)
    return TransformerEncoder(TransformerConfig(**kwargs)).eval()


def test_sinusoidal_encoding_matches_the_formula():
    d = 6
    pe = SinusoidalPositionalEncoding(d, max_len=50)
    for pos in (0, 1, 7, 49):
        for i in range(d // 2):
            angle = pos / 10000 ** (2 * i / d)
            assert pe.pe[pos, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-6)
            assert pe.pe[pos, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-6)
    x = torch.randn(2, 10, d)
    torch.testing.assert_close(pe(x) - x, pe.pe[:10].expand(2, 10, d))
    odd = SinusoidalPositionalEncoding(5, max_len=8)
    assert odd.pe[3, 4].item() == pytest.approx(math.sin(3 / 10000 ** (4 / 5)), abs=1e-6)
    assert list(pe.parameters()) == [] and "pe" not in pe.state_dict()


def test_learned_encoding_adds_one_vector_per_position():
    pe = LearnedPositionalEncoding(4, max_len=6)
    x = torch.zeros(3, 5, 4)
    torch.testing.assert_close(pe(x), pe.weight[:5].expand(3, 5, 4))
    assert 0 < pe.weight.std() < 0.1


@pytest.mark.parametrize("cls", [SinusoidalPositionalEncoding, LearnedPositionalEncoding])
def test_sequences_longer_than_max_len_are_refused(cls):
    pe = cls(4, max_len=6)
    pe(torch.zeros(1, 6, 4))
    with pytest.raises(ValueError, match="sequence length 7 exceeds max_len=6"):
        pe(torch.zeros(1, 7, 4))
    with pytest.raises(ValueError, match="expected 4 features"):
        pe(torch.zeros(1, 3, 5))


@pytest.mark.parametrize(("dtype", "tol"), [(torch.float32, 1e-5), (torch.float64, 1e-6)])
def test_encoder_block_equals_torch_pre_norm_layer(dtype, tol):
    torch.manual_seed(0)
    ref = nn.TransformerEncoderLayer(
        16,
        4,
        dim_feedforward=64,
        dropout=0.0,
        activation="gelu",
        batch_first=True,
        norm_first=True,
        dtype=dtype,
    )
    with torch.no_grad():  # LayerNorms away from their identity initialization
        for norm in (ref.norm1, ref.norm2):
            norm.weight.normal_()
            norm.bias.normal_()
    block = EncoderBlock.from_torch(ref)
    assert block.mlp[0].out_features == 64
    x = torch.randn(3, 7, 16, dtype=dtype, generator=torch.Generator().manual_seed(1), requires_grad=True)
    pad = padding_mask([7, 5, 6], 7)
    torch.testing.assert_close(block(x), ref(x), atol=tol, rtol=0)
    torch.testing.assert_close(block(x, pad), ref(x, src_key_padding_mask=pad), atol=tol, rtol=0)
    causal_ref = nn.Transformer.generate_square_subsequent_mask(7, dtype=dtype)
    causal_block = EncoderBlock.from_torch(ref, causal=True)
    want = ref(x, src_mask=causal_ref, is_causal=True)
    torch.testing.assert_close(causal_block(x), want, atol=tol, rtol=0)
    (grad_ref,) = torch.autograd.grad(want.square().sum(), x)
    (grad,) = torch.autograd.grad(causal_block(x).square().sum(), x)
    torch.testing.assert_close(grad, grad_ref, atol=10 * tol, rtol=0)


def test_from_torch_refuses_layers_that_compute_something_else():
    with pytest.raises(ValueError, match="norm_first"):
        EncoderBlock.from_torch(nn.TransformerEncoderLayer(8, 2, activation="gelu", batch_first=True))
    with pytest.raises(ValueError, match="gelu"):
        EncoderBlock.from_torch(nn.TransformerEncoderLayer(8, 2, batch_first=True, norm_first=True))


def test_encoder_shapes_for_tokens_signals_and_pooling():
    tokens = torch.randint(0, 11, (3, 9))
    assert _encoder(vocab_size=11, dim=16, heads=2)(tokens).shape == (3, 9, 16)
    lm = _encoder(vocab_size=11, dim=16, heads=2, causal=True, num_classes=11)
    assert lm(tokens).shape == (3, 9, 11)  # next-token logits
    signals = torch.randn(4, 40)  # MNIST-1D: (N, 40) -> (N, 40, 1)
    for pool in ("mean", "cls", "last"):
        model = _encoder(input_dim=1, dim=16, heads=2, num_classes=10, pool=pool, positional="learned")
        assert model(signals).shape == (4, 10)
    out, weights = _encoder(input_dim=3, dim=16, heads=4, layers=3, pool="cls")(
        torch.randn(2, 5, 3), return_weights=True
    )
    assert out.shape == (2, 16) and len(weights) == 3 and weights[0].shape == (2, 4, 6, 6)
    torch.testing.assert_close(weights[2].sum(-1), torch.ones(2, 4, 6))


def _torch_attention(mha) -> nn.MultiheadAttention:
    """A ``torch.nn.MultiheadAttention`` holding the parameters of one of our attention modules."""
    ref = nn.MultiheadAttention(mha.embed_dim, mha.num_heads, batch_first=True, dtype=mha.q_proj.weight.dtype)
    with torch.no_grad():
        ref.in_proj_weight.copy_(torch.cat([mha.q_proj.weight, mha.k_proj.weight, mha.v_proj.weight]))
        ref.in_proj_bias.copy_(torch.cat([mha.q_proj.bias, mha.k_proj.bias, mha.v_proj.bias]))
        ref.out_proj.weight.copy_(mha.out_proj.weight)
        ref.out_proj.bias.copy_(mha.out_proj.bias)
    return ref


@pytest.mark.parametrize("positional", [None, "sinusoidal"])
def test_attention_weights_equal_torch_multihead_attention_on_the_same_parameters(positional):
    from biaslab.train.recipes import predict

    model = _encoder(
        vocab_size=13, dim=16, heads=4, layers=2, positional=positional, num_classes=5, pool="last"
    )
    with torch.no_grad():  # biases and norms away from their initialisation, so every term counts
        for name, p in model.named_parameters():
            if "bias" in name or "ln" in name:
                p.normal_(std=0.5)
    tokens = torch.randint(0, 13, (6, 7), generator=torch.Generator().manual_seed(3))
    weights = model.attention_weights(tokens)
    assert weights.shape == (6, 2, 4, 7, 7)
    torch.testing.assert_close(weights.sum(-1), torch.ones(6, 2, 4, 7))
    with torch.no_grad():
        h = model.embed(tokens) if model.pos is None else model.pos(model.embed(tokens))  # (B, T, C)
        for layer, block in enumerate(model.blocks):  # torch's weights on each block's normed input
            x = block.ln1(h)
            _, want = _torch_attention(block.attn)(x, x, x, average_attn_weights=False)  # (B, H, T, T)
            torch.testing.assert_close(weights[:, layer], want, atol=1e-6, rtol=0)
            h = block(h)
    torch.testing.assert_close(predict(model, tokens, "attention_weights", batch_size=4), weights)
    _, listed = model(tokens, return_weights=True)
    torch.testing.assert_close(torch.stack(listed, 1), weights)


def test_without_positions_the_encoder_is_permutation_equivariant():
    x = torch.randn(2, 12, 3, generator=torch.Generator().manual_seed(0))
    tokens = torch.randint(0, 20, (2, 12), generator=torch.Generator().manual_seed(1))
    equivariant = _encoder(input_dim=3, dim=16, heads=4, positional=None, num_classes=5)
    assert _permutation_error(equivariant, x) <= 1e-5
    assert _permutation_error(_encoder(vocab_size=20, dim=16, heads=4, positional=None), tokens) <= 1e-5
    for pool in ("mean", "cls"):  # pooled: invariant
        invariant = _encoder(input_dim=3, dim=16, heads=4, positional=None, pool=pool)
        assert _permutation_error(invariant, x, permute_output=False) <= 1e-5


@pytest.mark.parametrize(
    "kwargs", [{"positional": "sinusoidal"}, {"positional": "learned"}, {"positional": None, "causal": True}]
)
def test_positions_or_a_causal_mask_break_the_symmetry(kwargs):
    model = _encoder(input_dim=3, dim=16, heads=4, **kwargs)
    if kwargs["positional"] == "learned":
        with torch.no_grad():
            model.pos.weight.normal_()  # as a trained model's would be, not 0.02-small
    x = torch.randn(2, 12, 3, generator=torch.Generator().manual_seed(0))
    assert _permutation_error(model, x) > 0.1


@pytest.mark.parametrize("pool", ["mean", "last", "cls"])
def test_padding_does_not_change_the_pooled_output(pool):
    model = _encoder(input_dim=2, dim=16, heads=2, pool=pool, num_classes=3, causal=pool == "last")
    short = torch.randn(1, 5, 2)
    padded = torch.cat([short, 100 * torch.randn(1, 3, 2)], dim=1)  # 3 positions of garbage
    out = model(padded, key_padding_mask=padding_mask([5], 8))
    torch.testing.assert_close(out, model(short), atol=1e-5, rtol=0)


def test_reset_parameters_reinitializes_and_gradients_reach_every_parameter():
    model = _encoder(vocab_size=7, dim=8, heads=2, positional="learned", pool="cls", num_classes=2).train()
    model(torch.randint(0, 7, (2, 4))).sum().backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in model.parameters())
    before = [p.detach().clone() for p in model.parameters()]
    torch.manual_seed(123)
    model.reset_parameters()
    changed = [not torch.equal(a, p) for a, p in zip(before, model.parameters())]
    assert sum(changed) > len(changed) // 2  # LayerNorms and zero biases come back the same


def test_bad_configs_and_inputs_raise_clear_errors():
    with pytest.raises(ValueError, match="exactly one of vocab_size"):
        TransformerConfig()
    with pytest.raises(ValueError, match="exactly one of vocab_size"):
        TransformerConfig(vocab_size=5, input_dim=2)
    with pytest.raises(ValueError, match="must divide dim"):
        TransformerConfig(input_dim=1, dim=10, heads=4)
    with pytest.raises(ValueError, match="positional must be"):
        TransformerConfig(input_dim=1, positional="rotary")
    with pytest.raises(ValueError, match="pool must be"):
        TransformerConfig(input_dim=1, pool="max")
    with pytest.raises(ValueError, match="use pool='last'"):
        TransformerConfig(input_dim=1, pool="cls", causal=True)
    with pytest.raises(ValueError, match="dropout"):
        TransformerConfig(input_dim=1, dropout=1.5)
    with pytest.raises(ValueError, match="layers must be positive"):
        TransformerConfig(input_dim=1, layers=0)
    model = _encoder(input_dim=2, dim=8, heads=2, max_len=6, pool="cls")
    with pytest.raises(ValueError, match=r"\(with the CLS token\) 7 exceeds max_len=6"):
        model(torch.randn(1, 6, 2))
    with pytest.raises(ValueError, match=r"expected values \(B, T, 2\)"):
        model(torch.randn(1, 4, 3))
    with pytest.raises(ValueError, match="key_padding_mask must be boolean"):
        model(torch.randn(1, 4, 2), key_padding_mask=torch.zeros(1, 4))
    with pytest.raises(ValueError, match="integer tokens"):
        _encoder(vocab_size=5, dim=8, heads=2)(torch.randn(1, 4))

"""Tests for biaslab.generative.denoisers: shapes, the time input, and the residual block's formula."""

import pytest
import torch
from torch import nn

from biaslab.generative.denoisers import AttentionBlock, MLPDenoiser, ResidualBlock, TimeEmbedding, UNet
from biaslab.nn.transformer import SinusoidalPositionalEncoding, sinusoidal_embedding


def test_time_embedding_reads_the_transformer_sinusoids():
    t = torch.tensor([0, 3, 999])
    table = SinusoidalPositionalEncoding(16, max_len=1000).pe.double()
    torch.testing.assert_close(sinusoidal_embedding(t, 16), table[t], rtol=0, atol=1e-6)
    emb = TimeEmbedding(16)
    torch.testing.assert_close(emb(t), emb.mlp(table[t].float()), rtol=0, atol=1e-6)


def test_mlp_denoiser_shape_and_dependence_on_t():
    torch.manual_seed(0)
    model = MLPDenoiser(dim=2, hidden=(32, 32), time_dim=8)
    x = torch.randn(5, 2)
    out = model(x, torch.full((5,), 10))
    assert out.shape == (5, 2)
    assert not torch.allclose(out, model(x, torch.full((5,), 900)))


@pytest.mark.parametrize("attention", [False, True])
@pytest.mark.parametrize("channels", [(8,), (8, 16), (8, 16, 32)])
def test_unet_keeps_the_image_shape_and_reads_t(channels, attention):
    torch.manual_seed(0)
    model = UNet(1, channels, time_dim=16, attention=attention)
    x = torch.randn(3, 1, 28, 28)
    out = model(x, torch.tensor([0, 500, 999]))
    assert out.shape == x.shape
    assert not torch.allclose(out, model(x, torch.tensor([999, 500, 0])))
    loss = out.square().mean()
    loss.backward()
    assert all(p.grad is not None for p in model.parameters())  # every block is on the path


def test_unet_refuses_sides_it_cannot_halve():
    with pytest.raises(ValueError, match="divisible by 4"):
        UNet(1, (8, 16, 32))(torch.zeros(1, 1, 30, 30), torch.zeros(1, dtype=torch.long))
    with pytest.raises(ValueError, match="at least one"):
        UNet(1, ())


def test_residual_block_is_its_formula():
    torch.manual_seed(1)
    block = ResidualBlock(4, 6, time_dim=5)
    x, temb = torch.randn(2, 4, 7, 7), torch.randn(2, 5)
    h = block.conv1(nn.functional.silu(nn.functional.group_norm(x, 4, block.norm1.weight, block.norm1.bias)))
    h = h + (temb @ block.time.weight.T + block.time.bias)[:, :, None, None]
    h = block.conv2(nn.functional.silu(nn.functional.group_norm(h, 2, block.norm2.weight, block.norm2.bias)))
    torch.testing.assert_close(block(x, temb), h + block.skip(x))


def test_attention_block_equals_torch_multihead_attention_over_pixels():
    torch.manual_seed(2)
    block = AttentionBlock(8, heads=4)
    reference = nn.MultiheadAttention(8, 4, batch_first=True)
    with torch.no_grad():
        a = block.attention
        reference.in_proj_weight.copy_(torch.cat([a.q_proj.weight, a.k_proj.weight, a.v_proj.weight]))
        reference.in_proj_bias.copy_(torch.cat([a.q_proj.bias, a.k_proj.bias, a.v_proj.bias]))
        reference.out_proj.weight.copy_(a.out_proj.weight)
        reference.out_proj.bias.copy_(a.out_proj.bias)
    x = torch.randn(2, 8, 7, 7)
    tokens = block.norm(x).flatten(2).transpose(1, 2)  # (2, 49, 8)
    expected = x + reference(tokens, tokens, tokens, need_weights=False)[0].transpose(1, 2).reshape(
        2, 8, 7, 7
    )
    torch.testing.assert_close(block(x), expected, atol=1e-5, rtol=1e-5)


def test_attention_block_commutes_with_a_permutation_of_pixels():
    """Attention without positions treats pixels as a set: shuffling them shuffles the output."""
    torch.manual_seed(3)
    block = AttentionBlock(8)
    x = torch.randn(1, 8, 4, 4)
    perm = torch.randperm(16)
    shuffled = x.flatten(2)[:, :, perm].reshape(1, 8, 4, 4)
    torch.testing.assert_close(
        block(shuffled).flatten(2), block(x).flatten(2)[:, :, perm], atol=1e-5, rtol=1e-5
    )

"""The library on the model's device: ``device_of``, inputs that follow the model, and the same
numbers as before on the CPU.

Without a GPU three things are checked: ``device_of`` itself; that inputs follow the model, on
PyTorch's "meta" device, which (like a GPU) refuses to mix its tensors with CPU ones, so a
function that forgets to move an input fails there; and that every changed function still
returns what a reference computed here by hand gives, bit for bit where the arithmetic is the
same. The last group runs the key functions on CUDA against the CPU; it needs a GPU.
"""

import copy
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from scipy.optimize import minimize_scalar
from torch import nn
from torch.distributions import Bernoulli, Normal

from biaslab.evaluate.adversarial import accuracy_under_attack, fgsm, pgd
from biaslab.evaluate.calibration import TemperatureScaling
from biaslab.evaluate.gradient_flow import gradient_by_step
from biaslab.evaluate.ood import classifier_outputs
from biaslab.evaluate.robustness import accuracy_under_transform
from biaslab.evaluate.symmetry import (
    equivariance_error,
    permute,
    permute_nodes,
    random_isometry,
    random_orthogonal,
    random_permutation,
)
from biaslab.generative.autoencoder import Autoencoder, corrupt, interpolations, reconstruction_error
from biaslab.generative.denoisers import MLPDenoiser, UNet
from biaslab.generative.diffusion import DDIM, DDPM, NoiseSchedule, diffusion_loss
from biaslab.generative.vae import VAE, importance_weighted_nll, negative_elbo
from biaslab.nn import CNN, LSTM, MLP, DeepSetsLayer, GCNConv, SequenceClassifier, device_of
from biaslab.nn.attention import scaled_dot_product_attention
from biaslab.nn.recurrent import chrono_init
from biaslab.nn.transformer import SinusoidalPositionalEncoding, sinusoidal_embedding
from biaslab.train.recipes import predict

META = torch.device("meta")


def gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def mlp(seed: int = 0, sizes=(4, 8, 3)) -> MLP:
    torch.manual_seed(seed)
    return MLP(sizes)


# -- device_of --------------------------------------------------------------------------------
def test_device_of_reads_the_first_parameter():
    assert device_of(nn.Linear(2, 3)) == torch.device("cpu")
    assert device_of(nn.Linear(2, 3, device=META)) == META


def test_device_of_reads_a_buffer_when_there_is_no_parameter():
    encoding = SinusoidalPositionalEncoding(4, max_len=8).to(META)  # a buffer, no parameter
    assert not list(encoding.parameters()) and device_of(encoding) == META
    holder = nn.Module()
    holder.register_buffer("table", torch.zeros(3, device=META))
    assert device_of(holder) == META


def test_device_of_prefers_parameters_to_buffers():
    model = nn.Linear(2, 3)
    model.register_buffer("table", torch.zeros(3, device=META))
    assert device_of(model) == torch.device("cpu")


def test_device_of_a_module_without_tensors_is_the_cpu():
    assert device_of(nn.ReLU()) == torch.device("cpu")
    assert device_of(nn.Sequential()) == torch.device("cpu")


# -- inputs follow the model (the meta device refuses CPU inputs like a GPU) --------------------
def test_predict_and_reconstruction_error_move_cpu_inputs_to_the_model():
    out = predict(mlp().to(META), torch.randn(10, 4), batch_size=3)
    assert out.device == META and out.shape == (10, 3)
    assert predict(mlp().to(META), torch.randn(10, 4), "hidden").shape == (10, 8)
    ae = Autoencoder(6, 2, (5,)).to(META)
    assert reconstruction_error(ae, torch.rand(7, 6), batch_size=3).device == META


def test_vae_functions_move_inputs_and_cpu_noise_to_the_model():
    vae = VAE(6, 2, (5,)).to(META)
    assert all(t.device == META for t in negative_elbo(vae, torch.rand(7, 6), gen()))
    assert importance_weighted_nll(vae, torch.rand(7, 6), k=3, generator=gen(), batch_size=4).device == META
    mu = torch.zeros(3, 2, device=META)
    assert VAE.reparameterize(mu, mu, gen()).device == META
    assert VAE.reparameterize(mu, mu).device == META  # torch's global CPU generator
    assert corrupt(torch.rand(3, 4, device=META), 0.5, gen()).device == META


@pytest.mark.parametrize("sampler", [DDPM(NoiseSchedule.linear(5)), DDIM(NoiseSchedule.linear(10), steps=3)])
def test_samplers_run_on_the_models_device(sampler):
    denoiser = MLPDenoiser(2, (8,), time_dim=4, input_features=2).to(META)
    out = sampler.sample(denoiser, (6, 2), seed=0, batch_size=4, keep=[sampler.timesteps[0], -1])
    assert out.x.device == META and all(x.device == META for x in out.snapshots.values())
    unet = UNet(1, (4, 8), time_dim=8, attention=True).to(META)
    assert sampler.sample(unet, (2, 1, 8, 8), seed=0).x.device == META


def test_attacks_run_on_the_models_device():
    torch.manual_seed(0)
    cnn = CNN(1, (4,), 3, dims=2, input_size=8).to(META)
    x, y = torch.rand(5, 1, 8, 8), torch.randint(0, 3, (5,))
    assert fgsm(cnn, x, y, 0.1).device == META
    assert pgd(cnn, x, y, 0.1, 0.05, steps=2).device == META  # the CPU random start is moved


def test_sinusoidal_embedding_is_computed_on_the_positions_device():
    assert sinusoidal_embedding(torch.arange(5, device=META), 6).device == META


# -- the same numbers as before, against references computed here -------------------------------
def test_predict_equals_the_models_own_output():
    model, x = mlp(), torch.randn(10, 4)
    with torch.no_grad():
        whole, hidden = model(x), model.hidden(x)
    assert torch.equal(predict(model, x), whole) and torch.equal(predict(model, x, "hidden"), hidden)
    torch.testing.assert_close(predict(model, x, batch_size=3), whole)


def test_classifier_outputs_are_the_logits_and_features_as_arrays():
    model, x = mlp(1), torch.randn(9, 4)
    with torch.no_grad():
        logits, features = model(x).numpy(), model.hidden(x).numpy()
    out = classifier_outputs(model, x)
    assert np.array_equal(out["logits"], logits) and np.array_equal(out["features"], features)


def test_autoencoder_functions_equal_their_formulas():
    torch.manual_seed(2)
    model, x = Autoencoder(6, 2, (5,)), torch.rand(7, 6)
    with torch.no_grad():
        expected = (model(x) - x).pow(2).mean(1)
    assert torch.equal(reconstruction_error(model, x), expected)
    noise = 0.3 * torch.randn(x.shape, generator=gen(4))
    assert torch.equal(corrupt(x, 0.3, gen(4)), (x + noise).clamp(0, 1))
    codes, labels = np.array([[0.0, 1.0], [2.0, -1.0]], np.float32), np.array([3, 5])
    t = np.linspace(0, 1, 4, dtype=np.float32)[:, None]
    with torch.no_grad():
        line = model.decode(torch.from_numpy((1 - t) * codes[0] + t * codes[1])).numpy()
    assert np.array_equal(interpolations(model.decode, codes, labels, [(3, 5)], 4)[0], line)
    with torch.no_grad():  # a plain function decodes on the CPU
        plain = interpolations(lambda z: 2 * z, codes, labels, [(3, 5)], 4)[0]
    assert np.array_equal(plain, 2 * ((1 - t) * codes[0] + t * codes[1]))


def test_diffusion_loss_draws_t_then_the_noise_from_the_generator():
    schedule, x0 = NoiseSchedule.linear(50), torch.randn(6, 2)
    model = MLPDenoiser(2, (8,), time_dim=4)
    g = gen(5)
    t = torch.randint(0, 50, (6,), generator=g)
    eps = torch.randn(x0.shape, generator=g)
    a = schedule.alpha_bars[t].float()[:, None]  # ᾱ_t, (N, 1)
    expected = F.mse_loss(model(a.sqrt() * x0 + (1 - a).sqrt() * eps, t), eps)
    loss, _, drawn = diffusion_loss(model, x0, schedule, gen(5))
    assert torch.equal(drawn, eps) and torch.equal(loss, expected)


def test_ddim_without_noise_follows_eq_12():
    schedule, sampler = NoiseSchedule.linear(20), DDIM(NoiseSchedule.linear(20), steps=4)

    def model(x, t):  # a plain function, not a module: the sampler runs it on the CPU
        return 0.1 * x + 0.01 * t[:, None]

    x = torch.randn(5, 2, generator=gen(3))
    for t, t_prev in zip(sampler.timesteps, [*sampler.timesteps[1:], -1]):
        a, a_prev = float(schedule.alpha_bars[t]), schedule.alpha_bar(t_prev)
        eps = model(x, torch.full((5,), t))
        x0 = (x - math.sqrt(1 - a) * eps) / math.sqrt(a)
        x = math.sqrt(a_prev) * x0 + math.sqrt(1 - a_prev) * eps
    torch.testing.assert_close(sampler.sample(model, (5, 2), seed=3).x, x, rtol=1e-6, atol=1e-6)


def test_ddpm_follows_algorithm_2_with_the_seeded_noise():
    schedule = NoiseSchedule.linear(6, 0.05, 0.3)
    torch.manual_seed(0)
    model = MLPDenoiser(2, (8,), time_dim=4).eval()
    g = gen(7)
    x = torch.randn(5, 2, generator=g)
    with torch.no_grad():
        for t in range(5, -1, -1):
            beta, alpha, a = (float(v[t]) for v in (schedule.betas, schedule.alphas, schedule.alpha_bars))
            eps = model(x, torch.full((5,), t))
            x = (x - beta / math.sqrt(1 - a) * eps) / math.sqrt(alpha)
            if t > 0:
                x = x + math.sqrt(beta) * torch.randn(x.shape, generator=g)
    torch.testing.assert_close(DDPM(schedule).sample(model, (5, 2), seed=7).x, x, rtol=1e-5, atol=1e-5)


def test_vae_draws_equal_the_reparameterisation_by_hand():
    torch.manual_seed(3)
    model, x = VAE(6, 2, (5,)), torch.rand(4, 6)
    mu, logvar = model.encode(x)
    eps = torch.randn(mu.shape, generator=gen(1))
    assert torch.equal(VAE.reparameterize(mu, logvar, gen(1)), mu + torch.exp(0.5 * logvar) * eps)
    torch.manual_seed(9)  # without a generator: torch's global CPU one
    drawn = VAE.reparameterize(mu, logvar)
    torch.manual_seed(9)
    assert torch.equal(drawn, mu + torch.exp(0.5 * logvar) * torch.randn(mu.shape))
    logits = model.decode_logits(mu + torch.exp(0.5 * logvar) * eps)
    reconstruction = F.binary_cross_entropy_with_logits(logits, x, reduction="none").sum(1)
    kl = 0.5 * (mu.pow(2) + logvar.exp() - 1 - logvar).sum(1)
    total, rec, div = negative_elbo(model, x, gen(1))
    assert torch.equal(rec, reconstruction) and torch.equal(div, kl) and torch.equal(total, rec + div)


def test_importance_weighted_nll_equals_torch_distributions():
    torch.manual_seed(4)
    model, x, k = VAE(6, 2, (5,)).eval(), (torch.rand(5, 6) < 0.5).float(), 7  # binary: Bernoulli's support
    with torch.no_grad():
        mu, logvar = model.encode(x)
        z = mu + torch.exp(0.5 * logvar) * torch.randn((k, *mu.shape), generator=gen(2))  # (k, n, L)
        log_w = (
            Bernoulli(logits=model.decode_logits(z.view(-1, 2)).view(k, 5, 6)).log_prob(x).sum(-1)
            + Normal(0.0, 1.0).log_prob(z).sum(-1)
            - Normal(mu, torch.exp(0.5 * logvar)).log_prob(z).sum(-1)
        )
    expected = -(torch.logsumexp(log_w, 0) - math.log(k))
    torch.testing.assert_close(importance_weighted_nll(model, x, k, gen(2)), expected, rtol=1e-5, atol=1e-5)


def test_sinusoidal_embedding_equals_the_formula_in_float64():
    positions, dim = torch.tensor([0.0, 1.0, 7.5, 300.0]), 5
    out = sinusoidal_embedding(positions, dim)
    expected = [
        [f(p / 10000 ** (2 * (i // 2) / dim)) for i, f in zip(range(dim), [math.sin, math.cos] * dim)]
        for p in positions.tolist()
    ]
    assert out.dtype == torch.float64 and out.device == positions.device
    torch.testing.assert_close(out, torch.tensor(expected, dtype=torch.float64), rtol=0, atol=1e-12)


def test_attention_dropout_draws_its_mask_from_the_generator():
    q, k, v = (torch.randn(2, 3, 4, generator=gen(i)) for i in range(3))
    weights = torch.softmax(q @ k.transpose(-2, -1) / 2.0, dim=-1)  # 1/√d_k with d_k = 4
    keep = torch.rand(weights.shape, generator=gen(8)) >= 0.25
    expected = (weights * keep / 0.75) @ v
    assert torch.equal(scaled_dot_product_attention(q, k, v, dropout=0.25, generator=gen(8)), expected)


def test_chrono_init_draws_the_forget_biases_from_the_generator():
    lstm = chrono_init(LSTM(3, 4, num_layers=2), 20, gen(6))
    g = gen(6)
    for name, bias in lstm.named_parameters():
        if name.startswith("bias_ih"):
            u = torch.rand(4, generator=g) * 18 + 1
            assert torch.equal(bias[4:8], torch.log(u)) and torch.equal(bias[:4], -torch.log(u))
        elif name.startswith("bias_hh"):
            assert not bias[:8].any()


def test_attacks_equal_fgsm_and_pgd_by_hand():
    model, x, y = mlp(5, (6, 8, 3)), torch.rand(4, 6), torch.tensor([0, 1, 2, 1])

    def sign_of_gradient(point):
        point = point.clone().requires_grad_(True)
        return torch.autograd.grad(F.cross_entropy(model(point), y), point)[0].sign()

    assert torch.equal(fgsm(model, x, y, 0.1), (x + 0.1 * sign_of_gradient(x)).clamp(0, 1))
    delta = torch.empty(x.shape).uniform_(-0.1, 0.1, generator=gen(0))  # pgd's default start
    x_adv = (x + delta).clamp(0, 1)
    for _ in range(3):
        x_adv = x_adv + 0.04 * sign_of_gradient(x_adv)
        x_adv = (x + (x_adv - x).clamp(-0.1, 0.1)).clamp(0, 1)
    assert torch.equal(pgd(model, x, y, 0.1, 0.04, 3), x_adv)


def test_accuracy_curves_count_the_argmax():
    model, x, y = mlp(6, (6, 8, 3)), torch.rand(20, 6), torch.randint(0, 3, (20,), generator=gen(1))

    def accuracy(inputs):
        with torch.no_grad():
            return int((model(inputs).argmax(1) == y).sum()) / len(y)

    curve = accuracy_under_transform(model, x, y, lambda inputs, a: inputs + a, [0.0, 0.5], batch_size=7)
    assert curve == {0.0: accuracy(x), 0.5: accuracy(x + 0.5)}
    attacked = accuracy_under_attack(model, x, y, fgsm, [0.0, 0.2], batch_size=20)
    assert attacked == {0.0: accuracy(x), 0.2: accuracy(fgsm(model, x, y, 0.2))}


def test_gradient_by_step_equals_autograd_in_float64():
    torch.manual_seed(7)
    model = SequenceClassifier(3, 5, 4, cell="rnn")
    steps, targets = torch.randn(6, 9, 3), torch.randint(0, 4, (6,))
    inputs = steps.double().requires_grad_(True)
    F.cross_entropy(copy.deepcopy(model).double()(inputs), targets).backward()
    assert np.array_equal(gradient_by_step(model, steps, targets), inputs.grad.norm(dim=-1).mean(0).numpy())


def test_temperature_scaling_finds_the_nll_minimum():
    logits = 3 * torch.randn(200, 4, generator=gen(2))
    noise = torch.randint(0, 4, (200,), generator=gen(3))
    labels = torch.where(torch.rand(200, generator=gen(4)) < 0.7, logits.argmax(1), noise)  # over-confident
    z = logits.double()
    best = minimize_scalar(
        lambda s: float(F.cross_entropy(z * math.exp(-s), labels)), bounds=(-3, 3), method="bounded"
    )
    assert TemperatureScaling().fit(logits, labels).temperature_ == pytest.approx(math.exp(best.x), rel=1e-4)


def test_equivariance_error_equals_its_formula():
    torch.manual_seed(8)
    model = nn.Sequential(nn.Flatten(), nn.Linear(18, 18), nn.Unflatten(1, (6, 3)))  # mixes the elements
    x, perm = torch.randn(2, 6, 3), torch.tensor([2, 0, 1, 5, 3, 4])
    with torch.no_grad():
        predicted, actual = model(x)[:, perm], model(x[:, perm])
    expected = float((actual - predicted).abs().max() / predicted.abs().max())
    assert expected > 1e-3 and equivariance_error(model, permute(perm), permute(perm), x) == expected
    layer = DeepSetsLayer(3, 4)
    assert equivariance_error(layer, permute(perm), permute(perm), x) < 1e-6


def test_permute_nodes_relabels_the_edges():
    x, edge_index = torch.arange(6.0).view(3, 2), torch.tensor([[0, 2], [1, 0]])  # edges 0 -> 1, 2 -> 0
    new_x, new_edges = permute_nodes(torch.tensor([2, 0, 1]))((x, edge_index))  # new i = old perm[i]
    assert torch.equal(new_x, x[[2, 0, 1]]) and torch.equal(new_edges, torch.tensor([[1, 0], [2, 1]]))
    conv = GCNConv(2, 3)
    perm = torch.tensor([1, 2, 0])
    error = equivariance_error(conv, permute_nodes(perm), permute(perm, dim=0), (x, edge_index))
    assert error < 1e-6


def test_random_draws_equal_torchs_from_the_same_seed():
    assert torch.equal(random_permutation(6, 4), torch.randperm(6, generator=gen(4)))
    z = torch.randn(3, 3, generator=gen(1), dtype=torch.float64)
    q, r = torch.linalg.qr(z)
    expected = q * torch.where(torch.diagonal(r) < 0, -1.0, 1.0)
    assert torch.equal(random_orthogonal(3, 1), expected)
    g = gen(1)
    torch.randn(3, 3, generator=g, dtype=torch.float64)  # the matrix's draw comes first
    shift = torch.randn(3, generator=g, dtype=torch.float64) * 2.0
    isometry = random_isometry(3, 1, shift_std=2.0)
    assert torch.equal(isometry.matrix, expected) and torch.equal(isometry.shift, shift)


# -- on a GPU: the key functions on CUDA against the CPU -----------------------------------------
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
CUDA = torch.device("cuda")


def on_cuda(model: nn.Module) -> nn.Module:
    return copy.deepcopy(model).to(CUDA)


@needs_cuda
class TestOnCuda:
    def test_predictions_and_scores(self):
        model, x = mlp(), torch.randn(50, 4)
        torch.testing.assert_close(predict(on_cuda(model), x, batch_size=7).cpu(), predict(model, x))
        for key, value in classifier_outputs(on_cuda(model), x).items():
            np.testing.assert_allclose(value, classifier_outputs(model, x)[key], rtol=1e-5, atol=1e-5)
        labels = torch.randint(0, 3, (50,), generator=gen())
        curve = accuracy_under_transform(on_cuda(model), x, labels, lambda v, a: v + a, [0.0, 1.0])
        assert curve == accuracy_under_transform(model, x, labels, lambda v, a: v + a, [0.0, 1.0])
        right = torch.where(torch.rand(50, generator=gen(1)) < 0.7, predict(model, x).argmax(1), labels)
        cuda_t = TemperatureScaling().fit(predict(on_cuda(model), x), right).temperature_
        assert cuda_t == pytest.approx(
            TemperatureScaling().fit(predict(model, x), right).temperature_, rel=1e-3
        )

    def test_generative_functions_draw_the_same_noise(self):
        ae, x = Autoencoder(6, 2, (5,)), torch.rand(9, 6)
        torch.testing.assert_close(reconstruction_error(on_cuda(ae), x).cpu(), reconstruction_error(ae, x))
        codes, labels = np.random.default_rng(0).normal(size=(2, 2)).astype(np.float32), np.array([0, 1])
        np.testing.assert_allclose(
            interpolations(on_cuda(ae).decode, codes, labels, [(0, 1)], 5),
            interpolations(ae.decode, codes, labels, [(0, 1)], 5),
            rtol=1e-5,
            atol=1e-6,
        )
        vae = VAE(6, 2, (5,))
        for a, b in zip(negative_elbo(on_cuda(vae), x, gen(1)), negative_elbo(vae, x, gen(1))):
            torch.testing.assert_close(a.cpu(), b, rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(
            importance_weighted_nll(on_cuda(vae), x, 5, gen(2)).cpu(),
            importance_weighted_nll(vae, x, 5, gen(2)),
            rtol=1e-4,
            atol=1e-4,
        )
        noisy = corrupt(x.to(CUDA), 0.3, gen(3))
        torch.testing.assert_close(noisy.cpu(), corrupt(x, 0.3, gen(3)))
        assert corrupt(x.to(CUDA), 0.3, torch.Generator(CUDA).manual_seed(0)).device.type == "cuda"
        mu = torch.zeros(3, 2, device=CUDA)
        assert VAE.reparameterize(mu, mu, torch.Generator(CUDA).manual_seed(0)).device.type == "cuda"

    def test_diffusion_on_cuda(self):
        schedule, x0 = NoiseSchedule.linear(50), torch.randn(8, 2)
        model = MLPDenoiser(2, (16,), time_dim=8, input_features=2)
        loss, _, _ = diffusion_loss(on_cuda(model), x0, schedule, gen(4))  # CPU generator: the same draws
        assert loss.item() == pytest.approx(diffusion_loss(model, x0, schedule, gen(4))[0].item(), rel=1e-4)
        diffusion_loss(on_cuda(model), x0.to(CUDA), schedule, torch.Generator(CUDA).manual_seed(0))
        for sampler in (DDPM(NoiseSchedule.linear(20)), DDIM(schedule, steps=5)):
            cuda_x = sampler.sample(on_cuda(model), (16, 2), seed=5).x
            torch.testing.assert_close(
                cuda_x.cpu(), sampler.sample(model, (16, 2), seed=5).x, rtol=1e-3, atol=1e-3
            )
        unet = UNet(1, (4, 8), time_dim=8, attention=True)
        torch.testing.assert_close(
            DDIM(schedule, steps=3).sample(on_cuda(unet), (2, 1, 8, 8), seed=1).x.cpu(),
            DDIM(schedule, steps=3).sample(unet, (2, 1, 8, 8), seed=1).x,
            rtol=1e-2,
            atol=1e-2,  # cuDNN convolutions may round through TF32
        )

    def test_attacks_gradients_and_symmetries(self):
        model, x, y = mlp(5, (6, 8, 3)), torch.rand(40, 6), torch.randint(0, 3, (40,), generator=gen())
        for attack in (lambda m: fgsm(m, x, y, 0.1), lambda m: pgd(m, x, y, 0.1, 0.04, 3)):
            same = ((attack(on_cuda(model)).cpu() - attack(model)).abs() < 1e-5).all(dim=1)
            assert same.float().mean() >= 0.9  # a sign may flip where the gradient is ~0
        rnn = SequenceClassifier(3, 5, 4, cell="rnn")
        steps, targets = torch.randn(6, 9, 3), torch.randint(0, 4, (6,), generator=gen())
        np.testing.assert_allclose(
            gradient_by_step(on_cuda(rnn), steps, targets), gradient_by_step(rnn, steps, targets), rtol=1e-6
        )
        layer, sets = DeepSetsLayer(3, 4), torch.randn(2, 6, 3)
        perm = random_permutation(6, torch.Generator(CUDA).manual_seed(0))
        assert equivariance_error(on_cuda(layer), permute(perm), permute(perm), sets) < 1e-5
        graph = (torch.randn(5, 2), torch.tensor([[0, 1, 4], [2, 3, 0]]))  # the CPU permutation renames
        nodes = torch.tensor([3, 0, 4, 1, 2])  # the GPU's edges
        conv = on_cuda(GCNConv(2, 3))
        assert equivariance_error(conv, permute_nodes(nodes), permute(nodes, 0), graph) < 1e-5
        q = torch.randn(2, 3, 4)
        on_gpu = scaled_dot_product_attention(*[q.to(CUDA)] * 3, dropout=0.5, generator=gen(1))
        torch.testing.assert_close(
            on_gpu.cpu(), scaled_dot_product_attention(q, q, q, dropout=0.5, generator=gen(1))
        )
        on_gpu, on_cpu = chrono_init(LSTM(3, 4).to(CUDA), 10, gen(2)), chrono_init(LSTM(3, 4), 10, gen(2))
        torch.testing.assert_close(on_gpu.bias_ih_l0[:8].cpu(), on_cpu.bias_ih_l0[:8])  # input, forget gates
        torch.testing.assert_close(
            sinusoidal_embedding(torch.arange(9, device=CUDA), 6).cpu(),
            sinusoidal_embedding(torch.arange(9), 6),
        )

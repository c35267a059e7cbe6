"""Recurrent cells and sequence modules, gate by gate, against torch's fused implementations."""

import itertools
import math

import pytest
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from biaslab.nn.blocks import SequenceClassifier, SequenceTagger
from biaslab.nn.recurrent import (
    GRU,
    LSTM,
    RNN,
    ElmanCell,
    GRUCell,
    LSTMCell,
    copy_from_torch,
)

TOL = {"atol": 1e-10, "rtol": 0}  # float64: far inside the 1e-6 the twins must agree to
MODES = ["tanh", "relu", "lstm", "gru"]
N, T, F_IN, H = 3, 5, 4, 6


def twins(mode, **kwargs):
    """A torch module in float64 and its biaslab twin holding the same weights."""
    if mode in ("tanh", "relu"):
        ref = nn.RNN(F_IN, H, nonlinearity=mode, **kwargs)
    else:
        ref = {"lstm": nn.LSTM, "gru": nn.GRU}[mode](F_IN, H, **kwargs)
    ref = ref.double()
    return RNN.from_torch(ref) if mode in ("tanh", "relu") else {"lstm": LSTM, "gru": GRU}[mode].from_torch(
        ref
    ), ref


def initial_state(mode, layers, directions, generator):
    shape = (layers * directions, N, H)
    h = torch.randn(shape, dtype=torch.float64, generator=generator, requires_grad=True)
    if mode != "lstm":
        return h
    return h, torch.randn(shape, dtype=torch.float64, generator=generator, requires_grad=True)


def leaves(hx):
    return [] if hx is None else list(hx) if isinstance(hx, tuple) else [hx]


def assert_same_forward_and_backward(ours, ref, x, hx, lengths=None):
    """Outputs, final states and the gradients of a random functional of both agree."""
    batch_first = ref.batch_first
    if lengths is None:
        out_ref, state_ref = ref(x, hx)
    else:
        packed = pack_padded_sequence(x, torch.tensor(lengths), batch_first=batch_first, enforce_sorted=False)
        out_ref, state_ref = ref(packed, hx)
        out_ref, _ = pad_packed_sequence(
            out_ref, batch_first=batch_first, total_length=x.shape[1 if batch_first else 0]
        )
    out, state = ours(x, hx, lengths=lengths)
    torch.testing.assert_close(out, out_ref, **TOL)
    states, states_ref = leaves(state), leaves(state_ref)
    for s, s_ref in zip(states, states_ref, strict=True):
        torch.testing.assert_close(s, s_ref, **TOL)

    g = torch.Generator().manual_seed(1)
    weights = [torch.randn(t.shape, dtype=t.dtype, generator=g) for t in [out, *states]]
    inputs = [x, *leaves(hx)]

    def grads(model, tensors):
        loss = sum((w * t).sum() for w, t in zip(weights, tensors))
        return torch.autograd.grad(loss, inputs + list(model.parameters()))

    names = [name for name, _ in ours.named_parameters()]
    assert names == [name for name, _ in ref.named_parameters()]
    for a, b in zip(grads(ours, [out, *states]), grads(ref, [out_ref, *states_ref]), strict=True):
        torch.testing.assert_close(a, b, **TOL)


@pytest.mark.parametrize(
    "mode, num_layers, bidirectional, batch_first, with_state",
    list(itertools.product(MODES, [1, 2], [False, True], [True, False], [False, True])),
)
def test_sequence_modules_match_torch(mode, num_layers, bidirectional, batch_first, with_state):
    torch.manual_seed(0)
    ours, ref = twins(mode, num_layers=num_layers, bidirectional=bidirectional, batch_first=batch_first)
    g = torch.Generator().manual_seed(0)
    shape = (N, T, F_IN) if batch_first else (T, N, F_IN)
    x = torch.randn(shape, dtype=torch.float64, generator=g, requires_grad=True)
    hx = initial_state(mode, num_layers, 2 if bidirectional else 1, g) if with_state else None
    assert_same_forward_and_backward(ours, ref, x, hx)


@pytest.mark.parametrize(
    "mode, num_layers, bidirectional, batch_first",
    list(itertools.product(MODES, [1, 2], [False, True], [True, False])),
)
def test_lengths_match_torch_on_packed_sequences(mode, num_layers, bidirectional, batch_first):
    torch.manual_seed(0)
    ours, ref = twins(mode, num_layers=num_layers, bidirectional=bidirectional, batch_first=batch_first)
    g = torch.Generator().manual_seed(0)
    shape = (N, T, F_IN) if batch_first else (T, N, F_IN)
    x = torch.randn(shape, dtype=torch.float64, generator=g, requires_grad=True)
    hx = initial_state(mode, num_layers, 2 if bidirectional else 1, g)
    assert_same_forward_and_backward(ours, ref, x, hx, lengths=[2, T, 1])  # unsorted, one full


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("with_state", [False, True])
def test_cells_match_torch(mode, with_state):
    torch.manual_seed(0)
    if mode in ("tanh", "relu"):
        ref, cls = nn.RNNCell(F_IN, H, nonlinearity=mode).double(), ElmanCell
    else:
        ref, cls = {"lstm": (nn.LSTMCell, LSTMCell), "gru": (nn.GRUCell, GRUCell)}[mode]
        ref = ref(F_IN, H).double()
    ours = cls.from_torch(ref)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(N, F_IN, dtype=torch.float64, generator=g, requires_grad=True)
    hx = None
    if with_state:
        hx = torch.randn(N, H, dtype=torch.float64, generator=g, requires_grad=True)
        hx = (
            (hx, torch.randn(N, H, dtype=torch.float64, generator=g, requires_grad=True))
            if mode == "lstm"
            else hx
        )
    out, out_ref = leaves(ours(x, hx)), leaves(ref(x, hx))
    for a, b in zip(out, out_ref, strict=True):
        torch.testing.assert_close(a, b, **TOL)
    inputs = [x, *leaves(hx)]
    loss, loss_ref = (sum((t * (k + 1)).sum() for k, t in enumerate(o)) for o in (out, out_ref))
    grads = torch.autograd.grad(loss, inputs + list(ours.parameters()))
    grads_ref = torch.autograd.grad(loss_ref, inputs + list(ref.parameters()))
    for a, b in zip(grads, grads_ref, strict=True):
        torch.testing.assert_close(a, b, **TOL)


def test_a_cell_unrolled_is_the_sequence_module():
    """Weight sharing over time: the RNN is the same cell applied at every step."""
    torch.manual_seed(0)
    lstm = LSTM(F_IN, H)
    cell = LSTMCell(F_IN, H)
    cell.load_state_dict({k.removesuffix("_l0"): v for k, v in lstm.state_dict().items()})
    x = torch.randn(N, T, F_IN)
    state = None
    for t in range(T):
        state = cell(x[:, t], state)
    output, (h_n, c_n) = lstm(x)
    torch.testing.assert_close(output[:, -1], state[0])
    torch.testing.assert_close(h_n[0], state[0])
    torch.testing.assert_close(c_n[0], state[1])


@pytest.mark.parametrize("mode", MODES)
def test_initialisation_draws_what_torch_draws(mode):
    kwargs = {"num_layers": 2, "bidirectional": True}
    torch.manual_seed(3)
    ref = nn.RNN(F_IN, H, nonlinearity=mode, **kwargs) if mode in ("tanh", "relu") else None
    ref = ref or {"lstm": nn.LSTM, "gru": nn.GRU}[mode](F_IN, H, **kwargs)
    torch.manual_seed(3)
    ours = RNN(F_IN, H, nonlinearity=mode, **kwargs) if mode in ("tanh", "relu") else None
    ours = ours or {"lstm": LSTM, "gru": GRU}[mode](F_IN, H, **kwargs)
    assert ours.state_dict().keys() == ref.state_dict().keys()
    for name, p in ours.state_dict().items():
        assert torch.equal(p, ref.state_dict()[name]), name
        assert p.abs().max() <= H**-0.5
    torch.manual_seed(4)
    ours.reset_parameters()
    torch.manual_seed(4)
    ref.reset_parameters()
    assert all(torch.equal(p, q) for p, q in zip(ours.parameters(), ref.parameters()))

    torch.manual_seed(5)
    cell_ref = {"lstm": nn.LSTMCell, "gru": nn.GRUCell}.get(mode, nn.RNNCell)(F_IN, H)
    torch.manual_seed(5)
    cell = {"lstm": LSTMCell, "gru": GRUCell}.get(mode, ElmanCell)(F_IN, H)
    assert all(torch.equal(p, q) for p, q in zip(cell.parameters(), cell_ref.parameters(), strict=True))


@pytest.mark.parametrize("mode", ["tanh", "lstm", "gru"])
def test_without_bias_and_with_dropout_between_layers(mode):
    torch.manual_seed(0)
    ours, ref = twins(mode, num_layers=2, bias=False, dropout=0.5, batch_first=True)
    assert not any("bias" in name for name, _ in ours.named_parameters())
    x = torch.randn(N, T, F_IN, dtype=torch.float64)
    ours.eval(), ref.eval()
    torch.testing.assert_close(ours(x)[0], ref(x)[0], **TOL)  # dropout is off in evaluation
    ours.train()
    assert not torch.equal(ours(x)[0], ref(x)[0])


def test_from_torch_keeps_torch_configuration_and_copy_refuses_a_different_one():
    ref = nn.GRU(F_IN, H, num_layers=2, bidirectional=True)  # torch's batch_first=False
    ours = GRU.from_torch(ref)
    assert (ours.batch_first, ours.num_layers, ours.bidirectional) == (False, 2, True)
    assert ours.weight_hh_l1_reverse.dtype == torch.float32
    for module, torch_module, message in [
        (GRU(F_IN, H), nn.LSTM(F_IN, H), "cannot copy a LSTM into a GRU: expected GRU"),
        (GRU(F_IN, H), nn.GRU(F_IN, H + 1), "hidden_size differs"),
        (GRU(F_IN, H), nn.GRU(F_IN, H, num_layers=2), "num_layers differs"),
        (GRU(F_IN, H), nn.GRU(F_IN, H, bidirectional=True), "bidirectional differs"),
        (RNN(F_IN, H), nn.RNN(F_IN, H, nonlinearity="relu"), "nonlinearity differs"),
        (ElmanCell(F_IN, H), nn.RNNCell(F_IN, H, bias=False), "bias differs"),
        (LSTM(F_IN, H), nn.LSTM(F_IN, H + 1, proj_size=2), "proj_size"),
        (nn.Linear(2, 2), nn.Linear(2, 2), "a biaslab recurrent module"),
    ]:
        with pytest.raises(ValueError, match=message):
            copy_from_torch(module, torch_module)


@pytest.mark.parametrize("cell", ["rnn", "lstm", "gru"])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_heads_shapes(cell, bidirectional):
    kwargs = {"cell": cell, "num_layers": 2, "bidirectional": bidirectional}
    classifier = SequenceClassifier(F_IN, H, 7, **kwargs)
    tagger = SequenceTagger(F_IN, H, 7, **kwargs)
    x = torch.randn(N, T, F_IN)
    assert classifier(x).shape == (N, 7)
    assert tagger(x).shape == (N, T, 7)
    assert classifier.head.in_features == (2 if bidirectional else 1) * H
    signal = torch.randn(N, 40)  # MNIST-1D: a signal is a sequence of 40 scalars
    assert SequenceClassifier(1, H, 10, **kwargs)(signal).shape == (N, 10)
    assert SequenceTagger(1, H, 2, **kwargs)(signal).shape == (N, 40, 2)


@pytest.mark.parametrize("cell", ["rnn", "lstm", "gru"])
def test_sequence_to_one_reads_the_last_step_of_each_sequence(cell):
    torch.manual_seed(0)
    model = SequenceClassifier(F_IN, H, 3, cell=cell)
    x = torch.randn(N, T, F_IN)
    output, _ = model.rnn(x)
    torch.testing.assert_close(model(x), model.head(output[:, -1]))  # the last step's state
    early = x.clone()
    early[:, 0] += 1.0
    assert (model(early) - model(x)).abs().min() > 0  # the first step reaches the output
    lengths = [3, T, 1]
    padded = x.clone()
    padded[0, 3:] = 7.0  # only padding changes
    padded[2, 1:] = -7.0
    torch.testing.assert_close(model(padded, lengths), model(x, lengths))
    torch.testing.assert_close(model(x, lengths)[0], model(x[:1, :3])[0])  # as if unpadded


@pytest.mark.parametrize("cell", ["rnn", "lstm", "gru"])
def test_recurrence_is_ordered_and_causal(cell):
    torch.manual_seed(0)
    classifier = SequenceClassifier(F_IN, H, 3, cell=cell)
    x = torch.randn(N, T, F_IN)
    assert not torch.allclose(classifier(x), classifier(x.flip(1)))  # not permutation invariant
    tagger = SequenceTagger(F_IN, H, 3, cell=cell)
    changed = x.clone()
    changed[:, 2] += 1.0
    diff = (tagger(changed) - tagger(x)).abs().amax(dim=(0, 2))  # (T,)
    assert torch.all(diff[:2] == 0) and torch.all(diff[2:] > 0)  # step t sees x_1..x_t only
    bidirectional = SequenceTagger(F_IN, H, 3, cell=cell, bidirectional=True)
    diff = (bidirectional(changed) - bidirectional(x)).abs().amax(dim=(0, 2))
    assert torch.all(diff > 0)  # ... unless the backward direction reads the future


@pytest.mark.parametrize("cell", ["rnn", "lstm", "gru"])
def test_long_sequences_run_and_pass_gradients_to_the_first_step(cell):
    torch.manual_seed(0)
    model = SequenceClassifier(2, 16, 1, cell=cell)  # the adding problem's input: (value, marker)
    x = torch.randn(4, 120, 2, requires_grad=True)
    model(x).sum().backward()
    assert x.grad.shape == (4, 120, 2)
    assert x.grad[:, 0].abs().sum() > 0
    assert sum(p.numel() for p in model.parameters()) == sum(
        p.numel() for p in SequenceClassifier(2, 16, 1, cell=cell).parameters()
    )


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: RNN(0, H), "input_size must be a positive integer"),
        (lambda: LSTM(F_IN, 2.5), "hidden_size must be a positive integer"),
        (lambda: GRU(F_IN, H, num_layers=0), "num_layers must be a positive integer"),
        (lambda: RNN(F_IN, H, nonlinearity="sigmoid"), r"nonlinearity must be one of \['relu', 'tanh'\]"),
        (lambda: ElmanCell(F_IN, H, nonlinearity="gelu"), "nonlinearity must be one of"),
        (lambda: LSTM(F_IN, H, dropout=1.0), r"dropout must be in \[0, 1\)"),
        (lambda: SequenceClassifier(F_IN, H, 3, cell="transformer"), "cell must be one of"),
        (lambda: SequenceTagger(F_IN, H, 0), "output_size must be a positive integer"),
        (lambda: GRUCell(True, H), "input_size must be a positive integer"),
        (lambda: RNN(F_IN, H)(torch.randn(N, T)), r"expected input of shape \(N, T, I\) with I = 4"),
        (lambda: RNN(F_IN, H, batch_first=False)(torch.randn(T, N, 5)), r"\(T, N, I\) with I = 4"),
        (lambda: GRU(F_IN, H)(torch.randn(N, 0, F_IN)), "expected input of shape"),
        (
            lambda: GRU(F_IN, H)(torch.randn(N, T, F_IN), torch.zeros(2, N, H)),
            r"initial state of shape \(1, 3, 6\)",
        ),
        (lambda: LSTM(F_IN, H)(torch.randn(N, T, F_IN), torch.zeros(1, N, H)), r"a pair \(h_0, c_0\)"),
        (lambda: RNN(F_IN, H)(torch.randn(N, T, F_IN), lengths=[1, 2]), "lengths must be 3 integers"),
        (
            lambda: RNN(F_IN, H)(torch.randn(N, T, F_IN), lengths=[1.0, 2.0, 3.0]),
            "lengths must be 3 integers",
        ),
        (lambda: RNN(F_IN, H)(torch.randn(N, T, F_IN), lengths=[0, 2, 3]), r"lengths must lie in 1..5"),
        (lambda: RNN(F_IN, H)(torch.randn(N, T, F_IN), lengths=[1, 2, 6]), r"lengths must lie in 1..5"),
        (lambda: LSTMCell(F_IN, H)(torch.randn(N, 5)), r"expected input of shape \(N, 4\)"),
        (lambda: GRUCell(F_IN, H)(torch.randn(N, F_IN), torch.zeros(N, H + 1)), r"state of shape \(3, 6\)"),
        (lambda: LSTMCell(F_IN, H)(torch.randn(N, F_IN), (torch.zeros(N, H),)), r"a pair \(h, c\)"),
    ],
)
def test_bad_arguments_raise_value_error(build, message):
    with pytest.raises(ValueError, match=message):
        build()


def test_chrono_init_sets_gate_biases_and_keeps_the_gradient_alive():
    from biaslab.nn.recurrent import chrono_init

    torch.manual_seed(0)
    hidden, length = 16, 100
    lstm = LSTM(3, hidden, num_layers=2, bidirectional=True).double()
    chrono_init(lstm, length, torch.Generator().manual_seed(1))
    for name, bias in lstm.named_parameters():
        if name.startswith("bias_ih"):
            forget, input_gate = bias[hidden : 2 * hidden], bias[:hidden]
            assert (forget >= 0).all() and (forget <= math.log(length - 1)).all()
            assert torch.equal(input_gate, -forget)
        elif name.startswith("bias_hh"):
            assert not bias[: 2 * hidden].any()

    def first_over_last(model):
        x = torch.randn(8, length, 3, dtype=torch.float64, requires_grad=True)
        model(x)[0][:, -1].sum().backward()
        norms = x.grad.norm(dim=-1).mean(0)
        return float(norms[0] / norms[-1])

    torch.manual_seed(0)
    default = LSTM(3, hidden).double()
    torch.manual_seed(0)
    chrono = chrono_init(LSTM(3, hidden).double(), length)
    assert first_over_last(default) < 1e-6 < 1e-3 < first_over_last(chrono)
    with pytest.raises(ValueError, match="max_length"):
        chrono_init(LSTM(3, hidden), 2)


@pytest.mark.parametrize(
    "cell, bidirectional", list(itertools.product(["rnn", "lstm", "gru"], [False, True]))
)
def test_fused_heads_equal_the_written_out_ones_from_the_same_seed(cell, bidirectional):
    """fused=True swaps in torch's kernels: the same initial weights from the same seed, the same
    outputs (with and without lengths) and the same gradients, to float32 rounding."""
    kwargs = {"cell": cell, "bidirectional": bidirectional}
    x = torch.randn(N, 9, F_IN)
    lengths = torch.tensor([9, 1, 6])  # (N,): one full, one of a single step
    for head in (SequenceClassifier, SequenceTagger):
        torch.manual_seed(0)
        ours = head(F_IN, H, 3, **kwargs)
        torch.manual_seed(0)
        fused = head(F_IN, H, 3, fused=True, **kwargs)
        assert isinstance(fused.rnn, (nn.RNN, nn.LSTM, nn.GRU))
        for (name, a), (other, b) in zip(ours.state_dict().items(), fused.state_dict().items()):
            assert name == other and torch.equal(a, b), name
        for given in (None, lengths):
            torch.testing.assert_close(fused(x, given), ours(x, given), rtol=1e-5, atol=1e-6)
        ours(x, lengths).square().sum().backward()
        fused(x, lengths).square().sum().backward()
        for a, b in zip(ours.parameters(), fused.parameters()):
            torch.testing.assert_close(b.grad, a.grad, rtol=1e-4, atol=1e-6)
    with pytest.raises(ValueError, match="lengths must be"):
        SequenceClassifier(F_IN, H, 3, fused=True)(x, torch.zeros(len(x), dtype=torch.long))

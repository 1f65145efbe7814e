"""Attentions that score with their past alignments, against NumPy written
from the papers: coverage (See, Liu and Manning 2017, eq. 11-13, on
Bahdanau's score and Luong's concat score) and location-sensitive attention
(Chorowski et al. 2015, eq. 8-9, with sharpening, smoothing and Tacotron 2's
cumulative alignment), standalone and carried by `AttentionRNN`; the
coverage loss; `.keras` round trips. Stateless attentions are covered by
test_attention_rnn.py and test_legacy_files.py."""

import keras
import numpy as np
import pytest

from cases import lengths_mask, np_masked_softmax, to_numpy, check_steps_equal_pass
from kerattn.layers import (
    AttentionRNN,
    BahdanauAttention,
    CoverageRegularization,
    LocationSensitiveAttention,
    LuongAttention,
)
from kerattn.losses import coverage_loss
from test_attention_rnn import np_gru, np_lstm, sigmoid


def _f32(rng, *shape, scale=1.0):
    return (scale * rng.standard_normal(shape)).astype("float32")


def _randomize(rng, *variables):
    """Non-zero values for weights Keras initialises to zeros (biases)."""
    for v in variables:
        v.assign(_f32(rng, *v.shape))


# --- NumPy, from the papers ---------------------------------------------------

def np_additive(query, h, W, V, w, extra):
    """e_j = w^T tanh(W q + V h_j + extra_j): query (b, dq), h (b, S, dv),
    extra (b, S, units) the history's term with the bias."""
    return np.tanh((query @ W)[:, None] + h @ V + extra) @ w


def np_coverage_term(c, w_c, b):
    """See et al. (2017), eq. 11's `w_c c_i^t + b`: (b, S, units)."""
    return c[..., None] * w_c + b


def np_location_features(a, F):
    """Chorowski et al. (2015), eq. 8: f = F * a, k filters of odd width r,
    centred on each position, zero outside the sequence:
    f_{j,k} = sum_m F_{m,k} a_{j + m - (r - 1) / 2}. a (b, S) -> (b, S, k)."""
    r, _, k = F.shape
    half = (r - 1) // 2
    padded = np.pad(a, ((0, 0), (half, half)))
    f = np.zeros(a.shape + (k,))
    for j in range(a.shape[1]):
        for m in range(r):
            f[:, j] += padded[:, j + m, None] * F[m, 0]
    return f


def np_location_weights(e, mask, sharpening=1.0, smoothing=False):
    """Section 2.3: alpha = softmax(beta e), or with smoothing
    sigmoid(e_j) / sum_j sigmoid(e_j); padded positions 0, empty rows 0."""
    if not smoothing:
        return np_masked_softmax(sharpening * e, mask)
    g = np.where(mask, sigmoid(sharpening * e), 0.0)
    total = g.sum(-1, keepdims=True)
    return np.divide(g, total, out=np.zeros_like(g), where=total > 0)


# --- 1. Coverage's score, standalone ------------------------------------------

@pytest.mark.parametrize("kind", ["bahdanau", "luong_concat"])
def test_coverage_score_matches_numpy(kind):
    """eq. 11, e_i = v^T tanh(W_h h_i + W_s s_t + w_c c_i + b), for one
    decoder step and for two queries with their own coverage; garbage
    coverage on padded positions is ignored; row 2 is fully padded."""
    rng = np.random.default_rng(0)
    b, S, dq, dv, units = 3, 5, 6, 4, 5
    s, h = _f32(rng, b, dq), _f32(rng, b, S, dv)
    mask = lengths_mask([3, 5, 0], S)
    if kind == "bahdanau":
        att = BahdanauAttention(units, coverage=True)
    else:
        att = LuongAttention("concat", units=units, coverage=True)
    att(s, h)
    _randomize(rng, att.b, att.w_c)
    W_a, v_a, w_c, bias = (to_numpy(v) for v in (att.W_a, att.v_a, att.w_c, att.b))

    def reference(query, cov):
        cov = np.where(mask, cov, 0.0)          # padded positions cover nothing
        if kind == "bahdanau":                  # W_a s + U_a h_j
            hidden = (query @ W_a)[:, None] + h @ to_numpy(att.U_a)
        else:                                   # W_a [h_t; h_s]
            tiled = np.broadcast_to(query[:, None], (b, S, dq))
            hidden = np.concatenate([tiled, h], -1) @ W_a
        e = np.tanh(hidden + np_coverage_term(cov, w_c, bias)) @ v_a
        return np_masked_softmax(e, mask)

    cov = rng.uniform(0, 2, (b, S)).astype("float32")   # non-zero on padding
    ctx, w = att(s, h, value_mask=mask, alignment_history=cov,
                 return_attention_scores=True)
    ctx, w = to_numpy(ctx), to_numpy(w)
    alpha = reference(s, cov)
    np.testing.assert_allclose(w, alpha, atol=1e-5)
    np.testing.assert_allclose(ctx, np.einsum("bs,bsd->bd", alpha, h), atol=1e-5)
    assert np.all(w[~mask] == 0) and np.all(ctx[2] == 0)
    # Two queries, each with its own coverage (batch, Tq, S).
    q2, cov2 = _f32(rng, b, 2, dq), rng.uniform(0, 2, (b, 2, S)).astype("float32")
    _, w2 = att(q2, h, value_mask=mask, alignment_history=cov2,
                return_attention_scores=True)
    for i in range(2):
        np.testing.assert_allclose(to_numpy(w2)[:, i],
                                   reference(q2[:, i], cov2[:, i]), atol=1e-5)
    # No history: zero coverage (the first step).
    _, w0 = att(s, h, value_mask=mask, return_attention_scores=True)
    np.testing.assert_allclose(to_numpy(w0), reference(s, 0 * cov), atol=1e-5)


# --- 2. Location-sensitive attention, standalone ------------------------------

@pytest.mark.parametrize(
    "options", [{}, {"sharpening": 2.0}, {"smoothing": True}],
    ids=["softmax", "sharpening", "smoothing"])
def test_location_sensitive_matches_numpy(options):
    """eq. 8-9, f_i = F * a_{i-1}, e_ij = w^T tanh(W s + V h_j + U f_ij + b),
    with the paper's sharpening and smoothing. Garbage in the history's
    padded positions must not reach the convolution (row 0's position 4
    neighbours its last real position); row 2 is fully padded."""
    rng = np.random.default_rng(1)
    b, S, dq, dv, units = 3, 6, 5, 4, 5
    s, h = _f32(rng, b, dq), _f32(rng, b, S, dv)
    mask = lengths_mask([4, 6, 0], S)
    att = LocationSensitiveAttention(units, filters=3, kernel_size=3, **options)
    att(s, h)
    _randomize(rng, att.b)
    W, V, w, bias, F, U = (to_numpy(v) for v in (
        att.W_a, att.U_a, att.v_a, att.b, att.location_kernel,
        att.location_projection))
    prev = rng.uniform(0, 1, (b, S)).astype("float32")
    clean = np.where(mask, prev, 0.0)
    garbage = np.where(mask, prev, 5.0).astype("float32")
    ctx, weights = att(s, h, value_mask=mask, alignment_history=garbage,
                       return_attention_scores=True)
    ctx, weights = to_numpy(ctx), to_numpy(weights)
    f = np_location_features(clean, F)                           # eq. 8
    e = np_additive(s, h, W, V, w, f @ U + bias)                 # eq. 9
    alpha = np_location_weights(e, mask, **options)
    np.testing.assert_allclose(weights, alpha, atol=1e-5)
    np.testing.assert_allclose(ctx, np.einsum("bs,bsd->bd", alpha, h), atol=1e-5)
    assert np.all(weights[~mask] == 0) and np.all(ctx[2] == 0)
    assert np.all(np.isfinite(ctx))


# --- 3. Inside AttentionRNN ---------------------------------------------------

def np_decoder(y, mem, mem_mask, t_mask, order, cell, n_states, units, score,
               normalize, cumulative, W_c=None):
    """The decoder loop carrying the alignment history (zeros at first; a
    padded target step keeps every state and outputs zeros).

    bahdanau: alpha_i from s_{i-1} and the history, c_i = sum alpha_ij h_j,
    s_i = cell([y_{i-1}; c_i], s_{i-1}), output [s_{i-1}; c_i].
    luong (input feeding): h_t = cell([y_t; h~_{t-1}]), a_t from h_t and the
    history, h~_t = tanh(W_c [c_t; h_t]).
    The history after a step: a (previous) or history + a (cumulative).
    `cell(x, states) -> (top h, new states)`; `score(query, history)`.
    """
    b, T, _ = y.shape
    states = [np.zeros((b, units))] * n_states
    feed = None if W_c is None else np.zeros((b, W_c.shape[1]))
    hist = np.zeros(mem_mask.shape)
    outs, alphas = [], []
    for t in range(T):
        real = t_mask[:, t:t + 1]
        if order == "bahdanau":
            alpha = normalize(score(states[0], hist), mem_mask)
            c = np.einsum("bs,bsd->bd", alpha, mem)
            _, new = cell(np.concatenate([y[:, t], c], -1), states)
            out = np.concatenate([states[0], c], -1)
        else:
            top, new = cell(np.concatenate([y[:, t], feed], -1), states)
            alpha = normalize(score(top, hist), mem_mask)
            c = np.einsum("bs,bsd->bd", alpha, mem)
            out = np.tanh(np.concatenate([c, top], -1) @ W_c)
            feed = np.where(real, out, feed)
        states = [np.where(real, n, o) for n, o in zip(new, states)]
        hist = np.where(real, hist + alpha if cumulative else alpha, hist)
        outs.append(np.where(real, out, 0.0))
        alphas.append(np.where(real, alpha, 0.0))
    return np.stack(outs, 1), np.stack(alphas, 1), states, hist


DECODERS = {
    # See et al.'s coverage in Bahdanau's decoder (GRU).
    "coverage_bahdanau": lambda: AttentionRNN(
        8, BahdanauAttention(5, coverage=True), cell="gru", order="bahdanau",
        return_state=True),
    # Chorowski et al.'s a_{i-1} in Luong's decoder (LSTM, input feeding).
    "location_luong": lambda: AttentionRNN(
        8, LocationSensitiveAttention(5, filters=3, kernel_size=3,
                                      sharpening=2.0),
        cell="lstm", order="luong", input_feeding=True, attentional_units=6,
        return_state=True),
    # Tacotron 2's cumulative alignment, with smoothing (GRU, Bahdanau).
    "location_cumulative": lambda: AttentionRNN(
        8, LocationSensitiveAttention(5, filters=2, kernel_size=3,
                                      cumulative=True, smoothing=True),
        cell="gru", order="bahdanau", return_state=True),
}


@pytest.mark.parametrize("name", sorted(DECODERS))
def test_decoder_carries_the_history(name):
    """The full pass against the NumPy loop, with target padding (the first
    row shortest) and source padding (the first row not the longest); the
    final state's alignment slot; `step()` from `get_initial_state(...,
    cache=...)` equals the full pass on every real step."""
    rng = np.random.default_rng(2)
    b, T, S = 3, 5, 6
    y, mem = _f32(rng, b, T, 4), _f32(rng, b, S, 6)
    lengths = [2, 5, 4]
    t_mask, mem_mask = lengths_mask(lengths, T), lengths_mask([4, 6, 3], S)
    dec = DECODERS[name]()
    dec(y, mem)
    att, cells = dec.attention, dec.cell.rnn_cells
    _randomize(rng, att.b, *(c.bias for c in cells))
    if getattr(att, "coverage", False):
        _randomize(rng, att.w_c)
    out, final, al = dec(y, mem, inputs_mask=t_mask, memory_mask=mem_mask,
                         return_attention_scores=True)
    out, al = to_numpy(out), to_numpy(al)

    W, V, w, bias = (to_numpy(v) for v in (att.W_a, att.U_a, att.v_a, att.b))
    if isinstance(att, LocationSensitiveAttention):
        F, U = to_numpy(att.location_kernel), to_numpy(att.location_projection)
        extra = lambda hist: np_location_features(hist, F) @ U + bias  # noqa: E731
        normalize = lambda e, m: np_location_weights(  # noqa: E731
            e, m, att.sharpening, att.smoothing)
        cumulative = att.cumulative
    else:
        w_c = to_numpy(att.w_c)
        extra = lambda hist: np_coverage_term(hist, w_c, bias)  # noqa: E731
        normalize, cumulative = np_masked_softmax, True
    weights = [[to_numpy(v) for v in (c.kernel, c.recurrent_kernel, c.bias)]
               for c in cells][0]
    if dec.cell_type == "gru":
        def cell(x, states):
            h = np_gru(x, states[0], *weights)
            return h, [h]
    else:
        def cell(x, states):
            h, c = np_lstm(x, states[0], states[1], *weights)
            return h, [h, c]
    W_c = None if dec.order == "bahdanau" else to_numpy(dec.cell.attentional.kernel)
    ref_out, ref_al, ref_states, ref_hist = np_decoder(
        y, mem, mem_mask, t_mask, dec.order, cell, dec.cell.num_cell_states,
        8, lambda q, hist: np_additive(q, mem, W, V, w, extra(hist)),
        normalize, cumulative, W_c)
    np.testing.assert_allclose(al, ref_al, atol=1e-5)
    np.testing.assert_allclose(out, ref_out, atol=1e-5)
    # return_state: {"cells", ("feed",) "attention": {"alignment"}, "step"}.
    history = to_numpy(final["attention"]["alignment"])
    np.testing.assert_allclose(history, ref_hist, atol=1e-5)
    np.testing.assert_allclose(to_numpy(final["cells"][0]), ref_states[0], atol=1e-5)
    np.testing.assert_array_equal(to_numpy(final["step"])[:, 0], lengths)
    if cumulative:  # c after the last real step: the sum of its weights
        np.testing.assert_allclose(history, al.sum(1), atol=1e-5)
    else:           # a_{i-1}: the last real step's weights
        np.testing.assert_allclose(history, al[np.arange(b), np.array(lengths) - 1],
                                   atol=1e-6)
    # Incremental decoding carries the same slot.
    check_steps_equal_pass(dec, y, mem, mem_mask, out, al, t_mask)


# --- 4. The coverage loss ------------------------------------------------------

def np_coverage_loss(alphas, weight, step_mask, location_mask):
    """See et al. (2017), eq. 12-13: lambda * sum_i min(a_i^t, c_i^t),
    c^t = sum_{t' < t} a^{t'}, over the real positions i, averaged over the
    real steps t."""
    b, T, S = alphas.shape
    total, count = 0.0, 0
    for row in range(b):
        c = np.zeros(S)
        for t in range(T):
            a = alphas[row, t]
            if step_mask[row, t]:
                real = location_mask[row]
                total += np.minimum(a, c)[real].sum()
                count += 1
            c = c + a
    return weight * total / count


def test_coverage_loss_matches_numpy():
    rng = np.random.default_rng(3)
    b, T, S = 3, 4, 5
    # Weight on padded positions too: the location mask must drop it.
    alphas = rng.dirichlet(np.ones(S), (b, T)).astype("float32")
    step_mask, location_mask = lengths_mask([2, 4, 3], T), lengths_mask([4, 5, 2], S)
    expected = np_coverage_loss(alphas, 0.5, step_mask, location_mask)
    got = coverage_loss(alphas, 0.5, step_mask=step_mask, location_mask=location_mask)
    np.testing.assert_allclose(float(to_numpy(got)), expected, rtol=1e-5)
    all_steps, all_positions = np.ones((b, T), bool), np.ones((b, S), bool)
    np.testing.assert_allclose(
        float(to_numpy(coverage_loss(alphas))),
        np_coverage_loss(alphas, 1.0, all_steps, all_positions), rtol=1e-5)
    # The layer: the same loss, its input (or `passthrough`) unchanged.
    reg = CoverageRegularization(weight=0.5)
    passthrough = _f32(rng, b, T, 7)
    out = reg(alphas, step_mask=step_mask, location_mask=location_mask,
              passthrough=passthrough)
    np.testing.assert_array_equal(to_numpy(out), passthrough)
    np.testing.assert_allclose(float(to_numpy(reg.losses[0])), expected, rtol=1e-5)
    config = reg.get_config()
    assert CoverageRegularization.from_config(config).get_config() == config


# --- 5. Saving ----------------------------------------------------------------

SAVED = {
    "bahdanau_coverage": lambda: AttentionRNN(
        6, BahdanauAttention(4, coverage=True)),
    "luong_concat_coverage": lambda: AttentionRNN(
        6, LuongAttention("concat", units=4, coverage=True), order="luong",
        input_feeding=True),
    "location_sensitive": lambda: AttentionRNN(
        6, LocationSensitiveAttention(4, filters=2, kernel_size=3,
                                      cumulative=True, sharpening=1.5,
                                      smoothing=True)),
}


@pytest.mark.parametrize("name", sorted(SAVED))
def test_keras_file_round_trip(name, tmp_path):
    """A functional model with the decoder and the coverage loss: the same
    outputs and loss after `.keras` save and load; the attention's config
    round trip."""
    rng = np.random.default_rng(4)
    y_in = keras.Input((None, 3), name="y")
    m_in = keras.Input((None, 5), name="memory")
    mask_in = keras.Input((None,), dtype="bool", name="memory_mask")
    dec = SAVED[name]()
    out, al = dec(y_in, m_in, memory_mask=mask_in, return_attention_scores=True)
    out = CoverageRegularization(0.5)(al, location_mask=mask_in, passthrough=out)
    model = keras.Model([y_in, m_in, mask_in], [out, al])
    att = dec.attention
    _randomize(rng, att.b)
    x = [_f32(rng, 2, 4, 3), _f32(rng, 2, 6, 5), lengths_mask([3, 6], 6)]
    path = str(tmp_path / "model.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    expected, got = model(x), loaded(x)
    for a, b in zip(expected, got, strict=True):
        np.testing.assert_allclose(to_numpy(a), to_numpy(b), atol=1e-6)
    np.testing.assert_allclose(to_numpy(model.losses[0]), to_numpy(loaded.losses[0]),
                               atol=1e-6)
    assert type(loaded.get_layer(dec.name).attention) is type(att)
    config = att.get_config()
    assert type(att).from_config(config).get_config() == config
    assert config.get("coverage", False) or config.get("channels") == ["cumulative"]

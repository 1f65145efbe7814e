"""Hard monotonic attention (Raffel et al. 2017) and MoChA (Chiu and Raffel
2018) against NumPy written from the papers: the parallel (expected)
alignment against the paper's recursion, the hard alignment, MoChA's
expected (eq. 13) and hard chunks, the two energies; masks, p of exactly 0
and 1, fully padded rows, gradients and mixed_bfloat16; carried by
`AttentionRNN` (step equals the full pass in each mode), in `luong_nmt` and
`bahdanau_nmt` (beam search, `.keras` round trip)."""

import keras
import numpy as np
import pytest

import kerattn
from cases import lengths_mask, np_masked_softmax, to_numpy
from kerattn.layers import (
    AttentionRNN,
    HardMonotonicAttention,
    MonotonicChunkwiseAttention,
    chunkwise_weights,
    monotonic_alignment,
)


def _f32(rng, *shape, scale=1.0):
    return (scale * rng.standard_normal(shape)).astype("float32")


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


# --- NumPy, from the papers ---------------------------------------------------

def np_recursive(p, previous):
    """Raffel et al. (2017), section 2.3: q_ij = (1 - p_{i,j-1}) q_{i,j-1}
    + a_{i-1,j}, a_ij = p_ij q_ij, one position after another."""
    p, previous = p.astype(np.float64), previous.astype(np.float64)
    q, a = np.zeros_like(p), np.zeros_like(p)
    for j in range(p.shape[-1]):
        q[..., j] = previous[..., j] + (
            (1 - p[..., j - 1]) * q[..., j - 1] if j else 0.0)
        a[..., j] = p[..., j] * q[..., j]
    return a


def np_hard(p, start):
    """Test time: one-hot at the first j >= start with p_j >= 0.5, or
    zeros; `start` (rows,) is t_{i-1}, -1 for "stopped nowhere before"."""
    out = np.zeros(p.shape)
    for r in range(p.shape[0]):
        if start[r] < 0:
            continue
        for j in range(start[r], p.shape[1]):
            if p[r, j] >= 0.5:
                out[r, j] = 1.0
                break
    return out


def np_mocha_expected(alpha, u, mask, w):
    """Chiu and Raffel (2018), eq. 13: beta_ij = sum_{k=j}^{j+w-1} alpha_ik
    exp(u_ij) / sum_{l=k-w+1}^{k} exp(u_il), over real positions only."""
    u = np.where(mask, u.astype(np.float64), -np.inf)
    u = u - np.where(np.isfinite(u.max(-1, keepdims=True)),
                     u.max(-1, keepdims=True), 0.0)
    ex = np.where(mask, np.exp(u), 0.0)
    beta = np.zeros(alpha.shape)
    S = alpha.shape[-1]
    for r in range(alpha.shape[0]):
        for j in range(S):
            if not mask[r, j]:
                continue
            for k in range(j, min(j + w, S)):
                den = ex[r, max(k - w + 1, 0):k + 1].sum()
                if den > 0:
                    beta[r, j] += alpha[r, k] * ex[r, j] / den
    return beta


def np_mocha_hard(alpha, u, mask, w):
    """Section 2.2: a softmax over the w positions ending at the stop."""
    beta = np.zeros(alpha.shape)
    for r in range(alpha.shape[0]):
        if alpha[r].max() < 0.5:
            continue
        t = int(alpha[r].argmax())
        window = np.zeros(alpha.shape[1], bool)
        window[max(t - w + 1, 0):t + 1] = True
        beta[r] = np_masked_softmax(u[r], window & mask[r])
    return beta


def np_energy(att, query, h):
    """e_ij of `att` from its weights: Raffel's eq. 16 (Bahdanau) or
    g s^T W h + r (Luong general); (b, Tq, S)."""
    en = att.energy
    r = float(to_numpy(att.score_bias))
    if att.energy_form == "bahdanau":
        W, U, v, g, b = (to_numpy(x) for x in (en.W_a, en.U_a, en.v_a, en.g, en.b))
        hidden = np.tanh((query @ W)[:, :, None] + (h @ U)[:, None] + b)
        return g * hidden @ (v / np.linalg.norm(v)) + r
    g = float(to_numpy(en.scale_factor)) if att.scale else 1.0
    return g * np.einsum("bqd,de,bse->bqs", query, to_numpy(en.W_a), h) + r


def np_chunk_energy(att, query, h):
    en = att.chunk_energy
    if att.energy_form == "bahdanau":
        W, U, v = (to_numpy(x) for x in (en.W_a, en.U_a, en.v_a))
        return np.tanh((query @ W)[:, :, None] + (h @ U)[:, None]) @ v
    return np.einsum("bqd,de,bse->bqs", query, to_numpy(en.W_a), h)


# --- 1. The equations ---------------------------------------------------------

def test_parallel_matches_the_recursion():
    """The closed form against the recursion, to 1e-5: random p with
    some exactly 0 and 1, random previous alignments (not one-hot), padded
    tails at p = 0; one row padded entirely."""
    rng = np.random.default_rng(0)
    mask = lengths_mask([3, 7, 5, 0], 7)
    p = rng.uniform(size=(4, 7))
    p[1, 2], p[1, 4], p[2, 1] = 1.0, 0.0, 1.0
    p = np.where(mask, p, 0.0).astype("float32")
    previous = rng.dirichlet(np.ones(7), size=4) * mask
    previous = previous.astype("float32")
    got = to_numpy(monotonic_alignment(p, previous))
    np.testing.assert_allclose(got, np_recursive(p, previous), atol=1e-5)
    assert np.all(got[~mask] == 0) and np.all(got[3] == 0)
    # Mass is never created: each row sums to at most its previous mass.
    assert np.all(got.sum(-1) <= previous.sum(-1) + 1e-6)


def test_hard_mode_and_binary_probabilities():
    """Hard: the first j >= t_{i-1} with p >= 0.5, zeros when none or
    when the previous step stopped nowhere; with every p 0 or 1 it equals
    the expected alignment."""
    rng = np.random.default_rng(1)
    S = 8
    start = np.array([2, 0, 5, -1, 6])
    previous = np.zeros((5, S), "float32")
    for r, t in enumerate(start):
        if t >= 0:
            previous[r, t] = 1.0
    p = rng.uniform(size=(5, S)).astype("float32")
    p[4, 6:] = 0.2                            # row 4: nothing to stop at
    got = to_numpy(monotonic_alignment(p, previous, mode="hard"))
    np.testing.assert_array_equal(got, np_hard(p, start))
    assert np.all(got[4] == 0) and np.all(got[3] == 0)
    binary = (p >= 0.5).astype("float32")
    expected = to_numpy(monotonic_alignment(binary, previous))
    np.testing.assert_allclose(expected, got, atol=1e-6)
    np.testing.assert_allclose(expected, np_recursive(binary, previous), atol=1e-6)


@pytest.mark.parametrize("w", [1, 3])
def test_chunkwise_expected_and_hard(w):
    """MoChA's eq. 13 (the double sum) and the hard chunk, with padding;
    w = 1 gives back the monotonic alignment."""
    rng = np.random.default_rng(2)
    mask = lengths_mask([4, 7, 0], 7)
    alpha = (rng.dirichlet(np.ones(7), size=3) * 0.9 * mask).astype("float32")
    u = _f32(rng, 3, 7, scale=3.0)
    u[1] = [0.0, -50.0, -50.0, -50.0, -80.0, 3.0, -60.0]  # windows far below the max
    got = to_numpy(chunkwise_weights(alpha, u, mask, w))
    np.testing.assert_allclose(got, np_mocha_expected(alpha, u, mask, w), atol=1e-5)
    assert np.all(got[~mask] == 0) and np.all(np.isfinite(got))
    # The expected chunk keeps the monotonic alignment's mass.
    np.testing.assert_allclose(got.sum(-1), alpha.sum(-1), atol=1e-5)
    if w == 1:
        np.testing.assert_allclose(got, alpha, atol=1e-6)
    hard = np.zeros((3, 7), "float32")
    hard[0, 3], hard[1, 1] = 1.0, 1.0         # row 2 stopped nowhere
    got = to_numpy(chunkwise_weights(hard, u, mask, w, mode="hard"))
    np.testing.assert_allclose(got, np_mocha_hard(hard, u, mask, w), atol=1e-6)


# --- 2. The layers --------------------------------------------------------------

LAYERS = {
    "monotonic_bahdanau": lambda: HardMonotonicAttention(5, seed=0),
    "monotonic_luong": lambda: HardMonotonicAttention(energy="luong", seed=0),
    "mocha_bahdanau": lambda: MonotonicChunkwiseAttention(5, chunk_size=2, seed=0),
    "mocha_luong": lambda: MonotonicChunkwiseAttention(
        energy="luong", chunk_size=3, seed=0),
}


def _reference(att, query, h, mask, previous, mode):
    """(weights, alignment) of `att` for queries (b, Tq, d) with their own
    previous alignments (b, Tq, S), in NumPy."""
    e = np_energy(att, query, h)
    qmask = np.broadcast_to(mask[:, None], e.shape)
    rows = e.reshape(-1, e.shape[-1])
    prev = np.where(qmask, previous, 0.0).reshape(rows.shape)
    m = qmask.reshape(rows.shape)
    if mode == "parallel":
        alpha = np_recursive(np.where(m, sigmoid(rows), 0.0), prev)
    else:
        started = np.cumsum(prev, -1) > 0.5
        start = np.where(started.any(-1), started.argmax(-1), -1)
        alpha = np_hard(np.where(m, sigmoid(rows), 0.0), start)
    if not isinstance(att, MonotonicChunkwiseAttention):
        return alpha.reshape(e.shape), alpha.reshape(e.shape)
    u = np_chunk_energy(att, query, h).reshape(rows.shape)
    chunk = np_mocha_expected if mode == "parallel" else np_mocha_hard
    beta = chunk(alpha, u, m, att.chunk_size)
    return beta.reshape(e.shape), alpha.reshape(e.shape)


@pytest.mark.parametrize("mode", ["parallel", "hard"])
@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layer_matches_numpy(name, mode):
    """Weights, context and alignment of both energies in both modes, for
    one decoder step from the first alignment and for two queries with
    their own histories; garbage history on padding is ignored; the first
    row is the shortest and the last is fully padded."""
    rng = np.random.default_rng(3)
    b, S, dq = 3, 6, 4
    dv = 5 if name.endswith("bahdanau") else dq
    query, h = _f32(rng, b, 2, dq, scale=2.0), _f32(rng, b, S, dv)
    mask = lengths_mask([2, 6, 0], S)
    att = LAYERS[name]()
    att(query, h)
    att.score_bias.assign(0.3)                 # p near 1/2: both sides occur
    if name.endswith("bahdanau"):
        att.energy.b.assign(_f32(rng, 5))
    history = rng.uniform(size=(b, 2, S)).astype("float32")
    history[:, 1] = 0.0
    history[0, 1, 1] = history[1, 1, 3] = 1.0      # one-hot t_{i-1}
    ctx, w, extra = att(query, h, value_mask=mask, alignment_history=history,
                        mode=mode, return_attention_scores=True,
                        return_alignment=True)
    beta, alpha = _reference(att, query, h, mask, history, mode)
    np.testing.assert_allclose(to_numpy(w), beta, atol=1e-5)
    np.testing.assert_allclose(to_numpy(extra["alignment"]), alpha, atol=1e-5)
    np.testing.assert_allclose(to_numpy(ctx), np.einsum("bqs,bsd->bqd", beta, h),
                               atol=1e-5)
    assert np.all(to_numpy(w)[~np.broadcast_to(mask[:, None], w.shape)] == 0)
    # One step, no history: a_0 is one-hot at the first source position.
    first = np.zeros((b, 1, S))
    first[:, 0, 0] = 1.0
    ctx1, w1 = att(query[:, 0], h, value_mask=mask, mode=mode,
                   return_attention_scores=True)
    np.testing.assert_allclose(
        to_numpy(w1), _reference(att, query[:, :1], h, mask, first, mode)[0][:, 0],
        atol=1e-5)
    assert np.all(to_numpy(ctx1)[2] == 0)


@pytest.mark.parametrize("name", ["monotonic_bahdanau", "mocha_luong"])
def test_no_nan_at_the_edges(name):
    """Energies far past +-30 (p of exactly 0 and 1 in float32), fully
    padded rows: finite weights and zeros; a training step through a fully
    padded row leaves every weight finite (no NaN gradient)."""
    rng = np.random.default_rng(4)
    S, d = 5, 4
    att = LAYERS[name]()
    q_in, h_in = keras.Input((2, d)), keras.Input((S, d if "luong" in name else 5))
    m_in = keras.Input((S,), dtype="bool")
    out = att(q_in, h_in, value_mask=m_in)
    model = keras.Model([q_in, h_in, m_in], out)
    model.compile("sgd", "mse")
    h = _f32(rng, 3, S, d if "luong" in name else 5)
    mask = lengths_mask([1, 0, 5], S)
    for value in (1e4, -1e4):
        att.score_bias.assign(value)
        for mode in ("parallel", "hard"):
            _, w = att(_f32(rng, 3, 2, d), h, value_mask=mask, mode=mode,
                       return_attention_scores=True)
            w = to_numpy(w)
            assert np.all(np.isfinite(w)) and np.all(w[1] == 0)
            assert np.all(w.sum(-1) <= 1 + 1e-5)
        att.score_bias.assign(0.0)
        model.train_on_batch([_f32(rng, 3, 2, d), h, mask], np.ones((3, 2, h.shape[-1])))
        assert all(np.all(np.isfinite(to_numpy(v))) for v in model.weights)
    if name.startswith("mocha"):   # chunk energies hundreds apart
        att.chunk_energy.W_a.assign(1e3 * to_numpy(att.chunk_energy.W_a))
        model.train_on_batch([_f32(rng, 3, 2, d), h, mask], np.ones((3, 2, h.shape[-1])))
        assert all(np.all(np.isfinite(to_numpy(v))) for v in model.weights)


def test_mixed_bfloat16():
    """Under mixed_bfloat16 the weights are bfloat16, finite, zero on
    padding and within bfloat16's precision of the float32 layer's."""
    rng = np.random.default_rng(5)
    query, h = _f32(rng, 2, 3, 4), _f32(rng, 2, 6, 5)
    mask = lengths_mask([4, 6], 6)
    ref = MonotonicChunkwiseAttention(5, chunk_size=2)
    expected = to_numpy(ref(query, h, value_mask=mask, return_attention_scores=True)[1])
    try:
        keras.config.set_dtype_policy("mixed_bfloat16")
        att = MonotonicChunkwiseAttention(5, chunk_size=2)
        att(query, h)
    finally:
        keras.config.set_dtype_policy("float32")
    att.set_weights(ref.get_weights())
    for mode in ("parallel", "hard"):
        ctx, w = att(query, h, value_mask=mask, mode=mode, return_attention_scores=True)
        assert "bfloat16" in str(w.dtype) and "bfloat16" in str(ctx.dtype)
        w = to_numpy(keras.ops.cast(w, "float32"))
        assert np.all(np.isfinite(w)) and np.all(w[~np.broadcast_to(mask[:, None], w.shape)] == 0)
        if mode == "parallel":
            np.testing.assert_allclose(w, expected, atol=3e-2)
    _, _, extra = att(query, h, value_mask=mask, return_attention_scores=True,
                      return_alignment=True)
    assert keras.backend.standardize_dtype(extra["alignment"].dtype) == "float32"


def test_noise_in_training_only():
    """Pre-sigmoid noise in training's parallel mode only: two training
    calls differ, inference and the hard mode do not; noise_std=0 turns it
    off; the decoder passes its own draw."""
    rng = np.random.default_rng(6)
    query, h = _f32(rng, 2, 3, 4), _f32(rng, 2, 6, 5)
    att = HardMonotonicAttention(5, noise_std=1.0, seed=1)
    calls = [to_numpy(att(query, h, training=t, mode=m, return_attention_scores=True)[1])
             for t, m in ((True, "parallel"), (True, "parallel"), (False, "parallel"),
                          (True, "hard"), (False, "hard"))]
    assert np.abs(calls[0] - calls[1]).max() > 1e-4
    assert np.abs(calls[0] - calls[2]).max() > 1e-4
    np.testing.assert_array_equal(calls[3], calls[4])
    quiet = HardMonotonicAttention(5, noise_std=0.0)
    quiet(query, h)
    quiet.set_weights(att.get_weights())
    np.testing.assert_allclose(
        to_numpy(quiet(query, h, training=True, return_attention_scores=True)[1]),
        calls[2], atol=1e-6)
    dec = AttentionRNN(6, HardMonotonicAttention(4, seed=2))
    y, mem = _f32(rng, 2, 3, 3), _f32(rng, 2, 6, 5)
    runs = [to_numpy(dec(y, mem, training=t, attention_mode=m))
            for t, m in ((True, None), (True, None), (False, None),
                         (True, "hard"), (False, "hard"))]
    assert np.abs(runs[0] - runs[1]).max() > 1e-4      # drawn outside the loop
    assert np.abs(runs[0] - runs[2]).max() > 1e-4
    np.testing.assert_array_equal(runs[3], runs[4])
    noise = _f32(rng, 2, 3, 6)
    _, given = att(query, h, training=True, score_noise=noise,
                   return_attention_scores=True)
    e = np_energy(att, query, h) + noise
    first = np.zeros((2, 3, 6))
    first[..., 0] = 1.0
    np.testing.assert_allclose(to_numpy(given), np_recursive(sigmoid(e), first),
                               atol=1e-5)


# --- 3. In the recurrent decoder ----------------------------------------------------

DECODERS = {
    "monotonic_bahdanau_order": lambda: AttentionRNN(
        6, HardMonotonicAttention(4, seed=0)),
    "mocha_luong_order": lambda: AttentionRNN(
        6, MonotonicChunkwiseAttention(energy="luong", chunk_size=2, seed=0),
        order="luong", cell="lstm", input_feeding=True),
}


@pytest.mark.parametrize("mode", ["parallel", "hard"])
@pytest.mark.parametrize("name", sorted(DECODERS))
def test_decoder_step_equals_full_pass(name, mode):
    """`step()` from `get_initial_state` equals the full pass in each mode,
    with padded targets and sources (the first row shortest); MoChA's
    carried state is its monotonic alignment (one-hot or zero when hard),
    and every chunk ends at it."""
    rng = np.random.default_rng(7)
    y, mem = _f32(rng, 3, 4, 3), _f32(rng, 3, 7, 6)
    y_mask, m_mask = lengths_mask([2, 4, 3], 4), lengths_mask([3, 7, 5], 7)
    dec = DECODERS[name]()
    dec(y, mem)
    for v in dec.weights:            # the same on every backend
        v.assign(_f32(rng, *v.shape, scale=0.5))
    dec.attention.score_bias.assign(0.0)    # stops past the first position
    out, w = dec(y, mem, inputs_mask=y_mask, memory_mask=m_mask,
                 attention_mode=mode, return_attention_scores=True)
    cache = dec.precompute(mem, m_mask)
    states = dec.get_initial_state(3, cache=cache)
    steps, stops = [], set()
    for t in range(4):
        o, new, wt = dec.step(y[:, t], states, cache, attention_mode=mode)
        keep = y_mask[:, t:t + 1]
        states = keras.tree.map_structure(
            lambda n, s: np.where(keep, to_numpy(n), to_numpy(s)), new, states)
        steps.append((np.where(keep, to_numpy(o), 0), np.where(keep, to_numpy(wt), 0)))
        alignment = to_numpy(new["attention"]["alignment"])
        if mode == "hard":
            assert set(np.unique(alignment)) <= {0.0, 1.0}
            assert np.all(alignment.sum(-1) <= 1)
            chunk = to_numpy(wt)
            for r in np.flatnonzero(alignment.sum(-1)):
                t_i = int(alignment[r].argmax())
                stops.add(t_i)
                assert np.all(chunk[r, t_i + 1:] == 0)
                assert np.all(chunk[r, :max(t_i - 1, 0)] == 0)
    assert mode == "parallel" or max(stops) > 0    # the attention moved
    np.testing.assert_allclose(np.stack([s[0] for s in steps], 1), to_numpy(out),
                               atol=1e-5)
    np.testing.assert_allclose(np.stack([s[1] for s in steps], 1), to_numpy(w),
                               atol=1e-5)
    assert np.all(to_numpy(w)[:, :, 3:][0] == 0)      # row 0: 3 real positions
    # The full pass's default is the parallel mode, step()'s the hard one.
    default_full = dec(y, mem, inputs_mask=y_mask, memory_mask=m_mask)
    parallel = dec(y, mem, inputs_mask=y_mask, memory_mask=m_mask,
                   attention_mode="parallel")
    np.testing.assert_allclose(to_numpy(default_full), to_numpy(parallel), atol=1e-6)
    o_default = dec.step(y[:, 0], dec.get_initial_state(3, cache=cache), cache)[0]
    o_hard = dec.step(y[:, 0], dec.get_initial_state(3, cache=cache), cache,
                      attention_mode="hard")[0]
    np.testing.assert_allclose(to_numpy(o_default), to_numpy(o_hard), atol=1e-6)


def test_attention_mode_is_checked():
    """An unknown mode, and a mode for an attention that has none."""
    y, mem = np.zeros((2, 3, 3), "float32"), np.zeros((2, 4, 6), "float32")
    dec = DECODERS["monotonic_bahdanau_order"]()
    with pytest.raises(ValueError, match="`attention_mode`"):
        dec(y, mem, attention_mode="soft")
    plain = AttentionRNN(6, kerattn.layers.BahdanauAttention(4))
    with pytest.raises(ValueError, match="`attention_mode`"):
        plain(y, mem, attention_mode="hard")


# --- 4. In the zoo ------------------------------------------------------------------

MODELS = {
    "luong_nmt_mocha": lambda: kerattn.zoo.luong_nmt(
        20, 30, preset="tiny", attention="mocha"),
    "bahdanau_nmt_monotonic": lambda: kerattn.zoo.bahdanau_nmt(
        20, 30, preset="tiny", attention="hard-monotonic"),
}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_zoo_models(name, tmp_path):
    """The training graph is the parallel mode (step with it equals the
    graph); beam search decodes hard, and width 1 equals greedy; a `.keras`
    file loads back with the same outputs."""
    keras.utils.set_random_seed(0)
    model = MODELS[name]()
    model.get_layer("decoder").attention.score_bias.assign(0.5)
    src = np.array([[5, 6, 0, 0, 0], [4, 5, 6, 7, 8], [7, 8, 9, 0, 0]], "int32")
    tgt = np.array([[2, 5, 0, 0], [2, 7, 8, 9], [2, 4, 6, 0]], "int32")
    inputs = {"source_ids": src, "target_in_ids": tgt}
    full = to_numpy(model(inputs))
    state, steps = model.encode(src, max_length=4), []
    for t in range(4):
        logits, state, _ = model.step(tgt[:, t], state, t, attention_mode="parallel")
        steps.append(to_numpy(logits))
    real = tgt > 0
    np.testing.assert_allclose(np.stack(steps, 1)[real], full[real], atol=1e-4)
    greedy = model.generate(src, max_length=5)
    beam1 = model.generate(src, max_length=5, strategy="beam", beam_width=1)
    np.testing.assert_array_equal(to_numpy(greedy["tokens"]), to_numpy(beam1["tokens"]))
    beam = model.generate(src, max_length=5, strategy="beam", beam_width=3)
    attention = to_numpy(beam["attention"])
    assert np.all(attention[0, :, 2:] == 0) and np.all(np.isfinite(attention))
    # The chosen hypotheses' attention is what their own tokens give, step
    # by step from the start (hard): the alignment slot followed its beam.
    tokens, lengths = to_numpy(beam["tokens"]), to_numpy(beam["lengths"])
    state, previous = model.encode(src, max_length=5), np.full((3,), 2, "int32")
    for t in range(5):
        _, state, weights = model.step(previous, state, t)
        live = t < lengths
        np.testing.assert_allclose(to_numpy(weights)[live], attention[live, t],
                                   atol=1e-5)
        previous = tokens[:, t].astype("int32")
    path = str(tmp_path / "model.keras")
    model.save(path)
    loaded = kerattn.load_model(path)
    assert type(loaded) is type(model)
    np.testing.assert_allclose(to_numpy(loaded(inputs)), full, atol=1e-6)
    config = model.get_layer("decoder").attention.get_config()
    attention_type = type(model.get_layer("decoder").attention)
    assert attention_type.from_config(config).get_config() == config


def test_decoder_keeps_the_alignment_dtype():
    """Under mixed_bfloat16 the decoder carries a monotonic attention's
    alignment in float32 (full pass, `step()`, the declared output spec)
    and its outputs in bfloat16; a coverage attention of another policy
    than its decoder sums its history in one dtype."""
    rng = np.random.default_rng(8)
    y, mem = _f32(rng, 2, 4, 3), _f32(rng, 2, 5, 6)
    mask = lengths_mask([3, 5], 5)
    try:
        keras.config.set_dtype_policy("mixed_bfloat16")
        dec = AttentionRNN(6, MonotonicChunkwiseAttention(4), return_state=True)
        out, states = dec(y, mem, memory_mask=mask, training=True)
        cache = dec.precompute(mem, mask)
        _, stepped, _ = dec.step(y[:, 0], dec.get_initial_state(2, cache=cache), cache)
        spec = dec.compute_output_spec(keras.KerasTensor((2, 4, 3)),
                                       keras.KerasTensor((2, 5, 6)))[1]
    finally:
        keras.config.set_dtype_policy("float32")
    dtype = keras.backend.standardize_dtype
    assert dtype(out.dtype) == "bfloat16"
    assert (dtype(states["attention"]["alignment"].dtype)
            == dtype(stepped["attention"]["alignment"].dtype)
            == spec["attention"]["alignment"].dtype == "float32")
    assert np.all(np.isfinite(to_numpy(keras.ops.cast(out, "float32"))))
    mixed = AttentionRNN(6, kerattn.layers.BahdanauAttention(
        4, coverage=True, dtype="mixed_bfloat16"), return_state=True)
    out, states = mixed(y, mem, memory_mask=mask)
    assert dtype(states["attention"]["alignment"].dtype) == "float32"
    np.testing.assert_allclose(to_numpy(states["attention"]["alignment"]).sum(-1),
                               [4.0, 4.0], atol=0.05)


@pytest.mark.parametrize("cls", ["HardMonotonicAttention", "MonotonicChunkwiseAttention",
                                 "StepwiseMonotonicAttention"])
def test_tfa_defaults_score_as_tfa_does(cls):
    """`with_tfa_defaults`: tfa's `_bahdanau_score(normalize=False)` and
    `_luong_score(scale=False)` (tensorflow_addons/seq2seq/
    attention_wrapper.py) plus `score_bias_init=0`, `sigmoid_noise=0`: the
    energy is `v^T tanh(W q + U h)` (no `g`, no `b`) or `q^T W h`, and `r`
    starts at 0; both round-trip through the config."""
    import kerattn.layers as kl

    rng = np.random.default_rng(0)
    q, h = rng.standard_normal((2, 3, 4)).astype("float32"), \
        rng.standard_normal((2, 5, 6)).astype("float32")
    layer_cls = getattr(kl, cls)
    for energy, units in (("bahdanau", 3), ("luong", None)):
        layer = layer_cls.with_tfa_defaults(units, energy=energy)
        layer(q, h)
        config = layer.get_config()
        assert (config["noise_std"], config["score_bias_init"], config["scale"]) == (
            0.0, 0.0, False)
        assert config.get("normalize", True) == (energy != "bahdanau")
        assert float(to_numpy(layer.score_bias)) == 0.0
        e, _ = layer._energies(keras.ops.convert_to_tensor(q),
                               layer.project_key(keras.ops.convert_to_tensor(h)))
        if energy == "bahdanau":
            E = layer.energy
            assert not hasattr(E, "b") and not hasattr(E, "g")
            want = np.tanh((q @ to_numpy(E.W_a))[:, :, None] + (h @ to_numpy(E.U_a))[:, None]
                           ) @ to_numpy(E.v_a)
        else:
            want = np.einsum("bqd,de,bse->bqs", q, to_numpy(layer.energy.W_a), h)
        np.testing.assert_allclose(to_numpy(e), want, atol=1e-5)
        again = layer_cls.from_config(config).get_config()
        assert again == config
    assert "normalize" not in layer_cls(3).get_config()   # the paper's default: as before
    with pytest.raises(ValueError, match="`normalize`"):
        layer_cls(energy="luong", normalize=False)

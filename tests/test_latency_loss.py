"""MILk's latency loss (Arivazhagan et al. 2019) against NumPy written from
the definitions: the expected delays of a monotonic attention's expected
alignment and Cherry and Foster's (2019) differentiable average lagging,
by its recursion; masks and fully padded rows; the layer; `luong_nmt`'s
`latency_loss_weight` against a loop over the model's own decoding step;
its gradient moves the stops earlier; a `.keras` round trip that still
streams."""

import keras
import numpy as np
import pytest

import kerattn
from cases import lengths_mask, to_numpy
from kerattn.layers import LatencyRegularization
from kerattn.losses import latency_loss


# --- NumPy, from the papers ---------------------------------------------------

def np_dal(alphas, weight, step_mask, location_mask):
    """Per row: g_i = sum_j j a_ij + (1 - sum_j a_ij) |x| (MILk's expected
    delay; the mass that stops nowhere reads the whole source), then Cherry
    and Foster's recursion g'_1 = g_1, g'_i = max(g_i, g'_{i-1} + |x|/|y|),
    DAL = 1/|y| sum_i (g'_i - (i - 1) |x|/|y|); the mean over rows with a
    real step."""
    rows = []
    for a, steps, places in zip(alphas.astype(np.float64), step_mask,
                                location_mask):
        x, y = int(places.sum()), int(steps.sum())
        if y == 0:
            continue
        a = a[:y, :x]
        g = a @ np.arange(1, x + 1) + (1.0 - a.sum(-1)) * x
        rate = x / y
        g_prime, total = None, 0.0
        for i in range(y):
            g_prime = g[i] if i == 0 else max(g[i], g_prime + rate)
            total += g_prime - i * rate
        rows.append(total / y)
    return weight * float(np.mean(rows)) if rows else 0.0


def _alphas(rng, b, T, S):
    """Sub-stochastic rows (some mass stops nowhere), weight on padding too:
    the masks must drop it."""
    a = rng.dirichlet(np.ones(S + 1), (b, T))[..., :S]
    return a.astype("float32")


# --- the loss and the layer ---------------------------------------------------

def test_latency_loss_matches_the_recursion():
    rng = np.random.default_rng(0)
    b, T, S = 4, 5, 6
    alphas = _alphas(rng, b, T, S)
    # Not the longest row first; the last row has no real step at all.
    step_mask = lengths_mask([3, 5, 2, 0], T)
    location_mask = lengths_mask([4, 6, 2, 3], S)
    expected = np_dal(alphas, 0.3, step_mask, location_mask)
    got = to_numpy(latency_loss(alphas, 0.3, step_mask=step_mask,
                                location_mask=location_mask))
    assert np.isfinite(got)
    np.testing.assert_allclose(float(got), expected, rtol=1e-5)
    full_t, full_s = np.ones((b, T), bool), np.ones((b, S), bool)
    np.testing.assert_allclose(float(to_numpy(latency_loss(alphas))),
                               np_dal(alphas, 1.0, full_t, full_s), rtol=1e-5)
    # A batch without a real step: zero, not NaN.
    none = to_numpy(latency_loss(alphas, step_mask=np.zeros((b, T), bool)))
    assert float(none) == 0.0
    # The layer: the same loss, its input (or `passthrough`) unchanged.
    reg = LatencyRegularization(weight=0.3)
    passthrough = rng.standard_normal((b, T, 7)).astype("float32")
    out = reg(alphas, step_mask=step_mask, location_mask=location_mask,
              passthrough=passthrough)
    np.testing.assert_array_equal(to_numpy(out), passthrough)
    np.testing.assert_allclose(float(to_numpy(reg.losses[0])), expected, rtol=1e-5)
    config = reg.get_config()
    assert LatencyRegularization.from_config(config).get_config() == config


def test_waiting_once_is_paid_once():
    """DAL's `g'`: outputs bunched behind a wait cannot catch up (each is
    at least the ideal pace behind the one before): 3, where the delays'
    plain mean minus the ideal pace would give 2."""
    eye = np.eye(4, dtype="float32")
    waits_first = eye[[2, 2, 3, 3]][None]      # g = (3, 3, 4, 4), |x| = |y| = 4
    # g' = (3, 4, 5, 6); g' - (i - 1) = (3, 3, 3, 3)
    assert float(to_numpy(latency_loss(waits_first))) == pytest.approx(3.0)
    paced = eye[None]                          # g = (1, 2, 3, 4): 1 each
    assert float(to_numpy(latency_loss(paced))) == pytest.approx(1.0)


# --- in luong_nmt ------------------------------------------------------------

def _model(weight, **kwargs):
    model = kerattn.zoo.luong_nmt(12, 10, attention="hard-monotonic",
                                  preset="g2p-streaming", units=8,
                                  embedding_dim=6, lookahead=1,
                                  latency_loss_weight=weight, **kwargs)
    rng = np.random.default_rng(1)
    model.set_weights([rng.normal(0, 0.5, w.shape).astype("float32")
                       for w in model.get_weights()])
    model.get_layer("decoder").attention.score_bias.assign(0.5)
    return model


SOURCE = np.array([[4, 5, 6, 0, 0], [6, 7, 8, 9, 5], [5, 4, 0, 0, 0]], "int32")
TARGET_IN = np.array([[2, 4, 5, 0], [2, 6, 7, 8], [2, 7, 0, 0]], "int32")


def test_luong_nmt_adds_the_latency_of_its_expected_alignment():
    """The graph's loss term equals NumPy's DAL of the expected alignments
    that the model's own step (in "parallel" mode) gives, step by step."""
    model = _model(0.25)
    model({"source_ids": SOURCE, "target_in_ids": TARGET_IN})
    assert len(model.losses) == 1
    state = model.encode(SOURCE)
    alphas = []
    for t in range(TARGET_IN.shape[1]):
        _, state, weights = model.step(TARGET_IN[:, t], state, t,
                                       attention_mode="parallel")
        alphas.append(to_numpy(weights))
    alphas = np.stack(alphas, axis=1)                      # (B, T, S)
    assert 0.05 < alphas.sum(-1).mean() < 0.95       # stops, and stops nowhere
    expected = np_dal(alphas, 0.25, TARGET_IN > 0, SOURCE > 0)
    np.testing.assert_allclose(float(to_numpy(model.losses[0])), expected,
                               rtol=1e-4)
    assert model.can_stream() == (True, "")


def test_the_latency_gradient_moves_the_stops_earlier():
    """Plain SGD on the latency term alone (zero cross-entropy weight):
    the expected delay falls. The same steps on the cross-entropy alone
    would not say anything about delay; this is what the term adds."""
    model = _model(1.0)
    inputs = {"source_ids": SOURCE, "target_in_ids": TARGET_IN}
    model.compile(keras.optimizers.SGD(0.5),
                  loss=lambda y_true, y_pred: 0.0 * keras.ops.sum(y_pred))
    model(inputs)
    before = float(to_numpy(model.losses[0]))
    model.fit(inputs, np.zeros_like(TARGET_IN), epochs=20, verbose=0,
              batch_size=3)
    model(inputs)
    after = float(to_numpy(model.losses[0]))
    assert after < before - 0.2, (before, after)


def test_a_saved_latency_model_keeps_its_loss_and_streams(tmp_path):
    model = _model(0.25)
    inputs = {"source_ids": SOURCE, "target_in_ids": TARGET_IN}
    model(inputs)
    path = str(tmp_path / "latency.keras")
    model.save(path)
    loaded = kerattn.load_model(path)
    loaded(inputs)
    np.testing.assert_allclose(to_numpy(loaded.losses[0]),
                               to_numpy(model.losses[0]), rtol=1e-6)
    assert loaded.can_stream() == (True, "") and loaded.lookahead() == 1
    before, after = (to_numpy(m.generate(SOURCE, max_length=5, bos_id=2,
                                         eos_id=3)["tokens"])
                     for m in (model, loaded))
    np.testing.assert_array_equal(after, before)

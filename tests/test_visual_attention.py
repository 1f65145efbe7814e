import keras
import numpy as np
import pytest

from cases import lengths_mask, np_masked_softmax, to_numpy
from kerattn.layers import (
    DoublyStochasticRegularization,
    HardVisualAttention,
    MovingAverageBaseline,
    SoftVisualAttention,
    doubly_stochastic_penalty,
    hard_attention_surrogate_loss,
)


def np_soft(h, a, p, gating, mask=None):
    """Xu et al. (2015), section 4.2 with the gating scalar of 4.2.1.

    e_ti = w^T tanh(W_a a_i + W_h h_{t-1} + b); alpha = softmax_i(e);
    z_t = beta_t sum_i alpha_ti a_i, beta_t = sigmoid(W_beta h_{t-1} + b_beta).
    """
    hidden = (h @ p["W_h"])[:, :, None] + (a @ p["W_a"] + p["b"])[:, None]
    alpha = np_masked_softmax(np.tanh(hidden) @ p["w"], mask)
    z = alpha @ a
    if gating:
        z = z / (1 + np.exp(-(h @ p["W_beta"] + p["b_beta"])))
    return z, alpha


def params(layer):
    return {v.name: to_numpy(v) for v in layer.weights}


@pytest.mark.parametrize("gating", [False, True])
def test_soft_matches_numpy(gating):
    rng = np.random.default_rng(0)
    h = rng.standard_normal((3, 4, 6)).astype("float32")
    a = rng.standard_normal((3, 10, 5)).astype("float32")
    mask = lengths_mask([10, 10, 4], 10)
    layer = SoftVisualAttention(units=7, gating=gating)
    layer(h, a)
    for w in layer.weights:
        w.assign(rng.standard_normal(w.shape).astype("float32") * 0.5)
    z, alpha = layer(h, a, value_mask=mask, return_attention_scores=True)
    ref_z, ref_alpha = np_soft(h, a, params(layer), gating, mask[:, None])
    np.testing.assert_allclose(to_numpy(alpha), ref_alpha, atol=1e-5)
    np.testing.assert_allclose(to_numpy(z), ref_z, atol=1e-5)
    if gating:
        beta = 1 / (1 + np.exp(-(h @ params(layer)["W_beta"] +
                                 params(layer)["b_beta"])))
        np.testing.assert_allclose(to_numpy(layer.gate(h)), beta, atol=1e-5)


def test_hard_samples_are_one_hot_and_average_to_soft_weights():
    rng = np.random.default_rng(1)
    n = 4000
    h = np.repeat(rng.standard_normal((1, 6)).astype("float32"), n, 0)
    a = np.repeat(rng.standard_normal((1, 5, 3)).astype("float32"), n, 0)
    mask = np.repeat(lengths_mask([4], 5), n, 0)  # location 4 is padding
    layer = HardVisualAttention(units=4, gating=False, seed=3)
    z, alpha, info = layer(h, a, value_mask=mask, training=True,
                           return_attention_scores=True, return_sample=True)
    sample, alpha = to_numpy(info["sample"]), to_numpy(alpha)
    assert sample.shape == (n, 5)
    np.testing.assert_array_equal(sample.sum(-1), 1.0)
    assert set(np.unique(sample)) <= {0.0, 1.0}
    assert np.all(sample[:, 4] == 0)  # never samples padding
    # The empirical frequencies approach alpha (4000 draws: se <= 0.008).
    np.testing.assert_allclose(sample.mean(0), alpha[0], atol=0.03)
    # z is the sampled annotation vector; log_prob is log alpha at it.
    np.testing.assert_allclose(to_numpy(z), np.einsum("bl,bld->bd", sample, a),
                               atol=1e-6)
    np.testing.assert_allclose(to_numpy(info["log_prob"]),
                               np.log((sample * alpha).sum(-1)), atol=1e-5)
    ent = -(alpha[0][:4] * np.log(alpha[0][:4])).sum()
    np.testing.assert_allclose(to_numpy(info["entropy"])[0], ent, atol=1e-5)


def test_hard_samples_from_given_noise_are_gumbel_max():
    """With `sample_noise` (what AttentionRNN passes inside its loop) the
    location is argmax(log alpha - log(-log u)): the same distribution,
    checked exactly against NumPy and by frequency against alpha."""
    rng = np.random.default_rng(2)
    n = 4000
    h = np.repeat(rng.standard_normal((1, 6)).astype("float32"), n, 0)
    a = np.repeat(rng.standard_normal((1, 5, 3)).astype("float32"), n, 0)
    mask = np.repeat(lengths_mask([4], 5), n, 0)  # location 4 is padding
    u = rng.random((n, 5)).astype("float32")
    layer = HardVisualAttention(units=4, gating=False, seed=3)
    _, alpha, info = layer(h, a, value_mask=mask, training=True, sample_noise=u,
                           return_attention_scores=True, return_sample=True)
    sample, alpha = to_numpy(info["sample"]), to_numpy(alpha)
    logits = np.where(alpha > 0, np.log(np.maximum(alpha, 1e-12)), -1e9)
    expected = np.argmax(logits - np.log(-np.log(np.clip(u, 1e-7, 1 - 1e-7))), -1)
    np.testing.assert_array_equal(sample.argmax(-1), expected)
    np.testing.assert_array_equal(sample.sum(-1), 1.0)
    assert np.all(sample[:, 4] == 0)
    np.testing.assert_allclose(sample.mean(0), alpha[0], atol=0.03)


def test_hard_inference_expectation_and_argmax():
    rng = np.random.default_rng(2)
    h = rng.standard_normal((2, 3, 6)).astype("float32")
    a = rng.standard_normal((2, 7, 4)).astype("float32")
    hard = HardVisualAttention(units=5, seed=0)
    hard(h, a)
    soft = SoftVisualAttention(units=5)
    soft(h, a)
    soft.set_weights(hard.get_weights())
    z_soft = to_numpy(soft(h, a))
    np.testing.assert_allclose(to_numpy(hard(h, a, training=False)), z_soft,
                               atol=1e-6)
    argmax = HardVisualAttention(units=5, inference="argmax")
    argmax(h, a)
    argmax.set_weights(hard.get_weights())
    z, alpha = argmax(h, a, return_attention_scores=True)
    idx = to_numpy(alpha).argmax(-1)
    beta = to_numpy(argmax.gate(h))
    expected = np.take_along_axis(a[:, None], idx[..., None, None], 2)[:, :, 0]
    np.testing.assert_allclose(to_numpy(z), expected * beta, atol=1e-5)


def test_hard_sampling_is_seeded():
    rng = np.random.default_rng(3)
    h = rng.standard_normal((64, 6)).astype("float32")
    a = rng.standard_normal((64, 9, 3)).astype("float32")
    first = HardVisualAttention(units=4, seed=11)
    second = HardVisualAttention(units=4, seed=11)
    first(h, a)
    second(h, a)
    second.set_weights(first.get_weights())
    _, i1 = first(h, a, training=True, return_sample=True)
    _, i2 = second(h, a, training=True, return_sample=True)
    np.testing.assert_array_equal(to_numpy(i1["sample"]), to_numpy(i2["sample"]))


def test_doubly_stochastic_penalty_matches_numpy():
    rng = np.random.default_rng(4)
    alphas = rng.random((3, 5, 6)).astype("float32")
    alphas /= alphas.sum(-1, keepdims=True)
    steps = lengths_mask([5, 3, 1], 5)
    ref = np.mean(np.sum((1 - (alphas * steps[..., None]).sum(1)) ** 2, -1)) * 0.7
    got = doubly_stochastic_penalty(alphas, lam=0.7, step_mask=steps)
    np.testing.assert_allclose(float(to_numpy(got)), ref, rtol=1e-5)
    layer = DoublyStochasticRegularization(lam=0.7)
    inputs = keras.Input((5, 6))
    model = keras.Model(inputs, layer(inputs))
    model(alphas)
    np.testing.assert_allclose(
        float(to_numpy(model.losses[0])),
        np.mean(np.sum((1 - alphas.sum(1)) ** 2, -1)) * 0.7, rtol=1e-5)


def test_moving_average_baseline_and_surrogate_loss():
    baseline = MovingAverageBaseline(decay=0.9)
    r1 = np.array([-2.0, -4.0], "float32")
    b1 = baseline(r1, training=True)
    np.testing.assert_allclose(to_numpy(b1), [0.0, 0.0])
    b2 = baseline(np.array([-1.0, -1.0], "float32"), training=True)
    np.testing.assert_allclose(to_numpy(b2), [-0.3, -0.3], atol=1e-6)
    np.testing.assert_allclose(float(to_numpy(baseline.baseline)),
                               0.9 * -0.3 + 0.1 * -1.0, atol=1e-6)
    ll = np.array([-1.0, -3.0], "float32")
    lp = np.array([[-0.5, -0.2], [-1.0, -0.1]], "float32")
    ent = np.array([[0.3, 0.1], [0.2, 0.2]], "float32")
    got = hard_attention_surrogate_loss(ll, lp, ent, np.float32(-2.0),
                                        lambda_r=0.5, lambda_e=0.1)
    ref = -np.mean(ll + 0.5 * (ll + 2.0) * lp.sum(-1) + 0.1 * ent.sum(-1))
    np.testing.assert_allclose(float(to_numpy(got)), ref, rtol=1e-5)


def test_bad_arguments():
    with pytest.raises(ValueError, match="`units`"):
        SoftVisualAttention(units=0)
    with pytest.raises(ValueError, match="`inference`"):
        HardVisualAttention(units=3, inference="mode")
    with pytest.raises(ValueError, match="`lam`"):
        DoublyStochasticRegularization(lam=-1.0)
    with pytest.raises(ValueError, match="`alphas` must have rank 3"):
        doubly_stochastic_penalty(np.zeros((2, 3), "float32"))
    with pytest.raises(ValueError, match="`value` must have rank 3"):
        SoftVisualAttention(units=3)(np.zeros((2, 4), "float32"),
                                     np.zeros((2, 4), "float32"))


def test_expected_context_rows_match_numpy():
    """`expectation_rate` (section 4.1): in training, a row whose coin is
    below the rate takes the expected context `alpha @ a` (the soft
    output) and samples nothing; the others take their sampled location."""
    rng = np.random.default_rng(5)
    h = rng.standard_normal((4, 3, 6)).astype("float32")
    a = rng.standard_normal((4, 7, 5)).astype("float32")
    mask = lengths_mask([7, 5, 6, 3], 7)
    u = rng.random((4, 3, 7)).astype("float32")
    coin = np.array([0.2, 0.7, 0.45, 0.9], "float32")   # rate 0.5: rows 0, 2
    layer = HardVisualAttention(units=4, gating=False, expectation_rate=0.5, seed=1)
    z, alpha, info = layer(h, a, value_mask=mask, training=True, sample_noise=u,
                           expectation_noise=coin, return_attention_scores=True,
                           return_sample=True)
    z, alpha, sample = to_numpy(z), to_numpy(alpha), to_numpy(info["sample"])
    ref_z, ref_alpha = np_soft(h, a, params(layer), False, mask[:, None])
    np.testing.assert_allclose(alpha, ref_alpha, atol=1e-5)
    logits = np.where(ref_alpha > 0, np.log(np.maximum(ref_alpha, 1e-12)), -1e9)
    index = np.argmax(logits - np.log(-np.log(np.clip(u, 1e-7, 1 - 1e-7))), -1)
    for row in range(4):
        if coin[row] < 0.5:
            np.testing.assert_allclose(z[row], ref_z[row], atol=1e-5)
            assert np.all(sample[row] == 0)
            assert np.all(to_numpy(info["log_prob"])[row] == 0)
        else:
            np.testing.assert_array_equal(sample[row].argmax(-1), index[row])
            np.testing.assert_allclose(z[row], a[row][index[row]], atol=1e-6)
    # Rate 0 always samples; at inference the coin plays no part.
    layer.expectation_rate = 0.0
    _, info = layer(h, a, value_mask=mask, training=True, sample_noise=u,
                    expectation_noise=coin, return_sample=True)
    np.testing.assert_array_equal(to_numpy(info["sample"]).sum(-1), 1.0)
    layer.expectation_rate = 1.0
    np.testing.assert_allclose(
        to_numpy(layer(h, a, value_mask=mask, training=False)), ref_z, atol=1e-5)


def test_expected_context_is_one_coin_per_caption():
    """Inside AttentionRNN each caption takes the expected context at every
    step or at none, about half of them at rate 0.5 (the coin drawn once
    per row, outside the loop)."""
    from kerattn.layers import AttentionRNN

    rng = np.random.default_rng(6)
    batch, steps = 96, 4
    a = rng.standard_normal((batch, 5, 3)).astype("float32")
    y = rng.standard_normal((batch, steps, 2)).astype("float32")
    decoder = AttentionRNN(
        6, HardVisualAttention(4, expectation_rate=0.5, seed=3), cell="lstm",
        order="bahdanau", output_state="current")
    _, alphas, samples = decoder(y, a, return_attention_scores=True,
                                 return_attention_samples=True, training=True)
    per_step = to_numpy(samples).sum(-1)                  # (batch, steps)
    assert set(np.unique(per_step)) == {0.0, 1.0}
    expected_rows = per_step.sum(-1) == 0
    assert np.all(per_step[~expected_rows] == 1)          # all steps or none
    assert 0.3 < expected_rows.mean() < 0.7, expected_rows.mean()
    # At inference nothing is sampled per row: every row's context is soft.
    _, _, samples = decoder(y, a, return_attention_scores=True,
                            return_attention_samples=True, training=False)
    np.testing.assert_array_equal(to_numpy(samples).sum(-1), 1.0)


def test_reinforce_leaves_out_captions_without_samples():
    """A caption that sampled nothing (expected context) gets no
    score-function term and does not move the baseline (NumPy reference)."""
    from kerattn.layers import HardAttentionReinforce

    rng = np.random.default_rng(7)
    logits = rng.standard_normal((3, 4, 6)).astype("float32")
    targets = np.array([[1, 2, 3, 0], [4, 5, 0, 0], [2, 2, 2, 5]], "int32")
    alphas = rng.random((3, 4, 5)).astype("float32")
    alphas /= alphas.sum(-1, keepdims=True)
    samples = np.eye(5, dtype="float32")[rng.integers(0, 5, (3, 4))]
    samples[1] = 0.0                                    # row 1: expected context
    layer = HardAttentionReinforce(lambda_r=1.0, lambda_e=0.0, decay=0.9)
    layer(logits, targets, alphas, samples, training=True)
    steps = (targets != 0).astype("float32")
    log_softmax = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    reward = (np.take_along_axis(log_softmax, targets[..., None], -1)[..., 0]
              * steps).sum(-1)
    log_p_s = ((samples * np.log(alphas)).sum(-1) * steps).sum(-1)
    ref_loss = -np.sum(reward * log_p_s) / steps.sum()   # the baseline was 0
    np.testing.assert_allclose(float(to_numpy(layer.losses[0])), ref_loss, rtol=1e-4)
    np.testing.assert_allclose(float(to_numpy(layer.baseline.baseline)),
                               0.1 * reward[[0, 2]].mean(), rtol=1e-5)
    baseline = MovingAverageBaseline(decay=0.9)
    baseline(np.array([-1.0, -3.0], "float32"), training=True,
             keep=np.array([False, False]))
    assert float(to_numpy(baseline.baseline)) == 0.0    # none kept: no update

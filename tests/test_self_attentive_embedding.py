"""`SelfAttentiveEmbedding` (Lin et al. 2017) against the paper's equations
in NumPy, on every backend: A, M and the penalty P with padding, a fully
padded sentence, training with the penalty, `.keras` round trip."""

import keras
import numpy as np
import pytest

from cases import lengths_mask, np_masked_softmax, to_numpy
from kerattn.layers import SelfAttentiveEmbedding


def np_embedding(H, mask, W_s1, W_s2):
    """Lin et al. (2017), eq. 6-8, one sentence at a time over its real
    words: A = softmax(W_s2 tanh(W_s1 H^T)), M = A H, P = ||A A^T - I||_F^2
    (the layer's kernels are the paper's matrices transposed: `H W_s1`)."""
    b, n, _ = H.shape
    r = W_s2.shape[1]
    A = np.zeros((b, r, n))
    P = []
    for i in range(b):
        real = mask[i]
        if not real.any():
            continue
        scores = (np.tanh(H[i, real] @ W_s1) @ W_s2).T      # (r, n_i)
        A[i][:, real] = np_masked_softmax(scores)
        P.append(((A[i] @ A[i].T - np.eye(r)) ** 2).sum())
    M = A @ H
    return A, M, np.mean(P)


def test_matches_the_papers_equations():
    """Padding (the first row not the longest) and a fully padded sentence:
    A, M and the added penalty equal NumPy; the padded words and the empty
    sentence get exactly zero weight, never NaN."""
    rng = np.random.default_rng(0)
    H = rng.normal(size=(4, 6, 5)).astype("float32")
    mask = lengths_mask([3, 6, 0, 4], 6)
    layer = SelfAttentiveEmbedding(units=7, hops=3, penalty=0.5)
    M, A = layer(H, mask=mask, return_attention_scores=True)
    ref_A, ref_M, ref_P = np_embedding(H, mask, to_numpy(layer.W_s1), to_numpy(layer.W_s2))
    np.testing.assert_allclose(to_numpy(A), ref_A, atol=1e-5)
    np.testing.assert_allclose(to_numpy(M), ref_M, atol=1e-5)
    assert np.all(to_numpy(A)[~np.broadcast_to(mask[:, None], A.shape)] == 0)
    assert np.all(to_numpy(M)[2] == 0) and np.all(np.isfinite(to_numpy(M)))
    (loss,) = layer.losses
    np.testing.assert_allclose(float(to_numpy(loss)), 0.5 * ref_P, rtol=1e-5)


def test_the_implicit_mask_and_no_penalty():
    """`Embedding(mask_zero=True)`'s mask is honoured; `penalty=0` adds no
    loss; without a mask every word is read."""
    rng = np.random.default_rng(1)
    ids = np.array([[3, 4, 0, 0], [5, 6, 7, 8]])
    embed = keras.layers.Embedding(10, 5, mask_zero=True)
    layer = SelfAttentiveEmbedding(units=4, hops=2)
    _, A = layer(embed(ids), return_attention_scores=True)
    assert np.all(to_numpy(A)[0, :, 2:] == 0) and not layer.losses
    H = rng.normal(size=(2, 4, 5)).astype("float32")
    _, A = layer(H, return_attention_scores=True)
    ref_A, _, _ = np_embedding(H, np.ones((2, 4), bool), to_numpy(layer.W_s1),
                               to_numpy(layer.W_s2))
    np.testing.assert_allclose(to_numpy(A), ref_A, atol=1e-5)


def _penalty_only(y_true, y_pred):
    return 0.0 * keras.ops.sum(y_pred)   # the model's loss is its layer's P


def test_the_penalty_trains_the_hops_apart(tmp_path):
    """A classifier (the paper's shape: embeddings -> BiLSTM -> the
    embedding -> flatten -> dense) trained on the penalty alone: it falls,
    and the hops' overlap `A A^T` moves toward the identity; the `.keras`
    file gives the same outputs."""
    keras.utils.set_random_seed(0)
    ids = keras.Input((8,), dtype="int32")
    h = keras.layers.Embedding(20, 6, mask_zero=True)(ids)
    h = keras.layers.Bidirectional(keras.layers.LSTM(4, return_sequences=True))(h)
    m = SelfAttentiveEmbedding(units=5, hops=3, penalty=1.0, name="sae")(h)
    out = keras.layers.Dense(2)(keras.layers.Flatten()(m))
    model = keras.Model(ids, out)
    rng = np.random.default_rng(2)
    x = rng.integers(1, 20, (32, 8)).astype("int32")
    x[:, 6:] = 0
    model.compile(optimizer=keras.optimizers.Adam(0.05), loss=_penalty_only)
    before = model.evaluate(x, np.zeros(32), verbose=0)
    model.fit(x, np.zeros(32), epochs=15, batch_size=32, verbose=0)
    after = model.evaluate(x, np.zeros(32), verbose=0)
    assert after < 0.5 * before, (before, after)
    path = tmp_path / "sae.keras"
    model.save(path)
    loaded = keras.saving.load_model(path, compile=False)
    np.testing.assert_allclose(to_numpy(loaded(x)), to_numpy(model(x)), atol=1e-5)
    assert loaded.get_layer("sae").get_config()["penalty"] == 1.0


@pytest.mark.parametrize("make,match", [
    (lambda: SelfAttentiveEmbedding(0), "`units`"),
    (lambda: SelfAttentiveEmbedding(4, hops=0), "`hops`"),
    (lambda: SelfAttentiveEmbedding(4, penalty=-1.0), "`penalty`"),
    (lambda: SelfAttentiveEmbedding(4)(np.zeros((2, 5), "float32")), "`inputs` must have rank 3"),
    (lambda: SelfAttentiveEmbedding(4)(np.zeros((2, 5, 3), "float32"),
                                       mask=np.ones((2, 4), bool)), "`mask` must have shape"),
])
def test_bad_input_is_named(make, match):
    with pytest.raises(ValueError, match=match):
        make()

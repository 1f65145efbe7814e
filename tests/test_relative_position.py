"""`MultiHeadAttention(max_relative_position=k)`: Shaw, Uszkoreit and
Vaswani (2018) in NumPy on every backend, with and without the causal
mask, padding, the cached step equal to the full pass, `.keras` round
trip, bad input named."""

import keras
import numpy as np
import pytest

from cases import lengths_mask, np_masked_softmax, to_numpy
from kerattn.layers import MultiHeadAttention


def np_relative_mha(layer, x, memory, mask, k):
    """Section 3: per head, e_ij = x_i W^Q (x_j W^K + a^K_ij)^T / sqrt(d_z),
    z_i = sum_j alpha_ij (x_j W^V + a^V_ij), a^*_ij = w^*_clip(j - i, -k, k);
    the heads concatenated and projected by W^O. Queries at positions
    `Tv - Tq + t`. Written as the paper's loops over i and j."""
    w = {v.path.split("/")[-2] + "/" + v.name: to_numpy(v) for v in layer.weights}
    W = lambda name: (w[f"{name}/kernel"], w[f"{name}/bias"])   # noqa: E731
    (Wq, bq), (Wk, bk), (Wv, bv), (Wo, bo) = (W(n) for n in
                                               ("query", "key", "value", "attention_output"))
    aK, aV = to_numpy(layer.relative_key), to_numpy(layer.relative_value)
    b, tq, _ = x.shape
    tv = memory.shape[1]
    heads, dk = Wq.shape[1], Wq.shape[2]
    out = np.zeros((b, tq, Wo.shape[-1]))
    alphas = np.zeros((b, heads, tq, tv))
    for n in range(b):
        q = np.einsum("td,dhk->thk", x[n], Wq) + bq
        kk = np.einsum("td,dhk->thk", memory[n], Wk) + bk
        v = np.einsum("td,dhk->thk", memory[n], Wv) + bv
        z = np.zeros((tq, heads, v.shape[-1]))
        for h in range(heads):
            for t in range(tq):
                i = tv - tq + t
                rel = [min(max(j - i, -k), k) + k for j in range(tv)]
                e = np.array([q[t, h] @ (kk[j, h] + aK[rel[j]]) for j in range(tv)])
                e = e / np.sqrt(dk)
                a = np_masked_softmax(e, mask[n, t])
                alphas[n, h, t] = a
                z[t, h] = sum(a[j] * (v[j, h] + aV[rel[j]]) for j in range(tv))
        out[n] = np.einsum("thv,hvo->to", z, Wo) + bo
        out[n][~mask[n].any(-1)] = 0.0
    return out, alphas


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("k", [2, 16])
def test_matches_the_papers_equations(causal, k):
    """Self-attention over padded rows (the first not the longest), with
    and without the causal mask; `k = 2` clips, `k = 16` does not."""
    rng = np.random.default_rng(0)
    b, n = 3, 6
    x = rng.normal(size=(b, n, 8)).astype("float32")
    lengths = [4, 6, 2]
    mask = lengths_mask(lengths, n)
    layer = MultiHeadAttention(2, 4, causal=causal, max_relative_position=k)
    out, weights = layer(x, x, query_mask=mask, value_mask=mask,
                         return_attention_scores=True)
    full = mask[:, :, None] & mask[:, None, :]
    if causal:
        full = full & np.tril(np.ones((n, n), bool))
    ref_out, ref_w = np_relative_mha(layer, x, x, full, k)
    np.testing.assert_allclose(to_numpy(weights), ref_w, atol=1e-5)
    np.testing.assert_allclose(to_numpy(out)[mask], ref_out[mask], atol=1e-5)
    # Without the weights asked for, the same path and the same output.
    np.testing.assert_allclose(to_numpy(layer(x, x, query_mask=mask, value_mask=mask)),
                               to_numpy(out), atol=1e-6)


def test_cached_steps_equal_the_full_pass():
    """Decoder self-attention one step at a time over a fixed-size
    key/value cache (each step writes its key and value at its position;
    the query's position given, as the rows of a batch are at the same
    step here) equals the causal full pass."""
    rng = np.random.default_rng(1)
    b, n = 2, 5
    x = rng.normal(size=(b, n, 8)).astype("float32")
    layer = MultiHeadAttention(2, 4, causal=True, max_relative_position=3)
    full = to_numpy(layer(x, x))
    keys, values = layer.project_key_value(x, x)          # what the cache holds
    keys, values = to_numpy(keys), to_numpy(values)
    cache_k, cache_v = np.zeros_like(keys), np.zeros_like(values)
    for t in range(n):
        cache_k[:, t], cache_v[:, t] = keys[:, t], values[:, t]
        filled = np.broadcast_to(np.arange(n) <= t, (b, 1, n))
        out, _ = layer.attend(x[:, t:t + 1], cache_k, cache_v, mask=filled,
                              query_positions=np.full((b, 1), t, "int32"))
        np.testing.assert_allclose(to_numpy(out)[:, 0], full[:, t], atol=1e-5)
        out, _ = layer.attend(x[:, t:t + 1], cache_k[:, :t + 1], cache_v[:, :t + 1])
        np.testing.assert_allclose(to_numpy(out)[:, 0], full[:, t], atol=1e-5)


def test_keras_file_round_trip_and_the_default_config(tmp_path):
    """The option is saved (and left out of the config when off, as files
    written before it have it); the `.keras` file gives the same output."""
    x_in = keras.Input((None, 8))
    layer = MultiHeadAttention(2, 4, max_relative_position=4, name="rel")
    model = keras.Model(x_in, layer(x_in, x_in))
    x = np.random.default_rng(2).normal(size=(2, 5, 8)).astype("float32")
    model.save(tmp_path / "rel.keras")
    loaded = keras.saving.load_model(tmp_path / "rel.keras")
    np.testing.assert_allclose(to_numpy(loaded(x)), to_numpy(model(x)), atol=1e-6)
    assert loaded.get_layer("rel").max_relative_position == 4
    assert "max_relative_position" not in MultiHeadAttention(2, 4).get_config()


@pytest.mark.parametrize("make,match", [
    (lambda: MultiHeadAttention(2, 4, max_relative_position=0), "`max_relative_position`"),
    (lambda: MultiHeadAttention(2, 4, max_relative_position=2.5), "`max_relative_position`"),
    (lambda: MultiHeadAttention(2, 4, max_relative_position=True), "`max_relative_position`"),
])
def test_bad_input_is_named(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_query_positions_of_the_wrong_rank():
    layer = MultiHeadAttention(2, 4, max_relative_position=2)
    x = np.zeros((2, 3, 8), "float32")
    layer(x, x)
    k, v = layer.project_key_value(x, x)
    with pytest.raises(ValueError, match="`query_positions` must have rank"):
        layer.attend(x, k, v, query_positions=np.zeros((2, 3, 1), "int32"))


@pytest.mark.parametrize("absolute", [False, True])
def test_transformer_nmt_steps_equal_its_pass(absolute, tmp_path):
    """`transformer_nmt(max_relative_position=k)` (with and without the
    sinusoidal positions): the cached decoding steps equal the training
    pass at every real target position, and the `.keras` file gives the
    same logits."""
    from kerattn import zoo

    model = zoo.transformer_nmt(20, 30, preset="tiny", max_relative_position=3,
                                absolute_positions=absolute)
    src = np.array([[3, 4, 0, 0], [6, 7, 8, 9]], "int32")
    tgt = np.array([[1, 5, 6, 0], [1, 8, 9, 7]], "int32")
    full = to_numpy(model({"source_ids": src, "target_in_ids": tgt}))
    state = model.encode(src, max_length=6)
    for t in range(4):
        logits, state, _ = model.step(keras.ops.convert_to_tensor(tgt[:, t]), state, t)
        real = tgt[:, t] != 0
        np.testing.assert_allclose(to_numpy(logits)[real], full[real, t], atol=1e-4)
    model.save(tmp_path / "t.keras")
    loaded = keras.saving.load_model(tmp_path / "t.keras")
    np.testing.assert_allclose(
        to_numpy(loaded({"source_ids": src, "target_in_ids": tgt})), full, atol=1e-5)
    blocks = [layer for layer in model.layers if "coder_" in layer.name]
    assert blocks and all(b.self_attention.max_relative_position == 3 for b in blocks)
    assert model.get_layer("target_embedding").positions == absolute


def test_transformer_nmt_needs_some_positions():
    from kerattn import zoo

    with pytest.raises(ValueError, match="`absolute_positions` must be True without"):
        zoo.transformer_nmt(20, 30, preset="tiny", absolute_positions=False)

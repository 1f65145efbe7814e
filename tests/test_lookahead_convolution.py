"""`LookaheadConvolution` against Deep Speech 2's equation in NumPy.

Amodei et al. 2016, section 3.5: r_{t,i} = sum_{j=1}^{tau+1} W_{i,j}
h_{t+j-1,i}, positions past a row's end (and padding) counting as zeros.
"""

import keras
import numpy as np
import pytest

from kerattn.layers import LookaheadConvolution


def reference(h, w, lengths):
    """The paper's sum, row by row, over each row's real positions only."""
    batch, steps, d = h.shape
    out = np.zeros_like(h)
    for b in range(batch):
        for t in range(lengths[b]):
            for j in range(w.shape[0]):           # j = 0 is the paper's j = 1
                if t + j < lengths[b]:
                    out[b, t] += w[j] * h[b, t + j]
    return out


@pytest.mark.parametrize("lookahead", [0, 1, 3])
def test_equals_the_papers_sum_with_padding(lookahead):
    rng = np.random.default_rng(0)
    lengths = [4, 6, 2]                            # the longest not first
    h = rng.normal(size=(3, 6, 5)).astype("float32")
    mask = np.arange(6)[None, :] < np.array(lengths)[:, None]
    h[~mask] = 7.0                                 # padding must not leak in
    layer = LookaheadConvolution(lookahead)
    layer.build(h.shape)
    w = rng.normal(size=(lookahead + 1, 5)).astype("float32")
    layer.set_weights([w])
    got = keras.ops.convert_to_numpy(layer(h, mask=mask))
    np.testing.assert_allclose(got, reference(h, w, lengths), atol=1e-5)


def test_starts_as_the_identity_and_sees_exactly_lookahead_inputs_ahead():
    """A new layer passes its input through; after training-like weights, a
    position's output changes when an input `lookahead` ahead changes and
    not when one further ahead does (what a streaming decoder relies on)."""
    rng = np.random.default_rng(1)
    h = rng.normal(size=(1, 8, 3)).astype("float32")
    layer = LookaheadConvolution(2)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(layer(h)), h, atol=0)
    layer.set_weights([rng.normal(size=(3, 3)).astype("float32")])
    before = keras.ops.convert_to_numpy(layer(h))
    for changed, stable_up_to in ((5, 2), (7, 4)):
        moved = h.copy()
        moved[0, changed] += 1.0
        after = keras.ops.convert_to_numpy(layer(moved))
        np.testing.assert_allclose(after[0, :stable_up_to + 1],
                                   before[0, :stable_up_to + 1], atol=1e-6)
        assert not np.allclose(after[0, stable_up_to + 1], before[0, stable_up_to + 1])


def test_keras_mask_passes_through_and_round_trips(tmp_path):
    inputs = keras.Input((None,), dtype="int32")
    embedded = keras.layers.Embedding(9, 4, mask_zero=True)(inputs)
    looked = LookaheadConvolution(1, name="lookahead")(embedded)
    pooled = keras.layers.GlobalAveragePooling1D()(looked)   # reads the mask
    model = keras.Model(inputs, pooled)
    model.get_layer("lookahead").set_weights([np.array([[1.0] * 4, [0.5] * 4],
                                                       "float32")])
    ids = np.array([[3, 4, 0, 0], [5, 6, 7, 8]], "int32")
    path = str(tmp_path / "m.keras")
    model.save(path)
    again = keras.saving.load_model(path)
    assert again.get_layer("lookahead").lookahead == 1
    np.testing.assert_allclose(keras.ops.convert_to_numpy(again(ids)),
                               keras.ops.convert_to_numpy(model(ids)), atol=1e-6)
    table = keras.ops.convert_to_numpy(model.layers[1].embeddings)
    first = table[[3, 4]] + 0.5 * table[[4, 0]] * np.array([[1], [0]])
    np.testing.assert_allclose(keras.ops.convert_to_numpy(model(ids))[0],
                               first.mean(0), atol=1e-5)

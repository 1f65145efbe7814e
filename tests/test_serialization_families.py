"""Serialization of the second wave of layers: config and .keras round trips.

Their `.keras` file across backends is `tests/test_serialization.py`'s
(`_families_model`): one fresh process per other backend loads both files.
"""

import keras
import numpy as np
import pytest

from cases import lengths_mask, to_numpy
from kerattn import layers


def _seq_models():
    """name -> (model builder, inputs builder) for every second-wave layer."""

    def local(mode):
        def build():
            q = keras.Input((None, 6), name="query")
            v = keras.Input((None, 6), name="value")
            m = keras.Input((None,), dtype="bool", name="value_mask")
            out, w = layers.LocalAttention(mode=mode, window=2)(
                q, v, value_mask=m, return_attention_scores=True)
            return keras.Model([q, v, m], [out, w])

        def data(rng):
            return [rng.standard_normal((2, 3, 6)).astype("float32"),
                    rng.standard_normal((2, 9, 6)).astype("float32"),
                    lengths_mask([9, 4], 9)]
        return build, data

    def restricted():
        x = keras.Input((None, 8))
        return keras.Model(x, layers.RestrictedSelfAttention(2, num_heads=2,
                                                             causal=True)(x))

    def visual(cls):
        def build():
            h = keras.Input((6,))
            a = keras.Input((10, 5))
            out, w = cls(units=4)(h, a, return_attention_scores=True)
            return keras.Model([h, a], [out, w])
        return build

    def han():
        ids = keras.Input((None, None), dtype="int32")
        x = keras.layers.Embedding(30, 6, mask_zero=True)(ids)
        v, w = layers.HierarchicalAttention(4, 3)(x, return_attention_scores=True)
        return keras.Model(ids, [v, w["word"], w["sentence"]])

    def aoa():
        d = keras.Input((None, 6))
        q = keras.Input((None, 6))
        return keras.Model([d, q], layers.AttentionOverAttention()(d, q))

    def convs2s():
        g = keras.Input((None, 4))
        z = keras.Input((None, 4))
        h = layers.GLUConvBlock(4, 3, causal=True)(g)
        return keras.Model([g, z], layers.MultiStepAttention()(h, g, z, z))

    def rnn(order, attention, **kw):
        def build():
            y = keras.Input((None, 4))
            h = keras.Input((None, 6))
            out, al = layers.AttentionRNN(8, attention(), order=order, **kw)(
                y, h, return_attention_scores=True)
            return keras.Model([y, h], [out, al])
        return build

    def transformer():
        src = keras.Input((None,), dtype="int32")
        tgt = keras.Input((None,), dtype="int32")
        x = layers.TransformerEncoderBlock(2, 16)(layers.TransformerEmbedding(
            20, 8)(src))
        y = layers.TransformerDecoderBlock(2, 16)(layers.TransformerEmbedding(
            20, 8)(tgt), x)
        return keras.Model([src, tgt], y)

    def ids(rng):
        return [rng.integers(0, 20, (2, 6)).astype("int32"),
                rng.integers(1, 20, (2, 4)).astype("int32")]

    rng_f = lambda shape: (lambda rng: rng.standard_normal(shape).astype("float32"))

    def two(a, b):
        return lambda rng: [rng_f(a)(rng), rng_f(b)(rng)]

    return {
        "local_m": local("monotonic"),
        "local_p": local("predictive"),
        "restricted": (restricted, rng_f((2, 11, 8))),
        "soft_visual": (visual(layers.SoftVisualAttention), two((2, 6), (2, 10, 5))),
        "hard_visual": (visual(layers.HardVisualAttention), two((2, 6), (2, 10, 5))),
        "han": (han, lambda rng: rng.integers(0, 30, (2, 3, 5)).astype("int32")),
        "aoa": (aoa, two((2, 9, 6), (2, 4, 6))),
        "convs2s": (convs2s, two((2, 7, 4), (2, 5, 4))),
        "transformer_blocks": (transformer, ids),
        "rnn_bahdanau": (rnn("bahdanau", lambda: layers.BahdanauAttention(5)),
                         two((2, 4, 4), (2, 6, 6))),
        "rnn_luong_local": (
            rnn("luong", lambda: layers.LocalAttention("predictive", 2)),
            two((2, 4, 4), (2, 6, 6))),
        "rnn_luong_parallel": (
            rnn("luong", lambda: layers.LuongAttention("general"),
                cell="lstm", input_feeding=False),
            two((2, 4, 4), (2, 6, 6))),
        "rnn_luong_state_and_context": (
            rnn("luong", lambda: layers.BahdanauAttention(5, coverage=True),
                cell="lstm", input_feeding=False, attentional_layer=False),
            two((2, 4, 4), (2, 6, 6))),
    }


MODELS = _seq_models()


@pytest.mark.parametrize("name", sorted(MODELS))
def test_keras_file_round_trip(name, tmp_path):
    build, data = MODELS[name]
    model = build()
    x = data(np.random.default_rng(0))
    path = str(tmp_path / "model.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    a, b = model.predict(x, verbose=0), loaded.predict(x, verbose=0)
    for u, v in zip(keras.tree.flatten(a), keras.tree.flatten(b), strict=True):
        np.testing.assert_allclose(to_numpy(u), to_numpy(v), atol=1e-6)
    for layer in model.layers:
        config = layer.get_config()
        assert type(layer).from_config(config).get_config() == config

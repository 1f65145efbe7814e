"""Figure 2: `transformer_nmt` training step vs the same model from keras-hub.

The peer is the same architecture built from keras-hub's own blocks
(`keras_hub.layers.TransformerEncoder` / `TransformerDecoder`, post-norm
like the paper and like ours, ReLU feed-forward, `SinePositionEncoding`
added to embeddings scaled by sqrt(d_model), padding masks passed
explicitly). Both have the same parameter count (checked), the same loss
(sparse cross-entropy from logits), Adam, and the same compilation
(`common.jit_for_backend`). One training step on a batch of 32 sentence
pairs of 32 tokens, at 2 + 2 layers of the base model's width (d_model
512, 8 heads, d_ff 2048, dropout 0.1), target vocabulary 8,000.
"""

import math

import numpy as np

from benchmarks import common

SIZE = dict(vocab=8000, num_layers=2, d_model=512, num_heads=8, ff_dim=2048,
            dropout=0.1, batch=32, length=32)
QUICK_SIZE = dict(vocab=100, num_layers=1, d_model=16, num_heads=2, ff_dim=32,
                  dropout=0.1, batch=2, length=6)


def kerattn_model(s):
    import kerattn

    return kerattn.zoo.transformer_nmt(
        s["vocab"], s["vocab"], num_layers=s["num_layers"], d_model=s["d_model"],
        num_heads=s["num_heads"], ff_dim=s["ff_dim"], dropout=s["dropout"],
        tie_embeddings="none")  # the keras-hub peer's embeddings are untied


def keras_hub_model(s):
    """The same Transformer written with keras-hub's layers."""
    import keras
    import keras_hub

    d = s["d_model"]

    def embed(ids, name):
        x = keras.layers.Embedding(s["vocab"], d, name=name)(ids)
        x = x * math.sqrt(d)
        x = x + keras_hub.layers.SinePositionEncoding()(x)
        return keras.layers.Dropout(s["dropout"])(x)

    source_ids = keras.Input((None,), dtype="int32", name="source_ids")
    target_in_ids = keras.Input((None,), dtype="int32", name="target_in_ids")
    source_mask = keras.ops.not_equal(source_ids, 0)
    target_mask = keras.ops.not_equal(target_in_ids, 0)
    x = embed(source_ids, "source_embedding")
    for _ in range(s["num_layers"]):
        x = keras_hub.layers.TransformerEncoder(
            s["ff_dim"], s["num_heads"], dropout=s["dropout"],
            layer_norm_epsilon=1e-6)(x, padding_mask=source_mask)
    y = embed(target_in_ids, "target_embedding")
    for _ in range(s["num_layers"]):
        y = keras_hub.layers.TransformerDecoder(
            s["ff_dim"], s["num_heads"], dropout=s["dropout"],
            layer_norm_epsilon=1e-6)(
                y, x, decoder_padding_mask=target_mask,
                encoder_padding_mask=source_mask)
    logits = keras.layers.Dense(s["vocab"], name="output_projection")(y)
    return keras.Model({"source_ids": source_ids,
                        "target_in_ids": target_in_ids}, logits)


def batch(s, seed=0):
    rng = np.random.default_rng(seed)
    shape = (s["batch"], s["length"])
    x = {"source_ids": rng.integers(1, s["vocab"], shape).astype("int32"),
         "target_in_ids": rng.integers(1, s["vocab"], shape).astype("int32")}
    y = rng.integers(1, s["vocab"], shape).astype("int32")
    return x, y


def step_time(model, s, repeats, warmup):
    import keras

    x, y = batch(s)
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    return common.train_step_time(model, x, y, loss, repeats, warmup,
                                  optimizer="adam")


def run(quick=False):
    import keras

    s = QUICK_SIZE if quick else SIZE
    repeats, warmup = (1, 1) if quick else (5, 2)
    keras.utils.set_random_seed(0)
    ours, theirs = kerattn_model(s), keras_hub_model(s)
    assert ours.count_params() == theirs.count_params(), (
        ours.count_params(), theirs.count_params())
    t_ours = step_time(ours, s, repeats, warmup)
    t_theirs = step_time(theirs, s, repeats, warmup)
    return [common.row(
        2, "transformer_nmt train step", 1000 * t_ours, 1000 * t_theirs,
        "keras-hub TransformerEncoder/Decoder", "ms/step", target=1.0,
        params=ours.count_params(), jit_compile=common.jit_for_backend(),
        **{k: v for k, v in s.items()})]

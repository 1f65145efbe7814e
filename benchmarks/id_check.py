"""Figure 7: what the tf.data token-id check costs.

`ZooModel.fit` maps a `tf.data.Dataset` it is given with TensorFlow
assertions that every token id is in `[0, vocab_size)`
(`ZooModel.checked_dataset`), so that an id out of range stops training
with a ValueError on every backend (JAX would otherwise gather past the
embedding silently). Timed, median after warm-up:

- one epoch of `bahdanau_nmt.fit` on a `tf.data.Dataset` of 20 batches
  (batch 64, 20 tokens a side, vocabularies of 1,000, 128 units), with the
  check (`model.fit`) vs without it: the peer is Keras' own
  `keras.Model.fit` on the same model and dataset;
- iterating the dataset alone, checked vs as given (the check's own cost,
  which the training step hides when the pipeline runs ahead of it).
"""

import numpy as np

from benchmarks import common

SIZE = dict(vocab=1000, units=128, batch=64, length=20, batches=20)
QUICK_SIZE = dict(vocab=50, units=8, batch=4, length=5, batches=2)


def _dataset(s):
    import tensorflow as tf

    rng = np.random.default_rng(0)
    n, shape = s["batch"] * s["batches"], (s["batch"] * s["batches"], s["length"])
    x = {"source_ids": rng.integers(1, s["vocab"], shape).astype("int32"),
         "target_in_ids": rng.integers(1, s["vocab"], shape).astype("int32")}
    y = rng.integers(1, s["vocab"], shape).astype("int32")
    return tf.data.Dataset.from_tensor_slices((x, y)).batch(s["batch"]).cache(), n


def run(quick=False):
    import keras

    import kerattn

    s = QUICK_SIZE if quick else SIZE
    repeats, warmup = (1, 1) if quick else (5, 2)
    keras.utils.set_random_seed(0)
    model = kerattn.zoo.bahdanau_nmt(
        s["vocab"], s["vocab"], embedding_dim=s["units"], units=s["units"],
        alignment_units=s["units"], maxout_units=s["units"], reset_after=True)
    model.compile("adam", kerattn.losses.MaskedSparseCrossentropy(),
                  jit_compile=common.jit_for_backend())
    dataset, examples = _dataset(s)
    checked = model.checked_dataset(dataset)

    def epoch(fit):
        return lambda: fit(dataset, epochs=1, verbose=0)

    def iterate(d):
        def go():
            for batch in d:
                pass
            return None
        return go

    t_checked = common.median_time(epoch(model.fit), repeats, warmup,
                                   sync=lambda r: r)
    t_plain = common.median_time(
        epoch(lambda *a, **k: keras.Model.fit(model, *a, **k)), repeats,
        warmup, sync=lambda r: r)
    i_checked = common.median_time(iterate(checked), repeats, warmup,
                                   sync=lambda r: r)
    i_plain = common.median_time(iterate(dataset), repeats, warmup,
                                 sync=lambda r: r)
    extra = dict(batches=s["batches"], batch=s["batch"], length=s["length"],
                 examples=examples)
    return [
        common.row(7, "fit epoch on tf.data, id check on", t_checked, t_plain,
                   "keras.Model.fit, no check", "s", target=1.05,
                   **extra),
        common.row(7, "iterating the tf.data dataset, id check on",
                   1000 * i_checked / s["batches"], 1000 * i_plain / s["batches"],
                   "the same dataset unchecked", "ms/batch", **extra),
    ]

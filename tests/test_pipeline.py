"""`translation_dataset`: tf.data with tokenisation in the graph.

The reference is `translation_arrays`, which tokenises in Python
(`WordVocabulary.encode_batch`, keras-hub's WordPiece): the pipeline must
give the same ids for every kept pair of this machine's gettext messages.
"""

import keras
import numpy as np
import pytest

from kerattn import distribute, zoo
from kerattn.datasets import (WordPieceVocabulary, WordVocabulary, gettext_pairs,
                              translation_arrays, translation_dataset)
from kerattn.losses import MaskedSparseCrossentropy


@pytest.fixture(scope="module")
def data():
    pairs = gettext_pairs("fr")["train"][:1500]
    src = WordVocabulary.build([s for s, _ in pairs], 1500)
    tgt = WordVocabulary.build([t for _, t in pairs], 1500)
    return pairs, src, tgt


def _rows(batches):
    """Every example of `batches` as (source, target_in, labels), PAD removed."""
    rows = []
    for x, y in batches:
        s, t, y = (np.asarray(a) for a in (x["source_ids"], x["target_in_ids"], y))
        for i in range(len(y)):
            rows.append((tuple(s[i][s[i] > 0]), tuple(t[i][t[i] > 0]),
                         tuple(y[i][y[i] > 0])))
    return sorted(rows)


@pytest.mark.parametrize("wordpiece", [False, True], ids=["words", "wordpiece"])
def test_same_ids_as_python_tokenisation(data, wordpiece):
    pairs, src, tgt = data
    max_tokens = 14
    if wordpiece:   # a small vocabulary of pieces: longer sequences
        max_tokens = 40
        pairs = pairs[:400]
        src = WordPieceVocabulary.build([s for s, _ in pairs], 300)
        tgt = WordPieceVocabulary.build([t for _, t in pairs], 300)
    x, y, kept = translation_arrays(pairs, src, tgt, max_tokens=max_tokens)
    reference = _rows([(x, y)])
    got = _rows(translation_dataset(pairs, src, tgt, batch_size=64,
                                    max_tokens=max_tokens, shuffle=False))
    assert len(got) == len(kept) > 0.5 * len(pairs)
    assert got == reference


def test_buckets_pad_little_and_few_shapes(data):
    pairs, src, tgt = data
    batches = list(translation_dataset(pairs, src, tgt, batch_size=32,
                                       max_tokens=14, bucket_width=5))
    widths = {int(y.shape[1]) for _, y in batches}
    assert widths <= {5, 10, 15}                      # T + 1 <= 15
    for x, y in batches:
        assert x["source_ids"].shape == x["target_in_ids"].shape == y.shape
        assert len(y) <= 32
    real = sum(int(np.sum(np.asarray(y) > 0)) for _, y in batches)
    padded = sum(int(np.size(y)) for _, y in batches)
    x, y, _ = translation_arrays(pairs, src, tgt, max_tokens=14)
    # Padding to the longest pair (15 wide) wastes far more.
    assert real / padded > 1.5 * np.mean(y > 0)


def test_drop_remainder_and_shuffle_seed(data):
    pairs, src, tgt = data

    def first_rows(seed):
        ds = translation_dataset(pairs, src, tgt, batch_size=16, max_tokens=14,
                                 seed=seed, drop_remainder=True)
        batches = list(ds)
        assert all(len(y) == 16 for _, y in batches)
        return np.asarray(batches[0][1])

    np.testing.assert_array_equal(first_rows(1), first_rows(1))
    a, b = first_rows(1), first_rows(2)
    assert a.shape != b.shape or not np.array_equal(a, b)


def test_fit_reads_it_on_this_backend(data):
    pairs, src, tgt = data
    model = zoo.bahdanau_nmt(len(src), len(tgt), embedding_dim=8, units=8,
                             alignment_units=8, maxout_units=8)
    model.compile(keras.optimizers.Adam(1e-2), MaskedSparseCrossentropy())
    ds = translation_dataset(pairs[:300], src, tgt, batch_size=32, max_tokens=14)
    history = model.fit(ds, epochs=2, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
    assert history.history["loss"][1] < history.history["loss"][0]


def test_strategy_shard_cuts_tf_batches_like_pydatasets(data):
    pairs, src, tgt = data
    ds = translation_dataset(pairs[:200], src, tgt, batch_size=10, max_tokens=14,
                             shuffle=False)
    whole = [(keras.tree.map_structure(np.asarray, x), np.asarray(y)) for x, y in ds]
    # torch: rank 1 of 2 processes; JAX (and TensorFlow): 4 devices in one.
    for strategy in (distribute.Strategy("data", "torch", None, 2, rank=1),
                     distribute.Strategy("data", "jax", None, 4)):
        cut = list(strategy.shard(ds))
        reference = distribute.ProcessShard(
            whole, *((1, 2, 1) if strategy.backend == "torch" else (0, 1, 4)))
        kept = [i for i, (_, y) in enumerate(whole) if len(y) >= (2 if strategy.backend
                                                                  == "torch" else 4)]
        assert len(cut) == len(kept) > 0
        for (x, y), i in zip(cut, kept):
            rx, ry = reference[i]
            np.testing.assert_array_equal(np.asarray(y), ry)
            np.testing.assert_array_equal(np.asarray(x["source_ids"]), rx["source_ids"])


def test_bad_arguments(data):
    pairs, src, tgt = data
    for kwargs, message in ((dict(batch_size=0), "`batch_size` must be a positive"),
                            (dict(bucket_width=True), "`bucket_width` must be"),
                            (dict(max_tokens=0), "`max_tokens` must be")):
        with pytest.raises(ValueError, match=message):
            translation_dataset(pairs, src, tgt, **kwargs)
    with pytest.raises(ValueError, match="`pairs` must be"):
        translation_dataset([], src, tgt)
    with pytest.raises(ValueError, match="`pairs` must be"):
        translation_dataset(["one string"], src, tgt)
    with pytest.raises(ValueError, match="`source_vocab` must be"):
        translation_dataset(pairs, {"a": 1}, tgt)

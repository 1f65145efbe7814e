"""Copying from the source (See et al., 2017): the pointer-generator's final
distribution against eq. 8-9 in NumPy, its loss, extended vocabularies, the
`pointer_generator` zoo model (incremental decoding, `.keras` round trip),
and a toy copy task that only the copying model solves."""

import keras
import numpy as np
import pytest

from cases import to_numpy
from kerattn import zoo
from kerattn.datasets import (WordVocabulary, copy_arrays, decode_extended,
                              extend_source, extend_target)
from kerattn.decoding import Translator
from kerattn.layers import ExtendedEmbedding, PointerGenerator
from kerattn.losses import MaskedSparseCrossentropy

V = 7   # the layer tests' vocabulary


def np_softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def np_final_distribution(logits, attention, source_ids, features, w, b, mask):
    """See, Liu and Manning (2017), eq. 8-9, as probabilities in float64:

        p_gen = sigmoid(w_h^T h*_t + w_s^T s_t + w_x^T x_t + b_ptr)
        P(w) = p_gen P_vocab(w) + (1 - p_gen) sum_{i: w_i = w} a_i^t

    over V + S extended ids; a position outside `mask` is not a source word.
    """
    batch, steps, vocab = logits.shape
    length = source_ids.shape[1]
    p_gen = 1.0 / (1.0 + np.exp(-(features @ w + b)))          # (B, T)
    final = np.zeros((batch, steps, vocab + length))
    final[..., :vocab] = p_gen[..., None] * np_softmax(logits)
    for row in range(batch):
        for t in range(steps):
            for i in range(length):
                if mask[row, i]:
                    final[row, t, source_ids[row, i]] += (
                        (1.0 - p_gen[row, t]) * attention[row, t, i])
    return final, p_gen


def np_loss(final, labels, pad_id=0):
    """-log P(w*_t) (See et al., eq. 6), averaged over the non-PAD labels."""
    picked = np.take_along_axis(final, labels[..., None], -1)[..., 0]
    real = labels != pad_id
    return -np.log(picked[real]).mean()


def _layer_batch(rng):
    """Rows of growing source length (the first is the shortest), repeated
    words and two OOV ids (V, V + 1), attention over the real positions
    plus weight on the padding that must give no copy mass."""
    source_ids = np.array([[4, V, 0, 0, 0],
                           [5, 6, V, 5, 0],
                           [V + 1, 4, V, V + 1, 6]], "int32")
    mask = source_ids != 0
    attention = np_softmax(rng.normal(size=(3, 4, 5)) * 2)
    attention = np.where(mask[:, None], attention, 0.0)
    attention /= attention.sum(-1, keepdims=True)
    attention = np.where(mask[:, None], attention, 0.3).astype("float32")
    logits = rng.normal(size=(3, 4, V)).astype("float32")
    features = [rng.normal(size=(3, 4, 5)).astype("float32"),
                rng.normal(size=(3, 4, 3)).astype("float32")]
    return logits, attention, source_ids, features, mask


def _switch(layer):
    return (to_numpy(layer.switch.kernel).astype("float64")[:, 0],
            float(to_numpy(layer.switch.bias)[0]))


def test_final_distribution_matches_eq_8_9_in_numpy():
    """log P(w) of `PointerGenerator` against eq. 8-9 in NumPy (all steps
    and one step), p_gen against eq. 8; padded source positions give no copy
    mass; an id no source word has gets probability 0 as a large finite
    negative log-probability; and the loss against -log P(w*)."""
    rng = np.random.default_rng(0)
    logits, attention, source_ids, features, mask = _layer_batch(rng)
    layer = PointerGenerator()
    log_p, p_gen = layer(logits, attention, source_ids, features,
                         return_p_gen=True)
    log_p, p_gen = to_numpy(log_p), to_numpy(p_gen)
    assert log_p.dtype == np.float32 and log_p.shape == (3, 4, V + 5)
    w, b = _switch(layer)
    ref, ref_p_gen = np_final_distribution(
        logits.astype("float64"), attention.astype("float64"), source_ids,
        np.concatenate(features, -1).astype("float64"), w, b, mask)
    np.testing.assert_allclose(p_gen, ref_p_gen, atol=1e-6)
    np.testing.assert_allclose(np.exp(log_p), ref, atol=1e-6)
    np.testing.assert_allclose(ref.sum(-1), 1.0, atol=1e-9)   # a distribution
    seen = ref > 0
    np.testing.assert_allclose(log_p[seen], np.log(ref[seen]), rtol=1e-5, atol=1e-5)
    assert np.isfinite(log_p).all() and (log_p[~seen] < -1e8).all()
    # Row 0's OOV V is copied; V + 1 is no word of row 0 (only of row 2).
    assert ref[0, :, V].min() > 0 and (ref[0, :, V + 1] == 0).all()
    # One decoder step (rank 2) is the same equation.
    one = to_numpy(layer(logits[:, 2], attention[:, 2], source_ids,
                         [f[:, 2] for f in features]))
    np.testing.assert_allclose(one, log_p[:, 2], atol=1e-5)
    # The loss: -log P(w*) over the non-PAD labels, OOV labels included.
    labels = np.array([[V, 4, 0, 0], [5, V, 3, 0], [V + 1, 6, V, 3]], "int32")
    loss = MaskedSparseCrossentropy(from_log_probs=True)(labels, log_p)
    np.testing.assert_allclose(float(to_numpy(loss)), np_loss(ref, labels),
                               rtol=1e-5)


@pytest.mark.parametrize("policy", ["float32", "mixed_bfloat16"])
def test_no_nan_at_p_gen_0_and_1_or_with_an_empty_source(policy):
    """With p_gen at 1 (no copying) and at 0 (copying only), and for a row
    whose source is all padding, every log-probability and the loss are
    finite (float32, and under mixed_bfloat16 whose output is float32 too
    and close to float32's); p_gen = 0 puts all mass on the source's words,
    an empty source at p_gen = 1 on the vocabulary."""
    rng = np.random.default_rng(1)
    logits, attention, source_ids, features, _ = _layer_batch(rng)
    source_ids[0] = 0                                     # all padding
    exact = PointerGenerator()
    exact(logits, attention, source_ids, features)
    layer = PointerGenerator(dtype=policy)
    layer(logits, attention, source_ids, features)
    labels = np.array([[4, V, 0, 0], [5, V, 3, 0], [V + 1, 6, V, 3]], "int32")
    loss = MaskedSparseCrossentropy(from_log_probs=True)
    # bfloat16 rounds the attention given: its rows sum to 1 within 1e-2.
    tol = 1e-3 if policy == "float32" else 1e-2
    for bias in (60.0, -60.0):      # sigmoid: 1.0 and 1e-26 (0 in bfloat16)
        for target in (exact, layer):
            target.switch.kernel.assign(np.zeros((8, 1)))
            target.switch.bias.assign(np.array([bias]))
        log_p = to_numpy(layer(logits, attention, source_ids, features))
        assert log_p.dtype == np.float32
        assert np.isfinite(log_p).all(), (policy, bias)
        assert np.isfinite(float(to_numpy(loss(labels, log_p))))
        p = np.exp(log_p.astype("float64"))
        reference = np.exp(to_numpy(exact(logits, attention, source_ids,
                                          features)).astype("float64"))
        np.testing.assert_allclose(p, reference,
                                   atol=1e-6 if policy == "float32" else 0.05)
        if bias > 0:   # all on the vocabulary, the empty row included
            np.testing.assert_allclose(p[..., :V].sum(-1), 1.0, atol=tol)
        else:          # all on the source's words; the empty row has none
            np.testing.assert_allclose(p[1:, :, :V].sum(-1) + p[1:, :, V:].sum(-1),
                                       1.0, atol=tol)
            assert p[1:, :, V + 2:].max() == 0.0
            assert p[0].sum() < 1e-6


def test_extended_embedding_reads_oov_ids_as_unk(tmp_path):
    layer = ExtendedEmbedding(6, 3, unk_id=1, mask_zero=True)
    ids = np.array([[0, 1, 5, 6, 9]], "int32")
    out = to_numpy(layer(ids))
    np.testing.assert_array_equal(out[0, 3], out[0, 1])
    np.testing.assert_array_equal(out[0, 4], out[0, 1])
    assert not np.allclose(out[0, 2], out[0, 1])
    np.testing.assert_array_equal(to_numpy(layer.compute_mask(ids)),
                                  [[False, True, True, True, True]])
    clone = ExtendedEmbedding.from_config(layer.get_config())
    assert clone.unk_id == 1 and clone.input_dim == 6


def test_extended_ids_of_source_and_target():
    """Each example's OOV words get V, V + 1, ... in order of first
    appearance, whatever space came before them; a target word in neither
    the vocabulary nor the source is UNK; decoding spells them back."""
    vocab = WordVocabulary(["a", "▁b", "▁a"])                 # V = 7
    tokens = vocab.tokenize("a Zorg b Quux Zorg")
    ids, oovs = extend_source(vocab, tokens)
    assert ids == [4, 7, 5, 8, 7] and oovs == ["Zorg", "Quux"]
    target = vocab.tokenize("Quux a Zorg Blah")
    assert extend_target(vocab, target, oovs) == [8, 6, 7, 1]
    assert extend_target(vocab, target, []) == [1, 6, 1, 1]
    assert extend_source(vocab, tokens, vocab_size=10)[0] == [4, 10, 5, 11, 10]
    assert decode_extended(vocab, [8, 6, 7, 1, 3, 4], oovs) == "Quux a Zorg <unk>"
    x, y, kept = copy_arrays([("a Zorg", "Zorg a"), ("a", "Blah a")], vocab)
    assert kept == [["Zorg"], []]
    np.testing.assert_array_equal(y, [[7, 6, 3], [1, 6, 3]])
    np.testing.assert_array_equal(x["target_in_ids"], [[2, 7, 6], [2, 1, 6]])
    np.testing.assert_array_equal(x["source_ids"], [[4, 7], [4, 0]])
    _, y_plain, _ = copy_arrays([("a Zorg", "Zorg a")], vocab, copy=False)
    np.testing.assert_array_equal(y_plain, [[1, 6, 3]])


# === The zoo model ===

VZ = 20   # the model tests' vocabulary


def _shortest_first_batch():
    """Extended ids (20, 21, 22 are OOVs), source and target lengths
    growing down the batch: the first row is the shortest."""
    source = np.array([[5, VZ, 0, 0, 0, 0],
                       [6, VZ, 7, VZ + 1, 0, 0],
                       [8, 9, VZ, VZ + 1, VZ + 2, 10]], "int32")
    target = np.array([[2, VZ, 0, 0, 0],
                       [2, 6, VZ + 1, VZ, 0],
                       [2, VZ + 2, 8, VZ + 1, 9]], "int32")
    return {"source_ids": source, "target_in_ids": target}


@pytest.mark.parametrize("copy,coverage", [(True, False), (True, True),
                                           (False, False)],
                         ids=["pointer_generator", "coverage", "baseline"])
def test_incremental_step_equals_the_full_pass(copy, coverage):
    """`encode` then `step` gives the training graph's log-probabilities at
    every real target position (the shortest row first), over V + S ids
    with copying (V without), and each row decoded alone gets the same."""
    keras.utils.set_random_seed(0)
    model = zoo.pointer_generator(VZ, preset="tiny", copy=copy, coverage=coverage)
    x = _shortest_first_batch()
    full = to_numpy(model.predict(x, verbose=0))
    width = model.output_size(x["source_ids"].shape[1])
    assert full.shape == (3, 5, width) and width == VZ + 6 * copy
    state = model.encode(x["source_ids"], max_length=8)
    steps = []
    for i in range(x["target_in_ids"].shape[1]):
        log_p, state, w = model.step(
            keras.ops.convert_to_tensor(x["target_in_ids"][:, i]), state, i)
        steps.append(to_numpy(log_p))
        assert np.all(to_numpy(w)[x["source_ids"] == 0] == 0)
    steps = np.stack(steps, 1)
    real = x["target_in_ids"] != 0
    likely = full > -1e8   # "impossible" ids are about -1e9 in both
    keep = real[..., None] & likely
    np.testing.assert_allclose(steps[keep], full[keep], atol=1e-5)
    assert (steps[real[..., None] & ~likely] < -1e8).all()
    np.testing.assert_allclose(np.exp(full[real]).sum(-1), 1.0, atol=1e-5)
    if copy:   # row 0's OOV (id V) has probability; V + 1 is not its word
        assert full[0, 0, VZ] > -1e8 and full[0, 0, VZ + 1] < -1e8
    for row in range(3):
        s_len, t_len = int((x["source_ids"][row] != 0).sum()), int(real[row].sum())
        alone = {"source_ids": x["source_ids"][row:row + 1, :s_len],
                 "target_in_ids": x["target_in_ids"][row:row + 1, :t_len]}
        got = to_numpy(model.predict(alone, verbose=0))[0]
        want = full[row, :t_len, :got.shape[-1]]
        ok = want > -1e8
        np.testing.assert_allclose(got[ok], want[ok], atol=1e-5)


def test_round_trip_and_fit(tmp_path):
    """`.keras` round trip of the full model (copying and coverage): the same
    class, log-probabilities, coverage loss and first decoding step; then
    one `fit` step on a batch with an all-padding source row keeps the loss
    and every weight finite."""
    keras.utils.set_random_seed(2)
    model = zoo.pointer_generator(VZ, preset="tiny", coverage=True)
    x = _shortest_first_batch()
    out = to_numpy(model(x))
    path = str(tmp_path / "pointer_generator.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert type(loaded) is type(model) and loaded.copies
    np.testing.assert_allclose(to_numpy(loaded(x)), out, atol=1e-6)
    assert len(loaded.losses) == len(model.losses) == 1
    np.testing.assert_allclose(to_numpy(loaded.losses[0]),
                               to_numpy(model.losses[0]), atol=1e-6)
    bos = keras.ops.convert_to_tensor(x["target_in_ids"][:, 0])
    first = [to_numpy(m.step(bos, m.encode(x["source_ids"]), 0)[0])
             for m in (model, loaded)]
    np.testing.assert_allclose(first[1], first[0], atol=1e-6)
    y = np.concatenate([x["target_in_ids"][:, 1:], np.zeros((3, 1), "int32")], 1)
    y[np.arange(3), (x["target_in_ids"] != 0).sum(1) - 1] = 3
    x["source_ids"][0] = 0              # a source of padding only
    x["target_in_ids"][0, 1] = 4        # (no source word to copy)
    y[0, 0] = 4
    loaded.compile(keras.optimizers.Adam(1e-2),
                   MaskedSparseCrossentropy(from_log_probs=True))
    loss = loaded.train_on_batch(x, y)
    assert np.isfinite(loss)
    assert all(np.isfinite(to_numpy(v)).all() for v in loaded.weights)



def test_tf_data_ids_are_checked_against_the_extended_vocabulary():
    """A `tf.data` batch passes `checked_dataset` with ids in [0, V + S)
    (S the batch's source length) and stops at V + S; the message names
    the extended bound."""
    import tensorflow as tf

    model = zoo.pointer_generator(VZ, preset="tiny")
    x = _shortest_first_batch()
    good = model.checked_dataset(tf.data.Dataset.from_tensor_slices(x).batch(3))
    got = next(iter(good))
    np.testing.assert_array_equal(got["target_in_ids"].numpy(), x["target_in_ids"])
    x["target_in_ids"][1, 2] = VZ + 6          # S = 6
    bad = model.checked_dataset(tf.data.Dataset.from_tensor_slices(x).batch(3))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"`target_in_ids` must be token ids in \[0, 20 \+ S\)"):
        next(iter(bad))

# === The must-show: a toy copy task ===

WORDS = [f"w{i}" for i in range(30)]     # the pool
KNOWN = WORDS[:10]                       # the vocabulary holds a third of it


def _copy_task(rng, n):
    return [" ".join(rng.choice(WORDS, rng.integers(3, 7), replace=False))
            for _ in range(n)]


def _train_copy_model(copy, vocab, texts):
    keras.utils.set_random_seed(0)
    model = zoo.pointer_generator(len(vocab), preset="tiny", copy=copy,
                                  units=32, attention_units=32)
    x, y, _ = copy_arrays([(t, t) for t in texts], vocab, copy=copy)
    model.compile(keras.optimizers.Adam(1e-2, clipnorm=2.0),
                  MaskedSparseCrossentropy(from_log_probs=True))
    model.fit(x, y, batch_size=32, epochs=12, verbose=0)   # 96 steps
    return model


def test_toy_copy_task_only_the_copying_model_solves():
    """Sequences of 3-6 words drawn from 30, with a vocabulary of 10 of them:
    trained to repeat its input, the pointer-generator writes every held-out
    sequence back exactly, the words its vocabulary lacks included, through
    greedy and beam search and through the strings-in `Translator`; the same
    model without copying (`copy=False`, trained the same way) writes
    `<unk>` where each of those words belongs."""
    rng = np.random.default_rng(0)
    vocab = WordVocabulary(KNOWN + ["▁" + w for w in KNOWN])
    train, held_out = _copy_task(rng, 256), _copy_task(rng, 8)
    assert all(any(w not in KNOWN for w in t.split()) for t in held_out[:4])
    x, y, oovs = copy_arrays([(t, t) for t in held_out], vocab)
    assert (y >= len(vocab)).any()

    model = _train_copy_model(True, vocab, train)
    for strategy, options in (("greedy", {}), ("beam", {"beam_width": 3})):
        tokens = to_numpy(model.generate(x["source_ids"], max_length=y.shape[1],
                                         strategy=strategy, **options)["tokens"])
        np.testing.assert_array_equal(tokens, y, err_msg=strategy)
    translator = Translator(model, vocab, vocab, max_length=8)
    assert translator(held_out) == held_out
    assert translator(held_out, beam_width=3) == held_out

    baseline = _train_copy_model(False, vocab, train)
    written = Translator(baseline, vocab, vocab, max_length=8)(held_out)
    for text, out, words in zip(held_out, written, oovs):
        assert text != out
        assert not set(words) & set(out.split()), (text, out)

"""Translation zoo: builders, incremental decoding, overfitting real data."""

import inspect

import keras
import numpy as np
import pytest

from cases import to_numpy, zero_weights
from kerattn import zoo
from kerattn.losses import MaskedSparseCrossentropy
from kerattn.datasets import WordVocabulary, gettext_pairs, translation_arrays
from kerattn.decoding import Translator, beam_search, greedy_search

# Each model's "tiny" preset; an override names what a case exercises
# (stacked layers, a score, a window, a decoder deeper than its encoder).
BUILDERS = {
    "bahdanau": lambda v_s, v_t: zoo.bahdanau_nmt(v_s, v_t, preset="tiny"),
    "bahdanau_coverage": lambda v_s, v_t: zoo.bahdanau_nmt(
        v_s, v_t, preset="tiny", coverage=True),
    "luong_global_general": lambda v_s, v_t: zoo.luong_nmt(
        v_s, v_t, preset="tiny", num_layers=2),
    "luong_global_location": lambda v_s, v_t: zoo.luong_nmt(
        v_s, v_t, preset="tiny", score="location", max_source_length=12),
    "luong_local_m": lambda v_s, v_t: zoo.luong_nmt(
        v_s, v_t, preset="tiny", attention="local-m", score="dot", num_layers=2,
        window=2),
    "luong_local_p": lambda v_s, v_t: zoo.luong_nmt(
        v_s, v_t, preset="tiny", attention="local-p", num_layers=2, window=2),
    "luong_no_feeding_concat": lambda v_s, v_t: zoo.luong_nmt(
        v_s, v_t, preset="tiny", score="concat", input_feeding=False,
        num_layers=3),
    "luong_coverage": lambda v_s, v_t: zoo.luong_nmt(
        v_s, v_t, preset="tiny", attention="coverage"),
    "luong_location_sensitive": lambda v_s, v_t: zoo.luong_nmt(
        v_s, v_t, preset="tiny", attention="location-sensitive"),
    "seq2seq": lambda v_s, v_t: zoo.seq2seq(v_s, v_t, preset="tiny", num_layers=2),
    "cho": lambda v_s, v_t: zoo.cho_encoder_decoder(v_s, v_t, preset="tiny"),
    "transformer": lambda v_s, v_t: zoo.transformer_nmt(
        v_s, v_t, preset="tiny", num_layers=2),
    "convs2s": lambda v_s, v_t: zoo.convs2s_nmt(
        v_s, v_t, preset="tiny", encoder_layers=2, decoder_layers=3),
    "convs2s_wide_kernel": lambda v_s, v_t: zoo.convs2s_nmt(
        v_s, v_t, preset="tiny", decoder_layers=2, kernel_size=5),
}
# A skip with its reason without the catalogs, a failure in CI (conftest).
needs_catalogs = pytest.mark.usefixtures("gettext_catalogs")


def _random_batch(rng, vocab=30, b=3, s=7, t=6):
    src = rng.integers(4, vocab, (b, s)).astype("int32")
    src[1, 4:] = 0
    src[2, 2:] = 0
    tgt = rng.integers(4, vocab, (b, t)).astype("int32")
    tgt[:, 0] = 2  # BOS
    tgt[2, 3:] = 0
    return {"source_ids": src, "target_in_ids": tgt}


def _defaults(builder):
    return {k: p.default for k, p in inspect.signature(builder).parameters.items()}


def test_zero_weights_builds_without_initializers_and_restores_them():
    """tests/cases.py's `zero_weights` (the paper-size builds below): every
    initializer gives zeros inside it, and its own values after."""
    with zero_weights():
        inside = keras.layers.LSTM(3)
        inside.build((None, 2, 4))
    after = keras.layers.LSTM(3)
    after.build((None, 2, 4))
    for weights, zero in ((inside.get_weights(), True), (after.get_weights()[:2], False)):
        for w in weights:
            assert np.all(w == 0) == zero, w


def test_bahdanau_builder_structure():
    model = zoo.bahdanau_nmt(30, 40, preset="tiny")
    names = {layer.name for layer in model.layers}
    assert {"source_embedding", "encoder", "decoder", "deep_output",
            "output_projection"} <= names
    assert model.output_shape == (None, None, 40)
    assert sorted(model.input) == ["source_ids", "target_in_ids"]  # named dict
    # Paper defaults (Bahdanau et al. 2014, appendix A).
    # The paper's sizes with small vocabularies (the paper's 30k would only
    # cost allocation time); the vocabulary defaults are read off the signature.
    with zero_weights():
        paper = zoo.bahdanau_nmt(30, 40)
    assert _defaults(zoo.bahdanau_nmt)["source_vocab_size"] == 30000
    decoder = paper.get_layer("decoder")
    assert decoder.units == 1000 and decoder.attention.units == 1000
    assert paper.get_layer("source_embedding").output_dim == 620
    assert paper.get_layer("deep_output").units == 2 * 500
    with pytest.raises(ValueError, match="`units`"):
        zoo.bahdanau_nmt(30, 40, units=0)
    with pytest.raises(ValueError, match="`dropout`"):
        zoo.bahdanau_nmt(30, 40, dropout=1.0)


def _shortest_first_batch(rng, vocab=30, b=3, s=7, t=6):
    """Rows of growing source and target lengths: the first row is the
    shortest (and its target ends first), the last the longest."""
    src = rng.integers(4, vocab, (b, s)).astype("int32")
    tgt = rng.integers(4, vocab, (b, t)).astype("int32")
    tgt[:, 0] = 2  # BOS
    for row, (s_len, t_len) in enumerate([(2, 2), (5, 4), (s, t)][:b]):
        src[row, s_len:] = 0
        tgt[row, t_len:] = 0
    return {"source_ids": src, "target_in_ids": tgt}


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_incremental_equals_full_prefix(name):
    """`step` after `encode` gives the training graph's logits at every real
    target position, the shortest row first, and every row of the batch gets
    what it gets decoded alone (no row reads another's state)."""
    rng = np.random.default_rng(0)
    model = BUILDERS[name](30, 40)
    assert isinstance(model, zoo.GenerativeModel)
    x = _shortest_first_batch(rng)
    full = to_numpy(model.predict(x, verbose=0))
    state = model.encode(x["source_ids"], max_length=8)
    steps = []
    for i in range(x["target_in_ids"].shape[1]):
        logits, state, w = model.step(
            keras.ops.convert_to_tensor(x["target_in_ids"][:, i]), state, i)
        steps.append(to_numpy(logits))
        if w is not None:  # attention models: no weight on padding
            w = to_numpy(w)
            assert np.all(w[x["source_ids"] == 0] == 0)
            if not name.startswith("luong_local"):
                # Global attention sums to 1 at real target steps (local-p's
                # Gaussian does not, local-m's window can pass a short
                # source; a PAD step, like a padded position of the full
                # sequence, gets no weight).
                real_step = x["target_in_ids"][:, i] != 0
                np.testing.assert_allclose(w.sum(-1)[real_step], 1.0, atol=1e-5)
    real = x["target_in_ids"] != 0
    np.testing.assert_allclose(np.stack(steps, 1)[real], full[real], atol=1e-5)
    for row in range(len(full)):
        s_len = int((x["source_ids"][row] != 0).sum())
        t_len = int(real[row].sum())
        alone = {"source_ids": x["source_ids"][row: row + 1, :s_len],
                 "target_in_ids": x["target_in_ids"][row: row + 1, :t_len]}
        np.testing.assert_allclose(to_numpy(model.predict(alone, verbose=0))[0],
                                   full[row, :t_len], atol=1e-5)


def test_luong_builder_structure():
    model = zoo.luong_nmt(30, 40, units=16, embedding_dim=8, num_layers=3)
    assert model.output_shape == (None, None, 40)
    decoder = model.get_layer("decoder")
    assert decoder.num_layers == 3 and decoder.order == "luong"
    assert decoder.input_feeding
    # Paper defaults (Luong et al. 2015, section 4.1).
    with zero_weights():
        paper = zoo.luong_nmt(30, 40)
    assert _defaults(zoo.luong_nmt)["target_vocab_size"] == 50000
    assert paper.get_layer("decoder").units == 1000
    assert paper.get_layer("decoder").num_layers == 4
    assert paper.get_layer("source_embedding").output_dim == 1000
    assert paper.get_layer("dropout").rate == 0.2
    with pytest.raises(ValueError, match="`attention`"):
        zoo.luong_nmt(30, 40, attention="hard")
    with pytest.raises(ValueError, match="score='location' is a global score"):
        zoo.luong_nmt(30, 40, attention="local-p", score="location")
    with pytest.raises(ValueError, match="`num_layers`"):
        zoo.luong_nmt(30, 40, num_layers=0)


def test_seq2seq_structure_and_reversal():
    model = zoo.seq2seq(30, 40, num_layers=3, units=16, embedding_dim=8)
    assert model.output_shape == (None, None, 40)
    assert [l.name for l in model.layers if l.name.startswith("decoder_")] == [
        "decoder_1", "decoder_2", "decoder_3"]
    with zero_weights():
        paper = zoo.seq2seq(30, 40)
    assert paper.get_layer("encoder_4").units == 1000
    assert _defaults(zoo.seq2seq)["source_vocab_size"] == 160000
    assert _defaults(zoo.seq2seq)["target_vocab_size"] == 80000
    reverse = model.get_layer("reverse_source")
    ids = np.array([[5, 6, 7, 0, 0], [8, 9, 10, 11, 12]], "int32")
    np.testing.assert_array_equal(to_numpy(reverse(ids)),
                                  [[7, 6, 5, 0, 0], [12, 11, 10, 9, 8]])
    feats = np.arange(2 * 4 * 2, dtype="float32").reshape(2, 4, 2)
    mask = np.array([[1, 1, 0, 0], [1, 1, 1, 0]], bool)
    ref = feats.copy()
    ref[0, :2] = feats[0, :2][::-1]
    ref[1, :3] = feats[1, :3][::-1]
    np.testing.assert_array_equal(to_numpy(reverse(feats, mask=mask)), ref)
    with pytest.raises(ValueError, match="`num_layers`"):
        zoo.seq2seq(30, 40, num_layers=0)


def test_cho_structure():
    model = zoo.cho_encoder_decoder(30, 40, embedding_dim=8, units=16,
                                    maxout_units=6)
    assert model.output_shape == (None, None, 40)
    with zero_weights():
        paper = zoo.cho_encoder_decoder(30, 40)
    assert _defaults(zoo.cho_encoder_decoder)["source_vocab_size"] == 15000
    assert paper.get_layer("encoder").units == 1000
    assert paper.get_layer("source_embedding").output_dim == 100
    assert paper.get_layer("deep_output").units == 2 * 500
    # c conditions every decoder step: the decoder's input is [e(y); c].
    assert paper.get_layer("decoder").cell.kernel.shape[0] == 100 + 1000
    with pytest.raises(ValueError, match="`maxout_units`"):
        zoo.cho_encoder_decoder(30, 40, maxout_units=0)


def test_transformer_structure():
    model = zoo.transformer_nmt(30, 40, num_layers=2, d_model=16, num_heads=2,
                                ff_dim=32)
    assert model.output_shape == (None, None, 40)
    # Base model defaults (Vaswani et al. 2017, Table 3).
    with zero_weights():
        paper = zoo.transformer_nmt(30, 40)
    assert _defaults(zoo.transformer_nmt)["source_vocab_size"] == 37000
    block = paper.get_layer("decoder_6")
    assert block.num_heads == 8 and block.ff_dim == 2048 and block.dropout == 0.1
    assert paper.get_layer("source_embedding").d_model == 512
    with pytest.raises(ValueError, match=r"`num_heads` must be a divisor of d_model=16; received 3"):
        zoo.transformer_nmt(30, 40, d_model=16, num_heads=3)
    from kerattn.layers import TransformerEncoderBlock
    with pytest.raises(ValueError, match=r"`num_heads` must be a divisor of d_model=16; received 3"):
        TransformerEncoderBlock(3, 8)(np.zeros((1, 2, 16), "float32"))
    with pytest.raises(ValueError, match="`ff_dim`"):
        TransformerEncoderBlock(2, 0)


@pytest.mark.parametrize("name", ["transformer", "convs2s"])
def test_decoder_is_causal_and_source_padding_is_inert(name):
    rng = np.random.default_rng(5)
    if name == "transformer":
        model = zoo.transformer_nmt(30, 40, num_layers=2, d_model=16,
                                    num_heads=2, ff_dim=32, dropout=0.0)
    else:
        model = zoo.convs2s_nmt(30, 40, embedding_dim=8, hidden_dim=16,
                                encoder_layers=2, decoder_layers=2,
                                dropout=0.0)
    x = _random_batch(rng)
    x["target_in_ids"][2, 3:] = 7  # no padding: every position real
    base = to_numpy(model.predict(x, verbose=0))
    later = {k: v.copy() for k, v in x.items()}
    later["target_in_ids"][:, 4] = 9
    changed = to_numpy(model.predict(later, verbose=0))
    np.testing.assert_allclose(changed[:, :4], base[:, :4], atol=1e-5)
    assert np.abs(changed[:, 4:] - base[:, 4:]).max() > 1e-4
    # More source padding changes nothing.
    padded = {k: v.copy() for k, v in x.items()}
    padded["source_ids"] = np.pad(x["source_ids"], ((0, 0), (0, 4)))
    np.testing.assert_allclose(to_numpy(model.predict(padded, verbose=0)),
                               base, atol=1e-5)


@pytest.fixture(scope="module")
def real_slice(gettext_catalogs):
    pairs = gettext_pairs("fr")["train"][:64]
    src = WordVocabulary.build([s for s, _ in pairs])
    tgt = WordVocabulary.build([t for _, t in pairs])
    x, y, kept = translation_arrays(pairs, src, tgt, max_tokens=12)
    return src, tgt, x, y, kept


# name -> (builder, Adam learning rate[, clipnorm]); 60 epochs of 2 batches.
OVERFIT = {
    "bahdanau": (lambda v_s, v_t: zoo.bahdanau_nmt(
        v_s, v_t, embedding_dim=64, units=128, alignment_units=64,
        maxout_units=64), 3e-3),
    # The CPU presets' paper options (reversed source, uniform(-0.1, 0.1),
    # unit-variance embeddings), as the recipe trains it.
    "luong": (lambda v_s, v_t: zoo.luong_nmt(
        v_s, v_t, units=128, embedding_dim=64, num_layers=2, dropout=0.0,
        preset="small"), 1e-2),
    "seq2seq": (lambda v_s, v_t: zoo.seq2seq(
        v_s, v_t, units=128, embedding_dim=64, num_layers=2), 1e-2),
    "cho": (lambda v_s, v_t: zoo.cho_encoder_decoder(
        v_s, v_t, embedding_dim=64, units=128, maxout_units=64), 1e-2),
    "transformer": (lambda v_s, v_t: zoo.transformer_nmt(
        v_s, v_t, num_layers=2, d_model=64, num_heads=4, ff_dim=128,
        dropout=0.0), 3e-3),
    "convs2s": (lambda v_s, v_t: zoo.convs2s_nmt(
        v_s, v_t, embedding_dim=64, hidden_dim=128, encoder_layers=3,
        decoder_layers=3, dropout=0.0), 3e-3, 1.0),  # no normalisation: clip
}


@needs_catalogs
@pytest.mark.parametrize("name", sorted(OVERFIT))
def test_overfits_a_real_slice(name, real_slice, tmp_path):
    src, tgt, x, y, kept = real_slice
    keras.utils.set_random_seed(0)
    build, learning_rate, *clipnorm = OVERFIT[name]
    model = build(len(src), len(tgt))
    model.compile(
        optimizer=keras.optimizers.Adam(learning_rate,
                                        clipnorm=(clipnorm or [None])[0]),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True,
                                                        ignore_class=0))
    model.fit(x, y, batch_size=32, epochs=60, verbose=0)  # 120 steps at most
    pred = to_numpy(model.predict(x, verbose=0)).argmax(-1)
    real = y != 0
    accuracy = (pred[real] == y[real]).mean()
    assert accuracy >= 0.95, accuracy

    # Strings in, strings out: greedy reproduces most training targets
    # exactly (>= 95% teacher-forced token accuracy still lets a free-running
    # decoder slip on a token now and then).
    translator = Translator(model, src, tgt)
    sources = [s for s, _ in kept[:6]]
    greedy, alignments = translator(sources, return_alignments=True)
    assert len(greedy) == len(alignments) == len(sources) == 6
    assert sum(g == t for g, (_, t) in zip(greedy, kept[:6])) >= 3
    for a in alignments:
        w = a["weights"]
        if name in ("seq2seq", "cho"):  # no attention, no alignment
            assert w is None
            continue
        assert w.shape == (len(a["target_tokens"]), len(a["source_tokens"]))
        np.testing.assert_allclose(w.sum(-1), 1.0, atol=1e-4)
    assert translator(sources, beam_width=1, length_penalty=0.0) == greedy
    beam = translator(sources, beam_width=4, length_penalty=0.6)
    assert sum(b == t for b, (_, t) in zip(beam, kept[:6], strict=True)) >= 3

    # The trained model survives a .keras round trip, translations included.
    path = str(tmp_path / "bahdanau.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert Translator(loaded, src, tgt)(sources) == greedy


def test_beam_one_equals_greedy_on_the_model():
    rng = np.random.default_rng(1)
    model = zoo.bahdanau_nmt(30, 40, preset="tiny")
    src = _random_batch(rng)["source_ids"]
    g = greedy_search(model.step, model.encode(src), 3, 2, 3, 0, max_length=7)
    b = beam_search(model.step, model.encode(src), 3, 2, 3, 0, beam_width=1,
                    max_length=7)
    np.testing.assert_array_equal(to_numpy(b["tokens"])[:, 0], to_numpy(g["tokens"]))
    np.testing.assert_allclose(to_numpy(b["attention"])[:, 0],
                               to_numpy(g["attention"]), atol=1e-5)


@pytest.mark.parametrize("name", ["bahdanau_coverage", "luong_location_sensitive"])
def test_alignment_state_models_round_trip(name, tmp_path):
    """A decoder that carries the alignment history survives a `.keras`
    round trip: same class, same logits, same first decoding step, and the
    coverage model keeps its one coverage loss, of the same value."""
    model = BUILDERS[name](30, 40)
    x = _shortest_first_batch(np.random.default_rng(2))
    logits = to_numpy(model(x))
    path = str(tmp_path / f"{name}.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert type(loaded) is type(model)
    np.testing.assert_allclose(to_numpy(loaded(x)), logits, atol=1e-6)
    assert len(loaded.losses) == len(model.losses) == (name == "bahdanau_coverage")
    if model.losses:
        np.testing.assert_allclose(to_numpy(loaded.losses[0]),
                                   to_numpy(model.losses[0]), atol=1e-6)
    bos = keras.ops.convert_to_tensor(x["target_in_ids"][:, 0])
    first = [to_numpy(m.step(bos, m.encode(x["source_ids"]), 0)[0])
             for m in (model, loaded)]
    np.testing.assert_allclose(first[1], first[0], atol=1e-6)


def np_coverage_loss(alphas, target_lengths, weight):
    """See et al. (2017), eq. 12-13: `weight * sum_i min(a_i^t, c_i^t)` with
    `c^t = sum_{t' < t} a^{t'}`, averaged over every row's real steps."""
    total, steps = 0.0, 0
    for a, length in zip(alphas, target_lengths):
        c = np.zeros(a.shape[-1])
        for t in range(length):
            total += np.minimum(a[t], c).sum()
            c += a[t]
        steps += length
    return weight * total / steps


def test_coverage_loss_trains_with_the_model():
    """`bahdanau_nmt(coverage=True, coverage_loss_weight=w)` adds to its
    losses `w` times eq. 12-13 of its decoder's own alignments (read from
    `encode` / `step` along the target, the shortest row first), and `fit`
    trains on the cross-entropy plus that loss (jit-compiled on TensorFlow
    and JAX; torch trains eagerly, as `tests/test_attention_rnn.py`
    explains)."""
    keras.utils.set_random_seed(1)
    weight = 0.7
    model = zoo.bahdanau_nmt(30, 40, preset="tiny", coverage=True,
                             coverage_loss_weight=weight)
    x = _shortest_first_batch(np.random.default_rng(3))
    model(x)
    # Sharp alignments, moved off the words they covered by a large w_c, so
    # that min(a, c) binds (near-uniform alignments, or sharp ones that stay
    # on one word, give covloss_t = 1 at every step after the first).
    attention = model.get_layer("decoder").attention
    for variable, scale in [(model.get_layer("source_embedding").embeddings, 40.0),
                            (model.get_layer("target_embedding").embeddings, 40.0),
                            (attention.W_a, 3.0), (attention.v_a, 5.0),
                            (attention.w_c, -20.0)]:
        variable.assign(variable * scale)
    logits = model(x)
    tgt = x["target_in_ids"]
    lengths = (tgt != 0).sum(1)
    state, alphas = model.encode(x["source_ids"]), []
    for i in range(tgt.shape[1]):
        _, state, w = model.step(keras.ops.convert_to_tensor(tgt[:, i]), state, i)
        alphas.append(to_numpy(w))
    alphas = np.stack(alphas, 1).astype("float64")        # (B, T, S)
    expected = np_coverage_loss(alphas, lengths, weight)
    # Well below that value of covloss_t = 1.
    assert expected < weight * ((lengths - 1).sum() / lengths.sum()) - 0.05
    assert len(model.losses) == 1
    np.testing.assert_allclose(float(to_numpy(model.losses[0])), expected, atol=1e-5)

    # One step of fit: its loss is the cross-entropy plus that loss.
    y = np.concatenate([tgt[:, 1:], np.zeros_like(tgt[:, :1])], 1)
    y[np.arange(len(y)), lengths - 1] = 3  # EOS after each row's last token
    cross_entropy = float(to_numpy(MaskedSparseCrossentropy()(y, logits)))
    backend = keras.backend.backend()
    model.compile(keras.optimizers.Adam(1e-2), MaskedSparseCrossentropy(),
                  jit_compile=backend != "torch")
    w_c = to_numpy(attention.w_c)
    history = model.fit(x, y, batch_size=len(y), epochs=1, verbose=0)
    np.testing.assert_allclose(history.history["loss"][0],
                               cross_entropy + expected, atol=1e-4)
    assert not np.allclose(to_numpy(attention.w_c), w_c)


def test_translator_returns_the_n_best_strings_with_their_scores():
    """`num_return=n`: each text's n hypotheses as strings, best first,
    each with the search's score and log-probability; they are
    `beam_search`'s own n-best (the same model through `generate`), the
    first is the 1-best translation, and each alignment ends at its own
    EOS. The first text is not the longest."""
    texts = ["permission denied", "cannot open the file %s now", "open"]
    src = WordVocabulary.build(texts)
    tgt = WordVocabulary.build(["ouvrir le fichier", "permission refusée",
                                "impossible d'ouvrir %s"])
    keras.utils.set_random_seed(5)
    model = BUILDERS["bahdanau"](len(src), len(tgt))
    translator = Translator(model, src, tgt, max_length=7)
    n_best = translator(texts, beam_width=4, num_return=3, length_penalty=0.6)
    assert [len(h) for h in n_best] == [3, 3, 3]
    n, ids = translator.generator.pad(translator._source_ids(texts)[0])
    raw = model.generate(ids[:n], strategy="beam", beam_width=4, num_return=3,
                         length_penalty=0.6, max_length=7, bos_id=tgt.bos_id,
                         eos_id=tgt.eos_id, pad_id=tgt.pad_id)
    for row, hypotheses in enumerate(n_best):
        scores = [h["score"] for h in hypotheses]
        assert scores == sorted(scores, reverse=True)
        np.testing.assert_allclose(scores, to_numpy(raw["scores"])[row], atol=1e-5)
        np.testing.assert_allclose([h["log_prob"] for h in hypotheses],
                                   to_numpy(raw["log_probs"])[row], atol=1e-5)
        assert [h["translation"] for h in hypotheses] == [
            tgt.decode(t) for t in to_numpy(raw["tokens"])[row]]
    best = translator(texts, beam_width=4, length_penalty=0.6)
    assert [h[0]["translation"] for h in n_best] == best
    with_alignments = translator(texts, beam_width=4, num_return=2,
                                 return_alignments=True)
    for hypotheses in with_alignments:
        for h in hypotheses:
            tokens = h["alignment"]["target_tokens"]
            assert len(h["alignment"]["weights"]) == len(tokens)


@pytest.mark.parametrize("name", ["bahdanau", "luong_local_p", "seq2seq",
                                  "transformer", "convs2s"])
def test_compiled_translator_equals_eager(name):
    """XLA / jax.jit decoding returns what the eager loop returns."""
    texts = ["open the file", "cannot open file %s", "permission denied",
             "the file is not a directory"]
    src = WordVocabulary.build(texts)
    tgt = WordVocabulary.build(["ouvrir le fichier", "permission refusée",
                                "impossible d'ouvrir %s"])
    keras.utils.set_random_seed(3)
    model = BUILDERS[name](len(src), len(tgt))
    eager = Translator(model, src, tgt, max_length=9, jit_compile=False)
    compiled = Translator(model, src, tgt, max_length=9)
    for kwargs in ({}, {"beam_width": 3, "length_penalty": 0.6}):
        want, want_align = eager(texts, return_alignments=True, **kwargs)
        got, got_align = compiled(texts, return_alignments=True, **kwargs)
        assert got == want
        assert len(got_align) == len(want_align) == len(texts)
        for a, b in zip(got_align, want_align):
            assert a["target_tokens"] == b["target_tokens"]
            if a["weights"] is not None:
                np.testing.assert_allclose(a["weights"], b["weights"], atol=1e-5)
    # A compiled function is reused for a second batch of the same shape
    # and options; without alignments, the search keeps no attention
    # history (another program) and translates the same.
    count = len(compiled.generator._compiled)
    compiled(texts[::-1], return_alignments=True)
    assert len(compiled.generator._compiled) == count
    assert compiled(texts) == eager(texts)


def test_compiled_translator_serves_many_batch_shapes():
    """Many padded batch and source shapes through one compiled search.

    TensorFlow's `reduce_retracing` relaxes the shapes to unknown
    dimensions after a few traces, and a search traced that way fails on
    its batch size (`int(None)`): every shape compiles on its own.
    """
    texts = ["open the file", "cannot open file %s", "permission denied",
             "the file is not a directory", "file"]
    src = WordVocabulary.build(texts)
    tgt = WordVocabulary.build(["ouvrir le fichier", "permission refusée"])
    keras.utils.set_random_seed(3)
    model = BUILDERS["bahdanau"](len(src), len(tgt))
    eager = Translator(model, src, tgt, max_length=5, jit_compile=False)
    compiled = Translator(model, src, tgt, max_length=5)
    for batch in (texts[:1], texts[:2], texts * 2):   # padded to 1, 2, 16 rows
        assert compiled(batch) == eager(batch)

"""Grapheme-to-phoneme: the CMUdict loader on the committed sample, the
letter and phoneme vocabularies, the error rates against hand counts, the
left-to-right preset, and streaming against offline decoding."""

import json
import os
import sys
import types
import warnings

import keras
import numpy as np
import pytest

import kerattn
from kerattn.datasets import (SymbolVocabulary, cmudict_g2p, read_cmudict,
                              translation_arrays, vocabulary_from_json)
from kerattn.decoding import StreamingDecoder
from kerattn.recipes import g2p

SAMPLE = os.path.join(os.path.dirname(__file__), "data", "cmudict_sample.dict")


# --- the loader ----------------------------------------------------------------


def test_sample_groups_alternatives_and_strips_stress_and_comments():
    words = read_cmudict(SAMPLE)
    # "aalborg AO1 L B AO0 R G # place, danish" and "aalborg(2) AA1 L B AO0 R G"
    assert words["aalborg"] == ("AO L B AO R G", "AA L B AO R G")
    stressed = read_cmudict(SAMPLE, stress=True)
    assert stressed["aalborg"] == ("AO1 L B AO0 R G", "AA1 L B AO0 R G")
    lines = [line for line in open(SAMPLE, encoding="utf-8") if line.strip()]
    assert sum(map(len, stressed.values())) == len(lines)   # one a line
    assert len(words) == len({line.split()[0].split("(")[0] for line in lines})
    phonemes = {p for prons in words.values() for pron in prons for p in pron.split()}
    assert not any(p[-1].isdigit() for p in phonemes)
    assert any(p[-1].isdigit() for prons in stressed.values() for pron in prons
               for p in pron.split())


def test_alternatives_equal_once_stripped_are_one(tmp_path):
    path = tmp_path / "tiny.dict"
    path.write_text("either IY1 DH ER0\neither(2) IY0 DH ER0\n"
                    "either(3) AY1 DH ER0\n")
    assert read_cmudict(str(path)) == {"either": ("IY DH ER", "AY DH ER")}
    assert len(read_cmudict(str(path), stress=True)["either"]) == 3
    path.write_text("ma m a1\nma(2) M AA1\n")   # tones of a user's phone set stay
    assert read_cmudict(str(path)) == {"ma": ("m a1", "M AA")}


def test_split_is_by_word_fixed_and_complete():
    splits = cmudict_g2p(path=SAMPLE)
    words = read_cmudict(SAMPLE)
    sides = {name: [w for w, _ in rows] for name, rows in splits.items()}
    everything = sum(sides.values(), [])
    assert sorted(everything) == sorted(words)             # each word once
    assert len(set(everything)) == len(everything)         # on one side only
    for rows in splits.values():                           # all its pronunciations
        assert all(prons == words[w] for w, prons in rows)
    assert len(sides["train"]) > 8 * len(sides["test"]) > 0
    assert cmudict_g2p(path=SAMPLE) == splits              # the same every time
    wider = cmudict_g2p(path=SAMPLE, test_share=0.2)       # a word's side is
    assert set(sides["test"]) <= {w for w, _ in wider["test"]}  # its hash's


def test_missing_cmudict_package_says_which_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "cmudict", None)      # import fails
    with pytest.raises(ImportError, match=r"kerattn\[g2p\]"):
        cmudict_g2p()


# --- vocabularies ----------------------------------------------------------------


def test_letter_and_phoneme_vocabularies_round_trip():
    letters = SymbolVocabulary.build(["read", "live", "o'neil"], separator="")
    phonemes = SymbolVocabulary.build(["R IY D", "R EH D", "L IH V"])
    assert letters.itos[:4] == ["<pad>", "<unk>", "<s>", "</s>"]
    assert letters.itos[4:6] == ["e", "i"]                  # most frequent first
    assert letters.encode("ride", add_bos=True) == [
        letters.bos_id, *(letters.stoi[c] for c in "ride")]
    assert letters.decode(letters.encode("deli") + [letters.eos_id, 5]) == "deli"
    assert letters.decode([letters.stoi["r"], letters.unk_id]) == "r<unk>"
    assert phonemes.decode(phonemes.encode("L IY D", add_eos=True)) == "L IY D"
    for vocab in (letters, phonemes):
        again = vocabulary_from_json(vocab.to_json())
        assert type(again) is SymbolVocabulary and again.itos == vocab.itos
        assert again.separator == vocab.separator


def test_a_letter_vocabulary_that_marks_the_end():
    """`end_marker=True`: every whole word encodes with EOS last (`encode`,
    `encode_batch`, and the arrays a model trains on), a piece with
    `add_eos=False` without; shown as `</s>`; kept by its JSON, and a JSON
    written before the option reads as unmarked."""
    letters = SymbolVocabulary.build(["read", "live"], separator="", end_marker=True)
    word = [letters.stoi[c] for c in "deli"]
    assert letters.encode("deli") == word + [letters.eos_id]
    assert letters.encode_batch(["deli", "r"]) == [
        word + [letters.eos_id], [letters.stoi["r"], letters.eos_id]]
    assert letters.encode("de", add_eos=False) == word[:2]
    assert letters.display_tokens("deli") == ["d", "e", "l", "i", "</s>"]
    assert letters.decode(letters.encode("deli")) == "deli"
    again = vocabulary_from_json(letters.to_json())
    assert again.end_marker and again.encode("deli") == letters.encode("deli")
    old = json.loads(letters.to_json())
    del old["end_marker"]
    assert vocabulary_from_json(json.dumps(old)).encode("deli") == word
    phonemes = SymbolVocabulary.build(["R IY D"])
    x, _, _ = translation_arrays([("read", "R IY D"), ("deli", "R IY D")],
                                 letters, phonemes, max_tokens=5)
    assert x["source_ids"].tolist() == [letters.encode("read"), word + [3]]


@pytest.mark.parametrize("text", [
    json.dumps({"tokens": ["ab"], "lowercase": False, "separator": ""}),
    json.dumps({"tokens": ["a"], "lowercase": False, "separator": "-"}),
    json.dumps({"tokens": ["a"], "lowercase": False, "separator": " ", "x": 1}),
    json.dumps({"tokens": ["a"], "lowercase": False, "separator": "",
                "end_marker": "yes"}),
    json.dumps({"tokens": ["a"], "lowercase": False, "end_marker": True}),
])
def test_symbol_vocabulary_json_is_checked(text):
    with pytest.raises(ValueError, match="text|tokens|separator"):
        vocabulary_from_json(text)


# --- scoring ------------------------------------------------------------------


def test_error_rates_against_hand_counts():
    references = [("R EH D", "R IY D"), ("L IH V", "L AY V"), ("AH",), ("B IY",)]
    hypotheses = ["R IY D",      # right (the second pronunciation)
                  "L IY V",      # one substitution from either
                  "AH",          # right
                  ""]            # two deletions
    rates = g2p.error_rates(hypotheses, references)
    assert rates["wer"] == 2 / 4
    assert rates["per"] == pytest.approx((0 + 1 + 0 + 2) / (3 + 3 + 1 + 2))
    assert g2p.edit_distance("kitten", "sitting") == 3
    assert g2p.edit_distance([], ["A"]) == 1
    # The closest pronunciation counts: "R EH" is 1 from "R EH D", 2 from
    # "R IY D"; its length is that of the one it is closest to.
    assert g2p.error_rates(["R EH"], [("R IY D", "R EH D")])["per"] == 1 / 3


# --- the models ------------------------------------------------------------------


def _numpy_weights(model, seed=0):
    """Every weight drawn from NumPy (the same model on every backend)."""
    rng = np.random.default_rng(seed)
    model.set_weights([rng.normal(0, 0.5, w.shape).astype("float32")
                       for w in model.get_weights()])


def test_zero_decoder_init_graph_and_steps_agree():
    """`decoder_init="zeros"`: `encode` starts the decoder from zeros, as the
    training graph does (teacher-forced logits = a loop over `step`)."""
    model = kerattn.zoo.luong_nmt(12, 10, preset="tiny", attention="global",
                                  decoder_init="zeros")
    _numpy_weights(model)
    source = np.array([[4, 5, 0, 0], [6, 7, 8, 9], [5, 0, 0, 0]], "int32")
    target_in = np.array([[2, 4, 5], [2, 6, 0], [2, 7, 8]], "int32")
    logits = keras.ops.convert_to_numpy(model(
        {"source_ids": source, "target_in_ids": target_in}))
    state = model.encode(source)
    assert all(not np.any(keras.ops.convert_to_numpy(s))
               for s in state["states"]["cells"][:2])    # h_0 = c_0 = 0
    for t in range(3):
        step_logits, state, _ = model.step(target_in[:, t], state, t)
        real = target_in[:, t] > 0      # a padded step's output is not used
        np.testing.assert_allclose(keras.ops.convert_to_numpy(step_logits)[real],
                                   logits[real, t], atol=1e-5)
    paper = kerattn.zoo.luong_nmt(12, 10, preset="tiny")
    paper.set_weights(model.get_weights())
    assert not np.allclose(keras.ops.convert_to_numpy(paper(
        {"source_ids": source, "target_in_ids": target_in})), logits)


def test_lookahead_graph_and_steps_agree():
    """`lookahead=2`: `encode` runs the same `LookaheadConvolution` over
    `h_s` as the training graph (teacher-forced logits = a loop over
    `step`, the shortest row first, padded targets), and the convolution
    changes the logits."""
    model = kerattn.zoo.luong_nmt(12, 10, preset="tiny", attention="global",
                                  decoder_init="zeros", lookahead=2)
    _numpy_weights(model)
    source = np.array([[5, 0, 0, 0], [6, 7, 8, 9], [4, 5, 6, 0]], "int32")
    target_in = np.array([[2, 4, 0], [2, 6, 5], [2, 7, 8]], "int32")
    inputs = {"source_ids": source, "target_in_ids": target_in}
    logits = keras.ops.convert_to_numpy(model(inputs))
    state = model.encode(source)
    for t in range(3):
        step_logits, state, _ = model.step(target_in[:, t], state, t)
        real = target_in[:, t] > 0
        np.testing.assert_allclose(keras.ops.convert_to_numpy(step_logits)[real],
                                   logits[real, t], atol=1e-5)
    layer = model.get_layer("lookahead")
    d = layer.kernel.shape[1]
    layer.set_weights([np.eye(3, 1, dtype="float32").repeat(d, axis=1)])  # identity
    assert not np.allclose(keras.ops.convert_to_numpy(model(inputs)), logits)


WORDS = ["reads", "phoneme", "th", "alive"]   # the longest not first


def _streaming_model(attention, letters, phonemes, lookahead=0):
    model = kerattn.zoo.luong_nmt(len(letters), len(phonemes), attention=attention,
                                  preset="g2p-streaming", units=8, embedding_dim=6,
                                  lookahead=lookahead)
    _numpy_weights(model)
    return model


@pytest.mark.parametrize("attention,lookahead", [
    ("hard-monotonic", 0), ("mocha", 0), ("hard-monotonic", 2), ("mocha", 1)])
def test_streaming_equals_offline_and_emits_before_the_last_letter(attention, lookahead):
    """Streamed output equals offline decoding, some of it committed before
    the word ends; with a lookahead of k letters (a `LookaheadConvolution`
    over the one-way encoder), too, each output k letters later."""
    letters = SymbolVocabulary.build(WORDS, separator="")
    phonemes = SymbolVocabulary.build(["F OW N IY M", "R IY D Z", "TH"])
    model = _streaming_model(attention, letters, phonemes, lookahead)
    assert model.lookahead() == lookahead
    bias = model.get_layer("output_projection").bias
    values = keras.ops.convert_to_numpy(bias)
    values[phonemes.eos_id] = -2.0        # EOS less likely: words of a few phonemes
    bias.assign(values)
    early = spread = False
    ids = [letters.encode(w) for w in WORDS]
    batch = np.array([row + [0] * (7 - len(row)) for row in ids], "int32")
    for bias in (0.0, 1.0):   # p = sigmoid(e + r): stops in between, or early
        model.get_layer("decoder").attention.score_bias.assign(bias)
        offline = model.generate(batch, max_length=8, bos_id=phonemes.bos_id,
                                 eos_id=phonemes.eos_id)   # one padded batch
        tokens, lengths = (keras.ops.convert_to_numpy(offline[k])
                           for k in ("tokens", "lengths"))
        for word, row, n in zip(WORDS, tokens, lengths):
            expected = [t for t in row[:n] if t != phonemes.eos_id]
            decoder = StreamingDecoder(model, letters, phonemes, max_length=8)
            chunks = [decoder.feed(c) for c in word] + [decoder.finish()]
            assert sum(chunks, []) == phonemes.tokens(expected), (bias, word)
            emitted_at = [k for k, chunk in enumerate(chunks) if chunk]
            early |= bool(emitted_at) and emitted_at[0] < len(word) - 1
            spread |= len(emitted_at) >= 2
    assert early and spread    # some tokens before the word ends, in steps


def test_a_streaming_decoder_that_ignored_the_lookahead_would_differ():
    """The check that the lookahead is honoured can fail: the same model
    streamed as if it read no letter ahead (committing on states that the
    next letters still change) gives another output for some word."""
    letters = SymbolVocabulary.build(WORDS, separator="")
    phonemes = SymbolVocabulary.build(["F OW N IY M", "R IY D Z", "TH"])
    model = _streaming_model("hard-monotonic", letters, phonemes, lookahead=2)
    differs = False
    for bias in (0.0, 1.0):
        model.get_layer("decoder").attention.score_bias.assign(bias)
        for word in WORDS:
            outputs = []
            for honoured in (True, False):
                decoder = StreamingDecoder(model, letters, phonemes, max_length=8)
                if not honoured:
                    decoder.lookahead = 0
                outputs.append(sum([decoder.feed(c) for c in word], [])
                               + decoder.finish())
            differs |= outputs[0] != outputs[1]
    assert differs


def _wait_model(attention, letters, phonemes, lookahead=0):
    model = kerattn.zoo.luong_nmt(len(letters), len(phonemes), attention=attention,
                                  preset="g2p-streaming", units=8, embedding_dim=6,
                                  lookahead=lookahead, wait_k=2, wait_rate=1.2)
    _numpy_weights(model)
    bias = model.get_layer("output_projection").bias
    values = keras.ops.convert_to_numpy(bias)
    values[phonemes.eos_id] = -2.0        # EOS less likely: words of a few phonemes
    bias.assign(values)
    return model


@pytest.mark.parametrize("attention,lookahead,end_marker", [
    ("global", 0, False), ("location-sensitive", 1, False), ("global", 0, True),
    ("location-sensitive", 1, True)])
def test_a_wait_k_model_streams_on_its_schedule_and_equals_offline(
        attention, lookahead, end_marker):
    """A soft attention under a wait-k schedule (`wait_k=2, wait_rate=1.2`):
    phoneme i is committed once 2 + floor(1.2 i) positions (and the
    lookahead's) are read, never earlier or later, and the streamed output
    equals the offline greedy output of the padded batch (the longest word
    not first). With the end of the word marked (`end_marker`: EOS the
    last source position, read at `finish`), a phoneme whose prefix holds
    the marker waits for the end."""
    letters = SymbolVocabulary.build(WORDS, separator="", end_marker=end_marker)
    phonemes = SymbolVocabulary.build(["F OW N IY M", "R IY D Z", "TH"])
    model = _wait_model(attention, letters, phonemes, lookahead)
    assert model.can_stream() == (True, "")
    assert [model.reads(i) for i in range(6)] == [2, 3, 4, 5, 6, 8]
    ids = [letters.encode(w) for w in WORDS]
    assert all(len(row) == len(w) + end_marker for row, w in zip(ids, WORDS))
    batch = np.array([row + [0] * (8 - len(row)) for row in ids], "int32")
    offline = model.generate(batch, max_length=8, bos_id=phonemes.bos_id,
                             eos_id=phonemes.eos_id)
    tokens, lengths = (keras.ops.convert_to_numpy(offline[k])
                       for k in ("tokens", "lengths"))
    early = 0
    for word, row, n in zip(WORDS, tokens, lengths):
        expected = [t for t in row[:n] if t != phonemes.eos_id]
        decoder = StreamingDecoder(model, letters, phonemes, max_length=8)
        chunks = [decoder.feed(c) for c in word] + [decoder.finish()]
        assert sum(chunks, []) == phonemes.tokens(expected), word
        # The positions read when each was written (the end: one more).
        read_at = [k + 1 for k, chunk in enumerate(chunks) for _ in chunk]
        scheduled = [min(model.reads(i) + lookahead, len(word) + 1)
                     for i in range(len(read_at))]
        assert read_at == scheduled, word
        early += sum(r < len(word) for r in read_at)
    assert early >= 4


def test_a_marked_model_streamed_without_its_marker_would_differ():
    """The marked case above can fail: the same model streamed by a decoder
    whose letters do not mark the end (no EOS read at `finish`) writes
    another output for some word."""
    marked = SymbolVocabulary.build(WORDS, separator="", end_marker=True)
    unmarked = SymbolVocabulary(marked.itos[4:], separator="")
    phonemes = SymbolVocabulary.build(["F OW N IY M", "R IY D Z", "TH"])
    model = _wait_model("global", marked, phonemes)
    outputs = {}
    for name, letters in (("marked", marked), ("unmarked", unmarked)):
        decoder = StreamingDecoder(model, letters, phonemes, max_length=8)
        outputs[name] = []
        for word in WORDS:
            decoder.reset()
            outputs[name].append(sum([decoder.feed(c) for c in word], [])
                                 + decoder.finish())
    assert outputs["marked"] != outputs["unmarked"]


def test_a_streaming_decoder_off_the_schedule_would_differ():
    """The check above can fail: the same wait-k model streamed one letter
    earlier than its schedule (committing with attention over a prefix
    shorter than the offline step reads) gives another output for some
    word."""
    letters = SymbolVocabulary.build(WORDS, separator="")
    phonemes = SymbolVocabulary.build(["F OW N IY M", "R IY D Z", "TH"])
    model = _wait_model("global", letters, phonemes)
    differs = False
    for word in WORDS:
        outputs = []
        for early in (0, 1):
            decoder = StreamingDecoder(model, letters, phonemes, max_length=8)
            decoder.lookahead = -early
            outputs.append(sum([decoder.feed(c) for c in word], [])
                           + decoder.finish())
        differs |= outputs[0] != outputs[1]
    assert differs


def test_average_lagging_against_hand_counts():
    """Ma et al. (2019)'s AL, in letters, of what a streaming decoder
    committed after each letter and at the end."""
    lag = g2p.average_lagging
    assert lag([["R"], ["IY"], ["D"], []]) == 1.0             # one a letter
    # g = 1, 3, 3, 3, 3 for 5 outputs of 3 letters (rate 3/5); tau = 2:
    # ((1 - 0) + (3 - 0.6)) / 2.
    assert lag([["F"], [], ["OW"], ["N", "IY", "M"]]) == pytest.approx(1.7)
    assert lag([[], [], [], ["AH", "B"]]) == 3.0              # all at the end
    # Every output before the last letter (the model ended early): tau is the
    # last output; g = 1, 2 of 3 letters, rate 3/2: ((1 - 0) + (2 - 1.5)) / 2.
    assert lag([["A"], ["B"], [], []]) == pytest.approx(0.75)
    with pytest.raises(ValueError, match="chunks"):
        lag([[], [], []])


def test_streaming_refuses_models_that_read_the_whole_word():
    letters = SymbolVocabulary.build(WORDS, separator="")
    phonemes = SymbolVocabulary.build(["F OW N IY M"])
    size = dict(preset="tiny", units=8, embedding_dim=6)
    for kwargs, why in [
            (dict(attention="global", decoder_init="zeros"), "not a hard monotonic"),
            (dict(attention="mocha", bidirectional_encoder=True,
                  decoder_init="zeros"), "both ways"),
            (dict(attention="mocha", reverse_source=True, decoder_init="zeros"),
             "reversed"),
            (dict(attention="hard-monotonic"), "decoder_init='zeros'")]:
        model = kerattn.zoo.luong_nmt(len(letters), len(phonemes), **size, **kwargs)
        with pytest.raises(ValueError, match=why):
            StreamingDecoder(model, letters, phonemes)


@pytest.mark.parametrize("attention,wait", [("hard-monotonic", {}),
                                             ("global", dict(wait_k=3, wait_rate=1.5))])
def test_a_saved_streaming_model_loads_still_reading_left_to_right(tmp_path, attention,
                                                                   wait):
    """`decoder_init="zeros"`, a lookahead and a wait-k schedule survive a
    `.keras` round trip (the graph's decoder takes no initial state): the
    loaded model streams with the same lookahead and schedule, and decodes
    the same; no marker layer is built."""
    model = kerattn.zoo.luong_nmt(12, 10, preset="g2p-streaming", units=8,
                                  embedding_dim=6, attention=attention,
                                  lookahead=2, **wait)
    _numpy_weights(model)
    path = str(tmp_path / "g2p.keras")
    model.save(path)
    loaded = kerattn.load_model(path)
    assert "zero_decoder_init" not in loaded.layers_by_name
    assert loaded.can_stream() == (True, "") and loaded.lookahead() == 2
    assert [loaded.reads(i) for i in range(3)] == (
        [3, 4, 6] if wait else [None] * 3)
    source = np.array([[4, 5, 0], [6, 7, 8]], "int32")
    state = loaded.encode(source)
    assert not np.any(keras.ops.convert_to_numpy(state["states"]["cells"][0]))
    before, after = (keras.ops.convert_to_numpy(
        m.generate(source, max_length=5, bos_id=2, eos_id=3)["tokens"])
        for m in (model, loaded))
    np.testing.assert_array_equal(after, before)


class _Preempted(keras.callbacks.Callback):
    """A job stopped after its first epoch (after that epoch's backup)."""

    def on_epoch_begin(self, epoch, logs=None):
        if epoch == 1:
            raise RuntimeError("preempted")


def test_validation_error_rates_decode_each_epochs_weights_for_the_callbacks_after(tmp_path):
    """`ValidationErrorRates` writes the validation words' greedy WER and PER
    into the epoch's logs, decoded with the model's weights of that moment
    by one `Translator` kept across epochs (against a fresh `pronounce` and
    `error_rates` of the same weights, before and after new weights);
    `train(monitor="val_wer")` puts it before early stopping, the decay
    and the callbacks given, so they read it, and records the curve;
    `train` and `fit` (before it reads a word) refuse a monitor they cannot
    watch."""
    data = g2p.prepare(cmudict_g2p(path=SAMPLE))
    words = [w for w, _ in data["valid_split"]]
    references = [p for _, p in data["valid_split"]]
    assert len(words) == data["valid_words"] > 1
    model = g2p.build(data, "global", "tiny")
    seen = []

    class Spy(keras.callbacks.Callback):   # listed last: what the others read
        def on_epoch_end(self, epoch, logs=None):
            seen.append({k: logs.get(k) for k in ("val_wer", "val_per")})

    with warnings.catch_warnings(record=True) as caught:   # Keras warns of a missing monitor
        warnings.simplefilter("always")
        summary = g2p.train(model, data, epochs=2, batch_size=64, patience=2, decay=0.5,
                            monitor="val_wer", callbacks=[Spy()], verbose=0)
    assert not [w for w in caught if "val_wer" in str(w.message)]
    assert summary["val_wers"] == [round(s["val_wer"], 2) for s in seen] and len(seen) == 2
    assert all(0 <= s["val_per"] and 0 <= s["val_wer"] <= 100 for s in seen)
    # The decay watched the WER (patience 1): halved unless it fell.
    rate = float(keras.ops.convert_to_numpy(model.optimizer.learning_rate))
    wers = [s["val_wer"] for s in seen]
    assert rate == pytest.approx(2e-3 * (0.5 if wers[1] >= wers[0] else 1.0))

    def fresh():
        rates = g2p.error_rates(g2p.pronounce(model, data, words)[0], references)
        return {"val_wer": 100 * rates["wer"], "val_per": 100 * rates["per"]}

    callback = g2p.ValidationErrorRates(data, batch_size=4)
    callback.set_model(model)
    logs = {}
    callback.on_epoch_end(0, logs)
    before = fresh()
    assert logs == before
    rng = np.random.default_rng(0)
    for variable in model.trainable_variables:   # other weights, same translator
        variable.assign(rng.normal(0, 0.5, variable.shape).astype(variable.dtype))
    callback.on_epoch_end(1, logs)
    after = fresh()
    assert logs == after and after["val_per"] != before["val_per"]
    with pytest.raises(ValueError, match="monitor"):
        g2p.train(model, data, epochs=1, monitor="val_accuracy")
    with pytest.raises(ValueError, match="`monitor` must be 'val_loss' on several processes"):
        g2p.train(model, data, epochs=1, monitor="val_wer",
                  strategy=types.SimpleNamespace(processes=2))
    # `fit` refuses both before it reads a word (no such file is opened).
    missing = str(tmp_path / "no_such_words.dict")
    with pytest.raises(ValueError, match="`monitor` must be one of"):
        g2p.fit(missing, monitor="val_accuracy")
    with pytest.raises(ValueError, match="`monitor` must be 'val_loss' on several processes"):
        g2p.fit(missing, monitor="val_wer", strategy=types.SimpleNamespace(processes=2))
    with pytest.raises(ValueError, match="valid_split"):
        g2p.ValidationErrorRates(dict(data, valid_split=[]))
    with pytest.raises(ValueError, match="`batch_size` must be a power of two"):
        g2p.ValidationErrorRates(data, batch_size=100)


def test_training_to_convergence_resumes_from_its_backup(tmp_path):
    """`g2p.train` with early stopping, a learning-rate decay and a backup
    folder: a run stopped after its first epoch resumes there in a new call
    with a new model, which pauses after its epoch (`pause_after`, keeping
    the backup); a third call trains the last. Each call's optimizer
    continues from the step before; the summary is the whole training's
    (epochs, steps, the learning curve); the backup is removed once done."""
    data = g2p.prepare(cmudict_g2p(path=SAMPLE))
    backup = str(tmp_path / "backup")
    options = dict(epochs=3, batch_size=64, patience=3, decay=0.5, backup=backup,
                   verbose=0)
    first = g2p.build(data, "global", "tiny")
    with pytest.raises(RuntimeError, match="preempted"):
        g2p.train(first, data, callbacks=[_Preempted()], **options)
    steps = int(keras.ops.convert_to_numpy(first.optimizer.iterations))
    assert steps > 0 and os.listdir(backup)
    again = g2p.build(data, "global", "tiny")
    # Resumed watching another quantity: refused (its best is a loss).
    with pytest.raises(ValueError, match=r"EarlyStopping\(val_wer\)"):
        g2p.train(again, data, monitor="val_wer", **options)
    paused = g2p.train(again, data, pause_after=1e-9, **options)
    assert paused["paused"] and paused["epochs"] == 2 and os.listdir(backup)
    assert paused["steps"] == 2 * steps and len(paused["val_losses"]) == 2
    last = g2p.build(data, "global", "tiny")
    summary = g2p.train(last, data, **options)
    assert not summary["paused"] and summary["epochs"] == 3
    assert [c["epochs"] for c in summary["calls"]] == [1, 1, 1]
    assert summary["steps"] == 3 * steps and summary["train_minutes"] >= paused[
        "train_minutes"]
    assert summary["val_losses"][:2] == paused["val_losses"]
    assert len(summary["val_losses"]) == 3 and all(np.isfinite(summary["val_losses"]))
    assert int(keras.ops.convert_to_numpy(last.optimizer.iterations)) == 3 * steps
    assert not os.path.exists(backup) or not os.listdir(backup)
    for bad, name in (({"patience": 0}, "patience"), ({"decay": 1.5}, "decay"),
                      ({"pause_after": 0}, "pause_after"),
                      ({"backup": None, "pause_after": 5}, "pause_after")):
        with pytest.raises(ValueError, match=name):
            g2p.train(last, data, **dict(options, **bad))

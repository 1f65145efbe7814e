"""Saved `.keras` files of earlier releases load and decode as recorded.

`tests/data/legacy/` holds one small `.keras` file per generative zoo model
whose config names the model `ZooModel` (a functional model with no
`encode` / `step`; its layer names say which model it is), with its
inputs, its logits and the greedy and beam tokens and scores recorded when
it was written (`make_legacy.py` says how). Each loads as its own
generative class and gives the recorded logits, tokens and scores.

Beside them, one file per stateful attention family (coverage,
location-sensitive, hard monotonic, MoChA, the pointer-generator with
coverage, and a streaming G2P model), saved before the decoder's state
layout changed (`make_legacy_families.py`): each decodes as recorded, and
the G2P model still streams letter by letter as it did.
"""

import os

import keras
import numpy as np
import pytest

import kerattn
from cases import to_numpy
from kerattn import decoding, zoo
from kerattn.datasets import WordVocabulary

HERE = os.path.join(os.path.dirname(__file__), "data", "legacy")
FILES = {
    "bahdanau_nmt": zoo.BahdanauNMT,
    "luong_nmt": zoo.LuongNMT,
    "luong_nmt_local_p": zoo.LuongNMT,
    "seq2seq": zoo.Seq2Seq,
    "cho_encoder_decoder": zoo.ChoEncoderDecoder,
    "transformer_nmt": zoo.TransformerNMT,
    "convs2s_nmt": zoo.ConvS2SNMT,
    "show_attend_tell_soft": zoo.ShowAttendTell,
    "show_attend_tell_hard": zoo.ShowAttendTell,
}


def _load(name):
    data = np.load(os.path.join(HERE, f"{name}.npz"))
    x = {k[2:]: data[k] for k in data.files if k.startswith("x_")}
    return kerattn.load_model(os.path.join(HERE, f"{name}.keras")), x, data


@pytest.mark.parametrize("name", sorted(FILES))
def test_zoomodel_file_loads_as_its_class_and_decodes_as_recorded(name, tmp_path):
    model, x, data = _load(name)
    assert type(model) is FILES[name]
    np.testing.assert_allclose(to_numpy(model.predict(x, verbose=0)),
                               data["logits"], atol=1e-5)
    inputs = x.get("source_ids", x.get("images"))
    greedy = decoding.generate(model, inputs, max_length=7)
    np.testing.assert_array_equal(to_numpy(greedy["tokens"]), data["greedy_tokens"])
    np.testing.assert_allclose(to_numpy(greedy["scores"]), data["greedy_scores"],
                               atol=1e-5)
    beam = decoding.generate(model, inputs, max_length=7, strategy="beam",
                             beam_width=3, never_worse_than_greedy=False)
    np.testing.assert_array_equal(to_numpy(beam["tokens"]), data["beam_tokens"])
    np.testing.assert_allclose(to_numpy(beam["scores"]), data["beam_scores"],
                               atol=1e-5)
    # Saved again, its config names the class: Keras' own loader gives it.
    path = str(tmp_path / "again.keras")
    model.save(path)
    again = keras.saving.load_model(path)
    assert type(again) is FILES[name]
    assert callable(again.encode) and callable(again.step)


@pytest.mark.parametrize("name", ["bahdanau_nmt", "show_attend_tell_soft"])
def test_codecs_take_a_zoomodel_file(name):
    """`Translator` / `Captioner` take the loaded model as it is (its class
    says what it is) and decode what `generate` decodes."""
    model, x, data = _load(name)
    if name.startswith("show_attend_tell"):
        vocab = WordVocabulary([str(i) for i in range(8)])      # 12 ids
        out = decoding.Captioner(model, vocab, max_length=7, jit_compile=False)(
            x["images"])
    else:
        vocab = WordVocabulary([str(i) for i in range(26)])     # 30 ids
        texts = [" ".join(vocab.itos[i] for i in row if i)
                 for row in x["source_ids"]]
        translator = decoding.Translator(model, vocab, vocab, max_length=7,
                                         jit_compile=False)
        out = translator(texts)
        source_ids, _ = translator._source_ids(texts)   # (rows, OOV lists)
        n, ids = translator.generator.pad(source_ids)
        tokens = to_numpy(model.generate(ids, max_length=7)["tokens"])[:n]
        assert out == [vocab.decode(row) for row in tokens]
        return
    assert out == [vocab.decode(row) for row in data["greedy_tokens"]]


def test_only_zoo_models_are_upgraded():
    config = {"class_name": "ZooModel", "config": {"layers": [
        {"class_name": "Embedding", "config": {"name": "document_embedding"}}]}}
    assert kerattn.saving.upgrade_legacy_config(config) == (config, False)
    other = {"class_name": "Functional", "config": {"layers": []}}
    assert kerattn.saving.upgrade_legacy_config(other) == (other, False)


FAMILY_FILES = {
    "bahdanau_nmt_coverage": zoo.BahdanauNMT,
    "luong_nmt_location_sensitive": zoo.LuongNMT,
    "bahdanau_nmt_hard_monotonic": zoo.BahdanauNMT,
    "luong_nmt_mocha": zoo.LuongNMT,
    "pointer_generator_coverage": zoo.PointerGeneratorNetwork,
    "g2p_streaming": zoo.LuongNMT,
}


@pytest.mark.parametrize("name", sorted(FAMILY_FILES))
def test_stateful_family_file_decodes_as_recorded(name):
    model, x, data = _load(name)
    assert type(model) is FAMILY_FILES[name]
    logits = to_numpy(model.predict(x, verbose=0))
    possible = data["logits"] > -1e8   # a pointer-generator's impossible ids: -1e9
    np.testing.assert_allclose(logits[possible], data["logits"][possible], atol=1e-5)
    assert (logits[~possible] < -1e8).all()
    for strategy, options in (("greedy", {}), ("beam", dict(
            beam_width=3, never_worse_than_greedy=False))):
        out = decoding.generate(model, x["source_ids"], max_length=7,
                                strategy=strategy, **options)
        np.testing.assert_array_equal(to_numpy(out["tokens"]),
                                      data[f"{strategy}_tokens"])
        np.testing.assert_allclose(to_numpy(out["scores"]),
                                   data[f"{strategy}_scores"], atol=1e-5)
    if name == "g2p_streaming":
        from kerattn.datasets import SymbolVocabulary

        letters = SymbolVocabulary([str(t) for t in data["letters"][4:]],
                                   separator="")
        phonemes = SymbolVocabulary([str(t) for t in data["phonemes"][4:]])
        assert letters.itos == list(data["letters"])
        for word, streamed, first in zip(data["words"], data["streamed"],
                                         data["first_commit"]):
            decoder = decoding.StreamingDecoder(model, letters, phonemes,
                                                max_length=8)
            chunks = [decoder.feed(c) for c in str(word)] + [decoder.finish()]
            assert " ".join(sum(chunks, [])) == streamed
            assert next(k for k, c in enumerate(chunks) if c) == first
            assert first < len(str(word)) - 1     # before the word ends

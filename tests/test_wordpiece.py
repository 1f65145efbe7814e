"""WordPieceVocabulary: keras-hub's WordPiece with exact detokenisation."""

import keras
import numpy as np
import pytest

from kerattn import zoo
from kerattn.datasets import (
    WordPieceVocabulary,
    gettext_pairs,
    translation_arrays,
)
from kerattn.decoding import Translator

pytest.importorskip("keras_hub", reason="WordPiece needs the [text] extra")

TEXTS = ["Cannot open file %s: permission denied",
         "Opening files is not permitted.",
         "The file '%s' does not exist",
         "Open a new window"] * 5


@pytest.fixture(scope="module")
def vocab():
    return WordPieceVocabulary.build(TEXTS, vocabulary_size=120)


def test_round_trip_and_special_ids(vocab):
    assert (vocab.pad_id, vocab.unk_id, vocab.bos_id, vocab.eos_id) == (0, 1, 2, 3)
    assert vocab.tokens([0, 1, 2, 3]) == ["<pad>", "<unk>", "<s>", "</s>"]
    for text in set(TEXTS):
        ids = vocab.encode(text, add_bos=True, add_eos=True)
        assert ids[0] == vocab.bos_id and ids[-1] == vocab.eos_id
        assert 0 not in ids[1:-1]
        assert vocab.decode(ids + [vocab.pad_id] * 3) == text
    # An unseen word is cut into known pieces, not lost.
    ids = vocab.encode("Cannot open windows")
    assert vocab.unk_id not in ids
    assert vocab.decode(ids) == "Cannot open windows"
    pieces = vocab.display_tokens("Opening files")
    assert len(pieces) == len(vocab.encode("Opening files"))
    assert any(p.startswith("##") for p in vocab.display_tokens("permitted windows"))
    # Batch encoding equals one by one; an empty text gives no ids.
    assert vocab.encode_batch(["Open a file", ""]) == [vocab.encode("Open a file"), []]


def test_json_round_trip_and_bad_input(vocab):
    again = WordPieceVocabulary.from_json(vocab.to_json())
    assert again.itos == vocab.itos
    assert again.encode(TEXTS[0]) == vocab.encode(TEXTS[0])
    with pytest.raises(ValueError, match="`vocabulary` must be a list that starts with"):
        WordPieceVocabulary(["a", "b", "c", "d"])
    with pytest.raises(ValueError, match="`vocabulary_size`"):
        WordPieceVocabulary.build(TEXTS, vocabulary_size=2)


@pytest.mark.usefixtures("gettext_catalogs")   # a skip here, a failure in CI
def test_translator_round_trip_with_wordpiece():
    """A model trained on WordPiece ids translates strings to strings."""
    pairs = gettext_pairs("fr")["train"][:32]
    src = WordPieceVocabulary.build([s for s, _ in pairs], 400)
    tgt = WordPieceVocabulary.build([t for _, t in pairs], 400)
    x, y, kept = translation_arrays(pairs, src, tgt, max_tokens=16)
    keras.utils.set_random_seed(0)
    model = zoo.bahdanau_nmt(len(src), len(tgt), embedding_dim=64, units=128,
                             alignment_units=64, maxout_units=64)
    model.compile(optimizer=keras.optimizers.Adam(3e-3),
                  loss=keras.losses.SparseCategoricalCrossentropy(
                      from_logits=True, ignore_class=0))
    model.fit(x, y, batch_size=32, epochs=60, verbose=0)
    translator = Translator(model, src, tgt, max_length=20)
    sources = [s for s, _ in kept[:6]]
    out, alignments = translator(sources, return_alignments=True)
    assert len(out) == len(alignments) == len(sources) >= 3
    assert all(isinstance(t, str) for t in out)
    assert sum(o == t for o, (_, t) in zip(out, kept[:6])) >= 3, out
    for text, a in zip(sources, alignments):
        assert a["source_tokens"] == src.display_tokens(text)
        np.testing.assert_allclose(a["weights"].sum(-1), 1.0, atol=1e-4)

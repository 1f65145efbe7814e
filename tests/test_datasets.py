"""The real-data loaders: gettext pairs and the word vocabulary."""

import hashlib
import os

import numpy as np
import pytest

from kerattn.datasets import WordVocabulary, data_fingerprint, gettext_pairs
from kerattn.datasets.gettext import split_of

# A skip with its reason without the catalogs, a failure in CI (conftest).
needs_catalogs = pytest.mark.usefixtures("gettext_catalogs")


@needs_catalogs
def test_gettext_pairs_fixed_clean_split():
    splits = gettext_pairs("fr", max_words=20)
    sizes = {k: len(v) for k, v in splits.items()}
    assert sizes["train"] > 30000 and sizes["test"] > 1500, sizes
    sources = {k: {s for s, _ in v} for k, v in splits.items()}
    assert not sources["train"] & sources["test"]
    assert not sources["valid"] & sources["test"]
    for s, t in splits["test"][:2000]:
        assert s != t and s.strip() == s and "\n" not in s
        assert len(s.split()) <= 20 and len(t.split()) <= 20
    # Deterministic: a second read gives the same test split in order.
    assert gettext_pairs("fr", max_words=20)["test"] == splits["test"]


def test_data_fingerprint_is_the_sha256_of_the_splits_written_as_json():
    """The fingerprint is SHA-256 over the splits as compact JSON, keys
    sorted, characters as themselves (the string written here by hand):
    tuples and lists alike, any change of text or order another one."""
    splits = {"train": [("chat", "cat"), ("été", "summer")], "test": [("chien", "dog")]}
    text = '{"test":[["chien","dog"]],"train":[["chat","cat"],["été","summer"]]}'
    expected = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    assert data_fingerprint(splits) == expected
    assert data_fingerprint({"test": [["chien", "dog"]],
                             "train": [["chat", "cat"], ["été", "summer"]]}) == expected
    for other in ({"train": splits["train"][::-1], "test": splits["test"]},
                  {"train": [("chat", "cat"), ("ete", "summer")], "test": splits["test"]},
                  {"train": splits["train"], "valid": splits["test"]}):
        assert data_fingerprint(other) != expected
    # NumPy arrays as lists; a lone surrogate (a JSON file may hold one).
    assert data_fingerprint({"y": np.array([[1, 2]])}) == data_fingerprint({"y": [[1, 2]]})
    assert data_fingerprint({"x": ["\ud800"]}) != data_fingerprint({"x": ["\ud801"]})
    for bad in ({"train": [{"a", "b"}]}, {"train": [object()]}):
        with pytest.raises(ValueError, match="`splits` must be what JSON can write"):
            data_fingerprint(bad)


def test_split_is_a_function_of_the_source():
    assert split_of("Permission denied", 0.05, 0.05) == split_of(
        "Permission denied", 0.05, 0.05
    )
    buckets = [split_of(f"message {i}", 0.1, 0.2) for i in range(5000)]
    assert 0.15 < buckets.count("test") / 5000 < 0.25
    assert 0.05 < buckets.count("valid") / 5000 < 0.15


def test_gettext_missing_catalogs(tmp_path):
    with pytest.raises(ValueError, match="No gettext catalogs found"):
        gettext_pairs("fr", locale_dir=str(tmp_path))
    with pytest.raises(ValueError, match="`lang`"):
        gettext_pairs("../etc")
    with pytest.raises(ValueError, match="`max_words`"):
        gettext_pairs("fr", max_words=0)
    with pytest.raises(ValueError, match="`test_fraction`"):
        gettext_pairs("fr", test_fraction=1.5)


def test_vocabulary_special_ids_and_round_trip():
    vocab = WordVocabulary.build(
        ["Cannot open %s: Permission denied", "Cannot stat %s", "File exists"],
        max_size=20,
    )
    assert (vocab.pad_id, vocab.unk_id, vocab.bos_id, vocab.eos_id) == (0, 1, 2, 3)
    assert len(vocab) == 4 + 9  # 9 distinct tokens
    small = WordVocabulary.build(["b a a", "c a b"], max_size=6)
    assert small.itos[4:] == ["\u2581a", "b"]  # most frequent, then by name
    ids = vocab.encode("Cannot open %s", add_bos=True, add_eos=True)
    assert ids[0] == vocab.bos_id and ids[-1] == vocab.eos_id
    assert vocab.decode(ids) == "Cannot open %s"
    assert vocab.encode("zebra") == [vocab.unk_id]
    assert vocab.decode(ids + [vocab.pad_id] * 3) == "Cannot open %s"
    clone = WordVocabulary.from_json(vocab.to_json())
    assert clone.itos == vocab.itos
    assert WordVocabulary.tokenize("%-10.3f and %1$s, ok.") == [
        "%-10.3f", "\u2581and", "\u2581%1$s", ",", "\u2581ok", "."
    ]
    text = "Cannot open '%s': %H:%M:%S (code %d)."
    full = WordVocabulary.build([text])
    assert full.decode(full.encode(text)) == text  # reversible
    with pytest.raises(ValueError, match="`max_size`"):
        WordVocabulary.build(["a"], max_size=2)


def test_attention_heatmap_png(tmp_path):
    pytest.importorskip("matplotlib", reason="matplotlib is the plot extra")
    from kerattn.plot import save_attention_heatmaps

    w = np.eye(3, 4)
    path = save_attention_heatmaps(
        [(w, ["a", "b", "c", "d"], ["x", "y", "z"])], str(tmp_path / "a.png")
    )
    with open(path, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_tsv_pairs(tmp_path):
    from kerattn.datasets import tsv_pairs

    path = tmp_path / "fra.txt"
    path.write_text("Go.\tVa !\tCC-BY 2.0 (France) Attribution\n\n"
                    "I lost my keys today.\tJ'ai perdu mes clés aujourd'hui.\tCC\n",
                    encoding="utf-8")
    assert tsv_pairs(str(path)) == [
        ("Go.", "Va !"),
        ("I lost my keys today.", "J'ai perdu mes clés aujourd'hui."),
    ]
    assert tsv_pairs(str(path), max_words=2) == [("Go.", "Va !")]
    assert tsv_pairs(str(path), source_column=1, target_column=0)[0] == (
        "Va !", "Go.")
    with pytest.raises(ValueError, match="does not exist"):
        tsv_pairs(str(tmp_path / "missing.txt"))
    bad = tmp_path / "bad.txt"
    bad.write_text("only one column\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad.txt:1: expected at least 2"):
        tsv_pairs(str(bad))
    with pytest.raises(ValueError, match="`max_words`"):
        tsv_pairs(str(path), max_words=0)


def test_attention_overlay_and_document_highlight_png(tmp_path):
    pytest.importorskip("matplotlib", reason="the plot extra is not installed")
    from kerattn.plot import _upsample, attention_overlay, document_highlight

    # Each grid cell's weight is stretched over the pixels it covers.
    np.testing.assert_allclose(_upsample(np.array([[1.0, 2.0]]), (2, 4)),
                               [[1, 1, 2, 2], [1, 1, 2, 2]])
    image = np.random.default_rng(0).random((8, 45, 1))
    maps = np.random.default_rng(1).random((3, 1, 22))
    path = attention_overlay(image, maps, ["six", "five", "</s>"],
                             os.path.join(tmp_path, "overlay.png"))
    with open(path, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(ValueError, match="`maps` and `words` must have the same length"):
        attention_overlay(image, maps, ["six"])
    sentences = [["a", "game", "."], ["it", "is", "fun", "."]]
    words = np.array([[0.2, 0.7, 0.1, 0.0], [0.1, 0.1, 0.7, 0.1]])
    path = document_highlight(sentences, words, np.array([0.3, 0.7]),
                              os.path.join(tmp_path, "doc.png"), title="games")
    with open(path, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_unknown_words_decode_as_words_of_their_own():
    """`<unk>` stands for a whole word: never glued to its neighbour
    ("ist kein<unk>"), in the word and the WordPiece vocabularies alike."""
    from kerattn.datasets import WordPieceVocabulary

    words = WordVocabulary.build(["Das ist kein Fehler", "(Sekunden)"])
    ids = words.encode("Das ist kein Problem")          # "Problem" is unknown
    assert ids[-1] == words.unk_id
    assert words.decode(ids) == "Das ist kein <unk>"
    # An unknown word that followed no space in the source is still a word.
    assert words.decode([words.stoi["(Sekunden"[:1]], words.unk_id,
                         words.stoi[")"]]) == "( <unk>)"
    assert words.decode([words.unk_id, words.stoi["▁ist"]]) == "<unk> ist"
    pieces = WordPieceVocabulary.build(["Das ist kein Fehler"] * 3,
                                       vocabulary_size=40)
    out = pieces.decode([pieces.encode("Das ist")[0], pieces.unk_id,
                         pieces.eos_id])
    assert out.endswith(" <unk>") and "<unk>" in out.split()


def test_blend_keeps_the_image_where_there_is_no_weight():
    """`(1 - a) gray + a tint`, `a = alpha w / max w`, in NumPy by hand."""
    from kerattn.plot import blend

    rng = np.random.default_rng(2)
    image = rng.random((6, 8)) * 5 + 1                     # any range
    weights = np.array([[0.0, 0.2, 0.0, 0.8]])              # a 1 x 4 grid
    rgb = blend(image, weights, alpha=0.5)
    gray = (image - image.min()) / (image.max() - image.min())
    a = 0.5 * np.repeat(weights[0] / 0.8, 2)[None, :].repeat(6, 0)
    want = (1 - a)[..., None] * gray[..., None] + a[..., None] * np.array(
        [1.0, 0.45, 0.0])
    np.testing.assert_allclose(rgb, want)
    np.testing.assert_array_equal(rgb[:, 0:2], np.repeat(gray[:, 0:2, None], 3, -1))
    with pytest.raises(ValueError, match="`alpha`"):
        blend(image, weights, alpha=1.5)

"""A subword vocabulary on keras-hub's WordPiece tokenizer."""

import json

import numpy as np

from kerattn import checks
from kerattn.datasets.vocabulary import WordVocabulary

SUFFIX = "##"


def _keras_hub():
    tf = checks.installed("tensorflow", "text", "WordPieceVocabulary")
    tokenizers = checks.installed("keras_hub.tokenizers", "text", "WordPieceVocabulary")
    return tf, tokenizers.WordPieceTokenizer, tokenizers.compute_word_piece_vocabulary


class WordPieceVocabulary:
    """WordPiece subwords (keras-hub) with PAD = 0, then UNK, BOS and EOS.

    The same interface as `WordVocabulary` (`encode`, `decode`, `tokens`,
    `pad_id`, `unk_id`, `bos_id`, `eos_id`, `to_json`), so models,
    `translation_arrays` and `Translator` take either. Text is first split
    by `WordVocabulary.tokenize` (words, printf specifiers, punctuation,
    with "▁" marking a preceding space); keras-hub's
    `compute_word_piece_vocabulary` learns the pieces of those words and its
    `WordPieceTokenizer` (with `split=False`) cuts them. Because the spaces
    travel inside the pieces, `decode` restores the text exactly, which
    keras-hub's own `detokenize` (a space between every word) would not.

    Args:
        vocabulary: the list of pieces; the first four must be
            `"<pad>", "<unk>", "<s>", "</s>"`.
        lowercase: lowercase text before tokenising.

    Example:

    >>> texts = ["Cannot open file %s", "Cannot create directory %s",
    ...          "Opening files", "Created directories"]
    >>> vocab = WordPieceVocabulary.build(texts, vocabulary_size=60)
    >>> ids = vocab.encode("Cannot open directories")
    >>> vocab.decode(ids)
    'Cannot open directories'
    """

    PAD, UNK, BOS, EOS = WordVocabulary.PAD, WordVocabulary.UNK, \
        WordVocabulary.BOS, WordVocabulary.EOS

    def __init__(self, vocabulary, lowercase=False):
        specials = [self.PAD, self.UNK, self.BOS, self.EOS]
        if isinstance(vocabulary, str):
            checks.fail("vocabulary", "a list of pieces, not one string",
                        vocabulary[:40])
        vocabulary = list(vocabulary)
        checks.require(vocabulary[:4] == specials, "vocabulary",
                       f"a list that starts with the special tokens {specials}",
                       vocabulary[:4])
        tf, WordPieceTokenizer, _ = _keras_hub()
        self._tf = tf
        self.lowercase = lowercase
        self.itos = vocabulary
        self.tokenizer = WordPieceTokenizer(
            vocabulary=vocabulary, split=False, lowercase=False,
            suffix_indicator=SUFFIX, oov_token=self.UNK)
        self.pad_id, self.unk_id, self.bos_id, self.eos_id = 0, 1, 2, 3

    @classmethod
    def build(cls, texts, vocabulary_size=8000, lowercase=False):
        """Learn the pieces of `texts` with keras-hub's trainer.

        Args:
            texts: iterable of strings.
            vocabulary_size: the total size, special tokens included.
            lowercase: lowercase before learning.
        """
        checks.int_at_least("vocabulary_size", vocabulary_size, 5)
        tf, _, compute_word_piece_vocabulary = _keras_hub()
        if isinstance(texts, str):
            checks.fail("texts", "a list of strings, not one string", texts[:40])
        words = [WordVocabulary.tokenize(t, lowercase) for t in texts]
        words = [w for w in words if w]
        checks.require(words, "texts", "strings with a token to learn pieces "
                       "from", note="None of them has one.")
        data = tf.data.Dataset.from_tensor_slices(
            tf.ragged.constant(words)).batch(1024)
        vocabulary = compute_word_piece_vocabulary(
            data, vocabulary_size, split=False, suffix_indicator=SUFFIX,
            reserved_tokens=[cls.PAD, cls.UNK, cls.BOS, cls.EOS])
        return cls(vocabulary, lowercase=lowercase)

    def __len__(self):
        return len(self.itos)

    def encode_batch(self, texts):
        """A list of id lists, one per text (one tokenizer call)."""
        words = [WordVocabulary.tokenize(t, self.lowercase) or [""]
                 for t in texts]
        ragged = self.tokenizer(self._tf.ragged.constant(words))  # (N, pieces)
        # A RaggedTensor under TensorFlow; nested lists under other backends.
        rows = ragged.to_list() if hasattr(ragged, "to_list") else ragged
        out = []
        for row, w in zip(rows, words):
            out.append([] if w == [""] else [int(i) for i in row])
        return out

    def encode(self, text, add_bos=False, add_eos=False):
        ids = self.encode_batch([text])[0]
        return ([self.bos_id] if add_bos else []) + ids + (
            [self.eos_id] if add_eos else [])

    def tokens(self, ids):
        return [self.itos[int(i)] for i in ids]

    def display_tokens(self, text):
        """The pieces of `text`, one per id of `encode(text)`."""
        return self.tokens(self.encode(text))

    def decode(self, ids):
        """Ids to text: stops at EOS, skips PAD and BOS, joins the pieces."""
        pieces = []
        for i in np.asarray(ids).reshape(-1):
            i = int(i)
            if i == self.eos_id:
                break
            if i in (self.pad_id, self.bos_id):
                continue
            # `<unk>` stands for a whole word: shown as a word of its own.
            piece = (self.itos[i] if 0 <= i < len(self.itos) and i != self.unk_id
                     else WordVocabulary.SPACE + self.UNK)
            pieces.append(piece[len(SUFFIX):] if piece.startswith(SUFFIX)
                          else piece)
        return "".join(pieces).replace(WordVocabulary.SPACE, " ").strip()

    def to_json(self):
        return json.dumps({"wordpiece": self.itos[4:],
                           "lowercase": self.lowercase})

    @classmethod
    def from_json(cls, text):
        data = json.loads(text)
        specials = [cls.PAD, cls.UNK, cls.BOS, cls.EOS]
        return cls(specials + data["wordpiece"], lowercase=data["lowercase"])

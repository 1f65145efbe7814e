"""The vocabularies outside Python: TensorFlow string ops and JSON.

- `TextCodec(vocab)`: a `WordVocabulary`'s or `WordPieceVocabulary`'s
  `encode` and `decode` as TensorFlow string ops (the vocabulary as a lookup
  table or tensorflow-text's FastWordpiece, the splitting as RE2 regexes).
  `translation_dataset` tokenises with it inside `tf.data`, and an exported
  translator serves with it inside its SavedModel, so both match the Python
  vocabularies they mirror (the tests compare them on the same texts).
- `vocabulary_from_json(text)`: either vocabulary back from its `to_json()`.

TensorFlow (and tensorflow-text, for WordPiece) are imported when a codec is
built, not with this module.
"""

import json

from kerattn import checks
from kerattn.datasets.vocabulary import SymbolVocabulary, WordVocabulary
from kerattn.datasets.wordpiece import WordPieceVocabulary

__all__ = ["TextCodec", "vocabulary_from_json"]

# --- WordVocabulary.tokenize in RE2 (TensorFlow's regex engine) -------------
# Python's `re` is Unicode-aware: \w is letters, numbers and "_", \s is
# str.isspace(), \d is Nd. RE2's classes are ASCII, so they are spelled out.
_SPACE = r"\t\n\x{0b}\x{0c}\r\x{1c}-\x{1f}\x{85}\p{Z}"
_WORD = r"\pL\pN_"
TOKEN_RE2 = (r"%(?:\p{Nd}+\$)?[-+ #0]*\p{Nd}*(?:\.\p{Nd}+)?[a-zA-Z]"
             rf"|[{_WORD}]+|[^{_WORD}{_SPACE}]")
_MARK = "\x01"  # inserted before each token, then split on



class TextCodec:
    """A vocabulary's encode and decode as TensorFlow string ops.

    Matches `WordVocabulary` (`encode_batch`, `decode`),
    `WordPieceVocabulary` and `SymbolVocabulary` (characters, or symbols
    between whitespace) exactly on the texts the tests try, including
    printf specifiers, punctuation, runs of whitespace and non-ASCII
    letters. Built inside the `tf.Module` that is saved, so the lookup table
    travels with the SavedModel.

    Args:
        vocab: a `WordVocabulary`, `WordPieceVocabulary` or
            `SymbolVocabulary`.

    Example:

    >>> import tensorflow as tf
    >>> vocab = WordVocabulary.build(["Cannot open %s", "File not found"])
    >>> codec = TextCodec(vocab)
    >>> ids = codec.encode(tf.constant(["Cannot open %s"]), length=5)
    >>> ids.numpy().tolist() == [vocab.encode("Cannot open %s") + [0, 0]]
    True
    >>> codec.decode(ids).numpy()
    array([b'Cannot open %s'], dtype=object)
    """

    def __init__(self, vocab):
        import tensorflow as tf

        self.tf = tf
        self.vocab = vocab
        self.wordpiece = hasattr(vocab, "tokenizer")
        # A SymbolVocabulary's "" (characters) or " " (symbols), else None.
        self.separator = getattr(vocab, "separator", None)
        # What `decode` shows: `<unk>` as a word of its own, as in `vocab.decode`.
        shown = list(vocab.itos)
        shown[vocab.unk_id] = (vocab.UNK if self.separator is not None
                               else WordVocabulary.SPACE + vocab.UNK)
        self.itos = tf.constant(shown)
        if self.wordpiece:
            import tensorflow_text as tf_text

            self.pieces = tf_text.FastWordpieceTokenizer(
                vocab=list(vocab.itos), suffix_indicator="##",
                unknown_token=vocab.UNK, no_pretokenization=True,
                support_detokenization=False)
        else:
            self.table = tf.lookup.StaticHashTable(
                tf.lookup.KeyValueTensorInitializer(
                    tf.constant(list(vocab.itos)),
                    tf.range(len(vocab.itos), dtype=tf.int32)),
                default_value=vocab.unk_id)

    @property
    def resources(self):
        """The TensorFlow objects a saved `tf.Module` must track."""
        return [self.pieces if self.wordpiece else self.table]

    def words(self, texts):
        """`(N,)` strings -> `(N, None)` ragged words, "▁" marking a space."""
        tf = self.tf
        if self.vocab.lowercase:
            texts = tf.strings.lower(texts, encoding="utf-8")
        if self.separator == "":      # each character a symbol
            return tf.strings.unicode_split(texts, "UTF-8")
        if self.separator == " ":     # the symbols between whitespace
            spaced = tf.strings.split(tf.strings.regex_replace(
                texts, f"[{_SPACE}]+", " "), sep=" ")
            return tf.ragged.boolean_mask(spaced, tf.strings.length(spaced) > 0)
        marked = tf.strings.regex_replace(texts, f"({TOKEN_RE2})", _MARK + r"\1")
        pieces = tf.strings.split(marked, sep=_MARK)     # (N, 1 + words)
        # Each piece after the first is a token and the spaces after it.
        tokens = tf.strings.regex_replace(pieces[:, 1:], f"[{_SPACE}]+$", "")
        spaced = tf.strings.regex_full_match(pieces[:, :-1], f"(?s).*[{_SPACE}]")
        marker = tf.where(spaced.flat_values, WordVocabulary.SPACE, "")
        return tokens.with_flat_values(
            tf.strings.join([marker, tokens.flat_values]))

    def encode_ragged(self, texts):
        """`(N,)` strings -> `(N, None)` ragged int32 ids (`encode_batch`;
        EOS last where a `SymbolVocabulary` marks the end)."""
        tf = self.tf
        words = self.words(texts)
        if self.wordpiece:
            ids = self.pieces.tokenize(words).merge_dims(1, 2)
            return tf.cast(ids, tf.int32)
        ids = tf.ragged.map_flat_values(self.table.lookup, words)
        if getattr(self.vocab, "end_marker", False):
            end = tf.fill([ids.nrows(), 1], tf.constant(self.vocab.eos_id, tf.int32))
            ids = tf.concat([ids, end], axis=1)
        return ids

    def encode(self, texts, length):
        """`(N,)` strings -> `(N, length)` int32 ids, PAD after, truncated
        (where the vocabulary marks the end, before the EOS, which stays
        last: the model reads where the text ends).

        A text without tokens becomes `[UNK]`, as in `Translator`.
        """
        tf = self.tf
        ids = self.encode_ragged(texts)
        if getattr(self.vocab, "end_marker", False):
            ids = tf.concat([ids[:, :-1][:, :length - 1], ids[:, -1:]], axis=1)
        dense = ids.to_tensor(default_value=self.vocab.pad_id,
                              shape=[None, length])
        empty = tf.equal(ids.row_lengths(), 0)[:, None]
        first = tf.equal(tf.range(length), 0)[None, :]
        return tf.where(empty & first, self.vocab.unk_id, dense)

    def decode(self, ids):
        """`(N, T)` ids -> `(N,)` strings: stops at EOS, skips PAD and BOS."""
        tf = self.tf
        v = self.vocab
        ids = tf.cast(ids, tf.int32)
        before_eos = tf.equal(tf.cumsum(tf.cast(tf.equal(ids, v.eos_id), tf.int32),
                                        axis=1), 0)
        keep = before_eos & tf.not_equal(ids, v.pad_id) & tf.not_equal(ids, v.bos_id)
        inside = (ids >= 0) & (ids < len(v.itos))
        words = tf.gather(self.itos, tf.where(inside, ids, v.unk_id))
        if self.wordpiece:
            words = tf.strings.regex_replace(words, "^##", "")
        if self.separator is not None:
            return tf.strings.reduce_join(tf.ragged.boolean_mask(words, keep),
                                          axis=1, separator=self.separator)
        text = tf.strings.reduce_join(tf.ragged.boolean_mask(words, keep), axis=1)
        text = tf.strings.regex_replace(text, WordVocabulary.SPACE, " ")
        return tf.strings.regex_replace(text, f"^[{_SPACE}]+|[{_SPACE}]+$", "")


# The largest vocabulary JSON read (a 1M-token vocabulary is about 20 MB).
MAX_VOCABULARY_JSON = 64 * 2 ** 20


def vocabulary_from_json(text):
    """A `WordVocabulary`, `SymbolVocabulary` or `WordPieceVocabulary` from
    its `to_json()`.

    The text is untrusted (the export command line reads it from a file):
    it must be at most `MAX_VOCABULARY_JSON` characters of JSON holding
    exactly `{"tokens": [...], "lowercase": bool}` (or `"wordpiece"`; a
    `SymbolVocabulary` adds `"separator": "" or " "` and may add
    `"end_marker": bool`), the
    tokens non-empty strings, each once. Anything else is refused with a
    ValueError; nothing in it is evaluated.

    Args:
        text: the JSON string of a vocabulary's `to_json()`.

    Returns:
        The vocabulary, of the class that wrote it.

    Example:

    >>> vocab = WordVocabulary.build(["Permission denied"])
    >>> vocabulary_from_json(vocab.to_json()).itos == vocab.itos
    True
    """
    checks.instance("text", text, str, "a JSON string")
    checks.require(len(text) <= MAX_VOCABULARY_JSON, "text",
                   f"at most {MAX_VOCABULARY_JSON:,} characters of JSON",
                   note=f"Received {len(text):,}.")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as error:
        checks.fail("text", "the JSON of a WordVocabulary, SymbolVocabulary or "
                    "WordPieceVocabulary",
                    note=f"It is not JSON: {str(error)[:100]}.")
    expected = ("the JSON of a WordVocabulary, SymbolVocabulary or "
                "WordPieceVocabulary")
    checks.require(isinstance(data, dict), "text", expected,
                   note=f"It holds a {type(data).__name__}, not an object.")
    kinds = [k for k in ("tokens", "wordpiece") if k in data]
    symbols = kinds == ["tokens"] and "separator" in data
    optional = {"end_marker"} if symbols else set()   # later: may be absent
    checks.require(len(kinds) == 1 and set(data) - optional == {
        kinds[0], "lowercase"} | ({"separator"} if symbols else set()),
                   "text", expected,
                   note=f"Its keys are {sorted(map(str, data))[:6]}; expected "
                   "'tokens' (or 'wordpiece'), 'lowercase' (and 'separator', "
                   "optionally 'end_marker', for a SymbolVocabulary).")
    tokens = data[kinds[0]]
    checks.require(isinstance(tokens, list) and all(
        isinstance(t, str) and t for t in tokens), f"text[{kinds[0]!r}]",
        "a list of non-empty strings")
    checks.boolean("text['lowercase']", data["lowercase"])
    if kinds[0] == "wordpiece":
        return WordPieceVocabulary.from_json(text)
    if symbols:
        checks.one_of("text['separator']", data["separator"], ("", " "))
        checks.boolean("text['end_marker']", data.get("end_marker", False))
        return SymbolVocabulary.from_json(text)
    return WordVocabulary.from_json(text)

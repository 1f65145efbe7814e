"""A word-level vocabulary that knows its special tokens."""

import collections
import json
import re

from kerattn import checks

# Words, printf-style specifiers (%s, %-10.3f, %1$s) and single symbols.
_TOKEN = re.compile(r"%(?:\d+\$)?[-+ #0]*\d*(?:\.\d+)?[a-zA-Z]|\w+|[^\w\s]")


def _ranked(texts, max_size, min_count, split):
    """The tokens of `texts` (`split(text)` each), most frequent first, ties
    broken alphabetically (deterministic); those seen fewer than
    `min_count` times dropped, at most `max_size - 4` kept (room for the
    special tokens)."""
    checks.int_at_least("max_size", max_size, 5, allow_none=True)
    checks.positive_int("min_count", min_count)
    if isinstance(texts, str):
        checks.fail("texts", "a list of strings, not one string", texts[:40])
    counts = collections.Counter()
    for text in texts:
        counts.update(split(text))
    ranked = sorted((t for t, c in counts.items() if c >= min_count),
                    key=lambda t: (-counts[t], t))
    return ranked if max_size is None else ranked[: max_size - 4]


def _symbols(text, separator, lowercase=False):
    """`SymbolVocabulary`'s split: characters (`""`) or whitespace (`" "`)."""
    if lowercase:
        text = text.lower()
    return list(text) if separator == "" else text.split()


class WordVocabulary:
    """Word-level vocabulary with PAD = 0, then UNK, BOS and EOS.

    Every model and decoder of kerattn takes the special ids from this
    object (`pad_id`, `unk_id`, `bos_id`, `eos_id`), never as literals.

    Args:
        tokens: the ordinary tokens, most frequent first (special tokens are
            added in front).
        lowercase: lowercase text before tokenising.

    Example:

    >>> vocab = WordVocabulary.build(["Permission denied", "File not found"])
    >>> ids = vocab.encode("Permission denied", add_eos=True)
    >>> vocab.decode(ids)
    'Permission denied'
    """

    PAD, UNK, BOS, EOS = "<pad>", "<unk>", "<s>", "</s>"

    def __init__(self, tokens, lowercase=False):
        specials = [self.PAD, self.UNK, self.BOS, self.EOS]
        if isinstance(tokens, str):
            checks.fail("tokens", "a list of tokens, not one string", tokens[:40])
        tokens = list(tokens)
        bad = [t for t in tokens if not isinstance(t, str) or not t]
        checks.require(not bad, "tokens", "non-empty strings", bad[:3])
        tokens = [t for t in tokens if t not in specials]
        checks.require(len(set(tokens)) == len(tokens), "tokens",
                       "free of duplicates")
        self.lowercase = lowercase
        self.itos = specials + list(tokens)
        self.stoi = {t: i for i, t in enumerate(self.itos)}
        self.pad_id, self.unk_id, self.bos_id, self.eos_id = 0, 1, 2, 3

    # --- construction -------------------------------------------------------

    SPACE = "\u2581"  # "▁", as in SentencePiece: "a space came before"

    @classmethod
    def tokenize(cls, text, lowercase=False):
        """Split into words, printf specifiers and punctuation.

        A token that follows whitespace carries a leading "▁", so that
        `decode` restores the text exactly (up to runs of whitespace):
        "Cannot open %s: denied" -> ["Cannot", "▁open", "▁%s", ":",
        "▁denied"].
        """
        if lowercase:
            text = text.lower()
        tokens = []
        for match in _TOKEN.finditer(text):
            start = match.start()
            spaced = start > 0 and text[start - 1].isspace()
            tokens.append(cls.SPACE + match.group() if spaced else match.group())
        return tokens

    @classmethod
    def build(cls, texts, max_size=None, min_count=1, lowercase=False):
        """Build from an iterable of strings, most frequent tokens first.

        Args:
            texts: iterable of strings.
            max_size: the total size including the 4 special tokens.
            min_count: drop tokens seen fewer times.
            lowercase: lowercase before counting.
        """
        ranked = _ranked(texts, max_size, min_count,
                         lambda text: cls.tokenize(text, lowercase))
        return cls(ranked, lowercase=lowercase)

    # --- use ----------------------------------------------------------------

    def __len__(self):
        return len(self.itos)

    def encode(self, text, add_bos=False, add_eos=False):
        ids = [self.stoi.get(t, self.unk_id)
               for t in self.tokenize(text, self.lowercase)]
        if add_bos:
            ids = [self.bos_id] + ids
        if add_eos:
            ids = ids + [self.eos_id]
        return ids

    def encode_batch(self, texts):
        """A list of id lists, one per text."""
        return [self.encode(t) for t in texts]

    def display_tokens(self, text):
        """The words of `text` as written, one per id of `encode(text)`."""
        return self.tokenize(text, self.lowercase)

    def decode(self, ids):
        """Ids to text: stops at EOS, skips PAD and BOS, restores spaces.

        `<unk>` is shown as a word of its own (it stands for a word whose
        spacing is unknown): "ist kein <unk>", never "ist kein<unk>".

        >>> vocab = WordVocabulary(["Datei", "▁nicht"])
        >>> vocab.decode([4, 1, 5, 3])
        'Datei <unk> nicht'
        """
        return self._decode(ids, self._word)

    def _word(self, i):
        """Id `i`'s token in `decode`: `"▁<unk>"` for UNK or an unknown id."""
        return (self.itos[i] if 0 <= i < len(self.itos) and i != self.unk_id
                else self.SPACE + self.UNK)

    def _decode(self, ids, word):
        """`decode` with `word(i)` giving each kept id's token (a copying
        model's extended ids, `kerattn.datasets.decode_extended`)."""
        words = []
        for i in ids:
            i = int(i)
            if i == self.eos_id:
                break
            if i in (self.pad_id, self.bos_id):
                continue
            words.append(word(i))
        return "".join(words).replace(self.SPACE, " ").strip()

    def tokens(self, ids):
        return [self.itos[int(i)] for i in ids]

    # --- persistence --------------------------------------------------------

    def to_json(self):
        return json.dumps({"tokens": self.itos[4:], "lowercase": self.lowercase})

    @classmethod
    def from_json(cls, text):
        data = json.loads(text)
        return cls(data["tokens"], lowercase=data["lowercase"])


class SymbolVocabulary(WordVocabulary):
    """A vocabulary of single symbols: the characters of a word, or
    space-separated symbols such as phonemes; PAD = 0, then UNK, BOS, EOS.

    A `WordVocabulary` whose text splits into characters (`separator=""`)
    or at whitespace (`separator=" "`), and whose `decode` joins with the
    separator: a word's letters for a grapheme-to-phoneme model's source,
    its phonemes for the target.

    Args:
        tokens: the ordinary symbols, most frequent first.
        separator: "" (each character a symbol) or " " (symbols separated
            by whitespace).
        lowercase: lowercase text before splitting it.
        end_marker: end every encoded text with EOS (`encode`'s default,
            so `encode_batch`, `translation_arrays`, `Translator` and an
            exported model's tokeniser alike): a model that reads its source
            left to right on a schedule (a wait-k decoder) then knows when
            the word has ended, as STACL's source ends in `</s>` (Ma et al.
            2019). A streaming decoder encodes each piece with
            `add_eos=False` and reads the EOS at `finish()`.

    Example:

    >>> letters = SymbolVocabulary.build(["read", "live"], separator="")
    >>> letters.decode(letters.encode("deal", add_eos=True))
    'deal'
    >>> phonemes = SymbolVocabulary.build(["R IY D", "L IH V"])
    >>> phonemes.tokens(phonemes.encode("L IY D"))
    ['L', 'IY', 'D']
    >>> marked = SymbolVocabulary.build(["read"], separator="", end_marker=True)
    >>> marked.encode("dear"), marked.encode("de", add_eos=False)
    ([5, 6, 4, 7, 3], [5, 6])
    >>> marked.display_tokens("dear")
    ['d', 'e', 'a', 'r', '</s>']
    """

    def __init__(self, tokens, separator=" ", lowercase=False, end_marker=False):
        checks.one_of("separator", separator, ("", " "))
        checks.boolean("end_marker", end_marker)
        super().__init__(tokens, lowercase=lowercase)
        bad = [t for t in self.itos[4:] if (len(t) != 1 if separator == ""
                                            else t != t.strip() or " " in t)]
        checks.require(not bad, "tokens", "single characters (separator='')"
                       if separator == "" else "symbols without whitespace",
                       bad[:3])
        self.separator = separator
        self.end_marker = bool(end_marker)

    def encode(self, text, add_bos=False, add_eos=None):
        """The ids of `text`'s symbols; `add_eos` None: EOS after them when
        the vocabulary marks the end (`end_marker`)."""
        return super().encode(text, add_bos=add_bos, add_eos=(
            self.end_marker if add_eos is None else add_eos))

    def display_tokens(self, text):
        """The symbols of `text`, one per id of `encode(text)` (the end
        marker shown as EOS's token)."""
        return super().display_tokens(text) + (
            [self.itos[self.eos_id]] if self.end_marker else [])

    def tokenize(self, text, lowercase=False):
        """The symbols of `text`: its characters, or its whitespace-separated
        parts."""
        return _symbols(text, self.separator, lowercase)

    @classmethod
    def build(cls, texts, max_size=None, min_count=1, lowercase=False,
              separator=" ", end_marker=False):
        """Build from an iterable of strings, most frequent symbols first.

        Args:
            texts: iterable of strings.
            max_size: the total size including the 4 special tokens.
            min_count: drop symbols seen fewer times.
            lowercase: lowercase before counting.
            separator, end_marker: as the constructor's.
        """
        checks.one_of("separator", separator, ("", " "))
        ranked = _ranked(texts, max_size, min_count,
                         lambda text: _symbols(text, separator, lowercase))
        return cls(ranked, separator=separator, lowercase=lowercase,
                   end_marker=end_marker)

    def decode(self, ids):
        """Ids to text: stops at EOS, skips PAD and BOS, joins the symbols
        with the separator (`<unk>` for an unknown id)."""
        symbols = []
        for i in ids:
            i = int(i)
            if i == self.eos_id:
                break
            if i not in (self.pad_id, self.bos_id):
                symbols.append(self.itos[i] if 0 <= i < len(self.itos)
                               and i != self.unk_id else self.UNK)
        return self.separator.join(symbols)

    def to_json(self):
        return json.dumps({"tokens": self.itos[4:], "lowercase": self.lowercase,
                           "separator": self.separator,
                           "end_marker": self.end_marker})

    @classmethod
    def from_json(cls, text):
        data = json.loads(text)   # one written before end_marker: without
        return cls(data["tokens"], separator=data["separator"],
                   lowercase=data["lowercase"],
                   end_marker=data.get("end_marker", False))

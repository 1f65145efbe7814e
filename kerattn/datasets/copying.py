"""Extended vocabularies for copying models (See et al., 2017).

A copying model (`kerattn.zoo.pointer_generator`) writes ids of an
extended vocabulary: the `V` ids of its vocabulary, then `V + k` for the
`k`-th distinct word of *this* example's source that the vocabulary lacks
(its out-of-vocabulary words, "OOVs", in order of first appearance). A
source word and a target word that are the same OOV get the same id, so the
model can learn to copy it; decoding maps `V + k` back to the word. An OOV
is the word itself, without the "▁" that `WordVocabulary` puts on a token
after a space: "Zorg" first in the target is "▁Zorg" of the source, and a
copied word is written as a word of its own (a space before it, as
`WordVocabulary.decode` writes `<unk>`).
"""

import numpy as np

from kerattn import checks
from kerattn.datasets.padding import pad_ids


def _check_vocab(vocab, name="vocab"):
    checks.require(
        all(hasattr(vocab, a) for a in ("stoi", "itos", "tokenize", "unk_id")),
        name, "a word vocabulary (kerattn.datasets.WordVocabulary: its words "
        "are what a copying model copies)", type(vocab).__name__,
        note="A WordPieceVocabulary spells every word with its pieces and has "
        "no out-of-vocabulary words to copy.")


def _size(vocab, vocab_size):
    checks.int_at_least("vocab_size", vocab_size, len(vocab), allow_none=True)
    return len(vocab) if vocab_size is None else vocab_size


def _tokens(name, tokens):
    checks.require(
        isinstance(tokens, (list, tuple)) and all(
            isinstance(t, str) and t for t in tokens),
        name, "a list of non-empty token strings (vocab.tokenize(text))",
        tokens if isinstance(tokens, str) else type(tokens).__name__)
    return list(tokens)


def _space(vocab):
    return getattr(vocab, "SPACE", "\u2581")


def _word(vocab, token):
    """A token without the space marker: how an OOV is kept."""
    return token.lstrip(_space(vocab)) or token


def _ids(ids):
    ids = list(np.asarray(ids).reshape(-1)) if hasattr(ids, "shape") else list(ids)
    checks.require(
        all(isinstance(i, (int, np.integer)) and not isinstance(i, bool)
            for i in ids), "ids", "a list of int token ids", ids[:5])
    return [int(i) for i in ids]


def extend_source(vocab, tokens, vocab_size=None):
    """A source's extended ids and its out-of-vocabulary words.

    Args:
        vocab: the (shared) `WordVocabulary`.
        tokens: the source's tokens, `vocab.tokenize(text, vocab.lowercase)`.
        vocab_size: the model's vocabulary size `V` (its embedding's rows),
            `len(vocab)` when None; the first OOV gets id `V`.

    Returns:
        `(ids, oovs)`: a list of ids (`vocab`'s id of each known token,
        `V + k` for the `k`-th distinct unknown word) and the list `oovs`
        of those words (without the space marker), `oovs[k]` being id
        `V + k`.

    Example:

    >>> from kerattn.datasets import WordVocabulary
    >>> vocab = WordVocabulary(["the", "▁cat"])           # 6 ids
    >>> extend_source(vocab, ["the", "▁cat", "▁Zorg", "▁ate", "▁Zorg"])
    ([4, 5, 6, 7, 6], ['Zorg', 'ate'])
    """
    _check_vocab(vocab)
    tokens = _tokens("tokens", tokens)
    size = _size(vocab, vocab_size)
    ids, oovs, position = [], [], {}
    for token in tokens:
        if token in vocab.stoi:
            ids.append(vocab.stoi[token])
            continue
        word = _word(vocab, token)
        if word not in position:
            position[word] = len(oovs)
            oovs.append(word)
        ids.append(size + position[word])
    return ids, oovs


def extend_target(vocab, tokens, oovs, vocab_size=None):
    """A target's extended ids, given its source's out-of-vocabulary words.

    Args:
        vocab: the (shared) `WordVocabulary`.
        tokens: the target's tokens.
        oovs: the source's OOV list (`extend_source`); an empty list gives
            the plain ids (UNK for every unknown word), the labels of a model
            without copying.
        vocab_size: as for `extend_source`.

    Returns:
        A list of ids: `vocab`'s id of a known token, `V + k` for the
        source's `k`-th OOV word (with or without a space before it),
        `vocab.unk_id` for a word in neither.

    Example:

    >>> from kerattn.datasets import WordVocabulary
    >>> vocab = WordVocabulary(["the", "▁cat"])
    >>> extend_target(vocab, ["Zorg", "▁cat", "▁dog"], ["Zorg", "ate"])
    [6, 5, 1]
    """
    _check_vocab(vocab)
    tokens = _tokens("tokens", tokens)
    oovs = _tokens("oovs", oovs)
    size = _size(vocab, vocab_size)
    position = {w: k for k, w in reversed(list(enumerate(oovs)))}
    ids = []
    for token in tokens:
        word = _word(vocab, token)
        ids.append(vocab.stoi[token] if token in vocab.stoi
                   else size + position[word] if word in position
                   else vocab.unk_id)
    return ids


def extended_tokens(vocab, ids, oovs, vocab_size=None):
    """The tokens of extended ids: `vocab`'s, or "▁" + `oovs[k]` for `V + k`.

    Args:
        vocab: the (shared) `WordVocabulary`.
        ids: extended ids (any iterable of ints).
        oovs: the source's OOV list.
        vocab_size: as for `extend_source`.

    Returns:
        A list of tokens; an id that names nothing is `vocab.UNK`.

    Example:

    >>> from kerattn.datasets import WordVocabulary
    >>> extended_tokens(WordVocabulary(["the"]), [4, 5, 6], ["Zorg"])
    ['the', '▁Zorg', '<unk>']
    """
    _check_vocab(vocab)
    oovs = _tokens("oovs", oovs)
    size = _size(vocab, vocab_size)
    out = []
    for i in _ids(ids):
        if 0 <= i - size < len(oovs):
            out.append(_space(vocab) + oovs[i - size])
        elif 0 <= i < len(vocab.itos):
            out.append(vocab.itos[i])
        else:
            out.append(vocab.UNK)
    return out


def decode_extended(vocab, ids, oovs, vocab_size=None):
    """Extended ids to text, as `vocab.decode`, with each copied word
    spelled as in the source.

    Args:
        vocab: the (shared) `WordVocabulary`.
        ids: extended ids; stops at EOS, skips PAD and BOS.
        oovs: the source's OOV list (`extend_source`).
        vocab_size: as for `extend_source`.

    Returns:
        The text.

    Example:

    >>> from kerattn.datasets import WordVocabulary
    >>> vocab = WordVocabulary(["the", "▁cat"])
    >>> decode_extended(vocab, [4, 6, 5, 3, 0], ["Zorg"])
    'the Zorg cat'
    """
    _check_vocab(vocab)
    oovs = _tokens("oovs", oovs)
    size = _size(vocab, vocab_size)

    def word(i):   # ids >= V are past EOS, PAD and BOS: only the token differs
        if 0 <= i - size < len(oovs):
            return _space(vocab) + oovs[i - size]
        return vocab._word(i)

    return vocab._decode(_ids(ids), word)


def copy_arrays(pairs, vocab, max_tokens=None, vocab_size=None, copy=True):
    """`(source, target)` pairs as a copying model's `fit` arrays.

    As `translation_arrays` with one shared vocabulary (See et al., 2017):
    the source and the decoder input hold extended ids (the model embeds
    an OOV as UNK), and the labels are the target's extended ids plus EOS
    (with `copy=False`, UNK for every unknown word: the labels of the
    baseline without copying, which cannot write an OOV).

    Args:
        pairs: list of `(source, target)` strings.
        vocab: the shared `WordVocabulary`.
        max_tokens: optional int, the longest kept side in tokens.
        vocab_size: the model's vocabulary size, `len(vocab)` when None.
        copy: extended labels (True) or UNK labels (False).

    Returns:
        `(inputs, labels, oovs)`: `inputs = {"source_ids": (N, S),
        "target_in_ids": (N, T + 1)}`, `labels` `(N, T + 1)` int32, and each
        kept pair's OOV list.

    Example:

    >>> from kerattn.datasets import WordVocabulary
    >>> vocab = WordVocabulary(["the", "▁cat"])
    >>> x, y, oovs = copy_arrays([("the Zorg cat", "the cat Zorg")], vocab)
    >>> x["source_ids"].tolist(), y.tolist(), oovs
    ([[4, 6, 5]], [[4, 5, 6, 3]], [['Zorg']])
    """
    _check_vocab(vocab)
    checks.positive_int("max_tokens", max_tokens, allow_none=True)
    checks.boolean("copy", copy)
    size = _size(vocab, vocab_size)
    pairs = list(pairs) if not isinstance(pairs, str) else pairs
    checks.require(isinstance(pairs, list), "pairs",
                   "a list of (source, target) string pairs", pairs)
    checks.some("pairs", pairs, "one (source, target) pair")
    checks.require(all(isinstance(p, (tuple, list)) and len(p) == 2
                       and all(isinstance(t, str) for t in p) for p in pairs),
                   "pairs", "(source, target) string pairs", pairs[0])
    rows = []
    for source, target in pairs:
        s_tokens = vocab.tokenize(source, vocab.lowercase)
        t_tokens = vocab.tokenize(target, vocab.lowercase)
        if not s_tokens or not t_tokens or (max_tokens is not None and max(
                len(s_tokens), len(t_tokens)) > max_tokens):
            continue
        s, oovs = extend_source(vocab, s_tokens, size)
        t = extend_target(vocab, t_tokens, oovs, size)
        label = t if copy else extend_target(vocab, t_tokens, [], size)
        rows.append((s, t, label, oovs))
    checks.require(rows, "pairs", f"a list with a pair within max_tokens="
                   f"{max_tokens} tokens", note=f"None of its {len(pairs)} is.")
    pad = vocab.pad_id
    s_len = max(len(r[0]) for r in rows)
    t_len = max(len(r[1]) for r in rows) + 1
    source = pad_ids([r[0] for r in rows], s_len, pad)
    target_in = pad_ids([[vocab.bos_id] + r[1] for r in rows], t_len, pad)
    labels = pad_ids([r[2] + [vocab.eos_id] for r in rows], t_len, pad)
    return ({"source_ids": source, "target_in_ids": target_in}, labels,
            [r[3] for r in rows])

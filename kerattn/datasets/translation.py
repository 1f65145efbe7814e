"""Arrays for training translation models from string pairs."""

import numpy as np


def translation_arrays(pairs, source_vocab, target_vocab, max_tokens=None):
    """Encode `(source, target)` pairs for `model.fit`.

    The source is its tokens; the decoder input is BOS + target tokens and
    the label is target tokens + EOS (teacher forcing). Pairs with more
    than `max_tokens` tokens on either side are dropped; the arrays are
    padded with PAD to the longest kept pair (static shapes compile once).

    Args:
        pairs: list of `(source, target)` strings.
        source_vocab, target_vocab: `WordVocabulary` objects.
        max_tokens: optional int, the longest kept side in tokens.

    Returns:
        `(inputs, labels, kept)`: `inputs = {"source_ids": (N, S),
        "target_in_ids": (N, T + 1)}`, `labels` `(N, T + 1)` int32, and the
        list of kept pairs.
    """
    if max_tokens is not None and (not isinstance(max_tokens, int) or max_tokens < 1):
        raise ValueError(f"`max_tokens` must be a positive int or None; got {max_tokens!r}.")
    encoded, kept = [], []
    for source, target in pairs:
        s, t = source_vocab.encode(source), target_vocab.encode(target)
        if not s or not t:
            continue
        if max_tokens is not None and (len(s) > max_tokens or len(t) > max_tokens):
            continue
        encoded.append((s, t))
        kept.append((source, target))
    if not encoded:
        raise ValueError("`pairs` has no pair within `max_tokens` tokens.")
    n = len(encoded)
    s_len = max(len(s) for s, _ in encoded)
    t_len = max(len(t) for _, t in encoded) + 1
    source = np.full((n, s_len), source_vocab.pad_id, "int32")
    target_in = np.full((n, t_len), target_vocab.pad_id, "int32")
    labels = np.full((n, t_len), target_vocab.pad_id, "int32")
    for i, (s, t) in enumerate(encoded):
        source[i, : len(s)] = s
        target_in[i, : len(t) + 1] = [target_vocab.bos_id] + t
        labels[i, : len(t) + 1] = t + [target_vocab.eos_id]
    return {"source_ids": source, "target_in_ids": target_in}, labels, kept

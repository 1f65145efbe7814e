"""A `tf.data` input pipeline for translation: tokenised in the graph.

`LengthBucketedBatches` tokenises in Python before training;
`translation_dataset` does it inside `tf.data` (the vocabulary as a lookup
table or tensorflow-text's FastWordpiece, the splitting as RE2 regexes:
`kerattn.datasets.TextCodec`, the same code the exported translator serves
with), buckets by length, and prefetches, so the host prepares the next
batches while the devices train. Keras' `fit` takes a `tf.data.Dataset` on
every backend (JAX and torch read it as NumPy), and under
`kerattn.distribute` `Strategy.shard` splits its batches like any other.
"""

import numpy as np

from kerattn import checks

__all__ = ["translation_dataset"]


def _tensorflow():
    return checks.installed("tensorflow", "text", "translation_dataset (tf.data)")


def translation_dataset(pairs, source_vocab, target_vocab, batch_size=64,
                        max_tokens=None, bucket_width=5, shuffle=True, seed=0,
                        drop_remainder=False, repeat=False):
    """`(source, target)` string pairs -> a bucketed, prefetched `tf.data`.

    Each element is `({"source_ids": (B, S), "target_in_ids": (B, T)},
    labels (B, T))` with the ids `translation_arrays` gives (BOS + target as
    the decoder input, target + EOS as the labels, PAD after), but computed
    in the graph. Pairs with an empty side, or with more than `max_tokens`
    tokens on either side, are dropped (as `translation_arrays` does).
    Examples are grouped by length (`tf.data`'s `bucket_by_sequence_length`)
    and each batch is padded to its bucket's bound, a multiple of
    `bucket_width`: few shapes to compile, little padding.

    Args:
        pairs: list of `(source, target)` strings (the raw text).
        source_vocab, target_vocab: `WordVocabulary` or
            `WordPieceVocabulary` objects.
        batch_size: examples per batch (the global batch under
            `kerattn.distribute`).
        max_tokens: the longest kept side, in tokens (None keeps all, and
            buckets grow in steps of `bucket_width` up to 200 tokens).
        bucket_width: bucket bounds are its multiples.
        shuffle: shuffle all pairs every epoch (with `seed`: every torch
            process then reads the same global batches, as `shard` needs).
        seed: the shuffling seed.
        drop_remainder: drop each bucket's last, partial batch.
        repeat: repeat forever (pass `steps_per_epoch` to `fit`).

    Returns:
        A `tf.data.Dataset`.

    Example:

    >>> from kerattn.datasets import WordVocabulary
    >>> pairs = [("Permission denied", "Permission refusée"),
    ...          ("Cannot open the file %s for reading", "Impossible de lire %s")]
    >>> src = WordVocabulary.build([s for s, _ in pairs])
    >>> tgt = WordVocabulary.build([t for _, t in pairs])
    >>> data = translation_dataset(pairs, src, tgt, batch_size=2, shuffle=False)
    >>> x, y = next(iter(data))
    >>> x["source_ids"].shape[1] % 5, y.shape == x["target_in_ids"].shape
    (0, True)
    """
    from kerattn.datasets.text_codec import TextCodec

    checks.positive_int("batch_size", batch_size)
    checks.positive_int("bucket_width", bucket_width)
    checks.positive_int("max_tokens", max_tokens, allow_none=True)
    for name, vocab in (("source_vocab", source_vocab), ("target_vocab", target_vocab)):
        checks.require(hasattr(vocab, "itos") and hasattr(vocab, "pad_id"), name,
                       "a kerattn.datasets vocabulary", type(vocab).__name__)
    pairs = list(pairs)
    checks.require(pairs and all(isinstance(p, (tuple, list)) and len(p) == 2 and all(
        isinstance(t, str) for t in p) for p in pairs), "pairs",
        "a non-empty list of (source, target) strings", pairs[:1])
    tf = _tensorflow()
    source_codec, target_codec = TextCodec(source_vocab), TextCodec(target_vocab)
    pad, bos, eos = target_vocab.pad_id, target_vocab.bos_id, target_vocab.eos_id

    data = tf.data.Dataset.from_tensor_slices(
        (np.array([s for s, _ in pairs], dtype=object),
         np.array([t for _, t in pairs], dtype=object)))
    if shuffle:
        data = data.shuffle(len(pairs), seed=seed, reshuffle_each_iteration=True)

    def encode(sources, targets):            # a chunk of strings, vectorised
        return source_codec.encode_ragged(sources), target_codec.encode_ragged(targets)

    data = data.batch(1024).map(encode, num_parallel_calls=tf.data.AUTOTUNE).unbatch()

    def keep(source, target):
        n, m = tf.size(source), tf.size(target)
        ok = (n > 0) & (m > 0)
        if max_tokens is not None:
            ok = ok & (n <= max_tokens) & (m <= max_tokens)
        return ok

    def teacher_forcing(source, target):
        target_in = tf.concat([[bos], target], 0)            # (T + 1,)
        labels = tf.concat([target, [eos]], 0)               # (T + 1,)
        return {"source_ids": source, "target_in_ids": target_in}, labels

    data = data.filter(keep).map(teacher_forcing,
                                 num_parallel_calls=tf.data.AUTOTUNE)
    longest = (max_tokens + 1) if max_tokens is not None else 200
    # Bounds 5, 10, ...: a batch of bucket k holds lengths in (b_{k-1}, b_k]
    # and is padded to b_k (tf.data's bounds are exclusive: b_k + 1).
    bounds = list(range(bucket_width, longest + bucket_width, bucket_width))

    def length(x, labels):
        return tf.maximum(tf.size(x["source_ids"]), tf.size(labels))

    data = data.bucket_by_sequence_length(
        length, [b + 1 for b in bounds], [batch_size] * (len(bounds) + 1),
        padded_shapes=({"source_ids": [None], "target_in_ids": [None]}, [None]),
        padding_values=({"source_ids": source_vocab.pad_id, "target_in_ids": pad},
                        pad),
        drop_remainder=drop_remainder)

    def to_bound(x, labels):      # pad every side up to the bucket's bound
        width = tf.maximum(tf.shape(x["source_ids"])[1], tf.shape(labels)[1])
        width = (width + bucket_width - 1) // bucket_width * bucket_width

        def fill(a, value):
            return tf.pad(a, [[0, 0], [0, width - tf.shape(a)[1]]],
                          constant_values=value)

        return ({"source_ids": fill(x["source_ids"], source_vocab.pad_id),
                 "target_in_ids": fill(x["target_in_ids"], pad)}, fill(labels, pad))

    data = data.map(to_bound, num_parallel_calls=tf.data.AUTOTUNE)
    if repeat:
        data = data.repeat()
    return data.prefetch(tf.data.AUTOTUNE)

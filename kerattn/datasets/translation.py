"""Arrays for training translation models from string pairs."""

import keras
import numpy as np

from kerattn import checks


def translation_arrays(pairs, source_vocab, target_vocab, max_tokens=None):
    """Encode `(source, target)` pairs for `model.fit`.

    The source is its tokens; the decoder input is BOS + target tokens and
    the label is target tokens + EOS (teacher forcing). Pairs with more
    than `max_tokens` tokens on either side are dropped; the arrays are
    padded with PAD to the longest kept pair (static shapes compile once).

    Args:
        pairs: list of `(source, target)` strings.
        source_vocab, target_vocab: `WordVocabulary` or `WordPieceVocabulary`
            objects.
        max_tokens: optional int, the longest kept side in tokens.

    Returns:
        `(inputs, labels, kept)`: `inputs = {"source_ids": (N, S),
        "target_in_ids": (N, T + 1)}`, `labels` `(N, T + 1)` int32, and the
        list of kept pairs.

    Example:

    >>> from kerattn.datasets import WordVocabulary
    >>> pairs = [("Permission denied", "Permission refusée"),
    ...          ("File not found", "Fichier introuvable")]
    >>> src = WordVocabulary.build([s for s, _ in pairs])
    >>> tgt = WordVocabulary.build([t for _, t in pairs])
    >>> x, y, kept = translation_arrays(pairs, src, tgt)
    >>> x["source_ids"].shape, x["target_in_ids"][1], y[1]
    ((2, 3), array([2, 4, 6], dtype=int32), array([4, 6, 3], dtype=int32))
    """
    checks.positive_int("max_tokens", max_tokens, allow_none=True)
    for name, vocab in (("source_vocab", source_vocab), ("target_vocab", target_vocab)):
        checks.require(hasattr(vocab, "encode_batch") and hasattr(vocab, "pad_id"),
                       name, "a kerattn.datasets vocabulary (with encode_batch)",
                       type(vocab).__name__)
    encoded, kept = [], []
    pairs = list(pairs)
    checks.some("pairs", pairs, "one (source, target) pair")
    checks.require(all(isinstance(p, (tuple, list)) and len(p) == 2
                       and all(isinstance(t, str) for t in p) for p in pairs),
                   "pairs", "(source, target) string pairs", pairs[0])
    sources = source_vocab.encode_batch([s for s, _ in pairs])
    targets = target_vocab.encode_batch([t for _, t in pairs])
    for (source, target), s, t in zip(pairs, sources, targets):
        if not s or not t:
            continue
        if max_tokens is not None and (len(s) > max_tokens or len(t) > max_tokens):
            continue
        encoded.append((s, t))
        kept.append((source, target))
    checks.require(encoded, "pairs", f"a list with a pair within max_tokens="
                   f"{max_tokens} tokens", note=f"None of its {len(pairs)} is.")
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


def _lengths(ids, pad_id):
    nonpad = ids != pad_id
    # Index of the last real token + 1 (padding is at the end).
    return np.where(nonpad.any(1), ids.shape[1] - np.argmax(nonpad[:, ::-1], 1), 0)


def free_first_width(batches, width):
    """Swap a batch of another width into second place, in place.

    Keras' TensorFlow adapter infers a PyDataset's signature from its first
    two batches: when they differ in width, the length axis is left free
    (None) rather than fixed to the first batch's width. With `(source,
    target)` widths a batch that differs on both sides is preferred; when
    none does, one side may stay fixed on TensorFlow (the summarisation
    recipe pads every source to one width, so only the target varies).
    """
    widths = [width(b) for b in batches]
    if widths and isinstance(widths[0], tuple):   # (source, target) widths
        # One that differs on both sides frees both axes.
        other = next((i for i, w in enumerate(widths)
                      if all(a != b for a, b in zip(w, widths[0]))), None)
    else:
        other = None
    if other is None:
        other = next((i for i, w in enumerate(widths) if w != widths[0]), None)
    if other is not None:
        batches[1], batches[other] = batches[other], batches[1]


class LengthBucketedBatches(keras.utils.PyDataset):
    """Batches of similar lengths, padded only to their bucket's width.

    Most gettext messages are short (median 6 words), so padding every
    batch to the longest pair wastes most of an RNN's steps. This sorts
    shuffled pools of examples by length, cuts them into batches, and pads
    each batch (source and target alike) up to the next multiple of
    `bucket_width`: few distinct shapes, so compiled training steps are
    traced only a handful of times. Pass it straight to `model.fit`; it is a
    `keras.utils.PyDataset`, reshuffled every epoch.

    Args:
        inputs, labels: the arrays of `translation_arrays`.
        batch_size: examples per batch.
        bucket_width: pad lengths up to a multiple of this.
        shuffle: reshuffle between epochs (validation: False).
        pad_id: the id the arrays are padded with.
        seed: the shuffling seed.
        target_bucket_width: None pads both sides to one width; a number
            pads the source to a multiple of `bucket_width` and the target
            to a multiple of this, each on its own, and batches rows of
            similar targets (summaries are much shorter than their texts,
            and their length decides a step's cost).

    Example:

    >>> from kerattn.datasets import WordVocabulary
    >>> pairs = [("Permission denied", "Permission refusée"),
    ...          ("Cannot open the file %s for reading", "Impossible de lire %s")] * 4
    >>> src = WordVocabulary.build([s for s, _ in pairs])
    >>> tgt = WordVocabulary.build([t for _, t in pairs])
    >>> x, y, _ = translation_arrays(pairs, src, tgt)
    >>> batches = LengthBucketedBatches(x, y, batch_size=4, bucket_width=4)
    >>> sorted(batch[0]["source_ids"].shape[1] for batch in batches)   # not all 7
    [4, 8]
    """

    def __init__(self, inputs, labels, batch_size=64, bucket_width=5,
                 shuffle=True, pad_id=0, seed=0, target_bucket_width=None):
        super().__init__()
        checks.positive_int("batch_size", batch_size)
        checks.positive_int("bucket_width", bucket_width)
        checks.positive_int("target_bucket_width", target_bucket_width,
                            allow_none=True)
        checks.require(isinstance(inputs, dict)
                       and {"source_ids", "target_in_ids"} <= set(inputs), "inputs",
                       "a dict with source_ids and target_in_ids (as "
                       "translation_arrays returns)", type(inputs).__name__)
        self.source = np.asarray(inputs["source_ids"])
        self.target_in = np.asarray(inputs["target_in_ids"])
        self.labels = np.asarray(labels)
        checks.require(len(self.source) == len(self.target_in), "inputs",
                       "a dict whose source_ids and target_in_ids have as many "
                       "rows", note=f"They have {len(self.source)} and "
                       f"{len(self.target_in)}.")
        checks.same("labels", len(self.labels), "source_ids", len(self.source),
                    "number of rows")
        self.batch_size, self.bucket_width = batch_size, bucket_width
        self.shuffle, self.pad_id = shuffle, pad_id
        self.target_bucket_width = target_bucket_width
        self.source_length = _lengths(self.source, pad_id)
        self.target_length = _lengths(self.labels, pad_id)
        self.length = np.maximum(self.source_length, self.target_length)
        # Batches hold rows of similar length: of one side, or (with
        # separate widths) of similar targets, then sources.
        self._key = (self.length if target_bucket_width is None else
                     self.target_length * (self.source.shape[1] + 1)
                     + self.source_length)
        self.rng = np.random.default_rng(seed)
        self._make_batches()

    def _make_batches(self):
        n = len(self.length)
        order = self.rng.permutation(n) if self.shuffle else np.arange(n)
        pool = self.batch_size * 50
        batches = []
        for start in range(0, n, pool):
            chunk = order[start:start + pool]
            chunk = chunk[np.argsort(self._key[chunk], kind="stable")]
            batches += [chunk[i:i + self.batch_size]
                        for i in range(0, len(chunk), self.batch_size)]
        if self.shuffle:
            batches = [batches[i] for i in self.rng.permutation(len(batches))]
        free_first_width(batches, self._width)
        self.batches = batches

    def _width(self, rows):
        """The batch's padded length, or `(source, target)` lengths."""
        def up(length, width):
            return int(-(-length[rows].max() // width) * width)

        if self.target_bucket_width is None:
            return up(self.length, self.bucket_width)
        return (up(self.source_length, self.bucket_width),
                up(self.target_length, self.target_bucket_width))

    def __len__(self):
        return len(self.batches)

    def __getitem__(self, index):
        rows = self.batches[index]
        width = self._width(rows)
        s_w, t_w = width if isinstance(width, tuple) else (width, width)

        def fit(a, t):
            size = min(t, a.shape[1])
            out = np.full((len(rows), t), self.pad_id, a.dtype)
            out[:, :size] = a[rows, :size]
            return out

        return ({"source_ids": fit(self.source, s_w),
                 "target_in_ids": fit(self.target_in, t_w)},
                fit(self.labels, t_w))

    def on_epoch_end(self):
        if self.shuffle:
            self._make_batches()

"""Summarisation data: Debian long package descriptions and their synopses.

Each binary package of apt's English `Translation-en` lists has a one-line
synopsis (`Description-en: <synopsis>`) above its long description: a real
text -> summary pair, written by the package's maintainer. Package and
library names recur on both sides, which is what copying is for (See et
al., 2017).

`debian_summaries()` builds the set (docs/data.md):

- every binary package with a long description (`documents`' parsing);
- a fixed split **by source package** (a hash of its name, 80/10/10, the
  split of `debian_descriptions`): `libfoo1`, `libfoo-dev` and
  `libfoo-doc` share text and fall on one side;
- exact duplicates (the same words, case and spacing aside) and near
  duplicates (word 5-gram Jaccard similarity >= 0.8, `near_duplicates`)
  removed, within a side and across sides: of each group of duplicates one
  description is kept;
- the leakage that remains measured: the share of test synopses that also
  appear, verbatim, as a training synopsis.

`near_duplicates` finds the groups with MinHash signatures and
locality-sensitive hashing (Broder 1997; Leskovec et al., "Mining of
Massive Datasets", ch. 3): only pairs that share a band of their signature
are compared, and each such pair's similarity is computed exactly.
"""

import collections
import time
import zlib

import numpy as np

from kerattn import checks
from kerattn.datasets.documents import (LISTS_DIR, _binary_packages,
                                        _long_description, _split_of,
                                        split_words)

SPLITS = ("train", "valid", "test")


# --- near duplicates ---------------------------------------------------------


def shingles(text, n=5):
    """The set of word `n`-grams of `text` (lower-cased words and marks).

    A text of fewer than `n` words is one shingle, its whole word sequence.
    """
    words = split_words(text)
    if len(words) <= n:
        return {" ".join(words)}
    return {" ".join(words[i:i + n]) for i in range(len(words) - n + 1)}


def jaccard(a, b):
    """|a & b| / |a | b| of two sets (0 for two empty sets)."""
    union = len(a | b)
    return len(a & b) / union if union else 0.0


class _Groups:
    """Union-find over `n` items."""

    def __init__(self, n):
        self.parent = list(range(n))

    def find(self, i):
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def union(self, i, j):
        i, j = self.find(i), self.find(j)
        if i != j:
            self.parent[max(i, j)] = min(i, j)


def _signatures(sets, num_perm, seed):
    """MinHash signatures `(len(sets), num_perm)` (uint64) of shingle sets.

    Each shingle is hashed with CRC-32 (stable across processes) and each
    of the `num_perm` hash functions is a multiply-shift hash of it.
    """
    rng = np.random.default_rng(seed)
    a = rng.integers(1, 2**63, num_perm, dtype=np.uint64) | np.uint64(1)
    b = rng.integers(0, 2**63, num_perm, dtype=np.uint64)
    lengths = np.array([len(s) for s in sets])
    hashes = np.fromiter((zlib.crc32(x.encode()) for s in sets for x in s),
                         np.uint64, int(lengths.sum()))
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    out = np.empty((len(sets), num_perm), np.uint64)
    with np.errstate(over="ignore"):
        for k in range(num_perm):
            values = (a[k] * hashes + b[k]) >> np.uint64(32)
            out[:, k] = np.minimum.reduceat(values, starts)
    return out


def near_duplicates(texts, threshold=0.8, n=5, bands=8, rows=4, seed=0):
    """Groups of texts whose word `n`-gram Jaccard similarity is >= threshold.

    MinHash signatures of `bands * rows` hash functions are cut into
    `bands` bands; two texts are compared (exactly, on their shingle sets)
    when one of their bands is equal, and joined when their similarity
    reaches `threshold`. Groups are the connected components of those
    pairs. With 8 bands of 4 rows a pair at similarity 0.8 is compared
    with probability 1 - (1 - 0.8^4)^8 = 0.985 (at 0.9: 0.9998).

    Args:
        texts: the list of texts.
        threshold: the similarity in (0, 1] that makes a pair duplicates.
        n: the shingle length in words.
        bands, rows: the banding of the signature.
        seed: the hash functions' seed.

    Returns:
        A list of groups (each a sorted list of indices into `texts`, at
        least two long), sorted by their first index.

    Example:

    >>> base = ("the library provides a fast parser for json files written in "
    ...         "c with bindings for python and ruby and a tool to check files")
    >>> near_duplicates([base, base + " quickly", "a game about cats and dogs",
    ...                  base.replace("json", "yaml")])   # 0.95, 0, 0.6
    [[0, 1]]
    """
    checks.strings("texts", texts)
    checks.number("threshold", threshold, 0.0, 1.0, low_open=True)
    checks.positive_int("n", n)
    checks.positive_int("bands", bands)
    checks.positive_int("rows", rows)
    sets = [shingles(t, n) for t in texts]
    groups = _Groups(len(texts))
    if len(texts) < 2:
        return []
    signatures = _signatures(sets, bands * rows, seed)
    checked = set()
    for band in range(bands):
        buckets = collections.defaultdict(list)
        block = np.ascontiguousarray(signatures[:, band * rows:(band + 1) * rows])
        for i, key in enumerate(map(bytes, block)):
            buckets[key].append(i)
        for members in buckets.values():
            for x in range(len(members)):
                for y in range(x + 1, len(members)):
                    i, j = members[x], members[y]
                    if (i, j) in checked or groups.find(i) == groups.find(j):
                        continue
                    checked.add((i, j))
                    if jaccard(sets[i], sets[j]) >= threshold:
                        groups.union(i, j)
    components = collections.defaultdict(list)
    for i in range(len(texts)):
        components[groups.find(i)].append(i)
    return sorted((g for g in components.values() if len(g) > 1),
                  key=lambda g: g[0])


# --- the Debian set ----------------------------------------------------------


def _normal(text):
    return " ".join(text.lower().split())


def debian_summaries(lists_dir=LISTS_DIR, min_words=1, max_words=None,
                     threshold=0.8):
    """Debian long descriptions and their synopses, split by source package.

    Args:
        lists_dir: apt's list directory (after `apt-get update -o
            Acquire::Languages=en`).
        min_words, max_words: keep descriptions of this many words (None:
            no upper bound), counted as `str.split` does.
        threshold: the word 5-gram Jaccard similarity at which two
            descriptions are near duplicates (`near_duplicates`).

    Returns:
        A dict with `"train"`, `"valid"` and `"test"`: lists of examples,
        each a dict with `text` (the long description; paragraphs on their
        own lines), `summary` (the synopsis), `package` and `source`, in
        list order; and `"report"`: `packages` (binary packages with a long
        description in the length range), `exact_duplicates` and
        `near_duplicates` (descriptions removed), `seconds` (the time the
        search for near duplicates took) and `test_summaries_in_train`
        (the share of test synopses that are also a training synopsis,
        case aside).

    Raises:
        FileNotFoundError: when the lists (with English descriptions) are
            not there; the message gives the `apt-get update` command.

    Example:

    >>> # after: apt-get update -o Acquire::Languages=en
    >>> data = debian_summaries(min_words=20, max_words=200)  # doctest: +SKIP
    >>> sorted(data["train"][0])  # doctest: +SKIP
    ['package', 'source', 'summary', 'text']
    """
    checks.positive_int("min_words", min_words)
    checks.positive_int("max_words", max_words, allow_none=True)
    checks.number("threshold", threshold, 0.0, 1.0, low_open=True)
    examples, seen = [], set()
    for source, name, _, description in _binary_packages(lists_dir):
        text = _long_description(description)
        summary = description.split("\n", 1)[0].strip()
        words = len(text.split())
        if (not text or not summary or (name, text) in seen or words < min_words
                or (max_words is not None and words > max_words)):
            continue
        seen.add((name, text))   # a package in two lists (bookworm, -updates)
        examples.append({"text": text, "summary": summary, "package": name,
                         "source": source})
    # Exact duplicates: one description for each text.
    first, exact = {}, 0
    kept = []
    for example in examples:
        key = _normal(example["text"])
        if key in first:
            exact += 1
            continue
        first[key] = len(kept)
        kept.append(example)
    start = time.time()
    groups = near_duplicates([e["text"] for e in kept], threshold)
    seconds = time.time() - start
    # Of each group of near duplicates the first in list order stays (and
    # takes its own source's side); the others go, whatever their side.
    drop = {i for group in groups for i in group[1:]}
    splits = {name: [] for name in SPLITS}
    for i, example in enumerate(kept):
        if i not in drop:
            splits[_split_of(example["source"])].append(example)
    train_summaries = {_normal(e["summary"]) for e in splits["train"]}
    in_train = sum(_normal(e["summary"]) in train_summaries for e in splits["test"])
    splits["report"] = {
        "packages": len(examples), "exact_duplicates": exact,
        "near_duplicates": len(drop), "seconds": round(seconds, 1),
        "test_summaries_in_train": round(in_train / max(len(splits["test"]), 1), 4)}
    return splits

"""Long use without leaks: a compiled Translator serving 2,000 requests (500
on torch, which runs eagerly: nothing is compiled, and 500 requests already
reach every padded shape), and
a 50-epoch `fit` on length-bucketed batches.

The Translator's compile cache holds at most one function per configuration
(`max_compiled` of them), and each configuration traces once per padded
shape: the number of traces equals the number of distinct (configuration,
padded shape) pairs the requests produce, computed here independently of
the Generator. Resident memory is printed (`-s`) and its growth over the
second half of the requests is asserted under `LEAK_BOUND_MIB`, which a
leak of 1 MB per request (250 MB over torch's second half, 1,000 MB over
the others') breaks. Then a second Translator on the same model, with
`max_compiled=1`, replays some of those requests in three blocks (greedy,
beam, greedy): each block evicts the function of the one before, greedy's
is traced again, and the answers stay those of the first run.
"""

import collections
import gc
import os

import keras
import numpy as np

import kerattn
from kerattn.datasets import (LengthBucketedBatches, WordVocabulary, tsv_pairs,
                              translation_arrays)
from kerattn.losses import MaskedSparseCrossentropy

HERE = os.path.dirname(os.path.abspath(__file__))
PAIRS = tsv_pairs(os.path.join(HERE, "data", "gettext_fr_sample.tsv"))


# MiB: the most resident memory may grow over the second half of the
# requests (measured: at most a few MiB on each backend, since every shape
# compiled in the first half; a 1 MB-per-request leak adds 250 or 1,000).
LEAK_BOUND_MIB = 64


def _rss_mib():
    gc.collect()
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2 ** 20


def _power_of_two(n, low):
    size = low
    while size < n:
        size *= 2
    return size


def _requests():
    """2,000 on the compiling backends; 500 on torch, whose eager loop cost
    4 minutes of CI for 2,000 (every request runs the Python loop)."""
    return 500 if keras.backend.backend() == "torch" else 2000


def _key(config):
    return ("beam" if config["beam_width"] > 1 else "greedy",
            config.get("length_penalty"))


def _shapes(src, texts):
    """The padded shapes the Generator should decode `texts` in, from the
    texts alone: chunks of at most 4 rows, ids cut at 16 tokens (an empty
    text is one unknown word), each padded to a power of two (lengths >= 8)."""
    ids = [min(max(len(i), 1), 16) for i in src.encode_batch(texts)]
    return [(_power_of_two(len(ids[start:start + 4]), 1),
             _power_of_two(max(ids[start:start + 4]), 8))
            for start in range(0, len(ids), 4)]


def _traced(generator):
    """`generator.traces` keyed as `_key` and `_shapes` are."""
    traced = collections.Counter()
    for (k, shape), count in generator.traces.items():
        traced[(("beam" if k[1] == "beam" else "greedy",
                 dict(k[2]).get("length_penalty")), *shape)] += count
    return traced


def test_a_translator_serves_many_requests_with_bounded_compiles():
    src = WordVocabulary.build([s for s, _ in PAIRS], 500)
    tgt = WordVocabulary.build([t for _, t in PAIRS], 500)
    model = kerattn.zoo.bahdanau_nmt(len(src), len(tgt), preset="tiny")
    translator = kerattn.decoding.Translator(model, src, tgt, max_length=6,
                                             max_batch=4, max_source_length=16)
    generator = translator.generator
    words = sorted({w for s, _ in PAIRS for w in s.split()})
    configs = [dict(beam_width=1), dict(beam_width=2, length_penalty=0.6)]
    rng = np.random.default_rng(0)
    expected, rss, served = set(), [_rss_mib()], []
    requests = _requests()
    for request in range(requests):
        n = int(rng.integers(1, 7))                       # 1..6 texts
        texts = [" ".join(rng.choice(words, int(rng.integers(0, 25))))
                 for _ in range(n)]                       # 0..24 words
        config = configs[int(rng.integers(len(configs)))]
        out = translator(texts, **config)
        assert len(out) == n and all(isinstance(t, str) for t in out)
        assert len(generator._compiled) <= len(configs)
        served.append((texts, config, out))
        expected.update((_key(config), *shape) for shape in _shapes(src, texts))
        if request % 250 == 249:
            rss.append(_rss_mib())
    growth = rss[-1] - rss[len(rss) // 2]
    print(f"\n{keras.backend.backend()}: resident MiB every 250 requests: "
          + ", ".join(f"{r:.0f}" for r in rss)
          + f"; {growth:+.0f} MiB over the second half")
    # No leak: every shape compiled in the first half (asserted below), so
    # the second half allocates nothing that stays.
    assert growth < LEAK_BOUND_MIB, rss
    batches, lengths = generator.buckets()
    assert len(expected) <= len(configs) * batches * lengths
    traced = _traced(generator)
    assert set(traced) == expected
    # Every padded shape the two configurations can produce was reached.
    assert len(expected) == len(configs) * 3 * 2, expected   # 1/2/4 rows, 8/16
    if keras.backend.backend() == "torch":
        # Eager (torch.inference_mode, no tracing): every chunk runs the
        # Python loop, so each call counts.
        assert sum(traced.values()) >= requests
    else:
        # tf.function (XLA) and jax.jit trace each shape exactly once.
        assert set(traced.values()) == {1}, generator.traces

    # max_compiled=1: three blocks of one-text requests of the first run
    # (one padded shape, (1, 8)), greedy, beam, greedy: each block evicts
    # the function of the one before, and the third traces greedy again
    # (each trace compiles: three blocks keep that to three compiles).
    again = kerattn.decoding.Translator(model, src, tgt, max_length=6,
                                        max_batch=4, max_source_length=16)
    again.generator.max_compiled = 1
    block = 5 if keras.backend.backend() == "torch" else 10
    pools = [[(texts, out) for texts, config, out in served
              if config is c and _shapes(src, texts) == [(1, 8)]]
             for c in configs]
    assert min(len(pool) for pool in pools) >= 2 * block, [len(p) for p in pools]
    replayed, cached, seen = collections.Counter(), None, set()
    for b in range(3):
        config = configs[b % 2]
        for texts, out in pools[b % 2][b // 2 * block:(b // 2 + 1) * block]:
            assert again(texts, **config) == out
            assert len(again.generator._compiled) == 1
            # The trace an LRU cache of one configuration should cause.
            if cached != _key(config):
                cached, seen = _key(config), set()
            if keras.backend.backend() == "torch" or (1, 8) not in seen:
                replayed[(cached, 1, 8)] += 1
                seen.add((1, 8))
    assert _traced(again.generator) == replayed
    if keras.backend.backend() != "torch":
        # Greedy traced again after its eviction.
        assert list(replayed.values()) == [2, 1], replayed


def test_the_compile_cache_drops_the_least_recently_used():
    src = WordVocabulary.build([s for s, _ in PAIRS], 100)
    model = kerattn.zoo.bahdanau_nmt(len(src), len(src), preset="tiny")
    generator = kerattn.decoding.Generator(model, max_compiled=2)
    for max_length in (3, 4, 3, 5):
        generator([[5, 6]], max_length=max_length)
    assert [k[0] for k in generator._compiled] == [3, 5]


def test_a_50_epoch_fit_traces_no_more_than_its_shapes():
    src = WordVocabulary.build([s for s, _ in PAIRS], 300)
    tgt = WordVocabulary.build([t for _, t in PAIRS], 300)
    # Two batches an epoch, of two shapes (a full batch of short pairs, a
    # part batch of long ones) in an order shuffled each epoch: 100 steps.
    x, y, _ = translation_arrays(PAIRS[:32], src, tgt, 12)
    model = kerattn.zoo.bahdanau_nmt(len(src), len(tgt), preset="tiny")
    model.compile("adam", MaskedSparseCrossentropy())
    steps = {"traced": 0}
    train_step = model.train_step

    def counted(*args):               # (data), or (state, data) on JAX
        steps["traced"] += 1          # runs when the step is traced
        return train_step(*args)
    model.train_step = counted
    epochs = 50
    # The shapes the 50 epochs feed, from an identical batcher.
    twin = LengthBucketedBatches(x, y, batch_size=16, seed=3)
    shapes = set()
    for _ in range(epochs):
        for i in range(len(twin)):
            inputs, labels = twin[i]
            shapes.add((inputs["source_ids"].shape, labels.shape))
        twin.on_epoch_end()
    rss = _rss_mib()
    history = model.fit(LengthBucketedBatches(x, y, batch_size=16, seed=3),
                        epochs=epochs, verbose=0)
    print(f"\n{keras.backend.backend()}: {len(shapes)} shapes, "
          f"{steps['traced']} traces, resident MiB {rss:.0f} -> {_rss_mib():.0f}")
    assert len(shapes) == 2
    assert np.isfinite(history.history["loss"][-1])
    assert history.history["loss"][-1] < history.history["loss"][0]
    if keras.backend.backend() == "torch":
        # Keras runs torch eagerly (no jit_compile): every step calls it.
        assert steps["traced"] == epochs * len(twin)
    else:
        assert 1 <= steps["traced"] <= len(shapes), (steps, len(shapes))


def test_long_sources_are_cut_and_big_batches_chunked():
    src = WordVocabulary.build([s for s, _ in PAIRS], 100)
    model = kerattn.zoo.bahdanau_nmt(len(src), len(src), preset="tiny")
    generator = kerattn.decoding.Generator(model, max_batch=2,
                                           max_source_length=8)
    rows = [[5 + i % 7] * (3 + 4 * i) for i in range(5)]      # 3..19 tokens
    out = generator(rows, max_length=4)
    assert out["tokens"].shape == (5, 4)
    assert out["attention"].shape[-1] == 8                     # cut at 8
    # Chunks of 2 rows: the first row alone matches itself in a chunk.
    alone = generator(rows[:1], max_length=4)
    np.testing.assert_array_equal(out["tokens"][:1], alone["tokens"])
    assert {shape for (_, shape) in generator.traces} <= {(1, 8), (2, 8)}

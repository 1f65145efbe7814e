"""The translation recipe: what the six NMT recipes of zoo/ train and measure.

prepare -> build -> train -> evaluate, on this machine's gettext English ->
French catalogs (`kerattn.datasets.gettext_pairs`) or a user's pairs
(`fit`, `examples/fit.py --data`):

- `prepare`: the fixed split, word vocabularies learned on the training
  split, training pairs of at most `max_tokens` tokens a side, and two
  test sets: the standard one (at most 20 words a side) and every test
  pair up to 50 source words for BLEU by source length.
- `train`: `model.fit` on length-bucketed batches with Adam, gradient
  clipping and a masked cross-entropy, for a number of epochs (and an
  optional wall-clock cap), or for a phase's steps.
- `with_options`: a phase's model, a converged model's weights in the same
  builder with an option switched on (coverage and its loss for the last
  steps, as See et al. 2017 train), or its control.
- `evaluate`: sacreBLEU of greedy and beam-search translations, and BLEU by
  source-length bucket (Bahdanau et al. 2014, Figure 2).
- `draw`: attention heatmaps.

Seeds, results.json and RESULTS.md are zoo/runner.py's.
"""

import time

import keras
import numpy as np

from kerattn import checks, distribute
from kerattn.datasets import (LengthBucketedBatches, WordPieceVocabulary,
                              WordVocabulary, data_fingerprint, gettext_pairs,
                              translation_arrays, translation_dataset)
from kerattn.decoding import Translator
from kerattn.losses import MaskedSparseCrossentropy
from kerattn.recipes.common import carry_weights, compile_and_fit, phase_rows

# Source-length buckets in words, as in Bahdanau et al.'s Figure 2.
LENGTH_BUCKETS = ((1, 5), (6, 10), (11, 15), (16, 20), (21, 30), (31, 50))


# The recipe's training settings per model (the rest use DEFAULTS); the
# sizes are each model's "base" preset (kerattn.zoo.presets(name)).
DEFAULTS = dict(preset="base", learning_rate=2e-3, label_smoothing=0.0,
                warmup_steps=0)
SETTINGS = {
    # The stacked LSTMs learn at this budget after a warm-up; a peak of 5e-3
    # beat 1e-2 over the 6 epochs (zoo/luong_nmt/RESULTS.md, `peak5e-3`).
    "luong_nmt": dict(learning_rate=5e-3, warmup_steps=300),
    "transformer_nmt": dict(learning_rate=1e-3, label_smoothing=0.1,
                            warmup_steps=600),
    "convs2s_nmt": dict(learning_rate=1e-3),
}


def settings(name):
    """The recipe's preset and training settings for the zoo model `name`."""
    return dict(DEFAULTS, **SETTINGS.get(name, {}))


def prepare(lang="fr", vocab_size=8000, max_tokens=20, tokenizer="word",
            splits=None, max_train=None, max_test=None):
    """The data of the recipe: vocabularies, training arrays, test pairs.

    `tokenizer` is "word" (`WordVocabulary`) or "wordpiece" (keras-hub's
    WordPiece, `WordPieceVocabulary`); `vocab_size` is per language.
    `splits` (`{"train", "valid", "test"}` lists of pairs) replaces this
    machine's gettext catalogs with the user's data (`examples/fit.py
    --data`); `max_train` / `max_test` keep the first pairs of a split
    (`common.split` orders a user's splits by a hash of each pair).
    `data_sha256` in the result is the `data_fingerprint` of the splits
    read (after `max_train` / `max_test`, before the length filter).
    """
    checks.one_of("tokenizer", tokenizer, ("word", "wordpiece"))
    splits = splits or gettext_pairs(lang, max_words=None)

    def short(pairs, words=20):
        return [(s, t) for s, t in pairs
                if len(s.split()) <= words and len(t.split()) <= words]

    splits = {"train": splits["train"][:max_train],
              "valid": splits["valid"][:max_test],
              "test": splits["test"][:max_test]}
    train_pairs = short(splits["train"])
    vocabulary = (WordVocabulary.build if tokenizer == "word"
                  else WordPieceVocabulary.build)
    source_vocab = vocabulary([s for s, _ in train_pairs], vocab_size)
    target_vocab = vocabulary([t for _, t in train_pairs], vocab_size)
    x, y, kept = translation_arrays(train_pairs, source_vocab, target_vocab,
                                    max_tokens)
    vx, vy, _ = translation_arrays(short(splits["valid"]), source_vocab,
                                   target_vocab, max_tokens)
    test_long = [(s, t) for s, t in splits["test"] if len(s.split()) <= 50]
    return {
        "lang": lang,
        "source_vocab": source_vocab,
        "target_vocab": target_vocab,
        "train": (x, y),
        "valid": (vx, vy),
        "train_pairs": len(kept),
        "train_kept": kept,
        "test": short(splits["test"]),
        "test_long": test_long,
        "max_tokens": max_tokens,
        # The splits as cut, before the length filter: which data this is.
        "data_sha256": data_fingerprint(splits),
    }


def build(name, data, preset="base", **overrides):
    """`kerattn.zoo.<name>` for the data's vocabularies, at `preset`."""
    from kerattn import zoo

    return getattr(zoo, name)(len(data["source_vocab"]), len(data["target_vocab"]),
                              preset=preset, **overrides)


def train(model, data, epochs=10, minutes=None, batch_size=64,
          learning_rate=2e-3, label_smoothing=0.0, warmup_steps=0,
          verbose="auto", strategy=None, pipeline="python", seed=0,
          callbacks=(), steps=None, backup=None, pause_after=None):
    """Fit `model` on `data["train"]` (`compile_and_fit`); returns a summary.

    With `warmup_steps`, the learning rate rises linearly from 0 to
    `learning_rate` over those steps, then follows a cosine down to a tenth
    of it at the end of the last epoch (a Transformer needs the warm-up,
    Vaswani et al. 2017, section 5.3). With a `kerattn.distribute`
    `strategy`, call it inside `strategy.scope()` with a model built there;
    `batch_size` is the global batch. `pipeline="tf.data"` tokenises the
    training pairs inside a `tf.data` graph (`translation_dataset`).
    `callbacks`: more Keras callbacks (early stopping, a learning-rate
    decay). `backup` and `pause_after`: a resumable training
    (`compile_and_fit`'s, which keeps those callbacks' state). `steps`
    trains that many batches in one epoch instead of `epochs`, on a random
    part of the training pairs (`common.phase_rows`): a phase
    (`with_options`).
    """
    pad_id = data["target_vocab"].pad_id
    if steps is not None:   # a phase: a random part of the training pairs, once
        checks.require(pipeline == "python", "pipeline", "'python' with steps "
                       "(a phase samples the encoded training arrays)", pipeline)
        x, y = data["train"]
        rows = phase_rows(len(y), steps, batch_size, seed)
        data = dict(data, train=({k: v[rows] for k, v in x.items()}, y[rows]))
        epochs = 1
    if pipeline == "tf.data":
        train_batches = translation_dataset(
            data["train_kept"], data["source_vocab"], data["target_vocab"],
            batch_size, data["max_tokens"], seed=seed)
    else:
        train_batches = LengthBucketedBatches(*data["train"], batch_size=batch_size,
                                              pad_id=pad_id, seed=seed)
    valid_batches = LengthBucketedBatches(*data["valid"], batch_size=256,
                                          shuffle=False, pad_id=pad_id)
    _, summary = compile_and_fit(
        model, train_batches, valid_batches,
        loss=MaskedSparseCrossentropy(pad_id=pad_id,
                                      label_smoothing=label_smoothing),
        metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
        learning_rate=learning_rate, warmup_steps=warmup_steps, epochs=epochs,
        minutes=minutes, strategy=strategy, verbose=verbose, callbacks=callbacks,
        backup=backup, pause_after=pause_after)
    return summary


def with_options(model, name, data, preset="base", moved=None, **options):
    """`build(name, data, preset, **options)` holding every weight of
    `model` (`common.carry_weights`): the model of a phase that switches an
    option on for the last steps of training (`coverage=True` with its
    loss for `bahdanau_nmt`; See et al. 2017 train their last 3,000
    iterations so), or with `model`'s own options, its control (the same
    steps without the option, from the same weights). `moved`: the
    places of weights the option moves (`carry_weights`).

    >>> data = prepare(splits={"train": [("a b", "x y")] * 4,
    ...                        "valid": [("a", "x")], "test": [("b", "y")]})
    >>> base = build("bahdanau_nmt", data, "tiny")
    >>> covered = with_options(base, "bahdanau_nmt", data, "tiny", coverage=True)
    >>> carry_weights(base, build("bahdanau_nmt", data, "tiny", coverage=True))
    ['decoder/attention/b', 'decoder/attention/w_c']

    (`carry_weights` returns what the option adds: eq. 11's `w_c` and
    `b_attn`, starting as initialised.)
    """
    switched = build(name, data, preset, **options)
    carry_weights(model, switched, moved)
    return switched


def fit(name, data=None, preset="small", epochs=6, batch_size=64,
        learning_rate=None, max_train=None, max_test=None, seed=0, strategy=None,
        beam_width=5, pipeline="python", max_tokens=20, verbose=2,
        test_data=None):
    """`examples/fit.py MODEL`: the recipe's method on any pairs.

    Args:
        name: a zoo translation builder ("bahdanau_nmt", ...).
        data: a TSV file of `source<TAB>target` pairs (10% the test split
            and 10% the validation split, by a hash of each source text:
            `kerattn.recipes.common.split`); None uses
            this machine's gettext English -> French catalogs.
        preset: the model's named sizes.
        epochs, batch_size: as `train`.
        learning_rate: None takes the recipe's (`settings(name)`), with its
            warm-up and label smoothing.
        max_train, max_test: keep the first pairs of a split (by that
            hash).
        seed: the shuffling seed.
        strategy: a `kerattn.distribute` strategy.
        beam_width: the beam of the second BLEU column.
        pipeline: "python" or "tf.data" (see `train`).
        max_tokens: the longest training side, in tokens.
        verbose: `fit`'s verbosity.
        test_data: your own test split, a TSV file like `data` (with
            `data`): every pair of it is tested on, `data` gives training
            and 10% validation (`kerattn.recipes.common.split_with_test`:
            a source text of both files is not trained on).

    Returns:
        `(model, summary, results, draw)`: `results` holds `bleu_greedy`,
        `bleu_beam{beam_width}` and BLEU by source length; `draw(path)`
        writes attention heatmaps. On a torch DDP worker other than rank 0,
        `results` and `draw` are None.
    """
    from kerattn.datasets import tsv_pairs
    from kerattn.recipes.common import fitted, require_training_file, split

    require_training_file(data, test_data)
    strategy = strategy or distribute.no_distribution()
    prepared = prepare(splits=split(tsv_pairs(data), test=tsv_pairs(test_data)
                                    if test_data else None) if data else None,
                       max_tokens=max_tokens, max_train=max_train, max_test=max_test)
    config = settings(name)
    with strategy.scope():
        model = build(name, prepared, preset)
        summary = train(model, prepared, epochs=epochs, batch_size=batch_size,
                        learning_rate=learning_rate or config["learning_rate"],
                        label_smoothing=config["label_smoothing"],
                        warmup_steps=config["warmup_steps"], strategy=strategy,
                        pipeline=pipeline, seed=seed, verbose=verbose)
    vocabularies = {"source": prepared["source_vocab"],
                    "target": prepared["target_vocab"]}
    if not strategy.is_chief:
        return fitted(model, summary, None, None, "translation", vocabularies)
    results = evaluate(model, prepared, beam_width=beam_width)
    search = ({"beam_width": beam_width, "length_penalty": BEAM_LENGTH_PENALTY,
               "never_worse_than_greedy": False} if beam_width else {})
    return fitted(model, summary, results,
                  lambda path: draw(model, prepared, path), "translation",
                  vocabularies, search=search)


def translate_all(translator, sources, batch_size=256, **kwargs):
    """Translate in batches of similar length; returns hypotheses in order."""
    order = np.argsort([len(s.split()) for s in sources], kind="stable")
    hyps = [None] * len(sources)
    for start in range(0, len(order), batch_size):
        rows = order[start:start + batch_size]
        texts = [sources[i] for i in rows]
        longest = max(map(len, translator.source_vocab.encode_batch(texts)))
        # Few distinct lengths: each compiles once.
        max_length = min(16 * -(-(2 * longest + 10) // 16), 128)
        out = translator(texts, max_length=max_length, **kwargs)
        for i, hyp in zip(rows, out):
            hyps[i] = hyp
    return hyps


BEAM_LENGTH_PENALTY = 0.6   # GNMT's alpha of the beam BLEU (Wu et al., 2016)


def evaluate(model, data, beam_width=5, length_penalty=BEAM_LENGTH_PENALTY):
    """sacreBLEU of greedy and pure beam search (no greedy fallback), overall
    and by source length; `beam_width=None` scores greedy alone."""
    import sacrebleu

    translator = Translator(model, data["source_vocab"], data["target_vocab"])
    pairs = data["test_long"]
    sources = [s for s, _ in pairs]
    standard = {s for s, _ in data["test"]}
    results = {"test_sentences": len(data["test"]),
               "length_bucket_sentences": len(pairs)}
    searches = [("greedy", {})]
    if beam_width:
        searches.append((f"beam{beam_width}", {"beam_width": beam_width,
                                              "length_penalty": length_penalty,
                                              "never_worse_than_greedy": False}))
        results["beam_greedy_fallback"] = False
    in_test = [i for i, s in enumerate(sources) if s in standard]
    bucket_rows = {}
    for low, high in LENGTH_BUCKETS:
        rows = [i for i, s in enumerate(sources) if low <= len(s.split()) <= high]
        if rows:
            bucket_rows[f"{low}-{high}"] = rows
    for name, kwargs in searches:
        start = time.time()
        hyps = translate_all(translator, sources, **kwargs)
        seconds = time.time() - start
        results[f"bleu_{name}"] = round(sacrebleu.corpus_bleu(
            [hyps[i] for i in in_test], [[pairs[i][1] for i in in_test]]).score, 2)
        results[f"{name}_sentences_per_second"] = round(len(sources) / seconds, 1)
        buckets = {}
        for bucket, rows in bucket_rows.items():
            bleu = sacrebleu.corpus_bleu([hyps[i] for i in rows],
                                         [[pairs[i][1] for i in rows]])
            buckets[bucket] = {"sentences": len(rows),
                               "bleu": round(bleu.score, 2)}
        results[f"bleu_{name}_by_source_length"] = buckets
        results[f"examples_{name}"] = [
            {"source": sources[i], "reference": pairs[i][1], "hypothesis": hyps[i]}
            for i in in_test[:5]]
    return results


def draw(model, data, path, count=4):
    """Attention heatmaps of the first `count` test sentences, to `path`.

    Returns `path`, or None for a model without attention (seq2seq, Cho).
    """
    import kerattn.plot

    translator = Translator(model, data["source_vocab"], data["target_vocab"])
    _, alignments = translator([s for s, _ in data["test"][:count]],
                               return_alignments=True)
    if alignments[0]["weights"] is None:
        return None
    return kerattn.plot.save_attention_heatmaps(
        [(a["weights"], a["source_tokens"], a["target_tokens"]) for a in alignments],
        path)

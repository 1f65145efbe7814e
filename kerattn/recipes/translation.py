"""The translation recipe every `zoo/<model>/recipe.py` shares.

prepare -> train -> evaluate -> report, on this machine's gettext English ->
French catalogs (`kerattn.datasets.gettext_pairs`):

- `prepare`: the fixed split, word vocabularies learned on the training
  split, training pairs of at most `max_tokens` tokens a side, and two
  test sets: the standard one (at most 20 words a side) and every test
  pair up to 50 source words for BLEU by source length.
- `train`: `model.fit` on length-bucketed batches with Adam, gradient
  clipping and a masked cross-entropy, for a number of epochs (and an
  optional wall-clock cap).
- `evaluate`: sacreBLEU of greedy and beam-search translations, and BLEU by
  source-length bucket (Bahdanau et al. 2014, Figure 2).
- `report`: `results.json` and `RESULTS.md`, with the no-attention
  `seq2seq` baseline beside the model when its results exist.
"""

import argparse
import json
import os
import time

import keras
import numpy as np

from kerattn import checks, distribute
from kerattn.datasets import (LengthBucketedBatches, WordPieceVocabulary,
                              WordVocabulary, gettext_pairs, translation_arrays,
                              translation_dataset)
from kerattn.decoding import Translator
from kerattn.losses import MaskedSparseCrossentropy
from kerattn.recipes.common import compile_and_fit, mean_sd

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
    --data`); `max_train` / `max_test` keep the first pairs of a split.
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
    }


def build(name, data, preset="base", **overrides):
    """`kerattn.zoo.<name>` for the data's vocabularies, at `preset`."""
    from kerattn import zoo

    return getattr(zoo, name)(len(data["source_vocab"]), len(data["target_vocab"]),
                              preset=preset, **overrides)


def train(model, data, epochs=10, minutes=None, batch_size=64,
          learning_rate=2e-3, label_smoothing=0.0, warmup_steps=0,
          verbose="auto", strategy=None, pipeline="python", seed=0):
    """Fit `model` on `data["train"]` (`compile_and_fit`); returns a summary.

    With `warmup_steps`, the learning rate rises linearly from 0 to
    `learning_rate` over those steps, then follows a cosine down to a tenth
    of it at the end of the last epoch (a Transformer needs the warm-up,
    Vaswani et al. 2017, section 5.3). With a `kerattn.distribute`
    `strategy`, call it inside `strategy.scope()` with a model built there;
    `batch_size` is the global batch. `pipeline="tf.data"` tokenises the
    training pairs inside a `tf.data` graph (`translation_dataset`).
    """
    pad_id = data["target_vocab"].pad_id
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
        minutes=minutes, strategy=strategy, verbose=verbose)
    return summary


def fit(name, data=None, preset="small", epochs=6, batch_size=64,
        learning_rate=None, max_train=None, max_test=None, seed=0, strategy=None,
        beam_width=5, pipeline="python", max_tokens=20, verbose=2):
    """`examples/fit.py MODEL`: the recipe's method on any pairs.

    Args:
        name: a zoo translation builder ("bahdanau_nmt", ...).
        data: a TSV file of `source<TAB>target` pairs (the last 10% the
            test split, the 10% before it the validation split); None uses
            this machine's gettext English -> French catalogs.
        preset: the model's named sizes.
        epochs, batch_size: as `train`.
        learning_rate: None takes the recipe's (`settings(name)`), with its
            warm-up and label smoothing.
        max_train, max_test: keep the first pairs of a split.
        seed: the shuffling seed.
        strategy: a `kerattn.distribute` strategy.
        beam_width: the beam of the second BLEU column.
        pipeline: "python" or "tf.data" (see `train`).
        max_tokens: the longest training side, in tokens.
        verbose: `fit`'s verbosity.

    Returns:
        `(model, summary, results, draw)`: `results` holds `bleu_greedy`,
        `bleu_beam{beam_width}` and BLEU by source length; `draw(path)`
        writes attention heatmaps. On a torch DDP worker other than rank 0,
        `results` and `draw` are None.
    """
    from kerattn.datasets import tsv_pairs
    from kerattn.recipes.common import split

    strategy = strategy or distribute.no_distribution()
    prepared = prepare(splits=split(tsv_pairs(data)) if data else None,
                       max_tokens=max_tokens, max_train=max_train, max_test=max_test)
    config = settings(name)
    with strategy.scope():
        model = build(name, prepared, preset)
        summary = train(model, prepared, epochs=epochs, batch_size=batch_size,
                        learning_rate=learning_rate or config["learning_rate"],
                        label_smoothing=config["label_smoothing"],
                        warmup_steps=config["warmup_steps"], strategy=strategy,
                        pipeline=pipeline, seed=seed, verbose=verbose)
    if not strategy.is_chief:
        return model, summary, None, None
    results = evaluate(model, prepared, beam_width=beam_width)
    return model, summary, results, lambda path: draw(model, prepared, path)


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


def evaluate(model, data, beam_width=5, length_penalty=0.6):
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


def _bucket_table(results, baseline, search):
    key = f"bleu_{search}_by_source_length"
    lines = ["| source words | sentences | BLEU | seq2seq BLEU |",
             "|---|---|---|---|"]
    for bucket, row in results[key].items():
        base = baseline.get(key, {}).get(bucket, {}).get("bleu", "n/a") \
            if baseline else "n/a"
        lines.append(f"| {bucket} | {row['sentences']} | {_shown(row, 'bleu')} "
                     f"| {base} |")
    return "\n".join(lines)


def _shown(results, key):
    """`results[key]`, with its spread over seeds when there is one."""
    if f"{key}_sd" in results:
        return f"{results[key]} ± {results[key + '_sd']}"
    return str(results[key])


def beam_label(results, search):
    """The beam column's name, saying when the greedy fallback was on."""
    if results.get("beam_greedy_fallback", True):
        return f"{search} or greedy, the better (fallback on)"
    return search


AVERAGED = ("final_loss", "final_val_loss", "train_minutes")


def aggregate(runs):
    """One results dict from several seeds' results: each BLEU (also by
    source length) and the training summary become their mean, with the
    sample standard deviation beside it in `<key>_sd`; everything else is
    the first seed's; `by_seed` keeps each seed's headline numbers."""
    def averaged(key, values):
        if isinstance(values[0], dict):        # BLEU by source length
            out = {}
            for k in values[0]:
                out.update(averaged(k, [v[k] for v in values]))
            return {key: out}
        if key == "sentences":
            return {key: values[0]}
        mean, sd = mean_sd(values, 2)
        return {key: mean, f"{key}_sd": sd}

    result = dict(runs[0])
    headline = [k for k in runs[0] if k in AVERAGED or (
        k.startswith("bleu_") and not k.endswith("length"))]
    for key in runs[0]:
        if key in AVERAGED or key.startswith("bleu_"):
            result.update(averaged(key, [r[key] for r in runs]))
    result["seeds"] = len(runs)
    result["by_seed"] = [{k: r[k] for k in ["seed", *headline]} for r in runs]
    return result


def report(directory, name, description, config, results, command):
    """Write `results.json` and `RESULTS.md` into `directory`; `command`:
    the command that measured `results`, or a list of those whose seeds
    they join."""
    os.makedirs(directory, exist_ok=True)
    if isinstance(command, str):
        command = [command]
    command = "` and `".join(command)
    with open(os.path.join(directory, "results.json"), "w") as f:
        json.dump({"model": name, "config": config, **results}, f, indent=1)
    baseline_path = os.path.join(os.path.dirname(os.path.abspath(directory)),
                                 "seq2seq", "results.json")
    baseline = None
    if name != "seq2seq" and os.path.exists(baseline_path):
        with open(baseline_path) as f:
            baseline = json.load(f)
    beam = next(k for k in results if k.startswith("bleu_beam")
                and not k.endswith("length") and not k.endswith("_sd"))
    search = beam[len("bleu_"):]
    rows = [f"| {name} | {_shown(results, 'bleu_greedy')} | "
            f"{_shown(results, beam)} | "
            f"{results['parameters']:,} | {results['epochs']} | "
            f"{results['train_minutes']} |"]
    if baseline:
        fallback = " (fallback on)" if baseline.get(
            "beam_greedy_fallback", True) and not results.get(
            "beam_greedy_fallback", True) else ""
        rows.append(f"| seq2seq (no attention, baseline) | "
                    f"{baseline['bleu_greedy']} | {baseline.get(beam, 'n/a')}"
                    f"{fallback} | "
                    f"{baseline['parameters']:,} | {baseline['epochs']} | "
                    f"{baseline['train_minutes']} |")
    if results.get("beam_greedy_fallback", True):
        decoding = (f"The {search} column is the better of beam search and greedy "
                    "decoding by model score (`never_worse_than_greedy=True`, "
                    "the default when this was measured), not pure beam search.")
    else:
        decoding = (f"The {search} column is pure beam search "
                    "(`never_worse_than_greedy=False`, no greedy fallback).")
    seeds = ""
    if results.get("seeds", 1) > 1:
        per_seed = ", ".join(
            f"seed {r['seed']}: {r['bleu_greedy']} / {r.get(beam, 'n/a')}"
            for r in results["by_seed"])
        seeds = (f"\n\nEvery BLEU is the mean ± standard deviation of "
                 f"{results['seeds']} seeds (greedy / {search}: {per_seed}); "
                 "the examples are the first seed's.")
    examples = "\n".join(
        f"- en: {e['source']}\n  - reference: {e['reference']}\n"
        f"  - {name}: {e['hypothesis']}"
        for e in results[f"examples_{search}"])
    schedule = ""
    if config.get("warmup_steps"):
        schedule = (f" (linear warm-up over {config['warmup_steps']} steps, "
                    "then cosine decay to a tenth)")
    if config.get("label_smoothing"):
        schedule += f", label smoothing {config['label_smoothing']}"
    text = f"""# {name}: results

{description}

Measured by `{command}` (backend {results['backend']}, this project's 2-core
CPU machine), written by the recipe itself.

## Data

gettext English -> {config['lang']} message catalogs of this machine
(`kerattn.datasets.gettext_pairs`, fixed hash split): {results['train_pairs']:,}
training pairs of at most {config['max_tokens']} tokens a side;
{config.get('tokenizer', 'word')} vocabularies of {config['vocab_size']:,} tokens per language. Test: the
{results['test_sentences']:,} test pairs of at most 20 words a side.

## Model and budget

`{config['builder']}`; Adam {config['learning_rate']}{schedule}, clipnorm 1.0,
batch {config['batch_size']}, {results['epochs']} epochs ({results['steps']:,}
steps, {results['train_minutes']} minutes of training).

## sacreBLEU on the test split

| model | greedy | {beam_label(results, search)} (alpha 0.6) | parameters | epochs | train minutes |
|---|---|---|---|---|---|
{chr(10).join(rows)}

{decoding}{seeds}
{_ablation_section(directory, results)}
## BLEU by source length ({search})

All {results['length_bucket_sentences']:,} test pairs of at most 50 source
words (the model trained on at most {config['max_tokens']} tokens).

{_bucket_table(results, baseline, search)}

## Examples ({search})

{examples}
"""
    with open(os.path.join(directory, "RESULTS.md"), "w") as f:
        f.write(text)
    return text


def _ablation_section(directory, results=None):
    """The table of `ablation.json` (written by `zoo/ablation.py`), or
    nothing; its last row is the recipe's own result (`results`), for
    comparison at the recipe's budget."""
    path = os.path.join(directory, "ablation.json")
    if not os.path.exists(path):
        return ""
    with open(path) as f:
        table = json.load(f)
    lines = ["", "## Ablation", "",
             f"Written by `python zoo/ablation.py {os.path.basename(os.path.abspath(directory))} "
             "VARIANT ...`: changes to the recipe, each trained on the same data "
             "with seed 0 (or the seed its name gives) for the epochs shown (the "
             "1-epoch rows rank the changes, they are not the result), scored "
             "by greedy sacreBLEU on the test split.",
             "", "| variant | what changes | epochs | train loss | val loss | "
             "greedy BLEU | greedy BLEU, 16-20 source words | minutes |",
             "|---|---|---|---|---|---|---|---|"]
    for name, row in table.items():
        bucket = row.get("bleu_greedy_by_source_length", {}).get("16-20")
        bucket = (f"{bucket['bleu']} ({bucket['sentences']} sentences)"
                  if bucket else "-")
        lines.append(f"| {name} | {row['what']} | {row['epochs']} | "
                     f"{row['final_loss']} | {row['final_val_loss']} | "
                     f"{row['bleu_greedy']} | {bucket} | {row['minutes']} |")
    if results and "bleu_greedy_by_source_length" in results:
        bucket = results["bleu_greedy_by_source_length"].get("16-20")
        bucket = (f"{_shown(bucket, 'bleu')} ({bucket['sentences']} sentences)"
                  if bucket else "-")
        seeds = results.get("seeds", 1)
        lines.append(
            f"| the recipe (above) | its result, {seeds} seed{'s' * (seeds > 1)} "
            f"| {results['epochs']} | {_shown(results, 'final_loss')} | "
            f"{_shown(results, 'final_val_loss')} | "
            f"{_shown(results, 'bleu_greedy')} | {bucket} | "
            f"{_shown(results, 'train_minutes')} |")
    lines += _alignment_table(table)
    return "\n".join(lines) + "\n"


def _alignment_table(table):
    """The rows that recorded `alignment_rates`, over their seeds (a row
    `name@epochs seed N` is seed N of `name@epochs`): greedy BLEU and how
    the 16-20-word bucket's translations attend to their source."""
    groups = {}
    for name, row in table.items():
        if "alignment_rates" in row:
            groups.setdefault(name.split(" seed ")[0], []).append(row)
    if not groups:
        return []

    def cell(values, digits):
        mean, sd = mean_sd(values, digits)
        return f"{mean}" if sd is None else f"{mean} ± {sd}"

    lines = ["", "Alignment on the 16-20-word bucket (greedy; a source word is "
             "dropped below 0.5 of a word's attention summed over the "
             "translation, repeated above 1.5; a repeated output word occurs "
             "more often than in the reference), mean ± standard deviation "
             "over the seeds shown:", "",
             "| variant | seeds | greedy BLEU | greedy BLEU, 16-20 | dropped "
             "| repeated | repeated output words |", "|---|---|---|---|---|---|---|"]
    for name, rows in groups.items():
        rates = [r["alignment_rates"] for r in rows]
        bucket = [r["bleu_greedy_by_source_length"]["16-20"]["bleu"]
                  for r in rows]
        lines.append(
            f"| {name} | {len(rows)} | {cell([r['bleu_greedy'] for r in rows], 2)}"
            f" | {cell(bucket, 2)} | {cell([a['dropped'] for a in rates], 4)} | "
            f"{cell([a['repeated'] for a in rates], 4)} | "
            f"{cell([a['repeated_output'] for a in rates], 4)} |")
    return lines


def parse_args(argv=None, **defaults):
    """The recipe's command line; `defaults` are the recipe's own values."""
    p = argparse.ArgumentParser()
    p.add_argument("--lang", default="fr")
    p.add_argument("--epochs", type=int, default=6)
    p.add_argument("--minutes", type=float, default=None,
                   help="optional wall-clock cap on training")
    p.add_argument("--preset", choices=("tiny", "small", "base", "paper"),
                   help="the model's named sizes (kerattn.zoo.presets)")
    p.add_argument("--max-tokens", type=int, default=20)
    p.add_argument("--max-train", type=int, default=None)
    p.add_argument("--max-test", type=int, default=None)
    p.add_argument("--vocab-size", type=int, default=8000)
    p.add_argument("--tokenizer", choices=("word", "wordpiece"), default="word",
                   help="word-level vocabulary or keras-hub WordPiece")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--learning-rate", type=float)
    p.add_argument("--label-smoothing", type=float)
    p.add_argument("--warmup-steps", type=int,
                   help="linear warm-up steps, then cosine decay")
    p.add_argument("--beam-width", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--seeds", type=int, default=1,
                   help="train this many seeds (from --seed); report means "
                   "and standard deviations")
    p.add_argument("--report-only", action="store_true",
                   help="rewrite RESULTS.md from the existing results.json")
    p.add_argument("--output", default=None,
                   help="where to write results (default: the recipe's folder)")
    distribute.add_arguments(p)
    p.set_defaults(**defaults)
    return p.parse_args(argv)


def main(name, description, directory, argv=None):
    """Run the recipe of `kerattn.zoo.<name>` (its `settings(name)`).

    Args:
        name: the zoo builder's name, e.g. "bahdanau_nmt".
        description: the recipe's docstring; its first paragraph goes into
            RESULTS.md.
        directory: where results go (the recipe's folder).
        argv: command-line arguments (default: `sys.argv[1:]`).
    """
    from kerattn import zoo

    description = " ".join(description.split("\n\n")[0].split())
    if argv is None:
        import sys

        argv = sys.argv[1:]
    args = parse_args(argv, **settings(name))
    command = f"python zoo/{name}/recipe.py" + (" " + " ".join(argv) if argv else "")
    output = args.output or directory
    if args.report_only:   # the wording of RESULTS.md, from results.json
        with open(os.path.join(output, "results.json")) as f:
            saved = json.load(f)
        config = saved.pop("config")
        saved.pop("model")
        return report(output, name, description, config, saved,
                      saved.get("commands") or saved.get(
                          "command", f"python zoo/{name}/recipe.py"))
    checks.positive_int("seeds", args.seeds)
    strategy = distribute.from_arguments(args, name)   # before the backend starts
    print(f"backend {keras.backend.backend()}, {strategy.num_replicas} replica(s)")
    data = prepare(args.lang, args.vocab_size, args.max_tokens, args.tokenizer,
                   max_train=args.max_train, max_test=args.max_test)
    print(f"{data['train_pairs']} training pairs, {len(data['test'])} test pairs")
    named = zoo.presets(name)
    sizes = dict(named["paper"], **named[args.preset])
    builder_text = (f"kerattn.zoo.{name}(V_x, V_y, preset={args.preset!r}): "
                    + ", ".join(f"{k}={v!r}" for k, v in sizes.items()))
    runs, first_model = [], None
    for seed in range(args.seed, args.seed + args.seeds):
        keras.utils.set_random_seed(seed)
        with strategy.scope():
            model = build(name, data, args.preset)
            if first_model is None:
                model.summary()
            summary = train(model, data, epochs=args.epochs, minutes=args.minutes,
                            batch_size=args.batch_size,
                            learning_rate=args.learning_rate,
                            label_smoothing=args.label_smoothing,
                            warmup_steps=args.warmup_steps,
                            verbose=2 if os.environ.get("CI") else "auto",
                            strategy=strategy, seed=seed)
        if not strategy.is_chief:   # torch DDP: rank 0 evaluates and writes
            return None
        runs.append({"seed": seed, "backend": keras.backend.backend(),
                     "replicas": strategy.num_replicas,
                     "train_pairs": data["train_pairs"], **summary,
                     **evaluate(model, data, beam_width=args.beam_width)})
        print(f"seed {seed}: greedy {runs[-1]['bleu_greedy']}", flush=True)
        first_model = first_model or model
    config = {"builder": builder_text, "lang": args.lang,
              "max_tokens": args.max_tokens, "vocab_size": args.vocab_size,
              "tokenizer": args.tokenizer,
              "batch_size": args.batch_size, "learning_rate": args.learning_rate,
              "label_smoothing": args.label_smoothing,
              "warmup_steps": args.warmup_steps, "seed": args.seed}
    # Seeds of an earlier command with the same settings join these ones.
    earlier, commands = earlier_seeds(output, config, runs)
    runs = sorted(earlier + runs, key=lambda r: r["seed"])
    results = aggregate(runs) if len(runs) > 1 else dict(runs[0])
    if len(runs) > 1:
        results["per_seed"] = runs
    config["seed"] = results.pop("seed")
    os.makedirs(output, exist_ok=True)
    if config["seed"] == args.seed:   # the model of the seed whose examples show
        first_model.save(os.path.join(output, "model.keras"))
    for side in ("source", "target"):
        with open(os.path.join(output, f"{side}_vocab.json"), "w") as f:
            f.write(data[f"{side}_vocab"].to_json())
    commands = [c for c in commands if c != command] + [command]
    results["command"] = command
    if len(commands) > 1:
        results["commands"] = commands
    print(report(output, name, description, config, results, commands))
    return results


def earlier_seeds(output, config, runs):
    """The runs of earlier commands that `runs` add seeds to: `(runs, commands)`.

    A `results.json` in `output` whose config equals `config` but for the
    seed, trained for the same epochs on the same pairs with the same
    backend, gives its seeds (its `per_seed` runs, or the one run of a
    single-seed command); a seed run again replaces its earlier result.
    """
    path = os.path.join(output, "results.json")
    if not os.path.exists(path):
        return [], []
    with open(path) as f:
        saved = json.load(f)

    def settings(c):
        return {k: v for k, v in c.items() if k != "seed"}

    if settings(saved.get("config", {})) != settings(config):
        return [], []
    if "per_seed" in saved:
        earlier = saved["per_seed"]
    elif saved.get("seeds", 1) == 1:
        earlier = [dict({k: v for k, v in saved.items()
                         if k not in ("model", "config", "command", "commands")},
                        seed=saved["config"]["seed"])]
    else:   # several seeds from before per-seed runs were kept
        return [], []

    def same(r):
        return all(r.get(k) == runs[0].get(k)
                   for k in ("epochs", "train_pairs", "backend", "replicas"))

    now = {r["seed"] for r in runs}
    earlier = [r for r in earlier if r["seed"] not in now and same(r)]
    commands = saved.get("commands", [saved.get("command")]) if earlier else []
    return earlier, [c for c in commands if c]

"""Recipe: Show, Attend and Tell on digit-strip captions.

Trains soft and/or hard attention on strips composed from the training
single digits, then measures on strips of held-out digits:

- exact-caption accuracy (greedy and beam 3): the whole caption right;
- the attention share on the word's own digit: for each emitted word,
  the share of its attention map on its digit's columns (target >= 70%).
"""

import argparse
import json
import os
import sys

import keras
import numpy as np

from kerattn.datasets import WordVocabulary, attention_on_own_digit, digit_strips
from kerattn import checks, distribute
from kerattn.recipes.common import compile_and_fit, mean_sd, write_results

PRESET = "base"   # the model's named sizes (kerattn.zoo.presets)
STRIP_SHAPE = (8, 45)   # digit_strips: 8 x 9 pixels a digit, up to five


def sizes(preset=PRESET):
    """The show_attend_tell sizes of `preset`, every keyword resolved."""
    from kerattn.zoo import presets

    named = presets("show_attend_tell")
    return dict(named["paper"], **named[preset])


def caption_arrays(captions, vocab, length=None):
    """`(caption_in_ids, caption_out_ids)`: BOS y_1 ... and y_1 ... EOS,
    padded to the longest caption (or to `length`)."""
    ids = [vocab.encode(c, add_eos=True) for c in captions]
    length = max(max(map(len, ids)), length or 0)
    c_in = np.zeros((len(ids), length), "int32")
    c_out = np.zeros((len(ids), length), "int32")
    for row, x in enumerate(ids):
        c_out[row, : len(x)] = x
        c_in[row, : len(x)] = [vocab.bos_id] + x[:-1]
    return c_in, c_out


def evaluate(model, vocab, test, beam_widths=(1, 3), batch=256):
    from kerattn.decoding import Captioner

    captioner = Captioner(model, vocab, max_length=8)
    grid_w = captioner.model.grid[1]
    columns = test["images"].shape[2] // grid_w
    result = {}
    for beam in beam_widths:
        captions, maps, words = [], [], []
        for start in range(0, len(test["images"]), batch):
            c, m = captioner(test["images"][start:start + batch], beam_width=beam,
                             return_attention=True)
            captions += c
            maps += [x["maps"] for x in m]
            words += [x["words"] for x in m]
        exact = float(np.mean([c == t for c, t in zip(captions, test["captions"])]))
        # The share on the own digit, over the words of correct captions
        # (a wrong caption's words have no own digit to look at).
        ok = [i for i, (c, t) in enumerate(zip(captions, test["captions"])) if c == t]
        share = attention_on_own_digit([maps[i] for i in ok],
                                       [test["spans"][i] for i in ok], columns)
        share_all = attention_on_own_digit(maps, test["spans"], columns)
        result[f"beam{beam}"] = {"exact_caption_accuracy": round(exact, 4),
                                 "own_digit_share_correct": round(share, 4),
                                 "own_digit_share_all": round(share_all, 4)}
        result.setdefault("examples", [
            {"caption": captions[i], "truth": test["captions"][i]} for i in range(5)])
        result["_maps"], result["_words"] = maps, words
    return result


def pretrained_encoder(shape, seed=1, epochs=6, copies=10):
    """The default CNN, first trained to classify single digits, then fixed.

    The paper's encoder is a CNN pretrained for classification (VGG on
    ImageNet) and not fine-tuned; this is the same on this data: each
    training digit is placed in a random cell of an empty strip, and the CNN
    (with a global max-pool and a softmax head, dropped afterwards) learns
    its class. Only the training digits are used.
    """
    from kerattn.datasets.digits import DIGIT_SIZE, GAP, split_digits
    from kerattn.zoo.show_attend_tell import small_cnn

    (digits, labels), _ = split_digits()
    rng = np.random.default_rng(seed)
    cells = shape[1] // (DIGIT_SIZE + GAP)
    picks = np.repeat(np.arange(len(digits)), copies)
    x = np.zeros((len(picks),) + tuple(shape), "float32")
    for row, (pick, cell) in enumerate(zip(picks, rng.integers(0, cells, len(picks)))):
        start = cell * (DIGIT_SIZE + GAP)
        x[row, :, start:start + DIGIT_SIZE, 0] = digits[pick]
    encoder = small_cnn(sizes()["encoder_filters"], sizes()["encoder_pool_sizes"])
    inputs = keras.Input(tuple(shape))
    probs = keras.layers.Dense(10, activation="softmax")(
        keras.layers.GlobalMaxPooling2D()(encoder(inputs)))
    classifier = keras.Model(inputs, probs)
    classifier.compile(keras.optimizers.Adam(1e-3), "sparse_categorical_crossentropy",
                       metrics=["accuracy"])
    classifier.fit(x, labels[picks], batch_size=128, epochs=epochs, verbose=2)
    encoder.trainable = False
    return encoder


def _model_inputs(strips, vocab, hard, length=None):
    c_in, c_out = caption_arrays(strips["captions"], vocab, length)
    x = {"images": strips["images"], "caption_in_ids": c_in}
    if hard:                              # hard attention: REINFORCE needs
        x["caption_out_ids"] = c_out      # the targets inside the graph
    return x, c_out


class FreshStripBatches(distribute.ArrayBatches):
    """Training strips composed anew every epoch, from the training digits.

    The fixed training set of `digit_strips` repeats the same compositions
    every epoch; here epoch `e` composes `count` new strips
    (`compose_strips` with seed `(seed, e)`) from the same 1,437 training
    digits (`split_digits`), so that no composition can be memorised. The
    held-out digits are never used.

    Args:
        vocab: the caption vocabulary.
        count: strips per epoch.
        batch_size: strips per batch.
        hard: also give `caption_out_ids` (hard attention's REINFORCE).
        seed: the composition and shuffling seed.
        min_digits, max_digits, jitter: as `compose_strips`.
        repeats: as `ArrayBatches` (each strip that many times a batch).

    Example:

    >>> from kerattn.datasets import WordVocabulary
    >>> from kerattn.datasets.digits import DIGIT_WORDS
    >>> vocab = WordVocabulary.build([" ".join(DIGIT_WORDS)])
    >>> batches = FreshStripBatches(vocab, count=8, batch_size=4)
    >>> first = batches.strips["captions"]
    >>> batches.on_epoch_end()
    >>> len(batches), batches.strips["captions"] != first
    (2, True)
    """

    def __init__(self, vocab, count, batch_size, hard=False, seed=0,
                 min_digits=3, max_digits=5, jitter=0, repeats=1):
        from kerattn.datasets.digits import split_digits

        checks.positive_int("count", count)
        (self.digits, self.labels), _ = split_digits()
        self.vocab, self.count, self.hard, self.seed = vocab, count, hard, seed
        self.options = dict(min_digits=min_digits, max_digits=max_digits,
                            jitter=jitter)
        self.epoch = 0
        x, y = self._compose()
        super().__init__(x, y, batch_size, seed=seed, repeats=repeats)

    def _compose(self):
        from kerattn.datasets.digits import compose_strips

        self.strips = compose_strips(self.digits, self.labels, self.count,
                                     seed=self.seed * 1_000_003 + self.epoch,
                                     **self.options)
        return _model_inputs(self.strips, self.vocab, self.hard,
                             self.options["max_digits"] + 1)

    def on_epoch_end(self):
        self.epoch += 1
        self.x, self.y = self._compose()
        super().on_epoch_end()


def train(model, train, vocab, epochs, batch_size=64, minutes=None,
          learning_rate=2e-3, strategy=None, seed=1, verbose=2, fresh=False,
          samples_per_caption=1):
    """Fit a show_attend_tell model on `train` strips (`compile_and_fit`);
    `fresh=True` composes as many new strips every epoch instead
    (`FreshStripBatches`). A hard-attention model sees each caption
    `samples_per_caption` times side by side in its batch: as many
    independent location samples, the Monte Carlo average of eq. 11."""
    from kerattn.losses import MaskedSparseCrossentropy

    hard = "caption_out_ids" in model.input
    repeats = samples_per_caption if hard else 1
    if fresh:
        batches = FreshStripBatches(vocab, len(train["captions"]), batch_size,
                                    hard=hard, seed=seed, repeats=repeats)
    else:
        x, c_out = _model_inputs(train, vocab, hard)
        batches = distribute.ArrayBatches(x, c_out, batch_size, seed=seed,
                                          repeats=repeats)
    _, summary = compile_and_fit(
        model, batches, loss=MaskedSparseCrossentropy(pad_id=vocab.pad_id),
        learning_rate=learning_rate, clipnorm=5.0, epochs=epochs,
        minutes=minutes, strategy=strategy, verbose=verbose)
    return summary


def fit(attention="soft", preset="small", epochs=8, batch_size=64,
        learning_rate=None, max_train=None, max_test=None, seed=0, strategy=None,
        verbose=2, samples_per_caption=1, **builder):
    """`examples/fit.py show_attend_tell`: the recipe's method, its data.

    Digit strips of scikit-learn's digits (`max_train` strips, 8,000 by
    default; `max_test`, 1,000); the CNN encoder trains with the captioner.
    The preset carries the recipe's choices (one annotation per digit cell;
    hard attention with the expected context half of the time); `builder`
    keywords (`encoder_pool_sizes=`, `expectation_rate=`, `initial_state=`,
    ...) override them, and `samples_per_caption` repeats each caption in
    its batch for hard attention, as the recipe's flags do.

    Returns:
        `(model, summary, results, draw)`: `results` holds the greedy
        `exact_caption_accuracy`, `attention_on_own_digit` (all words) and
        the recipe's per-beam figures; `draw(path)` writes an overlay.
    """
    from kerattn.plot import attention_overlay
    from kerattn.zoo import show_attend_tell

    strategy = strategy or distribute.no_distribution()
    train_strips, test = digit_strips(train_count=max_train or 8000,
                                      test_count=max_test or 1000, seed=seed)
    vocab = WordVocabulary.build(train_strips["captions"])
    with strategy.scope():
        model = show_attend_tell(len(vocab), attention=attention,
                                 image_shape=train_strips["images"].shape[1:],
                                 seed=seed, preset=preset, **builder)
        summary = train(model, train_strips, vocab, epochs, batch_size,
                        learning_rate=learning_rate or 2e-3, strategy=strategy,
                        seed=seed, verbose=verbose,
                        samples_per_caption=samples_per_caption)
    if not strategy.is_chief:
        return model, summary, None, None
    result = evaluate(model, vocab, test)
    maps, words = result.pop("_maps"), result.pop("_words")
    results = {"exact_caption_accuracy": result["beam1"]["exact_caption_accuracy"],
               "attention_on_own_digit": result["beam1"]["own_digit_share_all"],
               **result}
    return (model, summary, results,
            lambda path: attention_overlay(test["images"][0], maps[0], words[0], path))


def run(attention, train_strips, test, vocab, epochs, minutes, out_dir, seed=1,
        pretrain=True, strategy=None, preset=PRESET, fresh=False,
        samples_per_caption=1, save=True, **builder):
    """Train and evaluate one model (one seed); `save` writes its
    `model_<attention>.keras` and attention overlay into `out_dir`."""
    from kerattn.zoo import show_attend_tell

    strategy = strategy or distribute.no_distribution()
    keras.utils.set_random_seed(seed)
    image_shape = train_strips["images"].shape[1:]
    encoder = pretrained_encoder(image_shape, seed) if pretrain else None
    with strategy.scope():
        model = show_attend_tell(len(vocab), attention=attention,
                                 image_shape=image_shape, seed=seed,
                                 encoder=encoder, preset=preset, **builder)
        summary = train(model, train_strips, vocab, epochs, minutes=minutes,
                        strategy=strategy, seed=seed, fresh=fresh,
                        samples_per_caption=samples_per_caption)
    if not strategy.is_chief:   # torch DDP: rank 0 evaluates and writes
        return None
    train_info = {k: summary[k] for k in ("epochs", "train_minutes", "final_loss",
                                          "parameters")}
    result = evaluate(model, vocab, test)
    maps, words = result.pop("_maps"), result.pop("_words")
    if save:
        model.save(os.path.join(out_dir, f"model_{attention}.keras"))
        try:
            from kerattn.plot import attention_overlay

            attention_overlay(test["images"][0], maps[0], words[0],
                              os.path.join(out_dir, f"attention_{attention}.png"))
        except ImportError:
            pass
    return {"train": train_info, **result}


# The greedy (beam1) figures of a run, as (results key, name in `by_seed`).
FIGURES = (("exact_caption_accuracy", "exact"),
           ("own_digit_share_all", "own digit"),
           ("own_digit_share_correct", "own digit (correct)"))


def combine_seeds(runs):
    """One result from several seeds' results of one attention: each
    figure's mean with its standard deviation (`<figure>_sd`), the first
    seed's examples, `by_seed` (the headline figures) and `per_seed` (the
    seeds' own results, to combine with more seeds later)."""
    runs = [{k: v for k, v in r.items() if k != "per_seed"} for r in runs]
    result = json.loads(json.dumps(runs[0]))
    for beam in ("beam1", "beam3"):
        for key in runs[0][beam]:
            result[beam][key], sd = mean_sd([r[beam][key] for r in runs], 4)
            if sd is not None:
                result[beam][key + "_sd"] = sd
    for key, digits in (("train_minutes", 2), ("final_loss", 4)):
        result["train"][key] = mean_sd([r["train"][key] for r in runs], digits)[0]
    result["seeds"] = len(runs)
    result["by_seed"] = [{"seed": r["seed"], **{name: r["beam1"][key]
                                               for key, name in FIGURES}}
                         for r in runs]
    result["per_seed"] = runs
    return result


def pools_text(pools):
    """`((1, 1), (8, 9))` -> `"1x1,8x9"` (the `--encoder-pool-sizes` form)."""
    return ",".join(f"{h}x{w}" for h, w in pools)


def run_name(settings):
    """The study table's name of a run: its settings where they differ from
    its preset's (`settings` as `_settings` resolves them). Settings of
    hard attention alone are named for runs that train it."""
    preset = sizes(settings["preset"])
    parts = [f"{settings['train']:,} strips x {settings['epochs']} epochs",
             f"initial state {settings['initial_state']}"]
    if settings["fresh_compositions"]:
        parts.append("new compositions every epoch")
    if settings["pretrain_encoder"]:
        parts.append("encoder pretrained and fixed")
    if settings["jitter"]:
        parts.append(f"jitter {settings['jitter']}")
    if settings["preset"] != PRESET:
        parts.append(f"preset {settings['preset']}")
    if settings["encoder_pool_sizes"] != pools_text(preset["encoder_pool_sizes"]):
        parts.append(f"encoder pools {settings['encoder_pool_sizes']}")
    if settings["doubly_stochastic"] != preset["doubly_stochastic"]:
        parts.append(f"doubly stochastic lambda {settings['doubly_stochastic']}")
    hard = []
    if settings.get("attention", "both") != "soft":
        if settings["expectation_rate"] != preset["expectation_rate"]:
            hard.append(f"expected context p={settings['expectation_rate']}")
        if settings["samples_per_caption"] > 1:
            hard.append(f"{settings['samples_per_caption']} samples per caption")
    return ", ".join(parts) + ("; hard: " + ", ".join(hard) if hard else "")


def parse_pools(text):
    """`"1x1, 8x9"` -> `((1, 1), (8, 9))`: the `--encoder-pool-sizes` windows.

    Raises:
        ValueError: text that is not comma-separated `HxW` windows of
            positive integers.
    """
    try:
        pools = tuple(tuple(int(v) for v in p.strip().split("x"))
                      for p in str(text).split(","))
    except ValueError:
        pools = ()
    checks.require(pools and all(len(p) == 2 and min(p) >= 1 for p in pools),
                   "encoder_pool_sizes", "windows like '2x3,4x3'", text)
    return pools


def grid_text(pools, image_shape=STRIP_SHAPE):
    """What the encoder's max pooling (`pools`, no padding) makes of an
    `image_shape` strip, for RESULTS.md: `" (a 1 x 5 annotation grid: ...)."`."""
    (h, w), (ph, pw) = image_shape[:2], (1, 1)
    for a, b in pools:
        h, w, ph, pw = h // a, w // b, ph * a, pw * b
    return (f" (a {h} x {w} annotation grid: each location pools {ph} x {pw} "
            f"pixels of the {image_shape[0]} x {image_shape[1]} strip).")


def _figure(m, key):
    sd = m.get(key + "_sd")
    return f"{m[key]:.3f}" + (f" ± {sd:.3f}" if sd is not None else "")


def report(results, meta, study=None):
    seeds = max(r.get("seeds", 1) for r in results.values())
    commands = meta.get("commands") or [
        meta.get("command", "python zoo/show_attend_tell/recipe.py")]
    lines = ["# show_attend_tell on digit-strip captions", "",
             "Measured by " + " and ".join(f"`{c}`" for c in commands) + " "
             f"(backend {meta['backend']}, this 2-core CPU). Data: "
             f"{meta['train']} training strips composed from 1,437 training "
             f"digits, {meta['test']} test strips from the 360 held-out digits "
             "(scikit-learn's UCI digits), 3-5 digits per strip"
             + (f"; training digits jittered by up to {meta['jitter']} pixel(s) in "
                "their cells, test strips plain" if meta.get("jitter") else "")
             + ("; new training strips composed every epoch from the same "
                "training digits" if meta.get("fresh_compositions") else "")
             + "."
             + (f" Every figure is the mean ± standard deviation of {seeds} seeds."
                if seeds > 1 else ""), "",
             "| attention | decoding | exact-caption accuracy | attention on own digit "
             "(correct captions) | (all captions) |",
             "|---|---|---|---|---|"]
    # Runs before the greedy fallback was off by default recorded no flag.
    beam3 = ("beam 3" if meta.get("beam_greedy_fallback") is False
             else "beam 3 or greedy, the better (fallback on)")
    for attention, r in results.items():
        for beam in ("beam1", "beam3"):
            m = r[beam]
            lines.append(
                f"| {attention} | {'greedy' if beam == 'beam1' else beam3} | "
                f"{_figure(m, 'exact_caption_accuracy')} | "
                f"{_figure(m, 'own_digit_share_correct')} "
                f"| {_figure(m, 'own_digit_share_all')} |")
    lines += ["", "Targets (3-seed means): soft >= 0.95 exact captions and >= 0.70 "
              "of each word's attention on its own digit; hard >= 0.90 and >= 0.50.",
              "", "Training:", ""]
    for attention, r in results.items():
        t = r["train"]
        per_seed = ""
        if r.get("by_seed") and len(r["by_seed"]) > 1:
            per_seed = " Per seed (exact / own digit): " + ", ".join(
                f"seed {x['seed']}: {x['exact']:.3f} / {x['own digit']:.3f}"
                for x in r["by_seed"]) + "."
        lines.append(f"- {attention}: {t['epochs']} epochs, {round(t['train_minutes'], 2)} min "
                     f"a seed, final loss {t['final_loss']}, {t['parameters']:,} "
                     f"parameters.{per_seed}")
    if study:
        lines += ["", "## What each change bought", "",
                  "Each row is one command of this recipe (greedy decoding, the "
                  f"same {meta['test']:,} test strips), its figures the mean ± standard "
                  "deviation over its seeds; the table above is the row of the "
                  "recipe's defaults. A run is named by where its settings "
                  "differ from the preset's (the sizes at the end).", "",
                  "| run | attention | seeds | exact | own digit (all captions) "
                  "| minutes a seed |", "|---|---|---|---|---|---|"]
        for name, entry in study.items():
            for attention in ("soft", "hard"):
                if attention not in entry["results"]:
                    continue
                r = entry["results"][attention]
                lines.append(
                    f"| {name} | {attention} | {r.get('seeds', 1)} | "
                    f"{_figure(r['beam1'], 'exact_caption_accuracy')} | "
                    f"{_figure(r['beam1'], 'own_digit_share_all')} | "
                    f"{round(r['train']['train_minutes'], 2)} |")
        lines += ["", "Each run's commands are in results.json (`study`); a "
                  "run's seeds may come from several commands (`--seed`)."]
    if meta.get("other_runs"):
        lines += ["", "Earlier single-seed runs (same test strips; before the study "
                  "above):", "",
                  "| run | soft exact | soft own-digit | hard exact | hard own-digit |",
                  "|---|---|---|---|---|"]
        lines += [f"| {r['run']} | {r['soft'][0]:.3f} | {r['soft'][1]:.3f} | "
                  f"{r['hard'][0]:.3f} | {r['hard'][1]:.3f} |" for r in meta["other_runs"]]
    overlays = {a: run for a, run in meta.get("_overlays", {}).items()
                if os.path.exists(os.path.join(meta.get("_dir", "."),
                                               f"attention_{a}.png"))}
    if overlays:
        lines += ["", "Where each word looked, on the first test strip (the "
                  "tint's opacity follows the weight, so the digit stays "
                  "visible); each picture is of the latest run that drew it:", ""]
        for a, run in overlays.items():
            lines += [f"- {a}, run \"{run}\" (the first seed of the command that drew it):", "",
                      f"  ![{a} attention](attention_{a}.png)", ""]
    lines += ["", f"Encoder: {meta.get('encoder', 'trained with the captioner')}. "
              f"Initial LSTM state: {meta.get('initial_state', 'mean')} "
              "(`initial_state`; the paper's is the mean annotation). "
              f"Sizes: preset {meta['preset']!r}, `{meta['sizes']}`"
              + (grid_text(meta["sizes"]["encoder_pool_sizes"])
                 if meta["sizes"].get("encoder_pool_sizes") else "."), ""]
    return "\n".join(lines)


def _parser(out_dir=None):
    """The recipe's command line (`main`'s)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    parser.add_argument("--attention", choices=["soft", "hard", "both"], default="both")
    parser.add_argument("--train", type=int, default=40000)
    parser.add_argument("--test", type=int, default=1000)
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--jitter", type=int, default=0,
                        help="training strips: digits move up to this many pixels")
    parser.add_argument("--minutes", type=float, default=None,
                        help="time budget per model")
    parser.add_argument("--pretrain-encoder", action="store_true",
                        help="pretrain the CNN on single digits and fix it, "
                             "instead of training it with the captioner")
    parser.add_argument("--preset", choices=("tiny", "small", "base", "paper"),
                        default=PRESET, help="the model's named sizes")
    parser.add_argument("--fresh-compositions", action="store_true",
                        help="compose new training strips every epoch")
    parser.add_argument("--initial-state", choices=("mean", "learned", "zeros"),
                        default="mean", help="how the LSTM starts (the paper: "
                        "from the mean annotation)")
    parser.add_argument("--expectation-rate", type=float, default=None,
                        help="hard attention: the probability that a caption "
                        "trains on the expected context (default: the "
                        "preset's; the paper's is 0.5)")
    parser.add_argument("--samples-per-caption", type=int, default=1,
                        help="hard attention: location samples per caption, "
                        "side by side in a batch (the paper's N of eq. 11)")
    parser.add_argument("--doubly-stochastic", type=float, default=None,
                        help="lambda of eq. 14 (default: the preset's; 0 turns "
                        "the penalty off)")
    parser.add_argument("--encoder-pool-sizes", default=None,
                        help="the CNN's pooling windows, e.g. '2x2,4x1' (a 1 x 22 "
                        "grid); default: the preset's (base: '1x1,8x9', a 1 x 5 "
                        "grid, one location per digit cell)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--seeds", type=int, default=1,
                        help="train this many seeds (from --seed); report means "
                        "and standard deviations")
    parser.add_argument("--out", default=out_dir or ".")
    parser.add_argument("--report-only", action="store_true",
                        help="rewrite RESULTS.md from results.json, train nothing")
    distribute.add_arguments(parser)
    return parser


def main(argv=None, out_dir=None):
    parser = _parser(out_dir)
    args = parser.parse_args(argv)
    defaults = _settings(parser.parse_args([]))   # the headline run's
    if args.report_only:
        with open(os.path.join(args.out, "results.json")) as f:
            saved = json.load(f)
        markdown = report(saved["results"], dict(
            saved["meta"], _dir=args.out, _overlays=saved.get("overlays", {})),
            saved.get("study"))
        with open(os.path.join(args.out, "RESULTS.md"), "w") as f:
            f.write(markdown)
        return saved["results"]
    if args.pretrain_encoder and args.distribute != "none":
        parser.error("--pretrain-encoder trains on one device; leave out "
                     "--distribute with it")
    checks.positive_int("seeds", args.seeds)
    pools = parse_pools(args.encoder_pool_sizes) if args.encoder_pool_sizes else None
    checks.positive_int("samples_per_caption", args.samples_per_caption)
    if args.attention == "soft" and (args.expectation_rate is not None
                                     or args.samples_per_caption > 1):
        parser.error("--expectation-rate and --samples-per-caption are hard "
                     "attention's; leave them out with --attention soft")
    strategy = distribute.from_arguments(args, "show_attend_tell")
    os.makedirs(args.out, exist_ok=True)
    train, test = digit_strips(args.train, args.test, train_jitter=args.jitter)
    vocab = WordVocabulary.build(train["captions"])
    attentions = ["soft", "hard"] if args.attention == "both" else [args.attention]
    results = {}
    for a in attentions:
        runs = []
        for k, seed in enumerate(range(args.seed, args.seed + args.seeds)):
            r = run(a, train, test, vocab, args.epochs, args.minutes, args.out,
                    seed=seed, pretrain=args.pretrain_encoder, strategy=strategy,
                    preset=args.preset, fresh=args.fresh_compositions,
                    initial_state=args.initial_state,
                    expectation_rate=args.expectation_rate,
                    doubly_stochastic=args.doubly_stochastic,
                    encoder_pool_sizes=pools,
                    samples_per_caption=args.samples_per_caption, save=k == 0)
            if r is None:
                continue
            runs.append({"seed": seed, **r})
            print(f"{a} seed {seed}: {r['beam1']}", flush=True)
        if runs:
            results[a] = combine_seeds(runs)
    if not strategy.is_chief:
        return None
    shown = list(sys.argv[1:] if argv is None else argv)
    if "--out" in shown:   # where it wrote is not part of the run
        at = shown.index("--out")
        del shown[at:at + 2]
    shown = [a for a in shown if not a.startswith("--out=")]
    command = " ".join(["python zoo/show_attend_tell/recipe.py", *shown])
    settings = _settings(args)
    meta = {"backend": keras.backend.backend(), "beam_greedy_fallback": False,
            "train": args.train, "test": args.test,
            "preset": args.preset, "sizes": dict(
                sizes(args.preset),
                **({"encoder_pool_sizes": pools} if pools else {}),
                **({"doubly_stochastic": args.doubly_stochastic}
                   if args.doubly_stochastic is not None else {})),
            "jitter": args.jitter, "fresh_compositions": args.fresh_compositions,
            "initial_state": args.initial_state, "settings": settings,
            "command": command.strip(),
            "encoder": "pretrained on single training digits, then fixed"
                       if args.pretrain_encoder else "trained with the captioner"}
    # The study: every run of this recipe into this directory, by its
    # settings; the headline is the run of the default settings when there
    # is one, else this run.
    previous = {}
    path = os.path.join(args.out, "results.json")
    if os.path.exists(path):
        with open(path) as f:
            previous = json.load(f)
    other_runs = previous.get("meta", {}).get("other_runs")
    if other_runs:
        meta["other_runs"] = other_runs
    study = previous.get("study")
    if study is None:
        study = {}
        if previous.get("results"):   # a run from before the study: the defaults
            old = dict(previous["meta"])
            old.setdefault("preset", PRESET)
            old.setdefault("sizes", sizes(PRESET))
            old.setdefault("command", "python zoo/show_attend_tell/recipe.py")
            old.pop("other_runs", None)
            study[run_name(defaults)] = {"command": old["command"], "meta": old,
                                         "results": previous["results"]}
    name = run_name(settings)
    # The same settings run again add their seeds (a seed run again
    # replaces its earlier result).
    entry = study.get(name, {})
    merged = dict(entry.get("results", {}))
    for attention, result in results.items():
        now = {r["seed"] for r in result["per_seed"]}
        earlier = [r for r in merged.get(attention, {}).get("per_seed", [])
                   if r["seed"] not in now]
        merged[attention] = combine_seeds(
            sorted(earlier + result["per_seed"], key=lambda r: r["seed"]))
    commands = [c for c in entry.get("commands", [entry.get("command")])
                if c and c != meta["command"]] + [meta["command"]]
    study[name] = {"command": meta["command"], "commands": commands, "meta": meta,
                   "results": merged}
    headline = study.get(run_name(defaults), study[name])
    headline_meta = dict(headline["meta"], other_runs=other_runs,
                         commands=headline.get("commands"))
    overlays = dict(previous.get("overlays", {}), **{a: name for a in results})
    write_results(args.out, {"meta": headline_meta, "results": headline["results"],
                             "study": study, "overlays": overlays},
                  report(headline["results"], dict(headline_meta, _dir=args.out,
                                                   _overlays=overlays), study))
    return results


def _settings(args):
    """What names a run in the study (`run_name`), from the parsed flags;
    a flag left out takes its preset's value."""
    settings = {k: getattr(args, k) for k in (
        "attention", "train", "epochs", "initial_state", "fresh_compositions",
        "pretrain_encoder", "jitter", "preset", "expectation_rate",
        "samples_per_caption", "doubly_stochastic", "encoder_pool_sizes")}
    preset = sizes(args.preset)
    for key in ("expectation_rate", "doubly_stochastic"):
        if settings[key] is None:
            settings[key] = preset[key]
    settings["encoder_pool_sizes"] = pools_text(   # one spelling a grid
        parse_pools(settings["encoder_pool_sizes"]) if settings["encoder_pool_sizes"]
        else preset["encoder_pool_sizes"])
    return settings

"""Recipe: Show, Attend and Tell on digit-strip captions.

Trains soft and/or hard attention on strips composed from the training
single digits, then measures on strips of held-out digits:

- exact-caption accuracy (greedy and beam 3): the whole caption right;
- the attention share on the word's own digit: for each emitted word,
  the share of its attention map on its digit's columns (target >= 70%).

Seeds, results.json and RESULTS.md are zoo/runner.py's
(zoo/show_attend_tell/recipe.py).
"""

import keras
import numpy as np

from kerattn.datasets import (WordVocabulary, attention_on_own_digit, digit_strips,
                              pad_ids)
from kerattn import checks, distribute
from kerattn.recipes.common import compile_and_fit, fitted

PRESET = "base"   # the model's named sizes (kerattn.zoo.presets)


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
    c_in = pad_ids([[vocab.bos_id] + x[:-1] for x in ids], length, vocab.pad_id)
    c_out = pad_ids(ids, length, vocab.pad_id)
    return c_in, c_out


def evaluate(model, vocab, test, beam_widths=(1, 3), batch=256):
    """Caption the `test` strips with each beam width and score them.

    Returns `{"beam<k>": {"exact_caption_accuracy",
    "own_digit_share_correct", "own_digit_share_all"}, "examples": the
    first five captions beside their truth, "_maps", "_words"}`: the last
    two are the last beam width's attention maps and words, for drawing,
    and are popped before the figures are recorded.
    """
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
        return fitted(model, summary, None, None, "captioning", {"vocab": vocab})
    result = evaluate(model, vocab, test)
    maps, words = result.pop("_maps"), result.pop("_words")
    results = {"exact_caption_accuracy": result["beam1"]["exact_caption_accuracy"],
               "attention_on_own_digit": result["beam1"]["own_digit_share_all"],
               **result}
    return fitted(model, summary, results,
                  lambda path: attention_overlay(test["images"][0], maps[0],
                                                 words[0], path),
                  "captioning", {"vocab": vocab})

"""Digit-strip captions from scikit-learn's handwritten digits.

The UCI optical digits (1,797 images of 8 x 8, values 0-16) ship inside the
scikit-learn wheel. The single digits are split into train and test first,
then strips of 3-5 digits are composed from each side, so no test strip
contains a digit image seen in training:

    [6][5][0][4][8]  ->  "six five zero four eight"

Each digit occupies 8 columns followed by a 1-pixel gap, so a strip of up
to `max_digits` digits is `8 x 9 * max_digits` pixels (8 x 45 for five),
left-aligned on black. Each word's column span is kept: a correct visual
attention puts most of each word's weight on its own digit, left to right.
"""

import numpy as np

from kerattn import checks

DIGIT_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven",
               "eight", "nine")
DIGIT_SIZE = 8
GAP = 1


def _load_digits():
    datasets = checks.installed("sklearn.datasets", "data", "Digit strips")
    digits = datasets.load_digits()
    return digits.images.astype("float32") / 16.0, digits.target.astype("int64")


def split_digits(test_size=360, seed=0):
    """The single digits, split into train and test before composing.

    Returns:
        `((train_images, train_labels), (test_images, test_labels))`,
        images `(n, 8, 8)` float32 in [0, 1].
    """
    checks.int_in_range("test_size", test_size, 1, 1797)
    images, labels = _load_digits()
    order = np.random.default_rng(seed).permutation(len(images))
    test, train = order[:test_size], order[test_size:]
    return (images[train], labels[train]), (images[test], labels[test])


def _shifted(image, dy, dx):
    """`image` moved by (dy, dx) pixels, zero-filled."""
    out = np.zeros_like(image)
    h, w = image.shape
    out[max(dy, 0):h + min(dy, 0), max(dx, 0):w + min(dx, 0)] = (
        image[max(-dy, 0):h + min(-dy, 0), max(-dx, 0):w + min(-dx, 0)])
    return out


def compose_strips(images, labels, count, min_digits=3, max_digits=5, seed=0,
                   jitter=0):
    """Compose `count` strips from single digits.

    Args:
        images: `(n, 8, 8)` single digits; labels: `(n,)` their classes.
        count: the number of strips.
        min_digits, max_digits: each strip has a uniform number of digits
            in `[min_digits, max_digits]`.
        seed: the random seed.
        jitter: int, each digit moves by up to this many pixels up/down and
            left/right inside its 8 x 8 cell (training augmentation; the
            spans stay the cells'). 0 for the plain strips.

    Returns:
        A dict: `images` float32 `(count, 8, 9 * max_digits, 1)`,
        `captions` a list of strings, `digits` a list of int lists, and
        `spans` a list of `[(first_column, last_column + 1), ...]` per strip,
        one span per word.
    """
    for name, value in (("count", count), ("min_digits", min_digits),
                        ("max_digits", max_digits)):
        checks.positive_int(name, value)
    checks.require(min_digits <= max_digits, "min_digits",
                   f"<= max_digits={max_digits}", min_digits)
    images = np.asarray(images, "float32")
    labels = np.asarray(labels)
    checks.shape("images", images, ("n", DIGIT_SIZE, DIGIT_SIZE))
    rng = np.random.default_rng(seed)
    jitter_rng = np.random.default_rng([seed, 1])  # same strips with or without
    width = (DIGIT_SIZE + GAP) * max_digits
    strips = np.zeros((count, DIGIT_SIZE, width, 1), "float32")
    captions, digit_lists, spans = [], [], []
    for row in range(count):
        n = int(rng.integers(min_digits, max_digits + 1))
        picks = rng.integers(0, len(images), size=n)
        span = []
        for k, pick in enumerate(picks):
            start = k * (DIGIT_SIZE + GAP)
            digit = images[pick]
            if jitter:
                dy, dx = jitter_rng.integers(-jitter, jitter + 1, size=2)
                digit = _shifted(digit, int(dy), int(dx))
            strips[row, :, start:start + DIGIT_SIZE, 0] = digit
            span.append((start, start + DIGIT_SIZE))
        digits = [int(labels[p]) for p in picks]
        captions.append(" ".join(DIGIT_WORDS[d] for d in digits))
        digit_lists.append(digits)
        spans.append(span)
    return {"images": strips, "captions": captions, "digits": digit_lists,
            "spans": spans}


def digit_strips(train_count=8000, test_count=1000, min_digits=3, max_digits=5,
                 test_digits=360, seed=0, train_jitter=0):
    """Train and test digit strips, composed from disjoint single digits.

    Args:
        train_count, test_count: the number of strips of each split.
        min_digits, max_digits: digits per strip.
        test_digits: single digits held out for the test strips (of 1,797).
        seed: the random seed.
        train_jitter: `jitter` of the training strips (the test strips are
            never jittered).

    Returns:
        `(train, test)`, each a dict as `compose_strips` returns.

    Example:

    >>> train, test = digit_strips(train_count=4, test_count=2)
    >>> train["images"].shape
    (4, 8, 45, 1)
    """
    for name, value in (("train_count", train_count), ("test_count", test_count),
                        ("min_digits", min_digits), ("max_digits", max_digits)):
        checks.positive_int(name, value)
    checks.require(min_digits <= max_digits, "min_digits",
                   f"<= max_digits={max_digits}", min_digits)
    (train_x, train_y), (test_x, test_y) = split_digits(test_digits, seed)
    train = compose_strips(train_x, train_y, train_count, min_digits,
                           max_digits, seed=seed + 1, jitter=train_jitter)
    test = compose_strips(test_x, test_y, test_count, min_digits, max_digits,
                          seed=seed + 2)
    return train, test


def attention_on_own_digit(attention, spans, columns_per_location):
    """The mean share of each word's attention on its own digit's columns.

    Args:
        attention: per strip, a `(words, h, w)` array of attention maps over
            the `h x w` grid of annotation vectors (one map per emitted
            word, EOS excluded).
        spans: per strip, the words' `(start, end)` column spans.
        columns_per_location: how many image columns one grid column covers.

    Returns:
        The mean over all words of `sum(weights on the word's columns) /
        sum(weights)`; words beyond the strip's length are not counted.

    Example:

    >>> import numpy as np
    >>> maps = np.zeros((2, 1, 5), "float32")   # 2 words over a 1 x 5 grid
    >>> maps[0, 0, 0], maps[1, 0, 1:3] = 1.0, 0.5
    >>> attention_on_own_digit([maps], [[(0, 9), (9, 18)]], columns_per_location=9)
    0.75
    """
    shares = []
    for maps, span in zip(attention, spans):
        maps = np.asarray(maps, "float64")
        columns = maps.sum(axis=1)  # (words, w)
        centres = (np.arange(columns.shape[1]) + 0.5) * columns_per_location
        for word, (start, end) in zip(columns[: len(span)], span):
            total = word.sum()
            inside = word[(centres >= start) & (centres < end)].sum()
            shares.append(inside / total if total > 0 else 0.0)
    return float(np.mean(shares)) if shares else 0.0

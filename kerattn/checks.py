"""Argument checks: the one place kerattn says what an argument must be.

Layers, zoo builders, decoding, export, datasets and recipes call these;
no other module writes its own `raise ValueError`. Every message names the
argument, says what was expected and what was received:

    `units` must be a positive integer; received 0.

so a user reads which argument to fix without a backend stack trace. The
bad-input suite (`tests/test_bad_input_suite.py`) holds the messages, and
`tests/test_structure.py` holds the rule (it reads every module with `ast`).

Three kinds of check:

- values (`positive_int`, `int_at_least`, `number`, `rate`, `one_of`,
  `boolean`, ...; shorthands `nonnegative_int`, `nonnegative_number`,
  `positive_number`): Python arguments of a constructor or a function;
- tensors (`rank`, `mask`, `same`, `nonempty`, `integer_ids`): the static
  shapes and dtypes of inputs, at trace time, so they cost nothing in a
  compiled step; an unknown (None or symbolic) size is never checked;
- everything else through `require(condition, name, expected, ...)` or
  `fail(...)`, which keep the same message form, and `bad_file(...)` for a
  data file whose content is wrong (the message names the file and line).

This module imports nothing from kerattn, so every part of it may use it.

Example:

>>> positive_int("units", 8)
>>> positive_int("units", 0)
Traceback (most recent call last):
  ...
ValueError: `units` must be a positive integer; received 0.
"""

import functools
import os

__all__ = ["fail", "require", "bad_file", "positive_int", "int_at_least",
           "int_in_range", "number", "rate", "boolean", "one_of",
           "instance", "function", "strings", "some",
           "existing_path", "installed", "known_dim", "static_dim",
           "rank", "min_rank", "shape", "mask", "same", "nonempty",
           "integer_ids", "sizes", "model", "vocabulary"]

_MISSING = object()


# --- The message form ---------------------------------------------------------

def fail(name, expected, received=_MISSING, note=None):
    """Raise `ValueError("`name` must be expected; received r. note")`.

    Args:
        name: the argument, as the user spells it (`"units"`, `"inputs"`).
        expected: what it must be, as a phrase (`"a positive int"`).
        received: the value given; its `repr` is shown. Left out, the
            message ends after `expected`.
        note: an optional sentence after the message (how to fix it).

    Raises:
        ValueError: always.

    Example:

    >>> fail("mode", "'monotonic' or 'predictive'", "sideways")
    Traceback (most recent call last):
      ...
    ValueError: `mode` must be 'monotonic' or 'predictive'; received 'sideways'.
    """
    message = f"`{name}` must be {expected}"
    message += "." if received is _MISSING else f"; received {received!r}."
    if note:
        message += f" {note}"
    raise ValueError(message)


def require(condition, name, expected, received=_MISSING, note=None):
    """`fail(name, expected, received, note)` unless `condition` holds.

    For a check that relates arguments to each other (`num_heads` divides
    `d_model`, `min_digits <= max_digits`).

    Args:
        condition: the check's outcome; truthy passes.
        name, expected, received, note: as for `fail`.

    Example:

    >>> require(512 % 8 == 0, "num_heads", "a divisor of d_model=512", 8)
    """
    if not condition:
        fail(name, expected, received, note)


def bad_file(path, problem, line=None):
    """Raise `ValueError("path:line: problem")` for a malformed data file.

    Args:
        path: the file.
        problem: what is wrong, as a sentence.
        line: the 1-based line number, when the problem has one.

    Raises:
        ValueError: always.

    Example:

    >>> bad_file("train.jsonl", "not a JSON line.", line=3)
    Traceback (most recent call last):
      ...
    ValueError: train.jsonl:3: not a JSON line.
    """
    where = f"{path}:{line}" if line is not None else f"{path}"
    # Called from an `except` block (a JSON or Unicode error): the message
    # says it all, so the traceback stays short.
    raise ValueError(f"{where}: {problem}") from None


# --- Python values ------------------------------------------------------------

def _is_int(value):
    import numbers

    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _is_number(value):
    import numbers

    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def positive_int(name, value, allow_none=False):
    """`value` is an int >= 1 (or None when `allow_none`).

    Args:
        name, value: the argument, as the user spells it, and its value.
        allow_none: whether None passes.

    Example:

    >>> positive_int("max_length", None, allow_none=True)
    """
    if allow_none and value is None:
        return
    if not _is_int(value) or value < 1:
        fail(name, "a positive integer" + (" or None" if allow_none else ""),
             value)


def odd_int(name, value, why="the window is centred on each position"):
    """`value` is an odd int >= 1: the width of a filter centred on each
    position.

    Args:
        name, value: the argument, as the user spells it, and its value.
        why: the reason it must be odd, said in the error.

    Example:

    >>> odd_int("kernel_size", 31)
    """
    positive_int(name, value)
    if value % 2 != 1:
        fail(name, f"an odd int ({why})", value)


def int_at_least(name, value, low, allow_none=False):
    """`value` is an int >= `low` (or None when `allow_none`).

    Args:
        name, value: the argument, as the user spells it, and its value.
        low: the smallest allowed value.
        allow_none: whether None passes.

    Example:

    >>> int_at_least("vocabulary_size", 5, 5)
    """
    if allow_none and value is None:
        return
    if not _is_int(value) or value < low:
        expected = "a non-negative int" if low == 0 else f"an int >= {low}"
        fail(name, expected + (" or None" if allow_none else ""), value)


def int_in_range(name, value, low, high):
    """`value` is an int in `[low, high)`.

    Args:
        name, value: the argument, as the user spells it, and its value.
        low: the smallest allowed value.
        high: the first value past the allowed range.

    Example:

    >>> int_in_range("rank", 1, 0, 2)
    """
    if not _is_int(value) or not low <= value < high:
        fail(name, f"an int in [{low}, {high})", value)


def number(name, value, low=None, high=None, low_open=False, high_open=False,
           allow_none=False):
    """`value` is a real number (not a bool) within the given bounds.

    Args:
        name: the argument.
        value: the value.
        low, high: the bounds; None is unbounded on that side.
        low_open, high_open: whether each bound is excluded.
        allow_none: whether None passes.

    Example:

    >>> number("top_p", 1.0, 0.0, 1.0, low_open=True)
    """
    if allow_none and value is None:
        return
    ok = _is_number(value)
    if ok and low is not None:
        ok = value > low if low_open else value >= low
    if ok and high is not None:
        ok = value < high if high_open else value <= high
    if ok:
        return
    if low is not None and high is not None:
        expected = (f"a number in {'(' if low_open else '['}{low}, "
                    f"{high}{')' if high_open else ']'}")
    elif low == 0 and not low_open:
        expected = "a non-negative number"
    elif low == 0:
        expected = "a positive number"
    elif low is not None:
        expected = f"a number {'>' if low_open else '>='} {low}"
    elif high is not None:
        expected = f"a number {'<' if high_open else '<='} {high}"
    else:
        expected = "a number"
    fail(name, expected + (" or None" if allow_none else ""), value)


def rate(name, value):
    """`value` is a dropout-like rate in `[0, 1)`.

    Args:
        name, value: the argument, as the user spells it, and its value.

    Example:

    >>> rate("dropout", 0.1)
    """
    if not _is_number(value) or not 0 <= value < 1:
        fail(name, "in [0, 1)", value)


# Shorthands, as their names say (the messages come from the general checks).
nonnegative_int = functools.partial(int_at_least, low=0)
nonnegative_number = functools.partial(number, low=0)
positive_number = functools.partial(number, low=0, low_open=True)


def boolean(name, value):
    """`value` is a bool (numpy's included; not 0 or 1).

    Args:
        name, value: the argument, as the user spells it, and its value.

    Example:

    >>> boolean("causal", True)
    """
    import numpy as np

    if not isinstance(value, (bool, np.bool_)):
        fail(name, "a bool", value)


def one_of(name, value, choices):
    """`value` is one of `choices`.

    Args:
        name, value: the argument, as the user spells it, and its value.
        choices: the allowed values.

    Example:

    >>> one_of("strategy", "beam", ("greedy", "beam", "sample"))
    """
    try:
        ok = value in tuple(choices)
    except TypeError:  # an unhashable or oddly comparing value
        ok = False
    if not ok:
        fail(name, f"one of {tuple(choices)}", value)


def instance(name, value, types, expected):
    """`value` is an instance of `types`; `expected` says it in words.

    Args:
        name, value: the argument, as the user spells it, and its value.
        types: a type or tuple of types.
        expected: what it must be, in words (the message says it).

    Example:

    >>> instance("path", "a.keras", str, "a file path")
    """
    if not isinstance(value, types):
        fail(name, expected, value)


def function(name, value, expected="a function"):
    """`value` is callable.

    Args:
        name, value: the argument, as the user spells it, and its value.
        expected: what it must be, in words (the message says it).

    Example:

    >>> function("step_fn", len)
    """
    if not callable(value):
        fail(name, expected, value)


def strings(name, value, allow_empty=True):
    """`value` is a list (or tuple) of strings, not one string.

    Args:
        name, value: the argument, as the user spells it, and its value.
        allow_empty: whether an empty list passes.

    Example:

    >>> strings("texts", ["a b", "c"])
    """
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        fail(name, "a list of strings, not one string", value)
    for item in value:
        if not isinstance(item, str):
            fail(name, "a list of strings", value)
    if not allow_empty and not value:
        fail(name, "a non-empty list of strings", value)


def some(name, items, what="one item"):
    """`items` (a sized collection) holds at least one element.

    Args:
        name: the argument, as the user spells it.
        items: a sized collection.
        what: what is expected, in words (the message says it).

    Example:

    >>> some("pairs", [("a", "b")], "one (source, target) pair")
    """
    if items is None or len(items) == 0:
        fail(name, f"a collection holding at least {what}", items)


def existing_path(name, path, what="a file", directory=False):
    """`path` is a string naming an existing file (or directory).

    Args:
        name: the argument, as the user spells it.
        path: the path given.
        what: what it must hold, in words (the message says it).
        directory: a directory instead of a file.

    Example:

    >>> existing_path("lists_dir", os.path.dirname(__file__), "apt lists",
    ...               directory=True)
    """
    exists = os.path.isdir if directory else os.path.isfile
    if not isinstance(path, (str, bytes, os.PathLike)) or not exists(path):
        fail(name, f"an existing path to {what}", path, note=_missing(path))


def _missing(path):
    if not isinstance(path, (str, bytes, os.PathLike)):
        return None
    return "It exists, but is another kind." if os.path.exists(path) else \
        "It does not exist."


def installed(module, extra, what):
    """Import `module`, or say which kerattn extra installs it.

    Args:
        module: the module to import, e.g. "matplotlib.pyplot".
        extra: the `pip install kerattn[extra]` that brings it.
        what: who needs it, for the message ("kerattn.plot").

    Returns:
        The module.

    Raises:
        ImportError: naming `what`, the module and the extra.

    Example:

    >>> installed("json", "none", "this example").__name__
    'json'
    """
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as error:  # pragma: no cover - depends on the install
        raise ImportError(f"{what} needs {module.split('.')[0]}: "
                          f"pip install 'kerattn[{extra}]'.") from error


# --- Tensors: static shapes and dtypes, at trace time ---------------------------

def known_dim(dim):
    """`dim` as an int, or None when unknown or symbolic.

    Under `jax.export` (and so `model.export` on JAX) a dimension can be a
    symbol such as `batch`: it is not known, so nothing is checked against
    it.

    Args:
        dim: a static size: an int, None or a symbolic dimension.

    Example:

    >>> known_dim(3), known_dim(None)
    (3, None)
    """
    if dim is None:
        return None
    try:
        return int(dim)
    except Exception:  # jax's InconclusiveDimensionOperation, for a symbol
        return None


def static_dim(x, axis):
    """The static size of `x` along `axis`, or None.

    Args:
        x: an array or tensor (anything without `.shape` is not checked).
        axis: the axis.

    Example:

    >>> import numpy as np
    >>> static_dim(np.zeros((2, 5)), 1)
    5
    """
    shape = getattr(x, "shape", None)
    if shape is None:
        return None
    return known_dim(shape[axis])


def rank(name, shape, ranks, what):
    """`len(shape)` is one of `ranks`; `what` names the axes expected.

    Args:
        name: the argument, as the user spells it.
        shape: a static shape (None is not checked).
        ranks: the allowed ranks.
        what: what is expected, in words (the message says it).

    Example:

    >>> rank("value", (2, 5, 4), (3,), "(batch, Tv, dim)")
    """
    if shape is None:
        return
    if len(shape) not in ranks:
        expected = " or ".join(str(r) for r in ranks)
        raise ValueError(
            f"`{name}` must have rank {expected}, shaped {what}; "
            f"received shape {tuple(shape)}.")


def min_rank(name, shape, low, what):
    """`len(shape) >= low`; `what` names the axes expected.

    Args:
        name: the argument, as the user spells it.
        shape: a static shape (None is not checked).
        low: the smallest allowed value.
        what: what is expected, in words (the message says it).

    Example:

    >>> min_rank("inputs", (2, 5), 2, "(batch, ...)")
    """
    if shape is not None and len(shape) < low:
        raise ValueError(
            f"`{name}` must have rank >= {low}, shaped {what}; "
            f"received shape {tuple(shape)}.")


def shape(name, x, expected_shape, what=""):
    """`x`'s static shape matches `expected_shape` (None entries free).

    Args:
        name: the argument.
        x: an array or tensor (None is not checked).
        expected_shape: a tuple of sizes; None matches any size.
        what: words after the shape in the message (e.g. "(True = attend)").

    Example:

    >>> import numpy as np
    >>> shape("images", np.zeros((2, 8, 8)), (None, 8, 8))
    """
    if x is None:
        return
    found = tuple(x.shape)
    ok = len(found) == len(expected_shape) and all(
        a is None or b is None or a == b
        for a, b in zip(map(known_dim, found), map(known_dim, expected_shape)))
    if not ok:
        expected = tuple(expected_shape)
        raise ValueError(
            f"`{name}` must have shape {expected}{' ' + what if what else ''}; "
            f"received shape {found}.")


def mask(name, mask, expected_shape):
    """A mask's static shape matches `expected_shape` (None entries free).

    Args:
        name: the argument, as the user spells it.
        mask: a mask (None is not checked).
        expected_shape: a tuple of sizes; None matches any size.

    Example:

    >>> import numpy as np
    >>> mask("value_mask", np.ones((2, 5), bool), (2, None))
    """
    shape(name, mask, expected_shape, "(True = attend)")


def same(name_a, a, name_b, b, what):
    """Two sizes agree when both are known; `what` names the size.

    Args:
        name_a: the first argument.
        a: its size.
        name_b: the second argument.
        b: its size.
        what: what is expected, in words (the message says it).

    Example:

    >>> same("query", 2, "value", 2, "batch size")
    """
    a, b = known_dim(a), known_dim(b)
    if a is not None and b is not None and a != b:
        raise ValueError(
            f"`{name_a}` and `{name_b}` must have the same {what}; "
            f"received {a} and {b}.")


def nonempty(name, x, axes=(1,), what="time step"):
    """No known size of `x` along `axes` is 0.

    Args:
        name: the argument, as the user spells it.
        x: an array or tensor (anything without `.shape` is not checked).
        axes: the axes that must not be empty.
        what: what is expected, in words (the message says it).

    Example:

    >>> import numpy as np
    >>> nonempty("value", np.zeros((2, 3, 4)))
    """
    shape = getattr(x, "shape", None)
    if shape is None:
        return
    for axis in axes:
        if axis < len(shape) and known_dim(shape[axis]) == 0:
            raise ValueError(
                f"`{name}` must have at least one {what} (axis {axis}); "
                f"received shape {tuple(shape)}. Pad an empty sequence to "
                "length 1 and mask it instead.")


def integer_ids(name, x):
    """`x` holds integers (token ids); any array or tensor with a dtype.

    Args:
        name: the argument, as the user spells it.
        x: an array or tensor (anything without `.shape` is not checked).

    Example:

    >>> import numpy as np
    >>> integer_ids("source_ids", np.ones((2, 3), "int32"))
    """
    dtype = getattr(x, "dtype", None)
    if dtype is None:
        return
    import keras

    dtype = keras.backend.standardize_dtype(dtype)
    if "int" not in dtype:
        raise ValueError(
            f"`{name}` must hold integer token ids (int32 or int64); "
            f"received dtype {dtype}.")


# --- Models and vocabularies -------------------------------------------------------

def vocabulary(name, vocab, methods=("decode",)):
    """`vocab` has the special ids (`bos_id`, `eos_id`, `pad_id`) and `methods`.

    Args:
        name: the argument.
        vocab: the vocabulary given.
        methods: the methods its user calls.

    Example:

    >>> from kerattn.datasets import WordVocabulary
    >>> vocabulary("source_vocab", WordVocabulary(["a"]), ("encode_batch",))
    """
    needed = ("bos_id", "eos_id", "pad_id") + tuple(methods)
    missing = [m for m in needed if not hasattr(vocab, m)]
    require(not missing, name, "a vocabulary (kerattn.datasets.WordVocabulary "
            f"or WordPieceVocabulary) with {', '.join(needed)}",
            note=f"Received {type(vocab).__name__} without {', '.join(missing)}.")




def sizes(dropout=0.0, **values):
    """A builder's sizes: each a positive int, `dropout` a rate in [0, 1).

    Args:
        dropout: the dropout rate.
        **values: each size keyword and its value.

    Example:

    >>> sizes(dropout=0.1, units=8, embedding_dim=4)
    """
    for arg, value in values.items():
        positive_int(arg, value)
    rate("dropout", dropout)


def model(name, value, expected):
    """`value` is a `keras.Model`; `expected` says which kind.

    Args:
        name, value: the argument, as the user spells it, and its value.
        expected: what it must be, in words (the message says it).

    Example:

    >>> import keras
    >>> m = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> model("model", m, "a Keras model")
    """
    import keras

    if not isinstance(value, keras.Model):
        fail(name, expected, value)

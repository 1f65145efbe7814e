"""One way to pad lists of token ids into a batch."""

import numpy as np

from kerattn import checks


def pad_ids(rows, length=None, pad_id=0, dtype="int32"):
    """Lists of ids as one `(len(rows), length)` array, padded at the end.

    Args:
        rows: a list of id lists (or 1-D arrays), of any lengths.
        length: the array's width; the longest row's (at least 1) when None.
            A row longer than `length` is a ValueError.
        pad_id: the id written after each row (the vocabulary's `pad_id`).
        dtype: the array's dtype.

    Returns:
        A NumPy array `(len(rows), length)`.

    Example:

    >>> pad_ids([[5, 6], [7], [8, 9, 4]])
    array([[5, 6, 0],
           [7, 0, 0],
           [8, 9, 4]], dtype=int32)
    >>> pad_ids([[5]], length=3, pad_id=1)
    array([[5, 1, 1]], dtype=int32)
    """
    rows = [np.asarray(r).reshape(-1) for r in rows]
    longest = max([len(r) for r in rows] + [1])
    if length is None:
        length = longest
    checks.positive_int("length", length)
    checks.require(longest <= length, "rows", f"at most length={length} ids "
                   "each", f"a row of {longest}")
    out = np.full((len(rows), length), pad_id, dtype)
    for i, row in enumerate(rows):
        out[i, :len(row)] = row
    return out

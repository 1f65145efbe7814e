"""Tab-separated parallel text: the Anki / Tatoeba "many things" format."""

import os


def tsv_pairs(path, source_column=0, target_column=1, max_words=None,
              encoding="utf-8"):
    r"""Read `source<TAB>target[<TAB>...]` lines into string pairs.

    The format of the Anki / Tatoeba sentence-pair files (e.g. `fra.txt`,
    whose third column is the attribution). Blank lines are skipped.

    Args:
        path: the file.
        source_column, target_column: which tab-separated columns to read.
        max_words: keep pairs with at most this many words on both sides.
        encoding: the file's encoding.

    Returns:
        A list of `(source, target)` strings in file order.

    Raises:
        ValueError: a missing file, a line with too few columns (its number
            is named), or bad arguments.

    Example:

    >>> with open("fra.txt", "w", encoding="utf-8") as f:
    ...     _ = f.write("Go.\tVa !\tCC-BY 2.0 (France)\nHi.\tSalut !\tCC-BY\n")
    >>> tsv_pairs("fra.txt")
    [('Go.', 'Va !'), ('Hi.', 'Salut !')]
    """
    for name, value in (("source_column", source_column),
                        ("target_column", target_column)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"`{name}` must be a non-negative int; got {value!r}.")
    if max_words is not None and (not isinstance(max_words, int) or max_words < 1):
        raise ValueError(f"`max_words` must be a positive int or None; got {max_words!r}.")
    if not os.path.isfile(path):
        raise ValueError(f"`path` must be an existing file of tab-separated "
                         f"pairs; {path!r} does not exist.")
    need = max(source_column, target_column) + 1
    pairs = []
    try:
        with open(path, encoding=encoding) as f:
            lines = f.readlines()
    except UnicodeDecodeError as error:
        raise ValueError(
            f"{path}: not a text file in `encoding`={encoding!r} ({error}).") from None
    if True:
        for number, line in enumerate(lines, start=1):
            line = line.rstrip("\n").rstrip("\r")
            if not line.strip():
                continue
            columns = line.split("\t")
            if len(columns) < need:
                raise ValueError(
                    f"{path}:{number}: expected at least {need} tab-separated "
                    f"columns (source_column={source_column}, target_column="
                    f"{target_column}); found {len(columns)}.")
            source = columns[source_column].strip()
            target = columns[target_column].strip()
            if max_words is not None and (len(source.split()) > max_words
                                          or len(target.split()) > max_words):
                continue
            pairs.append((source, target))
    return pairs

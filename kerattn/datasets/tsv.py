"""Tab-separated parallel text: the Anki / Tatoeba "many things" format."""

from kerattn import checks


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
    checks.nonnegative_int("source_column", source_column)
    checks.nonnegative_int("target_column", target_column)
    checks.positive_int("max_words", max_words, allow_none=True)
    checks.existing_path("path", path, "a file of tab-separated pairs")
    need = max(source_column, target_column) + 1
    pairs = []
    try:
        with open(path, encoding=encoding) as f:
            lines = f.readlines()
    except UnicodeDecodeError as error:
        checks.bad_file(path, f"not a text file in `encoding`={encoding!r} "
                        f"({error}).")
    if True:
        for number, line in enumerate(lines, start=1):
            line = line.rstrip("\n").rstrip("\r")
            if not line.strip():
                continue
            columns = line.split("\t")
            if len(columns) < need:
                checks.bad_file(
                    path, f"expected at least {need} tab-separated columns "
                    f"(source_column={source_column}, target_column="
                    f"{target_column}); found {len(columns)}.", line=number)
            source = columns[source_column].strip()
            target = columns[target_column].strip()
            if max_words is not None and (len(source.split()) > max_words
                                          or len(target.split()) > max_words):
                continue
            pairs.append((source, target))
    return pairs

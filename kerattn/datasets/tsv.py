"""Tab-separated parallel text: the Anki / Tatoeba "many things" format."""

from kerattn import checks
from kerattn.datasets.textfile import Skipped, numbered_lines


def tsv_pairs(path, source_column=0, target_column=1, max_words=None,
              encoding="utf-8"):
    r"""Read `source<TAB>target[<TAB>...]` lines into string pairs.

    The format of the Anki / Tatoeba sentence-pair files (e.g. `fra.txt`,
    whose third column is the attribution). Blank lines are skipped; a pair
    with an empty side, or over `max_words`, is skipped and counted in a
    warning (`kerattn.datasets.textfile`); a byte-order mark is removed.

    Args:
        path: the file.
        source_column, target_column: which tab-separated columns to read.
        max_words: keep pairs with at most this many words on both sides.
        encoding: the file's encoding.

    Returns:
        A list of `(source, target)` strings in file order.

    Raises:
        ValueError: a missing file, a line with too few columns or a byte
            that does not decode (its `path:line` named), or bad arguments.

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
    skipped = Skipped(path)
    for number, line in numbered_lines(path, encoding, "a file of tab-separated pairs"):
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
        if not source or not target:
            skipped.add("an empty side: nothing to learn or score", number)
            continue
        if max_words is not None and (len(source.split()) > max_words
                                      or len(target.split()) > max_words):
            skipped.add(f"over max_words={max_words} words", number)
            continue
        pairs.append((source, target))
    skipped.report()
    return pairs

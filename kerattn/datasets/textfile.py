"""One rule for the data files a user gives: lines, errors, what was skipped.

Every reader of a user's file (`tsv_pairs`, `read_jsonl`, `read_cmudict`,
`read_cbt`) reads it through `numbered_lines` and reports through
`Skipped`:

- the file is UTF-8 (or the reader's `encoding`); a byte that does not
  decode is a ValueError naming `path:line`, not a byte offset;
- a UTF-8 byte-order mark at the start is removed (editors on Windows write
  one; left in place it would be part of the first word);
- a line the reader cannot use is a ValueError naming `path:line` and what
  was expected;
- a line it skips or changes by its own rules (a pair with an empty side,
  a pair over `max_words`) is counted, and one `UserWarning` per reason says
  how many and the first line numbers: nothing is dropped silently. Blank
  lines and comments are the format's, not data, and are not reported.
"""

import codecs
import re
import warnings

from kerattn import checks

_SHOWN = 5   # line numbers named in a warning


def numbered_lines(path, encoding="utf-8", what="a text file"):
    """`[(line number, line without its newline)]` of `path`, from 1.

    Args:
        path: the file.
        encoding: its encoding.
        what: what the file must be, for the missing-file message.

    Raises:
        ValueError: a missing file, or a line that does not decode (its
            `path:line` named).

    Example:

    >>> with open("bom.tsv", "wb") as f:
    ...     _ = f.write("\\ufeffGo.\\tVa !\\n".encode("utf-8"))
    >>> numbered_lines("bom.tsv")
    [(1, 'Go.\\tVa !')]
    """
    checks.existing_path("path", path, what)
    with open(path, "rb") as f:
        raw = f.read()
    name = codecs.lookup(encoding).name
    label = "UTF-8" if name == "utf-8" else encoding
    try:   # whole: UTF-16's newline is two bytes
        text = raw.decode(encoding)
    except UnicodeDecodeError as error:
        before = raw[:error.start].decode(encoding, errors="replace")
        number = before.count("\n") + 1
        column = len(before) - (before.rfind("\n") + 1) + 1
        checks.bad_file(path, f"not {label} text: byte {raw[error.start]:#04x} "
                        f"at column {column} does not decode "
                        f"(`encoding`={encoding!r}).", line=number)
    if name.startswith("utf"):
        text = text.lstrip("\ufeff")
    lines = re.split(r"\r\n|\r|\n", text)
    if lines and lines[-1] == "":
        lines.pop()          # the file's last newline ends a line
    return list(enumerate(lines, start=1))


class Skipped:
    """Counts the lines a reader skips or changes, by reason, and warns once
    per reason when `report` is called.

    Example:

    >>> skipped = Skipped("pairs.tsv")
    >>> skipped.add("an empty side", 4)
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     skipped.report()
    >>> str(caught[0].message)
    'pairs.tsv: skipped 1 line (an empty side): line 4'
    """

    def __init__(self, path, verb="skipped"):
        self.path, self.verb = path, verb
        self.lines = {}

    def add(self, reason, number):
        self.lines.setdefault(reason, []).append(number)

    def count(self, reason=None):
        if reason is not None:
            return len(self.lines.get(reason, []))
        return sum(map(len, self.lines.values()))

    def report(self):
        for reason, numbers in self.lines.items():
            n = len(numbers)
            shown = ", ".join(map(str, numbers[:_SHOWN]))
            more = f" and {n - _SHOWN} more" if n > _SHOWN else ""
            warnings.warn(
                f"{self.path}: {self.verb} {n} line{'s' * (n != 1)} ({reason}): "
                f"line{'s' * (n != 1)} {shown}{more}", UserWarning, stacklevel=3)

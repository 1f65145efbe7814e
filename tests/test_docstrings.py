"""Every public symbol has a docstring with Args and an Example, and every
Example runs (as a doctest, on each backend, its printed results compared).

The public symbols are the `__all__` of `kerattn` and of its public modules.
Examples whose data cannot be on a fresh machine (Debian's apt lists, a
download from Debian's archive) mark those lines `# doctest: +SKIP`; only the
symbols listed in `NEEDS_DEBIAN_ARCHIVE` may do so, and every other line of
their Example still runs.
"""

import doctest
import inspect
import re

import keras
import numpy as np
import pytest

import kerattn
import kerattn.archive
import kerattn.checks
import kerattn.environment
import kerattn.export
import kerattn.plot

MODULES = {
    "kerattn": kerattn,
    "kerattn.layers": kerattn.layers,
    "kerattn.zoo": kerattn.zoo,
    "kerattn.decoding": kerattn.decoding,
    "kerattn.datasets": kerattn.datasets,
    "kerattn.losses": kerattn.losses,
    "kerattn.callbacks": kerattn.callbacks,
    "kerattn.export": kerattn.export,
    "kerattn.plot": kerattn.plot,
    "kerattn.distribute": kerattn.distribute,
    "kerattn.checks": kerattn.checks,
    "kerattn.archive": kerattn.archive,
    "kerattn.environment": kerattn.environment,
}

# Their data comes from `apt-get update` / `apt-get download` (DATA.md):
# those lines are shown, not run.
NEEDS_DEBIAN_ARCHIVE = {"kerattn.datasets.debian_topical10",
                        "kerattn.datasets.debian_summaries",
                        "kerattn.datasets.debian_descriptions",
                        "kerattn.datasets.download_kjv",
                        "kerattn.datasets.kjv_cloze"}


def public_symbols():
    symbols = {}
    for module_name, module in MODULES.items():
        assert hasattr(module, "__all__"), f"{module_name} has no __all__"
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.ismodule(obj) or not callable(obj):
                continue
            symbols[f"{module_name}.{name}"] = obj
    return symbols


SYMBOLS = public_symbols()


def test_the_public_api_is_all_here():
    # A floor, so that an emptied __all__ cannot pass the tests below.
    assert len(SYMBOLS) >= 90
    for name in ("kerattn.layers.BahdanauAttention", "kerattn.zoo.bahdanau_nmt",
                 "kerattn.decoding.beam_search", "kerattn.datasets.gettext_pairs",
                 "kerattn.export.export_model", "kerattn.plot.attention_heatmap",
                 "kerattn.load_model"):
        assert name in SYMBOLS


def sections(doc):
    return {line.strip().rstrip(":") for line in doc.splitlines()
            if line.strip().endswith(":") and line.strip()[:-1] in
            ("Args", "Example", "Examples", "Returns", "Call arguments")}


@pytest.mark.parametrize("name", sorted(SYMBOLS))
def test_docstring_has_args_and_example(name):
    doc = inspect.getdoc(SYMBOLS[name]) or ""
    found = sections(doc)
    try:   # a function of no argument has no 'Args:' to write
        takes = bool(inspect.signature(SYMBOLS[name]).parameters)
    except (TypeError, ValueError):
        takes = True
    assert "Args" in found or not takes, f"{name}: no 'Args:' section"
    assert {"Example", "Examples"} & found, f"{name}: no 'Example:' section"
    example = doc.split("Example", 1)[1]
    assert ">>>" in example, f"{name}: the Example has no doctest lines"


@pytest.mark.parametrize("name", sorted(SYMBOLS))
def test_example_runs(name, tmp_path, monkeypatch):
    obj = SYMBOLS[name]
    module = inspect.getmodule(obj)
    monkeypatch.chdir(tmp_path)  # examples that write files write them here
    globs = dict(vars(module))
    globs.update(np=np, keras=keras, kerattn=kerattn)
    finder = doctest.DocTestFinder(recurse=False)
    tests = [t for t in finder.find(obj, name, module=module, globs=globs) if t.examples]
    assert tests, f"{name}: no runnable example"
    skipped = [ex.source for t in tests for ex in t.examples
               if ex.options.get(doctest.SKIP)]
    if name not in NEEDS_DEBIAN_ARCHIVE:
        assert not skipped, f"{name}: skipped example lines {skipped}"
    runner = doctest.DocTestRunner(
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    keras.utils.set_random_seed(0)
    report = []
    for test in tests:
        runner.run(test, out=report.append)
    assert runner.failures == 0, "".join(report)


# --- Names in docstrings resolve ---------------------------------------------

_PUBLIC = {}
for _module in MODULES.values():
    for _name in _module.__all__:
        _PUBLIC.setdefault(_name, getattr(_module, _name))


def _docs_of(obj):
    """A public name's docstring and those of its class' own methods and
    properties (what its API page shows)."""
    texts = [inspect.getdoc(obj) or ""]
    if inspect.isclass(obj):
        for key, value in vars(obj).items():
            if (not key.startswith("_") or key == "__init__") and (
                    callable(value) or isinstance(value, property)):
                texts.append(inspect.getdoc(value) or "")
    return "\n".join(texts)


def _resolves(dotted):
    """Whether `kerattn.a.b.c` imports (the longest module prefix) and has
    the rest as attributes."""
    import importlib

    parts = dotted.split(".")
    obj, k = None, len(parts)
    while obj is None and k > 0:
        try:
            obj = importlib.import_module(".".join(parts[:k]))
        except ImportError:
            k -= 1
    for attr in parts[k:]:
        if not hasattr(obj, attr):
            return False
        obj = getattr(obj, attr)
    return True


def unresolved(text):
    """The code-quoted names of `text` that name nothing: a dotted
    `kerattn.x.y` that does not import, or `Class.attr` of a public kerattn
    class without that attribute (a method, a property, or one its source
    sets on `self`)."""
    missing, seen = [], 0
    for token in sorted(set(re.findall(r"`([^`\n]+)`", text))):
        for dotted in re.findall(r"\bkerattn(?:\.\w+)+", token):
            seen += 1
            if not _resolves(dotted):
                missing.append(dotted)
        match = re.fullmatch(r"([A-Z]\w+)\.(\w+)(?:\(.*\))?", token)
        owner = match and _PUBLIC.get(match.group(1))
        if inspect.isclass(owner):
            seen += 1
            attr = match.group(2)
            if not hasattr(owner, attr) and f"self.{attr}" not in inspect.getsource(owner):
                missing.append(token)
    return missing, seen


def test_names_in_docstrings_resolve():
    """Every `kerattn.x.y` and `Class.attr` quoted in a public docstring
    (the API pages' text) names something that exists."""
    missing, seen = {}, 0
    for name, obj in SYMBOLS.items():
        bad, count = unresolved(_docs_of(obj))
        seen += count
        if bad:
            missing[name] = bad
    assert not missing, missing
    assert seen > 60, seen   # a floor: the check reads real references (87 now)


def test_the_name_check_finds_what_is_gone():
    text = ("`kerattn.layers.BahdanauAttention` and `AttentionRNN.step` exist; "
            "`kerattn.layers.GoneAttention`, `AttentionRNN.gone()` and "
            "`kerattn.nowhere.x` do not.")
    assert unresolved(text)[0] == ["AttentionRNN.gone()", "kerattn.layers.GoneAttention",
                                   "kerattn.nowhere.x"]

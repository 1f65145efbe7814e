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

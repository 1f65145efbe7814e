"""Write docs/api/<module>.md: one `::: name` entry (mkdocstrings) for each
public name of the modules the site documents.

    python docs/api/generate.py

tests/test_site.py checks that every public name has its entry, so a name
added to a module's `__all__` without running this fails there.
"""

import importlib
import inspect
import os

HERE = os.path.dirname(os.path.abspath(__file__))
# page -> (module, title, one line on the module)
PAGES = {
    "kerattn": ("kerattn", "The top level: loading models and runs"),
    "layers": ("kerattn.layers", "The attention layers and their building blocks"),
    "zoo": ("kerattn.zoo", "The model builders"),
    "decoding": ("kerattn.decoding", "Greedy, beam search, sampling and streaming"),
    "datasets": ("kerattn.datasets", "Loaders, vocabularies and batches"),
    "losses": ("kerattn.losses", "Losses"),
    "callbacks": ("kerattn.callbacks", "Callbacks"),
    "distribute": ("kerattn.distribute", "Distribution strategies"),
    "export": ("kerattn.export", "Export"),
    "plot": ("kerattn.plot", "Attention pictures"),
}
# kerattn.recipes has no __all__: its public face is each task's `fit`
# (examples/fit.py, the README), and the task modules' steps.
RECIPES = ("translation", "g2p", "g2p_phrases", "summarisation", "classification",
           "reading", "captioning")


def public(module_name):
    """The documented names of a module: its `__all__`, less submodules
    and plain constants (documented on the page of what they configure)."""
    module = importlib.import_module(module_name)
    names = []
    for name in module.__all__:
        obj = getattr(module, name)
        if inspect.ismodule(obj) or not (inspect.isclass(obj) or callable(obj)):
            continue
        names.append(name)
    return names


def page(title, module_name, names, about):
    lines = [f"# `{module_name}`", "", about + ".", ""]
    lines += [f"::: {module_name}.{name}" for name in names]
    return "\n".join(lines) + "\n"


def recipes_page():
    lines = ["# `kerattn.recipes`", "",
             "The recipes of the zoo's tasks: prepare -> build -> train -> "
             "evaluate, and `fit`, the whole method on a user's data "
             "(`examples/fit.py`).", ""]
    for task in RECIPES:
        lines += [f"::: kerattn.recipes.{task}", "    options:",
                  "      show_root_heading: true", "      members: true", ""]
    return "\n".join(lines)


def main():
    for file, (module_name, about) in PAGES.items():
        with open(os.path.join(HERE, f"{file}.md"), "w", encoding="utf-8") as f:
            f.write(page(file, module_name, public(module_name), about))
    with open(os.path.join(HERE, "recipes.md"), "w", encoding="utf-8") as f:
        f.write(recipes_page())


if __name__ == "__main__":
    main()

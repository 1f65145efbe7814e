"""The documentation site (mkdocs.yml): it builds with `--strict` (every
page, link and anchor resolving, the zoo's results pages in it), a broken
link or anchor fails that build, every public name has its API entry, and
doctest examples are shown as code."""

import importlib.util
import os
import subprocess
import sys

import pytest
import yaml

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _module(path, name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(REPO, path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build(config, site):
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict",
                           "-f", config, "-d", site], cwd=REPO,
                          capture_output=True, text=True)


def test_the_site_builds_strict_with_every_page(tmp_path):
    site = tmp_path / "site"
    result = build("mkdocs.yml", str(site))
    assert result.returncode == 0, result.stderr[-3000:]
    layers = (site / "api" / "layers" / "index.html").read_text(encoding="utf-8")
    assert 'id="kerattn.layers.RecurrentLocationAttention"' in layers
    assert '<span class="gp">&gt;&gt;&gt; </span>' in layers   # doctests as code
    # The results pages joined the site, with their pictures and links.
    page = site / "repo" / "zoo" / "bahdanau_nmt"
    assert 'src="../selection.png"' in (page / "RESULTS" / "index.html").read_text(
        encoding="utf-8")
    assert (page / "selection.png").exists()
    assert (site / "search" / "search_index.json").exists()


def test_a_broken_link_or_anchor_fails_the_strict_build(tmp_path):
    """The site's own `validation` settings and hooks, on a page with a
    link to a missing page, one to no file outside docs/ (which the hooks
    leave as it is) and one to a missing anchor: `--strict` fails on each
    (without `validation`, MkDocs only reports them)."""
    with open(os.path.join(REPO, "mkdocs.yml"), encoding="utf-8") as f:
        config = yaml.safe_load(f)
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in (("missing", "[a page](nowhere.md)"),
                       ("outside", "[a file](../no/such/file.md)"),
                       ("anchor", "# Title\n\n[a section](#no-such-section)")):
        (docs / "index.md").write_text(f"# Home\n\n{text}\n")
        small = {"site_name": "t", "docs_dir": str(docs), "nav": ["index.md"],
                 "validation": config["validation"],
                 "hooks": [os.path.join(REPO, "mkdocs_hooks.py")]}
        path = tmp_path / f"{name}.yml"
        path.write_text(yaml.safe_dump(small))
        result = build(str(path), str(tmp_path / f"site_{name}"))
        assert result.returncode != 0, name
        assert {"missing": "nowhere.md", "outside": "file.md",
                "anchor": "no-such-section"}[name] in result.stderr, result.stderr


def test_every_public_name_has_an_api_entry():
    generate = _module("docs/api/generate.py", "generate_api")
    for file, (module, _) in generate.PAGES.items():
        text = open(os.path.join(REPO, "docs", "api", f"{file}.md"), encoding="utf-8").read()
        missing = [n for n in generate.public(module) if f"::: {module}.{n}\n" not in text]
        assert not missing, f"docs/api/{file}.md lacks {missing}: run docs/api/generate.py"
    recipes = open(os.path.join(REPO, "docs", "api", "recipes.md"), encoding="utf-8").read()
    for task in generate.RECIPES:
        assert f"::: kerattn.recipes.{task}\n" in recipes
    on_disk = {f[:-3] for f in os.listdir(os.path.join(REPO, "kerattn", "recipes"))
               if f.endswith(".py") and f not in ("__init__.py", "common.py")}
    assert on_disk == set(generate.RECIPES)


@pytest.mark.parametrize("text, expected", [
    ("a\n\n>>> x = [1]\n>>> x[0]\n1\n\nb",
     "a\n\n```pycon\n>>> x = [1]\n>>> x[0]\n1\n```\n\nb"),
    ("a\n    >>> x\n    1", "a\n    ```pycon\n    >>> x\n    1\n    ```"),
    ("no examples [here](x.md)", "no examples [here](x.md)"),
])
def test_doctests_become_code(text, expected):
    fence = _module("docs_doctests.py", "docs_doctests").fence_doctests
    assert fence(text) == expected

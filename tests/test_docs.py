"""The README is a front page, and every link in the Markdown pages resolves.

Pure text: no backend is involved (each pytest process runs it in a few
milliseconds). A new feature documents itself in `docs/`, which the README
links; the README stays under `README_LIMIT` characters.
"""

import glob
import os
import re
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README_LIMIT = 15_000
PAGES = ["README.md", *sorted(os.path.relpath(p, REPO) for p in
                              glob.glob(os.path.join(REPO, "docs", "*.md"))),
         "tests/README.md", "zoo/README.md", "benchmarks/README.md"]

_FENCE = re.compile(r"^(```|~~~)")
_INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+\1")
_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)")
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def _prose_lines(text):
    """The lines outside fenced code blocks (inline code spans kept: a
    heading's anchor reads them)."""
    fenced = False
    for line in text.splitlines():
        if _FENCE.match(line.lstrip()):
            fenced = not fenced
            continue
        if not fenced:
            yield line


def slug(heading):
    """GitHub's anchor for a heading: its text as rendered (code spans and
    links reduced to their text, emphasis marks dropped), lower-cased,
    every character but letters, digits, `_`, `-` and spaces removed, each
    space a hyphen."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = text.replace("`", "").replace("*", "")
    text = re.sub(r"<[^>]+>", "", text).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path):
    """Every heading anchor of a Markdown file, duplicates numbered `-1`,
    `-2`, ... as GitHub numbers them."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    seen, found = {}, set()
    for line in _prose_lines(text):
        match = _HEADING.match(line)
        if not match:
            continue
        base = slug(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(path):
    """The link targets of a Markdown file: inline links and images, and
    reference definitions, outside code blocks and code spans."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    targets = []
    for line in _prose_lines(text):
        prose = _INLINE_CODE.sub("", line)
        targets += _LINK.findall(prose)
        reference = _REFERENCE.match(prose)
        if reference:
            targets.append(reference.group(1))
    return targets


def broken_links(page):
    """`[(target, why)]` for each link of `page` (relative to the repository)
    that does not resolve."""
    path = os.path.join(REPO, page)
    broken = []
    for target in links(path):
        if (target.startswith(("/", "~", "file:", "\\"))
                or re.match(r"^[A-Za-z]:[\\/]", target)):
            broken.append((target, "an absolute local path: link relative to the page"))
            continue
        if _SCHEME.match(target):
            continue   # http(s), mailto: not checked here
        file_part, _, anchor = target.partition("#")
        resolved = (os.path.normpath(os.path.join(os.path.dirname(path), file_part))
                    if file_part else path)
        if os.path.commonpath([resolved, REPO]) != REPO:
            broken.append((target, "outside the repository"))
        elif not os.path.exists(resolved):
            broken.append((target, f"no file {os.path.relpath(resolved, REPO)}"))
        elif anchor and resolved.endswith(".md") and anchor not in anchors(resolved):
            broken.append((target, f"no heading #{anchor} in "
                                   f"{os.path.relpath(resolved, REPO)}"))
    return broken


def test_readme_is_a_front_page():
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
        size = len(f.read())
    assert size < README_LIMIT, (
        f"README.md has {size:,} characters, over {README_LIMIT:,}: move "
        "reference material to a page under docs/ and link it")


def test_every_docs_page_is_linked_from_the_readme():
    linked = {os.path.normpath(t.partition("#")[0])
              for t in links(os.path.join(REPO, "README.md"))}
    pages = {p for p in PAGES if p.startswith("docs" + os.sep)}
    assert pages, "no page under docs/"
    assert pages <= linked, f"not linked from README.md: {sorted(pages - linked)}"


@pytest.mark.parametrize("page", PAGES)
def test_every_link_resolves(page):
    assert os.path.exists(os.path.join(REPO, page)), page
    broken = broken_links(page)
    assert not broken, f"{page}: " + "; ".join(f"{t} ({why})" for t, why in broken)


def test_the_link_check_finds_what_breaks(tmp_path, monkeypatch):
    """The checker itself, on a page with one link of each kind."""
    monkeypatch.setattr(sys.modules[__name__], "REPO", str(tmp_path))
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text(
        "# Export and loading (`kerattn.export`, `kerattn.load_model`)\n"
        "## Notes\n## Notes\n```\n# not a heading\n[x](nowhere.md)\n```\n")
    (tmp_path / "README.md").write_text(
        "[ok](docs/a.md#export-and-loading-kerattnexport-kerattnload_model)\n"
        "[dup](docs/a.md#notes-1) [web](https://keras.io/x) `[code](none.md)`\n"
        "[missing file](docs/b.md) [missing heading](docs/a.md#not-a-heading)\n"
        "[local](/work/x.md) [self](#nowhere)\n")
    assert broken_links("README.md") == [
        ("docs/b.md", "no file docs/b.md"),
        ("docs/a.md#not-a-heading", "no heading #not-a-heading in docs/a.md"),
        ("/work/x.md", "an absolute local path: link relative to the page"),
        ("#nowhere", "no heading #nowhere in README.md"),
    ]

"""MkDocs hooks of the site (mkdocs.yml's `hooks`).

- `on_files`: the repository's pages outside docs/ join the site under
  `repo/` (zoo/README.md, every zoo/<model>/RESULTS.md and its pictures,
  benchmarks/README.md and its figures, tests/README.md), so that the
  results are in the site, rendered from the same files as on disk.
- `on_page_markdown`: each link of a page is resolved against the page's
  place in the repository; one to a page or picture of the site is
  rewritten to its place there (`../zoo/README.md` in docs/ ->
  `repo/zoo/README.md`), one to a file the site does not carry (a script,
  a notebook) becomes its repository path in code; one to no file at all
  is left as it is, for `--strict` to report.
"""

import os
import posixpath
import re

from mkdocs.structure.files import File

ROOT = os.path.dirname(os.path.abspath(__file__))
# The repository's folders whose Markdown pages and pictures join the site.
EXTERNAL = ("zoo", "benchmarks", "tests")
PAGES = {"README.md", "RESULTS.md"}
PICTURES = (".png", ".svg")
LINK = re.compile(r"(!?)\[([^\]]*)\]\(([^)\s]+)\)")


def _external(top):
    """Repository paths (posix) of `top`'s pages and pictures."""
    found = []
    for folder, dirs, files in os.walk(os.path.join(ROOT, top)):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "_")))
        for name in sorted(files):
            if name in PAGES or name.endswith(PICTURES):
                path = os.path.relpath(os.path.join(folder, name), ROOT)
                found.append(path.replace(os.sep, "/"))
    return found


def on_files(files, config):
    for path in (p for top in EXTERNAL for p in _external(top)):
        files.append(_file(path, config))
    return files


def _file(path, config):
    """The repository file `path` as the site's `repo/<path>`."""
    return File.generated(config, f"repo/{path}",
                          abs_src_path=os.path.join(ROOT, path))


def _repo_path(page_src):
    """Where a page of the site lives in the repository."""
    return page_src[len("repo/"):] if page_src.startswith("repo/") else f"docs/{page_src}"


def _site_path(repo_path, site_files):
    """The site's name for a repository file, or None if it is not in it."""
    candidates = ([repo_path[len("docs/"):]] if repo_path.startswith("docs/") else []) + [
        f"repo/{repo_path}"]
    return next((c for c in candidates if c in site_files), None)


def on_page_markdown(markdown, page, config, files):
    site_files = {f.src_uri for f in files}
    here = _repo_path(page.file.src_uri)

    def rewrite(match):
        bang, text, target = match.groups()
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            return match.group(0)
        path, _, anchor = target.partition("#")
        resolved = posixpath.normpath(posixpath.join(posixpath.dirname(here), path))
        site = _site_path(resolved, site_files)
        if site is None and not os.path.exists(os.path.join(ROOT, resolved)):
            return match.group(0)   # broken: left for --strict to report
        if site is None:   # a file the site does not carry: its path
            return f"{text} (`{resolved}`)" if text else f"`{resolved}`"
        relative = posixpath.relpath(site, posixpath.dirname(page.file.src_uri) or ".")
        return f"{bang}[{text}]({relative}{'#' + anchor if anchor else ''})"

    return LINK.sub(rewrite, markdown)

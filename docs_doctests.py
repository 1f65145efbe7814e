"""A griffe extension of the site (mkdocs.yml): each docstring's doctest
examples (`>>>` lines, their continuations and their expected output, up
to a blank line) become fenced Python console code, so that the API pages
show them as code, as `help()` and the doctests read them, rather than as
Markdown prose (where `x[0]` would read as a link)."""

import griffe


def fence_doctests(text):
    """`text` with each doctest block fenced (tests/test_site.py)."""
    out, block, indent = [], [], ""
    for line in text.split("\n") + [None]:
        if block and (line is None or not line.strip()):
            out += [f"{indent}```pycon", *block, f"{indent}```"]
            block = []
        if line is None:
            break
        if block:
            block.append(line)
        elif line.strip().startswith(">>>"):
            indent = line[:len(line) - len(line.lstrip())]
            block = [line]
        else:
            out.append(line)
    return "\n".join(out)


class DoctestsAsCode(griffe.Extension):
    def on_instance(self, *, obj, **kwargs):
        if obj.docstring is not None:
            obj.docstring.value = fence_doctests(obj.docstring.value)

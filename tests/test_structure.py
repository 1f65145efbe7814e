"""The package's structure, read from its source with `ast` (no import runs).

- No import cycle: every `import` and `from ... import` in every module,
  function-level ones included, is an edge; no exception list. An import
  of a name from the module's own package (its `__init__`) counts too; the
  packages above a submodule it imports are already being imported.
- Distribution sits below the models: `kerattn.distribute` imports no
  model, recipe or decoder (the zoo's layouts live in the zoo).
- The recurrent decoder knows no attention family: `kerattn/layers/
  attention_rnn.py` calls its attention through the step protocol of
  `BaseAttention` and reads no capability flag, nor tests its type.
- One argument-checking module: `kerattn/checks.py` is the only module
  that writes `raise ValueError`; the others call it.
- The zoo's recurrent layers are kerattn's `GRU` / `LSTM`, never Keras'
  own (the same weights and results, a faster loop).
"""

import ast
import os

import pytest

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                    "kerattn")


def modules():
    """`{"kerattn.layers.scan": path, "kerattn.layers": .../__init__.py, ...}`."""
    found = {}
    for directory, _, files in os.walk(ROOT):
        for file in files:
            if not file.endswith(".py"):
                continue
            path = os.path.join(directory, file)
            parts = os.path.relpath(path, os.path.dirname(ROOT))[:-3].split(os.sep)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


def ancestors(name):
    parts = name.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts))}


def imports_of(name, path, known):
    """The kerattn modules that running `name` can import, at any depth."""
    is_package = path.endswith("__init__.py")
    package = name if is_package else name.rsplit(".", 1)[0]
    targets = set()
    for node in ast.walk(ast.parse(open(path).read(), path)):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module
            for alias in node.names:
                child = f"{module}.{alias.name}"
                targets.add(child if child in known else module)
    edges = set()
    for target in targets:
        if target.split(".")[0] != "kerattn":
            continue
        while target not in known:  # `import kerattn.x.Y` of an attribute
            target = target.rsplit(".", 1)[0]
        # Importing a.b.c runs a/__init__ and a/b/__init__ first, except the
        # packages this module sits in (they are already being imported):
        # those are no edge when the import is of a submodule, but one when
        # it is of the package itself (a name its __init__ binds).
        for step in ancestors(target) | {target}:
            if step != name and (step == target or step not in ancestors(name)):
                edges.add(step)
    return edges


def graph():
    known = modules()
    return {name: imports_of(name, path, known) for name, path in known.items()}


def cycles(edges):
    """The strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_the_package_has_no_import_cycle():
    edges = graph()
    assert len(edges) > 50  # every module was read
    found = cycles(edges)
    assert not found, "import cycles (function-level imports count):\n" + "\n".join(
        " <-> ".join(c) for c in found)


ABOVE_DISTRIBUTION = ("kerattn.zoo", "kerattn.recipes", "kerattn.decoding",
                      "kerattn.export")


def test_distribution_imports_no_model():
    """`kerattn.distribute` picks the engine and wires a model to it; the
    models (and their layouts) sit above it."""
    edges = graph()["kerattn.distribute"]
    above = sorted(e for e in edges if e.startswith(ABOVE_DISTRIBUTION))
    assert not above, f"kerattn/distribute.py imports {above}"


def test_the_layering_check_can_fail(tmp_path):
    path = tmp_path / "distribute.py"
    path.write_text("def layout_map(name, mesh):\n"
                    "    from kerattn.zoo import GENERATIVE\n")
    edges = imports_of("kerattn.distribute", str(path), set(modules()))
    assert any(e.startswith(ABOVE_DISTRIBUTION) for e in edges)


# What the decoder may use of its attention: `BaseAttention`'s step protocol
# (its class docstring), the key projection of `precompute`, and what any
# Keras layer has.
PROTOCOL = {"initial_state", "step", "draw_noise", "mode_for", "extend_source",
            "sample_of", "project_key", "context_dim", "build", "built",
            "dtype_policy", "compute_dtype"}


def _is_attention(node):
    return (isinstance(node, ast.Name) and node.id == "attention") or (
        isinstance(node, ast.Attribute) and node.attr == "attention")


def attention_uses(source):
    """`(attributes read of an attention, type tests on one)` in `source`:
    `x.attention.name` / `attention.name`, an entry of its state
    (`state["attention"]["name"]`), and `isinstance`, `issubclass`,
    `getattr`, `hasattr` calls with an attention among their arguments."""
    reads, tests = set(), []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and _is_attention(node.value):
            reads.add(node.attr)
        if (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Subscript)
                and isinstance(node.value.slice, ast.Constant)
                and node.value.slice.value == "attention"):
            tests.append(f"its state read at line {node.lineno}")
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in ("isinstance", "issubclass", "getattr",
                                     "hasattr")
                and any(_is_attention(a) for a in node.args)):
            tests.append(f"{node.func.id} at line {node.lineno}")
    return reads, tests


def test_the_decoder_reads_no_attention_flag():
    """Every attention family talks to `AttentionRNN` through the protocol:
    a new family adds no flag read and no branch to the decoder."""
    with open(os.path.join(ROOT, "layers", "attention_rnn.py")) as f:
        reads, tests = attention_uses(f.read())
    assert reads <= PROTOCOL, f"attention_rnn.py reads {sorted(reads - PROTOCOL)}"
    assert not tests, f"attention_rnn.py tests its attention: {tests}"


def test_the_flag_check_can_fail():
    reads, tests = attention_uses(
        "def attend(self):\n"
        "    if self.attention.samples_locations:\n"
        "        pass\n"
        "    if isinstance(self.cell.attention, LocalAttention):\n"
        "        pass\n"
        "    getattr(attention, 'modes', ())\n"
        "    return state['attention']['sample']\n")
    assert "samples_locations" in reads - PROTOCOL
    assert len(tests) == 3


def test_the_cycle_finder_finds_a_cycle():
    # The reader on a made-up package: a function-level import closes it.
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


@pytest.mark.parametrize("source, imported", [
    ("from kerattn.decoding.generate import generate", {"kerattn.decoding",
                                                         "kerattn.decoding.generate"}),
    ("def f():\n    from kerattn import export", {"kerattn.export"}),
    ("from ..datasets import vocabulary", {"kerattn.datasets",
                                           "kerattn.datasets.vocabulary"}),
    ("from . import scan", {"kerattn.layers.scan"}),
    # The module's own package: a name its __init__ binds is an edge to it
    # (a cycle when the package imports the module); a submodule is not.
    ("from kerattn.layers import BahdanauAttention", {"kerattn.layers"}),
    ("def f():\n    from . import BahdanauAttention", {"kerattn.layers"}),
    ("import kerattn", {"kerattn"}),
    ("from kerattn.layers import scan", {"kerattn.layers.scan"}),
    ("import numpy", set()),
])
def test_the_reader_sees_every_kind_of_import(tmp_path, source, imported):
    path = tmp_path / "module.py"
    path.write_text(source)
    known = set(modules())
    assert imports_of("kerattn.layers.module", str(path), known) == imported


def inline_value_errors():
    found = []
    for name, path in sorted(modules().items()):
        if name == "kerattn.checks":
            continue
        for node in ast.walk(ast.parse(open(path).read(), path)):
            if isinstance(node, ast.Raise) and node.exc is not None:
                exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
                if isinstance(exc, ast.Name) and exc.id == "ValueError":
                    found.append(f"{os.path.relpath(path, ROOT)}:{node.lineno}")
    return found


def test_argument_checks_live_in_one_module():
    found = inline_value_errors()
    assert not found, ("raise ValueError outside kerattn/checks.py (call "
                       "kerattn.checks instead):\n" + "\n".join(found))


# Keras' recurrent layers (and its loop over any cell), which
# kerattn.layers' GRU and LSTM replace in the zoo (the same weights and
# results, the encoder's loop done as the decoder's, torch's fused kernels).
KERAS_RECURRENT = {"GRU", "LSTM", "SimpleRNN", "RNN"}


def keras_recurrent_uses(source):
    """Calls of Keras' recurrent layers in `source`, by line: through
    `keras.layers.X`, a name bound to `keras.layers` (`from keras import
    layers`, `import keras.layers as L`), or `from keras.layers import X`."""
    tree = ast.parse(source)
    aliases = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "keras":
            aliases |= {a.asname or a.name for a in node.names if a.name == "layers"}
        if isinstance(node, ast.Import):
            aliases |= {a.asname for a in node.names
                        if a.name == "keras.layers" and a.asname}

    def is_layers(value):   # keras.layers, or a name bound to it
        return ((isinstance(value, ast.Name) and value.id in aliases)
                or (isinstance(value, ast.Attribute) and value.attr == "layers"
                    and isinstance(value.value, ast.Name) and value.value.id == "keras"))

    found = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in KERAS_RECURRENT and is_layers(node.func.value)):
            found.append(f"keras.layers.{node.func.attr} at line {node.lineno}")
        if (isinstance(node, ast.ImportFrom) and node.module == "keras.layers"
                and any(a.name in KERAS_RECURRENT for a in node.names)):
            found.append(f"from keras.layers import at line {node.lineno}")
    return found


def test_the_zoo_encodes_with_kerattns_recurrent_layers():
    """docs/layers.md: "The zoo's recurrent encoders are these"
    (`kerattn.layers.GRU` / `LSTM`): no zoo module builds Keras' own."""
    found = []
    for name, path in modules().items():
        if name.startswith("kerattn.zoo"):
            with open(path) as f:
                found += [f"{name}: {use}" for use in keras_recurrent_uses(f.read())]
    assert not found, "Keras' GRU/LSTM in the zoo:\n" + "\n".join(found)


def test_the_recurrent_check_can_fail():
    found = keras_recurrent_uses(
        "import keras\n"
        "from keras.layers import LSTM\n"
        "from keras import layers\n"
        "import keras.layers as L\n"
        "encoder = keras.layers.Bidirectional(keras.layers.GRU(4))\n"
        "other = keras.layers.Dense(4)\n"
        "looped = layers.RNN(layers.LSTMCell(4))\n"
        "more = L.LSTM(4)\n")
    assert sorted(found) == ["from keras.layers import at line 2",
                             "keras.layers.GRU at line 5",
                             "keras.layers.LSTM at line 8",
                             "keras.layers.RNN at line 7"]

"""Hostile requests to an exported translator, served in a fresh process.

A `Translator.export` SavedModel is served the way `examples/serve_translator.py`
serves it (tensorflow and tensorflow-text only, kerattn unimportable) and
sent, one request each: empty strings, a 100,000-character string, control
characters, invalid UTF-8 bytes, right-to-left marks, only unknown words,
format specifiers, and a batch of 10,000 strings. Each returns one
translation per input, as valid UTF-8; the server process survives them all
and still translates a plain request afterwards. The time each took is
printed (`-s`), not asserted; the subprocess' timeout only catches a hang.
"""

import json
import os
import subprocess
import sys

import keras
import pytest

from kerattn import zoo
from kerattn.datasets import WordVocabulary, tsv_pairs
from kerattn.decoding import Translator

HERE = os.path.dirname(os.path.abspath(__file__))
PAIRS = tsv_pairs(os.path.join(HERE, "data", "gettext_fr_sample.tsv"))

# name -> a Python expression for the list of byte strings sent (evaluated
# in the server, so that 10,000 strings do not cross the command line).
REQUESTS = {
    "empty strings": "[b'', b'', b'']",
    "100,000 characters": "[('Cannot open file %s ' * 5000).encode()]",
    "control characters": "[bytes(range(0, 32)), b'open\\x00file\\x1b[31m', b'\\x7f\\x08\\x0c']",
    "invalid UTF-8": "[b'\\xff\\xfe\\xfd', b'open \\xc3\\x28 file', b'\\xed\\xa0\\x80 surrogate', b'\\xf8\\x88\\x80\\x80\\x80']",
    "right-to-left marks": "[s.encode() for s in ['\\u202eelif nepo\\u202c', '\\u200fPermission denied\\u200e', '\\u05e9\\u05dc\\u05d5\\u05dd \\u0645\\u0631\\u062d\\u0628\\u0627']]",
    "only unknown words": "[b'zyxxy qwpfk vvrrt', b'Xyzzy' * 40]",
    "format specifiers": "[b'%s %n %x %p %%', b'{0} {1!r} {__class__}', b'%(name)s ${HOME} `rm -rf /`']",
    "10,000 strings": "[(('Cannot open file %s number ' + str(i)) if i % 3 else '').encode() for i in range(10000)]",
}

SERVE = r"""
import json, sys, time
sys.modules["kerattn"] = None
import tensorflow as tf
import tensorflow_text  # noqa: F401
path, requests = sys.argv[1], json.loads(sys.argv[2])
model = tf.saved_model.load(path)
out = {}
for name, expression in requests.items():
    texts = eval(expression)
    start = time.perf_counter()
    try:
        result = model.serve(tf.constant(texts, tf.string))["translation"].numpy()
        translations = [t.decode("utf-8") for t in result]
        out[name] = {"ok": len(translations) == len(texts),
                     "inputs": len(texts), "outputs": len(translations),
                     "example": translations[0][:60]}
    except Exception as error:
        out[name] = {"ok": False, "error": type(error).__name__ + ": " + str(error)[:300]}
    out[name]["seconds"] = round(time.perf_counter() - start, 2)
after = model.serve(tf.constant(["Cannot open file %s"]))["translation"].numpy()
out["afterwards"] = {"ok": len(after) == 1, "example": after[0].decode()}
print("RESULT" + json.dumps(out))
"""


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    src = WordVocabulary.build([s for s, _ in PAIRS], 500)
    tgt = WordVocabulary.build([t for _, t in PAIRS], 500)
    keras.utils.set_random_seed(0)
    model = zoo.bahdanau_nmt(len(src), len(tgt), preset="tiny")
    translator = Translator(model, src, tgt, max_length=12)
    path = str(tmp_path_factory.mktemp("served") / "translator")
    translator.export(path, batch_size=16, max_source_length=64)
    return path


def test_hostile_requests_get_translations_and_the_server_survives(exported):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(
        [sys.executable, "-I", "-c", SERVE, exported, json.dumps(REQUESTS)],
        capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = [x for x in proc.stdout.splitlines() if x.startswith("RESULT")][-1]
    served = json.loads(line[len("RESULT"):])
    print("\n" + "\n".join(f"{name}: {row}" for name, row in served.items()))
    for name in REQUESTS:
        assert served[name]["ok"], (name, served[name])
    assert served["10,000 strings"]["outputs"] == 10000
    assert served["afterwards"]["ok"]

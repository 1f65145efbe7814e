"""Train a small translator, export it as a SavedModel, serve it elsewhere.

    python examples/export_translator.py                  # ~3 minutes
    KERAS_BACKEND=jax python examples/export_translator.py
    KERAS_BACKEND=torch python examples/export_translator.py   # via .keras under TF

1. Trains `kerattn.zoo.bahdanau_nmt` on the English -> French gettext
   messages of this machine (`kerattn.datasets.gettext_pairs`) for a few
   minutes with `model.fit`.
2. `Translator.export(path, beam_width=4)`: a TensorFlow SavedModel whose
   `serve` signature maps a batch of strings to a batch of strings, with
   tokenisation and beam search inside the graph.
3. Runs `examples/serve_translator.py` (which imports only tensorflow and
   tensorflow-text) in a separate Python process, and checks it translates exactly as the Python
   `Translator` does.
"""

import argparse
import os
import subprocess
import sys

import keras

import kerattn
from kerattn.datasets import WordVocabulary, gettext_pairs, translation_arrays
from kerattn.decoding import Translator
from kerattn.losses import MaskedSparseCrossentropy
from kerattn.recipes.common import compile_and_fit

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--minutes", type=float, default=2.0,
                   help="the training budget: it stops at --epochs or here")
    p.add_argument("--epochs", type=int, default=30)
    p.add_argument("--max-tokens", type=int, default=8)
    p.add_argument("--size", choices=("tiny", "small", "base", "paper"),
                   default="small", help="bahdanau_nmt's preset")
    p.add_argument("--output", default="outputs/export")
    args = p.parse_args()
    keras.utils.set_random_seed(0)

    # === Data: short English -> French software messages ===
    splits = gettext_pairs("fr")
    src = WordVocabulary.build([s for s, _ in splits["train"]], 4000)
    tgt = WordVocabulary.build([t for _, t in splits["train"]], 4000)
    x, y, _ = translation_arrays(splits["train"], src, tgt, args.max_tokens)
    _, _, test = translation_arrays(splits["test"], src, tgt, args.max_tokens)
    print(f"backend {keras.backend.backend()}: {len(y)} training pairs")

    # === Train ===
    model = kerattn.zoo.bahdanau_nmt(len(src), len(tgt), preset=args.size)
    compile_and_fit(model, (x, y, 64), loss=MaskedSparseCrossentropy(),
                    learning_rate=2e-3, epochs=args.epochs, minutes=args.minutes)

    # === Export: strings in, strings out ===
    translator = Translator(model, src, tgt, max_length=2 * args.max_tokens)
    path = os.path.join(args.output, "en_fr")
    translator.export(path, beam_width=4)
    print(f"exported {path}")

    # === Serve from a separate process that cannot import kerattn ===
    sources = [s for s, _ in test[:8]]
    want = translator(sources, beam_width=4)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    served = subprocess.run(
        [sys.executable, "-I", os.path.join(HERE, "serve_translator.py"), path,
         *sources], capture_output=True, text=True, env=env, check=True)
    got = [line.split("\t", 1)[1] for line in served.stdout.splitlines()]
    for (source, reference), translation in zip(test[:8], got):
        print(f"{source}\n  -> {translation}\n  (reference: {reference})")
    assert got == want, "the SavedModel and the Python Translator disagree"
    print("served translations == Python Translator: yes")


if __name__ == "__main__":
    main()

"""Serve an exported translator: tensorflow + tensorflow-text only.

    python examples/serve_translator.py outputs/export/en_fr "Open file" "Permission denied"

Nothing of kerattn (or of the backend it was trained on) is imported: the
SavedModel holds the vocabularies, the tokeniser, the model and the search.
"""

import sys

import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the ops a WordPiece vocabulary uses)


def main():
    path, texts = sys.argv[1], sys.argv[2:] or [line.rstrip("\n") for line in sys.stdin]
    model = tf.saved_model.load(path)
    result = model.serve(tf.constant(texts, tf.string))
    for source, target in zip(texts, result["translation"].numpy()):
        print(f"{source}\t{target.decode()}")


if __name__ == "__main__":
    main()

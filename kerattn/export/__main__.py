"""`python -m kerattn.export {translator,captioner,model} MODEL.keras OUT`.

Exports a `.keras` file saved under any backend as a TensorFlow SavedModel;
run it under `KERAS_BACKEND=tensorflow` (or jax). The PyTorch backend uses
it through `kerattn.export.command_line.run_under_tensorflow`. This is the
one module of the export package that knows the codecs: it sits on top
(nothing imports it), so the package below it has no import cycle.
"""

import argparse
import json

import keras

from kerattn import checks
from kerattn.datasets.text_codec import MAX_VOCABULARY_JSON, vocabulary_from_json
from kerattn.decoding import Captioner, Translator
from kerattn.export.model import export_model
from kerattn.saving import load_model


def main(argv=None):
    """`python -m kerattn.export {translator,captioner,model} MODEL.keras OUT`."""
    parser = argparse.ArgumentParser(
        description="Export a kerattn .keras file (saved under any backend) "
                    "as a TensorFlow SavedModel. Run with KERAS_BACKEND=tensorflow.")
    parser.add_argument("kind", choices=["translator", "captioner", "model"])
    parser.add_argument("model", help="the .keras file")
    parser.add_argument("output", help="the SavedModel directory to write")
    parser.add_argument("--options", help="JSON file: vocabularies as "
                        "to_json() strings, beam_width, max_length, ...")
    parser.add_argument("--source-vocab", help="JSON file (translator)")
    parser.add_argument("--target-vocab", help="JSON file (translator, captioner)")
    parser.add_argument("--beam-width", type=int)
    parser.add_argument("--max-length", type=int)
    args = parser.parse_args(argv)
    if keras.backend.backend() == "torch":
        parser.error("run under KERAS_BACKEND=tensorflow (or jax)")

    options = {}
    if args.options:
        with open(args.options, encoding="utf-8") as f:
            options = json.loads(f.read(MAX_VOCABULARY_JSON + 1))
        checks.instance("--options", options, dict, "a JSON object")
    for key, file in (("source_vocab", args.source_vocab),
                      ("target_vocab", args.target_vocab)):
        if file:
            with open(file, encoding="utf-8", errors="strict") as f:
                text = f.read(MAX_VOCABULARY_JSON + 1)   # bounded read
            options[key if args.kind == "translator" else "vocab"] = text
    for key in ("beam_width", "max_length"):
        if getattr(args, key) is not None:
            options[key] = getattr(args, key)

    model = load_model(args.model, compile=False)
    search_kwargs = options.pop("search_kwargs", {})
    if args.kind == "translator":
        translator = Translator(model, vocabulary_from_json(options.pop("source_vocab")),
                                vocabulary_from_json(options.pop("target_vocab")))
        translator.export(args.output, **options, **search_kwargs)
    elif args.kind == "captioner":
        captioner = Captioner(model, vocabulary_from_json(options.pop("vocab")))
        captioner.export(args.output, **options, **search_kwargs)
    else:
        export_model(model, args.output)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()

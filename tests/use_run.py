"""Load a run folder in a fresh process and use it, as a user would:

    python tests/use_run.py FOLDER [EXPORT_DIR]

Prints one JSON line: the task, and what the run gave back (`translation`:
the translations of two texts; `summarisation`: the summary of a text made
of one word outside the vocabulary, with the switch p_gen set to copy;
`g2p`: a word streamed letter by letter and decoded offline;
`classification`: a document's label name). With `EXPORT_DIR`, a
translation run is also exported (`Translator.export`) and the SavedModel,
loaded with TensorFlow alone, serves the same strings. `tests/test_examples.py`
runs it on the folders `examples/fit.py` wrote.
"""

import json
import sys

import numpy as np


def main(folder, export_dir=None):
    import keras

    import kerattn

    run = kerattn.load_run(folder)
    out = {"task": run.task, "vocabularies": sorted(run.vocabularies)}
    if run.task == "translation":
        texts = ["File not found", "Permission denied"]
        translator = run.translator(max_length=8)
        out["outputs"] = translator(texts)
        if export_dir:
            import tensorflow as tf
            import tensorflow_text  # noqa: F401  (the SavedModel's ops)

            translator.export(export_dir)
            loaded = tf.saved_model.load(export_dir)   # kept: it owns the variables
            served = loaded.serve(tf.constant(texts))
            out["served"] = [t.decode() for t in served["translation"].numpy()]
    elif run.task == "summarisation":
        # Copying certain, not learned: p_gen = sigmoid(-30) ~ 0, and the
        # source is one word outside the vocabulary (extended id V).
        switch = run.model.get_layer("pointer").switch
        switch.kernel.assign(np.zeros(switch.kernel.shape, "float32"))
        switch.bias.assign(np.full(switch.bias.shape, -30.0, "float32"))
        word = "zyzzyvaqx"
        out["oov"] = word
        out["known"] = word in run.source_vocab.stoi
        out["outputs"] = run.translator(max_length=3)([word])
    elif run.task == "g2p":
        layer = run.model.get_layer("decoder").attention
        if run.model.reads(0) is None:   # a hard monotonic attention
            # r = 10: p = sigmoid(e + r) >= 0.5 wherever it reads, so the
            # attention stops at once and phonemes come before the word ends.
            layer.score_bias.assign(10.0)
        else:   # a wait-k schedule: EOS unlikely, phonemes on the schedule
            bias = run.model.get_layer("output_projection").bias
            values = keras.ops.convert_to_numpy(bias)
            values[run.target_vocab.eos_id] = -10.0
            bias.assign(values)
        out["end_marker"] = getattr(run.source_vocab, "end_marker", False)
        word = "phoneme"
        decoder = run.streaming_decoder(max_length=12)
        chunks = [decoder.feed(c) for c in word] + [decoder.finish()]
        out["chunks"] = chunks
        # Offline greedy, as the streaming decoder decodes (the run's own
        # search may be a beam).
        out["offline"] = run.translator(max_length=12)([word], beam_width=1)[0]
        out["can_stream"] = list(run.model.can_stream())
    elif run.task == "classification":
        from kerattn.recipes.classification import arrays, model_inputs

        text = "A library of attention layers for Keras. It runs on three backends."
        _, x, _ = arrays([{"text": text, "label": run.labels[0]}],
                         run.vocabularies["vocab"], run.labels)
        probabilities = np.asarray(run.model.predict(model_inputs(run.model, x),
                                                     verbose=0))[0]
        out["label"] = run.labels[int(np.argmax(probabilities))]
        out["labels"] = run.labels
    print(json.dumps(out))


if __name__ == "__main__":
    main(*sys.argv[1:3])

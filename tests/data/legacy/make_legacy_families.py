"""How the stateful families' files in this folder were written.

Issue 58 moves each attention's state into the attention (one step
protocol between the recurrent decoder and every attention, a named
decoder state). Before that change, this script saved with the decoder of
be192ae (unchanged since: the alignment history a positional state of
`AttentionRNN`, streaming found by layer names) one small `.keras` file per stateful
family, with its inputs, logits, and greedy and beam tokens and scores;
for the streaming G2P model also the letters, phonemes and what
`StreamingDecoder` committed letter by letter. `tests/test_legacy_files.py`
checks that they load and decode as recorded on every backend. It ran
under JAX:

    KERAS_BACKEND=jax python tests/data/legacy/make_legacy_families.py tests/data/legacy

The translation models and the pointer-generator train one Adam step
from a fixed seed; the G2P model's weights are drawn from NumPy.
"""

import os
import sys

import keras
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
import zoo_cases  # noqa: E402

from kerattn import decoding, zoo  # noqa: E402
from kerattn.datasets import SymbolVocabulary  # noqa: E402
from kerattn.losses import MaskedSparseCrossentropy  # noqa: E402

MAX_LENGTH = 7
WORDS = ["phoneme", "reads", "th"]


def _translation_case(make):
    def build():
        keras.utils.set_random_seed(0)
        model = make()
        x, y = zoo_cases._translation(np.random.default_rng(0))
        return model, x, y
    return build


def _pointer_generator():
    keras.utils.set_random_seed(0)
    model = zoo.pointer_generator(30, preset="tiny", coverage=True)
    x, y = zoo_cases._translation(np.random.default_rng(0))
    x["source_ids"][0, 2] = 31        # an OOV word: extended id V + 1
    x["target_in_ids"][0, 2] = 31
    return model, x, y


CASES = {
    "bahdanau_nmt_coverage": _translation_case(
        lambda: zoo.bahdanau_nmt(30, 30, preset="tiny", coverage=True)),
    "luong_nmt_location_sensitive": _translation_case(
        lambda: zoo.luong_nmt(30, 30, preset="tiny", attention="location-sensitive")),
    "bahdanau_nmt_hard_monotonic": _translation_case(
        lambda: zoo.bahdanau_nmt(30, 30, preset="tiny", attention="hard-monotonic")),
    "luong_nmt_mocha": _translation_case(
        lambda: zoo.luong_nmt(30, 30, preset="tiny", attention="mocha")),
    "pointer_generator_coverage": _pointer_generator,
}


def _loss(model):
    if isinstance(model, zoo.PointerGeneratorNetwork):
        return MaskedSparseCrossentropy(from_log_probs=True)
    return MaskedSparseCrossentropy()


def _record(model, x, path, **extra):
    logits = keras.ops.convert_to_numpy(model.predict(x, verbose=0))
    source = x["source_ids"]
    greedy = model.generate(source, max_length=MAX_LENGTH)
    beam = model.generate(source, max_length=MAX_LENGTH, strategy="beam",
                          beam_width=3, never_worse_than_greedy=False)
    np.savez(path, logits=logits,
             **{f"greedy_{k}": keras.ops.convert_to_numpy(greedy[k])
                for k in ("tokens", "scores")},
             **{f"beam_{k}": keras.ops.convert_to_numpy(beam[k])
                for k in ("tokens", "scores")},
             **{f"x_{k}": v for k, v in x.items()}, **extra)


def _g2p_streaming(directory):
    """The "g2p-streaming" preset at a tiny size, hard monotonic; the EOS
    bias and the score bias set as tests/test_g2p.py's streaming test sets
    them (r = 1: the attention stops early, and every word's phonemes are
    committed at its first letter)."""
    letters = SymbolVocabulary.build(WORDS, separator="")
    phonemes = SymbolVocabulary.build(["F OW N IY M", "R IY D Z", "TH"])
    keras.utils.set_random_seed(0)
    model = zoo.luong_nmt(len(letters), len(phonemes), attention="hard-monotonic",
                          preset="g2p-streaming", units=8, embedding_dim=6)
    rng = np.random.default_rng(0)
    model.set_weights([rng.normal(0, 0.5, w.shape).astype("float32")
                       for w in model.get_weights()])
    bias = model.get_layer("output_projection").bias
    values = keras.ops.convert_to_numpy(bias)
    values[phonemes.eos_id] = -2.0
    bias.assign(values)
    model.get_layer("decoder").attention.score_bias.assign(1.0)
    model.save(os.path.join(directory, "g2p_streaming.keras"))
    ids = [letters.encode(w) for w in WORDS]
    source = np.array([row + [0] * (7 - len(row)) for row in ids], "int32")
    target = np.full((len(WORDS), 4), phonemes.bos_id, "int32")
    streamed, first = [], []
    for word in WORDS:
        decoder = decoding.StreamingDecoder(model, letters, phonemes,
                                            max_length=8)
        chunks = [decoder.feed(c) for c in word] + [decoder.finish()]
        streamed.append(" ".join(sum(chunks, [])))
        first.append(next(k for k, c in enumerate(chunks) if c))
    _record(model, {"source_ids": source, "target_in_ids": target},
            os.path.join(directory, "g2p_streaming.npz"),
            letters=np.array(letters.itos), phonemes=np.array(phonemes.itos),
            words=np.array(WORDS), streamed=np.array(streamed),
            first_commit=np.array(first))


def main(directory):
    for name, build in CASES.items():
        model, x, y = build()
        model.compile(keras.optimizers.Adam(1e-2), _loss(model))
        model.fit(x, y, batch_size=zoo_cases.B, epochs=1, verbose=0)
        model.save(os.path.join(directory, f"{name}.keras"))
        _record(model, x, os.path.join(directory, f"{name}.npz"))
        print(name, os.path.getsize(os.path.join(directory, f"{name}.keras")))
    _g2p_streaming(directory)


if __name__ == "__main__":
    main(sys.argv[1])

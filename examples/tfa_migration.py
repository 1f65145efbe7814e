"""The TensorFlow Addons NMT tutorial, ported from `tfa.seq2seq` to kerattn.

TensorFlow Addons' "Neural machine translation with attention" tutorial
(docs/tutorials/networks_seq2seq_nmt.ipynb in tensorflow/addons) builds:

    encoder = Embedding + LSTM(return_sequences=True, return_state=True)
    decoder = tfa.seq2seq.AttentionWrapper(LSTMCell(units),
                  tfa.seq2seq.LuongAttention(units) or BahdanauAttention(units),
                  attention_layer_size=units)
    training:  tfa.seq2seq.BasicDecoder(cell, TrainingSampler(), output_layer=fc)
    greedy:    BasicDecoder(cell, GreedyEmbeddingSampler(), output_layer=fc)
    beam:      tile_batch(...), get_initial_state(...).clone(cell_state=...),
               BeamSearchDecoder(cell, beam_width, output_layer=fc)

Here the same model is one `kerattn.layers.AttentionRNN` (LSTM, Luong's
order, input feeding: exactly the loop `AttentionWrapper` runs) inside a
functional model that owns `encode` and `step`, and decoding is one call of
`kerattn.decoding.generate` (greedy or beam search). The model runs on
TensorFlow, JAX and PyTorch. docs/migrating_from_tfa.md walks through it
beside the tfa code.

    python examples/tfa_migration.py                     # Luong attention
    python examples/tfa_migration.py --attention bahdanau --epochs 5
    KERAS_BACKEND=jax python examples/tfa_migration.py

The data are this machine's English -> French gettext messages
(`kerattn.datasets.gettext_pairs`), standing in for the tutorial's
downloaded Spanish -> English pairs. Import `build_model`,
`beam_translate` and `greedy_translate` to use the parts, and
`load_tfa_variables` to load a trained tfa decoder's variables.
"""

import argparse

import keras
import numpy as np
from keras import ops

import kerattn
from kerattn import checks
from kerattn.layers import AttentionRNN, BahdanauAttention, LuongAttention
from kerattn.zoo import GenerativeModel

ATTENTIONS = ("luong", "bahdanau")


# === The model: encoder, AttentionWrapper's loop, output layer ===
#
# Shapes: batch B, source length S, target length T, vocabularies V_x, V_y,
# embedding size m, units n. PAD = 0 on both sides (masked everywhere).

def build_model(source_vocab_size, target_vocab_size, embedding_dim=256,
                units=1024, attention="luong"):
    """The tutorial's encoder-decoder: `{source_ids, target_in_ids}` -> logits.

    Args:
        source_vocab_size, target_vocab_size: vocabulary sizes (PAD = 0).
        embedding_dim: the tutorial's `embedding_dim` (256).
        units: the tutorial's `units` (1024), encoder and decoder.
        attention: "luong" (tfa's `LuongAttention(units)`, Luong's "general"
            score) or "bahdanau" (tfa's `BahdanauAttention(units)`).

    Returns:
        A `TFATutorialNMT`: inputs `{"source_ids": (B, S), "target_in_ids":
        (B, T)}` int32, output logits `(B, T, target_vocab_size)`.
    """
    checks.one_of("attention", attention, ATTENTIONS)
    if attention == "luong":
        # tfa.seq2seq.LuongAttention(units): score(h_t, h_s) = h_t . (W h_s),
        # Luong's "general" score (W_a here is tfa's memory_layer kernel, transposed).
        mechanism = LuongAttention("general", name="attention")
    else:
        # tfa.seq2seq.BahdanauAttention(units): v^T tanh(W_q h_t + W_m h_s).
        mechanism = BahdanauAttention(units, name="attention")
    layers = [
        keras.layers.Embedding(source_vocab_size, embedding_dim, mask_zero=True,
                               name="source_embedding"),
        keras.layers.LSTM(units, return_sequences=True, return_state=True,
                          recurrent_initializer="glorot_uniform", name="encoder"),
        keras.layers.Embedding(target_vocab_size, embedding_dim, mask_zero=True,
                               name="target_embedding"),
        # tfa.seq2seq.AttentionWrapper(LSTMCell(units), mechanism,
        #                              attention_layer_size=units):
        #   h_t  = LSTM(h_{t-1}, [y_{t-1}; a_{t-1}])   (a_0 = 0: input feeding)
        #   c_t  = sum_s softmax_s(score(h_t, h_s)) h_s
        #   a_t  = tanh(W_c [c_t; h_t])                (tfa: W [h_t; c_t], no tanh)
        AttentionRNN(units, mechanism, cell="lstm", order="luong",
                     input_feeding=True, attentional_units=units, name="decoder"),
        keras.layers.Dense(target_vocab_size, name="output_projection"),  # tfa's fc
    ]
    get = {layer.name: layer for layer in layers}.__getitem__

    # BasicDecoder + TrainingSampler: teacher forcing over the whole target.
    source_ids = keras.Input((None,), dtype="int32", name="source_ids")
    target_in_ids = keras.Input((None,), dtype="int32", name="target_in_ids")
    memory, h, c, mask = encode_source(get, source_ids)    # (B, S, n), (B, n) x 2
    y = get("target_embedding")(target_in_ids)             # (B, T, m), PAD masked
    out = get("decoder")(y, memory, memory_mask=mask,
                         initial_state=[h, c])             # a_t: (B, T, n)
    logits = get("output_projection")(out)                 # (B, T, V_y)
    return TFATutorialNMT({"source_ids": source_ids, "target_in_ids": target_in_ids},
                          logits, name=f"tfa_tutorial_{attention}")


def encode_source(get, source_ids):
    """`(B, S)` ids -> memory `(B, S, n)`, final `h`, `c` `(B, n)`, mask `(B, S)`.

    The mask replaces tfa's `memory_sequence_length`; the LSTM stops at each
    row's last real token, so `h`, `c` are that token's states.
    """
    mask = ops.not_equal(source_ids, 0)                    # (B, S)
    x = get("source_embedding")(source_ids)                # (B, S, m)
    memory, h, c = get("encoder")(x, mask=mask)            # (B, S, n), (B, n), (B, n)
    return memory, h, c, mask


# === Decoding: encode once, then one step at a time ===

@keras.saving.register_keras_serializable(package="tfa_migration")
class TFATutorialNMT(GenerativeModel):
    """The ported model: the training graph, plus `encode` and `step`.

    `encode` is what tfa wrote by hand before each decoder (`setup_memory`,
    `get_initial_state(...).clone(cell_state=[h, c])`, `tile_batch` for
    beam search); `step` is one `AttentionWrapper` step and the output
    layer. `kerattn.decoding.generate` calls them; beam search tiles and
    reorders the state itself, and never copies the `beam_invariant` cache.
    """

    beam_invariant = ("cache",)   # the memory and its projected keys

    def encode(self, source_ids, max_length=None):
        """`(B, S)` ids -> `{"states": [h, c, a_0, step], "cache": memory}`."""
        source_ids, _ = self.source_ids(source_ids)
        memory, h, c, mask = encode_source(self.get_layer, source_ids)
        decoder = self.get_layer("decoder")
        cache = decoder.precompute(memory, mask)           # keys W h_s, once
        states = decoder.get_initial_state(ops.shape(source_ids)[0], [h, c], cache)
        return {"states": states, "cache": cache}

    def step(self, tokens, state, index):
        """`(B,)` previous tokens -> `(logits (B, V_y), state, weights (B, S))`."""
        y = self.get_layer("target_embedding")(tokens)     # (B, m)
        out, states, weights = self.get_layer("decoder").step(
            y, state["states"], state["cache"])            # a_t (B, n), alpha_t (B, S)
        logits = self.get_layer("output_projection")(out)  # (B, V_y)
        return logits, {"states": states, "cache": state["cache"]}, weights


def greedy_translate(model, source_ids, max_length=20, bos_id=2, eos_id=3):
    """tfa's `BasicDecoder` + `GreedyEmbeddingSampler`, through the front door.

    Returns the dict of `kerattn.decoding.generate`: `tokens` `(B,
    max_length)` (PAD after EOS), `scores`, `lengths`, `attention` `(B,
    max_length, S)`.
    """
    return kerattn.decoding.generate(model, source_ids, max_length=max_length,
                                     strategy="greedy", bos_id=bos_id,
                                     eos_id=eos_id)


def beam_translate(model, source_ids, beam_width=3, max_length=20, bos_id=2,
                   eos_id=3, num_return=1, length_penalty=0.0):
    """tfa's `tile_batch` + `BeamSearchDecoder` + `dynamic_decode`, in one call.

    `length_penalty` is tfa's `length_penalty_weight` (the same GNMT
    formula). Returns the dict of `kerattn.decoding.generate`: `tokens` `(B,
    max_length)`, or `(B, num_return, max_length)` best first when
    `num_return > 1` (tfa: `predicted_ids` `(B, T, beam_width)`), with
    `scores`, `log_probs`, `lengths` and the chosen hypotheses' `attention`.
    """
    return kerattn.decoding.generate(
        model, source_ids, max_length=max_length, strategy="beam",
        beam_width=beam_width, bos_id=bos_id, eos_id=eos_id,
        num_return=num_return, length_penalty=length_penalty)


# === A tfa checkpoint's variables, loaded ===

def load_tfa_variables(decoder, output_layer, variables):
    """Load a tfa decoder's variables into a kerattn `AttentionRNN` built as
    tfa's (`order="luong", input_feeding=True, attentional_activation=None`,
    `attentional_units` its `attention_layer_size`) and its output `Dense`:
    the table of docs/migrating_from_tfa.md, which
    tests/test_tfa_equivalence.py checks against tfa's computation.

    Args:
        decoder: the built `AttentionRNN` (one LSTM cell; one
            `LuongAttention("general", scale=...)` or `BahdanauAttention`).
        output_layer: the built output `Dense` (tfa's `output_layer`).
        variables: `{name: array}`, each name ending as tfa's variable does
            (`lstm_cell/kernel`, `memory_layer/kernel`, `attention_v`,
            `attention_layer/kernel`, `dense/kernel`, ...): e.g. from
            `tf.train.load_checkpoint(path)`, each name's `get_tensor`.
    """
    def get(suffix):
        found = [v for k, v in variables.items()
                 if k.split("/.ATTRIBUTES")[0].endswith(suffix)]
        checks.require(len(found) == 1, "variables",
                       f"one variable named ...{suffix}", len(found))
        return np.asarray(found[0])

    cell = decoder.cell.rnn_cells[0]
    for name in ("kernel", "recurrent_kernel", "bias"):
        getattr(cell, name).assign(get(f"lstm_cell/{name}"))
    attention = decoder.attention
    if isinstance(attention, LuongAttention):   # tfa's keys = memory W: W_a = W^T
        attention.W_a.assign(get("memory_layer/kernel").T)
        if attention.scale:
            attention.scale_factor.assign(get("attention_g"))
    else:
        attention.W_a.assign(get("query_layer/kernel"))
        attention.U_a.assign(get("memory_layer/kernel"))
        attention.v_a.assign(get("attention_v"))
        if attention.normalize:
            attention.g.assign(get("attention_g"))
            attention.b.assign(get("attention_b"))
    if decoder.cell.attentional is not None:   # tfa's rows [h; c], ours [c; h]
        kernel, units = get("attention_layer/kernel"), decoder.units
        decoder.cell.attentional.kernel.assign(
            np.concatenate([kernel[units:], kernel[:units]]))
    output_layer.kernel.assign(get("dense/kernel"))
    output_layer.bias.assign(get("dense/bias"))


# === The tutorial, end to end ===

def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--attention", choices=ATTENTIONS, default="luong")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--units", type=int, default=256,
                   help="the tutorial's 1024 takes hours on a CPU")
    p.add_argument("--embedding-dim", type=int, default=128)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--max-train", type=int, default=10000)
    p.add_argument("--beam-width", type=int, default=3)
    args = p.parse_args()

    from kerattn.datasets import WordVocabulary, gettext_pairs, translation_arrays
    from kerattn.losses import MaskedSparseCrossentropy

    keras.utils.set_random_seed(0)
    # Data: PAD 0, UNK 1, BOS 2, EOS 3 (the vocabulary says which id is which).
    splits = gettext_pairs("fr")
    train_pairs = splits["train"][:args.max_train]
    src = WordVocabulary.build([s for s, _ in train_pairs], 8000)
    tgt = WordVocabulary.build([t for _, t in train_pairs], 8000)
    x, y, _ = translation_arrays(train_pairs, src, tgt, max_tokens=14)
    # x = {"source_ids": (N, S), "target_in_ids": (N, T)} (BOS y_1 ...),
    # y = (N, T) (y_1 ... EOS): the tutorial's targ[:, :-1] and targ[:, 1:].

    model = build_model(len(src), len(tgt), args.embedding_dim, args.units,
                        args.attention)
    # The tutorial's loss_function (a PAD-masked cross-entropy) and
    # train_step (GradientTape, setup_memory, build_initial_state) are
    # compile + fit.
    model.compile(optimizer="adam", loss=MaskedSparseCrossentropy(pad_id=tgt.pad_id))
    model.fit(x, y, batch_size=args.batch_size, epochs=args.epochs)

    # translate() and beam_translate(): strings in, strings out.
    translator = kerattn.decoding.Translator(model, src, tgt, max_length=16)
    texts = [s for s, _ in splits["test"][:4]] + ["Permission denied"]
    greedy = translator(texts)
    beam = translator(texts, beam_width=args.beam_width)
    for text, g, b in zip(texts, greedy, beam):
        print(f"en: {text}\n  greedy: {g}\n  beam {args.beam_width}: {b}")

    # The tutorial's n-best list (every beam, best first), from ids.
    ids = np.array(src.encode_batch(texts[-1:]), "int32")  # (1, S)
    nbest = beam_translate(model, ids, beam_width=args.beam_width,
                           max_length=16, bos_id=tgt.bos_id, eos_id=tgt.eos_id,
                           num_return=args.beam_width)
    tokens = ops.convert_to_numpy(nbest["tokens"])[0]     # (beam_width, 16)
    scores = ops.convert_to_numpy(nbest["scores"])[0]     # (beam_width,)
    for rank, (row, score) in enumerate(zip(tokens, scores), 1):
        print(f"{rank} {tgt.decode(row)}  {score:.3f}")


if __name__ == "__main__":
    main()

"""A TensorFlow Addons `seq2seq` decoder, ported: the same weights give the
same teacher-forced logits and the same beam search output.

tfa does not install beside current TensorFlow, so its computation is
written here in NumPy from its code (tensorflow/addons, `tensorflow_addons/
seq2seq/`):

- `attention_wrapper.py`: `AttentionWrapper.call` (the cell input is
  `cell_input_fn(inputs, state.attention)`, by default their concatenation;
  the cell runs; each mechanism is queried with the cell's output;
  `attention` is the context, or `attention_layer(concat([cell_output,
  context]))` with `attention_layer_size`, a `Dense(use_bias=False)` without
  activation built in `__init__`; the step outputs `attention` with
  `output_attention=True`, else `cell_output`; `attention` is carried to the
  next step in the state), `_compute_attention` (alignments, then `context
  = alignments @ values`), `LuongAttention` (`memory_layer`, a `Dense(units,
  use_bias=False)`, makes the keys; `_luong_score`: `query . keys`, times
  `attention_g` with `scale=True`) and `BahdanauAttention` (`query_layer`
  and `memory_layer`; `_bahdanau_score`: `sum(v tanh(keys + query_layer(q)
  [+ b]))`, `v = g v / ||v||` with `normalize=True`), padded positions at
  `score_mask_value = -inf` before the softmax (`_maybe_mask_score`);
- `basic_decoder.py`: `BasicDecoder.step` (the cell, then `output_layer`:
  the logits) with `sampler.py`'s `TrainingSampler` (the next input is the
  next target's embedding: teacher forcing);
- `beam_search_decoder.py`: `_beam_search_step` (log-softmax of the logits;
  a finished beam extends with the end token at no cost, `_mask_probs`;
  total = the beam's log-probability + the step's; without a length
  penalty the score is the total; `top_k` over the flattened beam x
  vocabulary scores; the next words are the indices modulo the vocabulary,
  the parents the indices divided by it; the states follow their parents),
  started from beam 0 alone (`BeamSearchDecoder.initialize`: log-
  probabilities 0 for beam 0, -inf for the others), then `gather_tree`.

The Keras LSTM cell (`tf.keras.layers.LSTMCell`, what tfa's tutorial
wraps) is `z = x K + h R + b`, gates `i, f, c~, o` in that order.

The mapping of tfa's variables to kerattn's weights is
examples/tfa_migration.py's `load_tfa_variables` (docs/migrating_from_tfa.md's
table), which the test uses.
"""

import keras
import numpy as np
import pytest

from cases import (check_keras_round_trip, check_steps_equal_pass, lengths_mask,
                   to_numpy)
from kerattn import decoding
from kerattn.layers import AttentionRNN, BahdanauAttention, LuongAttention
from test_tfa_migration import tfa_migration

load_tfa_variables = tfa_migration.load_tfa_variables

U, E, D, V = 6, 5, 4, 9     # cell units, embedding, memory features, vocabulary
PAD, BOS, EOS = 0, 1, 2


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def tfa_weights(rng, mechanism, attention_layer_size, output_attention, normalize):
    """The variables of a tfa decoder, by their names in its checkpoint."""
    w = lambda *shape: rng.normal(scale=0.5, size=shape)   # noqa: E731
    feed = attention_layer_size or D
    weights = {"lstm_cell/kernel": w(E + feed, 4 * U),
               "lstm_cell/recurrent_kernel": w(U, 4 * U),
               "lstm_cell/bias": w(4 * U),
               "dense/kernel": w((attention_layer_size or D) if output_attention else U, V),
               "dense/bias": w(V)}
    if mechanism == "luong":
        weights["memory_layer/kernel"] = w(D, U)
        weights["attention_g"] = np.float64(1.3)
    else:
        weights["query_layer/kernel"] = w(U, 7)
        weights["memory_layer/kernel"] = w(D, 7)
        weights["attention_v"] = w(7)
        if normalize:
            weights["attention_g"] = np.float64(0.7)
            weights["attention_b"] = w(7)
    if attention_layer_size:
        weights["attention_layer/kernel"] = w(U + D, attention_layer_size)
    return weights


def tfa_step(w, mechanism, x, state, memory, mask, attention_layer_size,
             output_attention):
    """`AttentionWrapper.call`, then `BasicDecoder`'s output layer."""
    h, c, attention = state
    cell_inputs = np.concatenate([x, attention], -1)          # cell_input_fn
    z = cell_inputs @ w["lstm_cell/kernel"] + h @ w["lstm_cell/recurrent_kernel"] \
        + w["lstm_cell/bias"]
    i, f, g, o = np.split(z, 4, -1)
    c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
    h = sigmoid(o) * np.tanh(c)
    cell_output = h
    keys = memory @ w["memory_layer/kernel"]
    if mechanism == "luong":                                  # _luong_score, scale=True
        score = w["attention_g"] * np.einsum("bu,bsu->bs", cell_output, keys)
    else:                                                     # _bahdanau_score
        query = (cell_output @ w["query_layer/kernel"])[:, None]
        v = w["attention_v"]
        if "attention_b" in w:
            v = w["attention_g"] * v / np.sqrt((v * v).sum())
            score = (v * np.tanh(keys + query + w["attention_b"])).sum(-1)
        else:
            score = (v * np.tanh(keys + query)).sum(-1)
    score = np.where(mask, score, -np.inf)                    # _maybe_mask_score
    alignments = np.exp(score - score.max(-1, keepdims=True))
    alignments /= alignments.sum(-1, keepdims=True)
    context = np.einsum("bs,bsd->bd", alignments, memory)     # _compute_attention
    if attention_layer_size:
        attention = np.concatenate([cell_output, context], -1) @ w["attention_layer/kernel"]
    else:
        attention = context
    output = attention if output_attention else cell_output
    logits = output @ w["dense/kernel"] + w["dense/bias"]     # output_layer
    return logits, (h, c, attention)


def tfa_zero_state(batch, attention_layer_size):
    return (np.zeros((batch, U)), np.zeros((batch, U)),
            np.zeros((batch, attention_layer_size or D)))


def to_kerattn(w, decoder, output, attention_layer_size):
    """tfa's variables into kerattn's layers, as a user would load them
    (examples/tfa_migration.py's `load_tfa_variables`, the migration page's
    table), under names as a checkpoint spells them."""
    prefix = "decoder/attention_wrapper/"
    load_tfa_variables(decoder, output, {
        prefix + name + "/.ATTRIBUTES/VARIABLE_VALUE": value for name, value in w.items()})


def build(mechanism, attention_layer_size, output_attention, normalize):
    if mechanism == "luong":
        attention = LuongAttention("general", scale=True)
    else:
        attention = BahdanauAttention(7, normalize=normalize)
    decoder = AttentionRNN(
        U, attention, cell="lstm", order="luong", input_feeding=True,
        attentional_layer=bool(attention_layer_size),
        attentional_units=attention_layer_size, attentional_activation=None,
        step_output="attention" if output_attention else "cell")
    output = keras.layers.Dense(V)
    return decoder, output


CASES = [   # mechanism, attention_layer_size, output_attention, normalize
    ("luong", 3, True, False),
    ("luong", None, True, False),
    ("bahdanau", 3, False, True),
    ("bahdanau", None, False, False),
    ("bahdanau", None, True, True),
]


@pytest.mark.parametrize("mechanism,size,output_attention,normalize", CASES)
def test_teacher_forced_logits_equal_tfas(mechanism, size, output_attention, normalize):
    """`BasicDecoder` + `TrainingSampler` over an `AttentionWrapper`: the
    logits at every real target step, sources and targets padded (the
    first row not the longest)."""
    rng = np.random.default_rng(0)
    b, T, S = 3, 5, 6
    y = rng.normal(size=(b, T, E)).astype("float32")           # embedded targets
    memory = rng.normal(size=(b, S, D)).astype("float32")
    t_lengths, s_lengths = [3, 5, 4], [4, 6, 2]
    t_mask, s_mask = lengths_mask(t_lengths, T), lengths_mask(s_lengths, S)
    w = tfa_weights(rng, mechanism, size, output_attention, normalize)

    state, ref = tfa_zero_state(b, size), []
    for t in range(T):
        logits, state = tfa_step(w, mechanism, y[:, t], state, memory, s_mask,
                                 size, output_attention)
        ref.append(logits)
    ref = np.stack(ref, 1)

    decoder, output = build(mechanism, size, output_attention, normalize)
    decoder(y, memory, inputs_mask=t_mask, memory_mask=s_mask)
    output.build((None, decoder.cell.output_dim(D)))
    to_kerattn(w, decoder, output, size)
    logits = to_numpy(output(decoder(y, memory, inputs_mask=t_mask, memory_mask=s_mask)))
    np.testing.assert_allclose(logits[t_mask], ref[t_mask], atol=1e-5)


def tfa_beam_search(w, mechanism, embedding, memory, mask, size, output_attention,
                    beam_width, max_length):
    """`BeamSearchDecoder` (no length penalty) over `tfa_step`, one source
    at a time (tfa tiles the batch; the rows are independent): the best
    beam's ids after `gather_tree`, to its end token, and its score."""
    results = []
    for row in range(memory.shape[0]):
        mem = np.repeat(memory[row:row + 1], beam_width, 0)
        m = np.repeat(mask[row:row + 1], beam_width, 0)
        state = tfa_zero_state(beam_width, size)
        log_probs = np.where(np.arange(beam_width) == 0, 0.0, -np.inf)
        finished = np.zeros(beam_width, bool)
        inputs = np.repeat(embedding[BOS][None], beam_width, 0)
        ids, parents = [], []
        for _ in range(max_length):
            logits, state = tfa_step(w, mechanism, inputs, state, mem, m, size,
                                     output_attention)
            step = log_softmax(logits)
            step = np.where(finished[:, None],                        # _mask_probs
                            np.where(np.arange(V) == EOS, 0.0, -np.inf), step)
            total = (log_probs[:, None] + step).reshape(-1)
            order = np.argsort(-total, kind="stable")[:beam_width]   # top_k
            word, parent = order % V, order // V
            log_probs = total[order]
            finished = finished[parent] | (word == EOS)
            state = tuple(s[parent] for s in state)
            ids.append(word)
            parents.append(parent)
            inputs = embedding[word]
            if finished.all():
                break
        beam, tokens = 0, []                                          # gather_tree
        for t in range(len(ids) - 1, -1, -1):
            tokens.append(ids[t][beam])
            beam = parents[t][beam]
        tokens = tokens[::-1]
        if EOS in tokens:
            tokens = tokens[:tokens.index(EOS) + 1]
        results.append((tokens, log_probs[0]))
    return results


@pytest.mark.parametrize("mechanism,size,output_attention,normalize", CASES[:3])
def test_beam_search_equals_tfas(mechanism, size, output_attention, normalize):
    """kerattn's `beam_search` (no length penalty) over the ported decoder
    finds tfa's best hypothesis with its score. The PAD and BOS logits are
    pushed to -1e9 in both (kerattn's searches never write them; tfa's
    would, with the probability the model gives)."""
    rng = np.random.default_rng(1)
    b, S, K, L = 3, 6, 3, 7
    memory = rng.normal(size=(b, S, D)).astype("float32")
    s_mask = lengths_mask([4, 6, 2], S)
    embedding = rng.normal(size=(V, E)).astype("float32")
    w = tfa_weights(rng, mechanism, size, output_attention, normalize)
    w["dense/bias"][[PAD, BOS]] = -1e9
    w["dense/bias"][EOS] += 1.0    # hypotheses that end within L steps
    ref = tfa_beam_search(w, mechanism, embedding, memory, s_mask, size,
                          output_attention, K, L)

    decoder, output = build(mechanism, size, output_attention, normalize)
    decoder(np.zeros((b, 1, E), "float32"), memory, memory_mask=s_mask)
    output.build((None, decoder.cell.output_dim(D)))
    to_kerattn(w, decoder, output, size)
    cache = decoder.precompute(memory, s_mask)

    def step_fn(tokens, state, index):
        x = keras.ops.take(embedding, tokens, axis=0)
        out, new, _ = decoder.step(x, state["decoder"], state["cache"])
        return output(out), {"decoder": new, "cache": state["cache"]}

    state = {"decoder": decoder.get_initial_state(b, cache=cache), "cache": cache}
    result = decoding.beam_search(step_fn, state, b, BOS, EOS, PAD, beam_width=K,
                                  max_length=L, beam_invariant=("cache",),
                                  return_attention=False)
    tokens, scores = to_numpy(result["tokens"])[:, 0], to_numpy(result["scores"])[:, 0]
    for row, (ref_tokens, ref_score) in enumerate(ref):
        assert list(tokens[row][:len(ref_tokens)]) == ref_tokens
        assert np.all(tokens[row][len(ref_tokens):] == PAD)
        np.testing.assert_allclose(scores[row], ref_score, atol=1e-5)


@pytest.mark.parametrize("feeding", [True, False])
@pytest.mark.parametrize("layer,step_output", [
    (True, "attention"), (True, "cell"), (True, "cell_and_context"),
    (False, "attention"), (False, "cell")])
def test_step_outputs_steps_and_round_trip(feeding, layer, step_output, tmp_path):
    """Each `step_output`, with and without input feeding (without it, the
    parallel form) and the attentional layer: `step()` equals the full pass
    on every real step, the output has `output_dim` features (`h~_t`,
    `c_t`, `h_t` or `[h_t; c_t]`), and the `.keras` file gives the same
    outputs."""
    rng = np.random.default_rng(2)
    b, T, S = 3, 4, 5
    y = rng.normal(size=(b, T, E)).astype("float32")
    memory = rng.normal(size=(b, S, D)).astype("float32")
    t_mask, s_mask = lengths_mask([2, 4, 3], T), lengths_mask([3, 5, 4], S)
    decoder = AttentionRNN(U, BahdanauAttention(7), cell="lstm", order="luong",
                           input_feeding=feeding, attentional_layer=layer,
                           attentional_activation=None, step_output=step_output)
    out, al = decoder(y, memory, inputs_mask=t_mask, memory_mask=s_mask,
                      return_attention_scores=True)
    size = {"attention": 6 if layer else D, "cell": U,
            "cell_and_context": U + D}[step_output]
    assert out.shape[-1] == decoder.cell.output_dim(D) == size
    assert decoder.parallel == (not feeding)
    check_steps_equal_pass(decoder, y, memory, s_mask, out, al, t_mask)
    if step_output == "cell":   # the top state: the cell's own h_t
        states = check_steps_equal_pass(decoder, y, memory, s_mask, out, al, t_mask)
        np.testing.assert_allclose(to_numpy(states[0]["cells"][0]),
                                   to_numpy(out)[:, 0], atol=1e-6)
    config = check_keras_round_trip(
        AttentionRNN(U, BahdanauAttention(7), cell="lstm", order="luong",
                     input_feeding=feeding, attentional_layer=layer,
                     step_output=step_output), tmp_path / "d.keras")
    assert config["units"] == 7

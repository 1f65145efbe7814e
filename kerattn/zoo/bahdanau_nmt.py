"""RNNsearch: Bahdanau, Cho and Bengio (2014), as a Keras functional model.

"Neural Machine Translation by Jointly Learning to Align and Translate".
Paper defaults (section 4.2 and appendix A, the "paper" preset): word
embeddings m = 620, GRUs of n = 1000 units (a bidirectional encoder, so
annotations of 2n), an alignment model of n' = 1000 units, a deep output of
l = 500 maxout units, 30,000-word vocabularies. Named sizes (`PRESETS`, at
the end of this file) and single sizes are one keyword away:

    model = bahdanau_nmt(8000, 8000, preset="base", dropout=0.3)

Reading order (shapes for batch B, source length S, target length T):

    x_j  = E_x source_ids                       (B, S, m)
    h_j  = [->h_j; <-h_j] = BiGRU(x)            (B, S, 2n)   "encoder"
    s_0  = tanh(W_s <-h_1)                      (B, n)       "initial_state"
    y    = E_y target_in_ids  (BOS y_0 ...)     (B, T, m)
    [s_{i-1}; c_i] = AttentionRNN(y, h, s_0)    (B, T, n + 2n) "decoder"
         e_ij = v_a^T tanh(W_a s_{i-1} + U_a h_j),  c_i = sum_j alpha_ij h_j
         s_i = GRU(s_{i-1}, [y_{i-1}; c_i])
         (coverage=True: e_ij also reads c^i = sum_{i'<i} alpha_i'
          (See et al., 2017, eq. 11), and the loss gains eq. 12-13's
          lambda sum_j min(alpha_ij, c^i_j)                "coverage_loss")
         (attention="hard-monotonic": alpha_i is Raffel et al.'s monotonic
          alignment from p_ij = sigmoid(e_ij + r); "mocha": a softmax over
          the chunk ending where it stops)
    t~_i = U_o s_{i-1} + V_o E y_{i-1} + C_o c_i  (B, T, 2l)  "deep_output"
    t_i  = maxout(t~_i)                         (B, T, l)
    logits = W_o t_i                            (B, T, V_y)  "output_projection"

The file reads top to bottom: the layers and the training graph
(`bahdanau_nmt`), then `BahdanauNMT.encode` and `.step`, which call the
same `encode_source` and `readout` as the graph (one decoder step is
`AttentionRNN.step`, the cell its training loop runs), then the presets.
"""

import keras
from keras import ops

from kerattn import checks
from kerattn.layers import GRU, AttentionRNN, CoverageRegularization, Maxout
from kerattn.zoo import attentions
from kerattn.zoo.model import GenerativeModel, from_preset

# The families of the zoo's table (`kerattn.zoo.attentions`) offered on the
# additive energy; "soft" is the table's "global" (its "coverage" with
# `coverage=True`).
ATTENTIONS = ("soft", "location-sensitive", "recurrent-location",
              "hard-monotonic", "mocha",
              "stepwise-monotonic", "gmm", "dca", "forward", "forward-ta",
              "multi-head-location")


# === Layers and training graph ===

def bahdanau_nmt(
    source_vocab_size=30000,
    target_vocab_size=30000,
    embedding_dim=None,
    units=None,
    alignment_units=None,
    maxout_units=None,
    dropout=None,
    reset_after=None,
    attention="soft",
    chunk_size=2,
    coverage=False,
    coverage_loss_weight=1.0,
    attention_options=None,
    preset="paper",
    name="bahdanau_nmt",
):
    """RNNsearch (Bahdanau et al., 2014): the training graph.

    Args:
        source_vocab_size, target_vocab_size: vocabulary sizes (ids < size;
            0 is PAD and is masked).
        embedding_dim: `m`, 620 in the paper.
        units: `n`, the GRU units (per direction in the encoder), 1000.
        alignment_units: `n'`, the alignment model's hidden size, 1000.
        maxout_units: `l`, the deep output's maxout units, 500.
        dropout: dropout before the deep output (the paper used none for
            RNNsearch; useful on small data).
        reset_after: the GRUs' reset gate. False is the paper's GRU,
            `h~ = tanh(W x + U (r * h))` (the "paper" preset); True is Keras'
            default (the cuDNN form, `tanh(W x + r * (U h + b))`, one more
            bias vector per GRU; the CPU presets keep it).
        attention: "soft" (the paper's softmax over every annotation),
            "hard-monotonic" (`HardMonotonicAttention`, Raffel et al., 2017:
            the same additive energy with Raffel's `g`, `b` and bias `r`,
            stopping at the first annotation at or after the last one whose
            `sigmoid(e_ij) >= 0.5`; `r` starts at -1 here, where the layer's
            -4 never decides on translation: `attention_options=
            {"score_bias_init": -4.0}` for the layer's) or "mocha" (`MonotonicChunkwiseAttention`,
            Chiu and Raffel, 2018: a softmax over the `chunk_size`
            annotations that end there). The monotonic two train on the
            expected alignment (the model's graph), decode hard (`step`),
            and make the decoder carry the previous alignment as a state.
            "location-sensitive" (Chorowski et al., 2015, an additive score
            of `alignment_units` that also reads the previous alignment)
            and "gmm" (`GMMAttention`, Battenberg et al.'s v2b: a mixture
            whose means only move forward, reading no content) and "dca"
            (`DynamicConvolutionAttention`, Battenberg et al.'s dynamic
            convolution attention) and "stepwise-monotonic"
            (`StepwiseMonotonicAttention`, He et al., 2019: stay or move one
            position a step) and "forward" / "forward-ta"
            (`ForwardAttention`, Zhang et al., 2018, without and with the
            transition agent) and "multi-head-location"
            (`MultiHeadLocationAttention`, ESPnet's `AttMultiHeadLoc`) and
            "recurrent-location" (`RecurrentLocationAttention`, ESPnet's
            `AttLocRec`) come from
            the zoo's table (`kerattn.zoo.attentions`), as every name here.
        chunk_size: MoChA's chunk length `w` (2).
        coverage: the alignment model also reads the coverage vector
            `c^i = sum_{i' < i} alpha_{i'}` (`BahdanauAttention(coverage=
            True)`, See et al., 2017, eq. 11), carried by the decoder as a
            state, and training adds the coverage loss (eq. 12-13,
            `CoverageRegularization`). Not the paper's model; beam search's
            `coverage_penalty` is a decode-time rescoring with any model.
        coverage_loss_weight: the coverage loss's `lambda` (1 in See et
            al.); 0 keeps the coverage vector without its loss.
        attention_options: more keyword arguments of the attention layer
            (`kerattn.zoo.attentions.make`), over the builder's sizes: e.g.
            `{"score_bias_init": -1.0, "noise_std": 0.5}` for a monotonic
            attention (the initial `r` and the training noise), `{"variant":
            "v1", "num_components": 8}` for GMM attention, `{"units": 64}`
            for a location-sensitive score of another width; a name the
            layer does not take is refused, the layer checks the values.
            None: the layer's defaults.
        preset: named sizes, one of `PRESETS` ("tiny", "small", "base",
            "paper"); a size given above overrides the preset's.
        name: the model's name.

    Returns:
        A `BahdanauNMT` with inputs `{"source_ids": (B, S), "target_in_ids":
        (B, T)}` (int32, PAD = 0) and output `logits` `(B, T,
        target_vocab_size)`; its `encode` / `step` decode with the same
        weights.

    Example:

    >>> model = bahdanau_nmt(100, 120, embedding_dim=8, units=16,
    ...                      alignment_units=8, maxout_units=6)
    >>> type(model).__name__, model.output_shape
    ('BahdanauNMT', (None, None, 120))
    """
    c = from_preset(PRESETS, preset, embedding_dim=embedding_dim, units=units,
                    alignment_units=alignment_units, maxout_units=maxout_units,
                    dropout=dropout, reset_after=reset_after)
    reset_after = c.pop("reset_after")
    checks.boolean("reset_after", reset_after)
    checks.boolean("coverage", coverage)
    checks.one_of("attention", attention, ATTENTIONS)
    checks.positive_int("chunk_size", chunk_size)
    checks.require(not coverage or attention == "soft", "coverage",
                   "False with a monotonic attention (coverage enters the "
                   "soft attention's score)", coverage)
    checks.nonnegative_number("coverage_loss_weight", coverage_loss_weight)
    checks.sizes(source_vocab_size=source_vocab_size,
                 target_vocab_size=target_vocab_size, **c)
    m, n = c["embedding_dim"], c["units"]
    family = {"soft": "coverage" if coverage else "global"}.get(attention, attention)
    if attention == "hard-monotonic" and (attention_options is None
                                          or isinstance(attention_options, dict)):
        # r starts at -1, not at Raffel et al.'s -4: on translation, from -4
        # no stopping probability reaches 0.5 in 6 epochs and hard decoding
        # leaves 92% of output words attending nowhere (17.95 BLEU); from -1,
        # under 0.5% and about 36 BLEU, 3 seeds (zoo/bahdanau_nmt/RESULTS.md,
        # the monotonic study).
        attention_options = {"score_bias_init": -1.0, **(attention_options or {})}
    align = attentions.make(family, "additive", units=c["alignment_units"],
                            chunk_size=chunk_size, options=attention_options)

    # === Layers ===
    layers = [
        keras.layers.Embedding(source_vocab_size, m, mask_zero=True,
                               name="source_embedding"),
        keras.layers.Bidirectional(
            GRU(n, return_sequences=True, return_state=True,
                reset_after=reset_after),
            name="encoder"),
        keras.layers.Dense(n, activation="tanh", name="initial_state"),
        keras.layers.Embedding(target_vocab_size, m, mask_zero=True,
                               name="target_embedding"),
        AttentionRNN(n, align, cell="gru", order="bahdanau",
                     reset_after=reset_after, name="decoder"),
        keras.layers.Concatenate(name="deep_input"),
        keras.layers.Dense(2 * c["maxout_units"], name="deep_output"),
        Maxout(2, name="maxout"),
        keras.layers.Dropout(c["dropout"], name="output_dropout"),
        keras.layers.Dense(target_vocab_size, name="output_projection"),
    ]
    get = {layer.name: layer for layer in layers}.__getitem__

    # === Training graph ===
    source_ids = keras.Input((None,), dtype="int32", name="source_ids")
    target_in_ids = keras.Input((None,), dtype="int32", name="target_in_ids")
    h, s0, mask = encode_source(get, source_ids)           # (B, S, 2n), (B, n)
    y = get("target_embedding")(target_in_ids)             # (B, T, m)
    decoded = get("decoder")(y, h, memory_mask=mask, initial_state=[s0],
                             return_attention_scores=coverage)
    out = decoded[0] if coverage else decoded              # (B, T, 3n)
    logits = readout(get, out, y)                          # (B, T, V_y)
    if coverage:   # + lambda sum_j min(alpha_ij, c^i_j), alphas (B, T, S)
        logits = CoverageRegularization(coverage_loss_weight, name="coverage_loss")(
            decoded[1], step_mask=ops.not_equal(target_in_ids, 0),
            location_mask=mask, passthrough=logits)
    return BahdanauNMT(
        {"source_ids": source_ids, "target_in_ids": target_in_ids},
        logits, name=name)


def encode_source(get, source_ids):
    """`(B, S)` ids -> annotations `(B, S, 2n)`, `s_0` `(B, n)`, mask `(B, S)`."""
    mask = ops.not_equal(source_ids, 0)
    x = get("source_embedding")(source_ids)                # (B, S, m)
    h, _, backward_last = get("encoder")(x, mask=mask)     # (B, S, 2n), <-h_1
    return h, get("initial_state")(backward_last), mask    # s_0 = tanh(W_s <-h_1)


def readout(get, out, y):
    """`[s_{i-1}; c_i]` and `E y_{i-1}` -> logits (the deep output, A.2.2).

    Any leading shape: `(B, T, .)` in training, `(B, .)` for one step.
    """
    t = get("deep_output")(get("deep_input")([out, y]))    # t~_i (.., 2l)
    t = get("output_dropout")(get("maxout")(t))            # t_i  (.., l)
    return get("output_projection")(t)                     # (.., V_y)


# === Decoding: encode once, then one step at a time ===

@keras.saving.register_keras_serializable(package="kerattn")
class BahdanauNMT(GenerativeModel):
    """RNNsearch, built by `bahdanau_nmt`: the training graph with `encode`
    and `step` for decoding (see `kerattn.zoo.GenerativeModel`).

    Args:
        inputs, outputs, name: those of Keras' functional `Model`; the
            builder (`bahdanau_nmt`) passes them.

    Example:

    >>> import numpy as np
    >>> model = kerattn.zoo.bahdanau_nmt(20, 30, preset="tiny")
    >>> state = model.encode(np.array([[5, 6, 7, 0]], "int32"), max_length=4)
    >>> logits, state, attention = model.step(np.array([2], "int32"), state, 0)
    >>> tuple(logits.shape)
    (1, 30)
    """

    beam_invariant = ("cache",)  # the annotations and their projected keys

    def encode(self, source_ids, max_length=None):
        """`(B, S)` ids -> `{"states", "cache"}` (keys `U_a h_j` projected once)."""
        source_ids, _ = self.source_ids(source_ids)
        h, s0, mask = encode_source(self.get_layer, source_ids)
        decoder = self.get_layer("decoder")
        cache = decoder.precompute(h, mask)
        return {
            "states": decoder.get_initial_state(ops.shape(source_ids)[0], [s0], cache),
            "cache": cache,
        }

    def step(self, tokens, state, index, attention_mode=None):
        """`(B,)` previous tokens -> `(logits (B, V), state, attention (B, S))`.

        `attention_mode`: a monotonic attention's mode ("hard", its
        decoding mode, when None; "parallel" is the training graph's).
        """
        y = self.get_layer("target_embedding")(tokens)         # (B, m)
        out, states, weights = self.get_layer("decoder").step(
            y, state["states"], state["cache"],
            attention_mode=attention_mode)                     # (B, 3n)
        logits = readout(self.get_layer, out, y)
        return logits, {"states": states, "cache": state["cache"]}, weights


# === Presets: "paper" is section 4.2; the others fit a CPU ===

PRESETS = {
    "tiny": dict(embedding_dim=8, units=16, alignment_units=8, maxout_units=8, reset_after=True),
    "small": dict(embedding_dim=128, units=128, alignment_units=128,
                  maxout_units=128, dropout=0.2, reset_after=True),
    "base": dict(embedding_dim=128, units=256, alignment_units=256,
                 maxout_units=256, dropout=0.2, reset_after=True),
    "paper": dict(embedding_dim=620, units=1000, alignment_units=1000,
                  maxout_units=500, dropout=0.0,
                  reset_after=False),
}

"""The pointer-generator network: See, Liu and Manning (2017).

"Get To The Point: Summarization with Pointer-Generator Networks": the
model of section 2 (2.1 the attention decoder, 2.2 copying, 2.3
coverage). Paper defaults (section 5, the "paper" preset):
128-dimensional word embeddings, a bidirectional LSTM encoder and an LSTM
decoder of 256 units, an attention of 512 units (the encoder's 2 x 256),
one 50,000-word vocabulary shared by the source and the target (and one
embedding for both). The paper's three rows are one builder:

    pointer_generator(50000, copy=False)                # the attention baseline
    pointer_generator(50000)                            # + pointer-generator
    pointer_generator(50000, coverage=True)             # + coverage

Reading order (shapes for batch B, source length S, target length T; ids
are **extended**: `V + k` is the k-th source word outside the vocabulary,
`kerattn.datasets.extend_source`, embedded as UNK):

    x_i  = E source_ids                           (B, S, m)   "embedding"
    h_i  = BiLSTM(x)                              (B, S, 2n)  "encoder"
    s_0  = [relu(W_h [->h; <-h]); relu(W_c [->c; <-c])]        "reduce_h", "reduce_c"
    y    = E target_in_ids  (BOS y_1 ...)         (B, T, m)
    [s_t; h*_t] = AttentionRNN(y, h, s_0)         (B, T, n + 2n) "decoder"
         s_t = LSTM(s_{t-1}, y_{t-1})                                    (section 2.1)
         a^t = softmax(v^T tanh(W_h h_i + W_s s_t + w_c c^t_i + b_attn)) (eq. 1-2, 11)
         h*_t = sum_i a^t_i h_i                                          (eq. 3)
    P_vocab = softmax(V' (V [s_t; h*_t] + b) + b')  (B, T, V)  "output_hidden",
                                                              "output_projection"   (eq. 4)
    p_gen = sigmoid(w_h^T h*_t + w_s^T s_t + w_x^T x_t + b_ptr)   (eq. 8)
    log P(w) over V + S ids                       (B, T, V + S) "pointer"             (eq. 9)
    (coverage=True: c^t = sum_{t'<t} a^{t'} in the score (eq. 11) and the
     loss gains lambda sum_i min(a^t_i, c^t_i) (eq. 12-13)   "coverage_loss")

The decoder is `AttentionRNN(order="luong", input_feeding=False,
attentional_layer=False)`: on each step the LSTM reads the previous word's
embedding alone, the attention reads the new state `s_t`, and the step
outputs `[s_t; h*_t]` with no attentional layer, as section 2.1 describes
(without coverage the cell runs over the whole target first and attends
once, `AttentionRNN`'s parallel form). The output is log-probabilities
(float32); train with `MaskedSparseCrossentropy(from_log_probs=True)` on
extended labels (`kerattn.datasets.copy_arrays`).

The file reads top to bottom: the layers and the training graph
(`pointer_generator`), then `PointerGeneratorNetwork.encode` and `.step`,
which call the same `encode_source` and `readout` as the graph, then the
presets.
"""

import keras
from keras import ops

from kerattn import checks
from kerattn.layers import (LSTM, AttentionRNN, BahdanauAttention,
                            CoverageRegularization, ExtendedEmbedding,
                            PointerGenerator)
from kerattn.zoo.model import GenerativeModel, from_preset


# === Layers and training graph ===

def pointer_generator(
    vocab_size=50000,
    embedding_dim=None,
    units=None,
    attention_units=None,
    copy=True,
    coverage=False,
    coverage_loss_weight=1.0,
    unk_id=1,
    preset="paper",
    name="pointer_generator",
):
    """The pointer-generator network (See et al., 2017): the training graph.

    Args:
        vocab_size: `V`, the one vocabulary of the source and the target
            (50,000 in the paper); ids `>= V` are extended ids.
        embedding_dim: the word embedding size, 128.
        units: the LSTMs' units (per direction in the encoder), 256.
        attention_units: the attention's hidden size, 512.
        copy: the pointer-generator (eq. 8-9): the output is a mixture of
            the vocabulary distribution and the attention over the source,
            over `V + S` extended ids. False is the paper's attention
            baseline: log-probabilities over the `V` words alone.
        coverage: the attention reads the coverage vector (eq. 11,
            `BahdanauAttention(coverage=True)`) and training adds the
            coverage loss (eq. 12-13).
        coverage_loss_weight: the coverage loss's `lambda` (1 in the paper).
        unk_id: the vocabulary's UNK id (`WordVocabulary.unk_id`): what an
            extended id is embedded as.
        preset: named sizes, one of `PRESETS` ("tiny", "small", "base",
            "paper"); a size given above overrides the preset's.
        name: the model's name.

    Returns:
        A `PointerGeneratorNetwork` with inputs `{"source_ids": (B, S),
        "target_in_ids": (B, T)}` (int32 extended ids, PAD = 0) and output
        float32 log-probabilities `(B, T, V + S)` (`(B, T, V)` with
        `copy=False`); its `encode` / `step` decode with the same weights.

    Example:

    >>> model = pointer_generator(40, preset="tiny")
    >>> type(model).__name__, model.output_shape
    ('PointerGeneratorNetwork', (None, None, None))
    >>> model.output_size(7)                       # V + S
    47
    """
    c = from_preset(PRESETS, preset, embedding_dim=embedding_dim, units=units,
                    attention_units=attention_units)
    checks.boolean("copy", copy)
    checks.boolean("coverage", coverage)
    checks.nonnegative_number("coverage_loss_weight", coverage_loss_weight)
    checks.sizes(vocab_size=vocab_size, **c)
    checks.int_in_range("unk_id", unk_id, 0, vocab_size)
    m, n = c["embedding_dim"], c["units"]

    # === Layers ===
    layers = [
        # One embedding for the source and the target, as See et al.
        ExtendedEmbedding(vocab_size, m, unk_id=unk_id, mask_zero=True,
                          name="embedding"),
        keras.layers.Bidirectional(
            LSTM(n, return_sequences=True, return_state=True),
            name="encoder"),
        keras.layers.Dense(n, activation="relu", name="reduce_h"),
        keras.layers.Dense(n, activation="relu", name="reduce_c"),
        AttentionRNN(n, BahdanauAttention(c["attention_units"], coverage=coverage,
                                          name="attention"),
                     cell="lstm", order="luong", input_feeding=False,
                     attentional_layer=False, name="decoder"),
        keras.layers.Dense(n, name="output_hidden"),
        keras.layers.Dense(vocab_size, name="output_projection"),
    ]
    if copy:
        layers.append(PointerGenerator(name="pointer"))
    get = {layer.name: layer for layer in layers}.__getitem__

    # === Training graph ===
    source_ids = keras.Input((None,), dtype="int32", name="source_ids")
    target_in_ids = keras.Input((None,), dtype="int32", name="target_in_ids")
    h, initial, mask = encode_source(get, source_ids)     # (B, S, 2n), [h0, c0]
    y = get("embedding")(target_in_ids)                    # (B, T, m)
    out, alphas = get("decoder")(y, h, memory_mask=mask, initial_state=initial,
                                 return_attention_scores=True)  # (B, T, 3n)
    log_probs = readout(get, out, y, alphas, source_ids, copy)
    if coverage:   # + lambda sum_i min(a^t_i, c^t_i), alphas (B, T, S)
        log_probs = CoverageRegularization(coverage_loss_weight,
                                           name="coverage_loss")(
            alphas, step_mask=ops.not_equal(target_in_ids, 0),
            location_mask=mask, passthrough=log_probs)
    return PointerGeneratorNetwork(
        {"source_ids": source_ids, "target_in_ids": target_in_ids},
        log_probs, name=name)


def encode_source(get, source_ids):
    """`(B, S)` ids -> annotations `(B, S, 2n)`, `[h_0, c_0]`, mask `(B, S)`."""
    mask = ops.not_equal(source_ids, 0)
    x = get("embedding")(source_ids)                       # (B, S, m)
    h, fh, fc, bh, bc = get("encoder")(x, mask=mask)
    h0 = get("reduce_h")(ops.concatenate([fh, bh], axis=-1))
    c0 = get("reduce_c")(ops.concatenate([fc, bc], axis=-1))
    return h, [h0, c0], mask


def readout(get, out, y, alphas, source_ids, copy):
    """`[s_t; h*_t]`, `x_t` and the attention -> log-probabilities.

    Any leading shape: `(B, T, .)` in training, `(B, .)` for one step.
    """
    logits = get("output_projection")(get("output_hidden")(out))   # (.., V)
    if not copy:
        return ops.log_softmax(ops.cast(logits, "float32"), axis=-1)
    # p_gen reads [s_t; h*_t] and x_t (eq. 8); eq. 9 over V + S ids.
    return get("pointer")(logits, alphas, source_ids, [out, y])


# === Decoding: encode once, then one step at a time ===

@keras.saving.register_keras_serializable(package="kerattn")
class PointerGeneratorNetwork(GenerativeModel):
    """The pointer-generator network, built by `pointer_generator`: the
    training graph with `encode` and `step` for decoding (see
    `kerattn.zoo.GenerativeModel`).

    Its ids are extended (`extended_ids`): the source and the previous
    token may hold `V + k` for the k-th source word outside the vocabulary,
    and with copying `step` returns log-probabilities over `V + S` ids
    (`output_size`), which `kerattn.decoding.generate` searches like any
    vocabulary; `Translator` maps them back to the source's words.

    Args:
        inputs, outputs, name: those of Keras' functional `Model`; the
            builder (`pointer_generator`) passes them.

    Example:

    >>> import numpy as np
    >>> model = kerattn.zoo.pointer_generator(20, preset="tiny")
    >>> source = np.array([[5, 20, 7, 21, 0]], "int32")   # 20, 21: two OOVs
    >>> state = model.encode(source, max_length=4)
    >>> log_p, state, attention = model.step(np.array([2], "int32"), state, 0)
    >>> tuple(log_p.shape)                                # V + S
    (1, 25)
    >>> tuple(model.generate(source, max_length=4)["tokens"].shape)
    (1, 4)
    """

    extended_ids = {"source_ids": "source_ids", "target_in_ids": "source_ids"}
    # The annotations, their projected keys, and the source's extended ids.
    beam_invariant = ("cache", "source_ids")

    @property
    def copies(self):
        """Whether the output is over the extended vocabulary (`copy=True`)."""
        return "pointer" in self.layers_by_name

    def output_size(self, source_length):
        """`V + source_length` with copying, `V` without (see
        `GenerativeModel.output_size`)."""
        vocab = int(self.get_layer("output_projection").units)
        return vocab + int(source_length) if self.copies else vocab

    def encode(self, source_ids, max_length=None):
        """`(B, S)` extended ids -> `{"states", "cache", "source_ids"}`."""
        source_ids, _ = self.source_ids(source_ids)
        h, initial, mask = encode_source(self.get_layer, source_ids)
        decoder = self.get_layer("decoder")
        cache = decoder.precompute(h, mask)
        return {
            "states": decoder.get_initial_state(ops.shape(source_ids)[0], initial,
                                                cache),
            "cache": cache,
            "source_ids": source_ids,
        }

    def step(self, tokens, state, index):
        """`(B,)` previous (extended) tokens -> `(log-probabilities (B, V +
        S), state, attention (B, S))`."""
        y = self.get_layer("embedding")(tokens)                # (B, m)
        out, states, weights = self.get_layer("decoder").step(
            y, state["states"], state["cache"])                # (B, 3n)
        log_probs = readout(self.get_layer, out, y, weights, state["source_ids"],
                            self.copies)
        return log_probs, dict(state, states=states), weights


# === Presets: "paper" is section 5; the others fit a CPU ===

PRESETS = {
    "tiny": dict(embedding_dim=8, units=16, attention_units=16),
    "small": dict(embedding_dim=64, units=128, attention_units=128),
    "base": dict(embedding_dim=128, units=256, attention_units=256),
    "paper": dict(embedding_dim=128, units=256, attention_units=512),
}

"""Luong, Pham and Manning (2015) as a Keras functional model.

"Effective Approaches to Attention-based Neural Machine Translation".
Paper defaults (section 4.1, the "paper" preset): 4-layer stacked LSTMs of
1000 cells, 1000-dimensional embeddings, dropout 0.2 (on the embeddings
and h~, and between the encoder's stacked layers; the decoder's stack runs
in one scanned cell), every weight drawn from uniform(-0.1, 0.1), the source
read in reverse, 50,000-word vocabularies; global attention with any of the
four scores, or local attention (local-m, local-p) with a window D = 10;
input feeding (section 3.3). Attentions that read their own past
alignments are one keyword away too: coverage (See et al., 2017, on the
concat score), location-sensitive attention (Chorowski et al., 2015), and
hard monotonic attention (Raffel et al., 2017) and MoChA (Chiu and Raffel,
2018) on Luong's multiplicative energy. Named sizes and these choices
(`PRESETS`, at the end of this file) are one keyword away:

    model = luong_nmt(8000, 8000, preset="base", attention="local-p")

Reading order (batch B, source length S, target length T, n units):

    x    = E_x source_ids                        (B, S, n)
    h_s  = LSTM^L(x)   (the top layer's states)  (B, S, n)    "encoder_k"
    y    = E_y target_in_ids                     (B, T, n)
    h~_t = AttentionRNN(y, h_s, encoder states)  (B, T, n)    "decoder"
         h_t = LSTM^L(h_{t-1}, [y_t; h~_{t-1}])   (input feeding)
         a_t = align(h_t, h_s), c_t = sum_s a_t(s) h_s
         h~_t = tanh(W_c [c_t; h_t])
    logits = W_s h~_t                            (B, T, V_y)  "output_projection"

The file reads top to bottom: the layers and the training graph
(`luong_nmt`), then `LuongNMT.encode` and `.step`, which call the same
`encode_source` as the graph (one decoder step is `AttentionRNN.step`, the
cell its training loop runs), then the presets.
"""

import keras
from keras import ops

from kerattn import checks
from kerattn import keras_fixes
from kerattn.layers import (LSTM, AttentionRNN, CoverageRegularization,
                            LatencyRegularization, LookaheadConvolution,
                            ReverseSequence)
from kerattn.zoo import attentions
from kerattn.zoo.model import (GenerativeModel, from_preset, initialize_uniform,
                               numbered_layers, set_forget_bias)

# Every family of the zoo's table (`kerattn.zoo.attentions`), on Luong's
# energy.
ATTENTIONS = tuple(attentions.ATTENTIONS)


# === Layers and training graph ===

def luong_nmt(
    source_vocab_size=50000,
    target_vocab_size=50000,
    attention="global",
    score=None,
    input_feeding=True,
    num_layers=None,
    units=None,
    embedding_dim=None,
    dropout=None,
    window=10,
    chunk_size=2,
    max_source_length=None,
    reverse_source=None,
    layer_dropout=None,
    initializer_range=None,
    embeddings_initializer=None,
    bidirectional_encoder=None,
    forget_bias=None,
    decoder_init=None,
    lookahead=0,
    wait_k=None,
    wait_rate=1.0,
    latency_loss_weight=0.0,
    coverage_loss_weight=0.0,
    attention_options=None,
    preset="paper",
    name="luong_nmt",
):
    """The attentional encoder-decoder of Luong et al. (2015).

    Args:
        source_vocab_size, target_vocab_size: vocabulary sizes (PAD = 0).
        attention: "global", "local-m" or "local-p" (section 3.1-3.2);
            "coverage", global attention whose concat score also reads the
            coverage vector (`LuongAttention(score="concat",
            coverage=True)`, See et al., 2017, eq. 11); or
            "location-sensitive" (`LocationSensitiveAttention`, Chorowski
            et al., 2015: an additive score that reads a convolution of the
            previous alignment, 32 filters of width 31); "hard-monotonic"
            (`HardMonotonicAttention(energy="luong")`, Raffel et al., 2017:
            stop at the first source position at or after the last one
            whose `sigmoid(g h_t^T W_a h_s + r) >= 0.5`) or "mocha"
            (`MonotonicChunkwiseAttention`, Chiu and Raffel, 2018: a softmax
            over the `chunk_size` positions that end there). The last four
            make the decoder carry the alignment history as a state; the
            monotonic two train on the expected alignment (the model's
            graph) and decode hard (`step`). Luong's local-m ("local-m", a
            window at `p_t = t`) is another attention. "gmm" is
            `GMMAttention` (Battenberg et al., 2020, v2b: a mixture whose
            means only move forward, reading no content); "dca" is
            `DynamicConvolutionAttention` (Battenberg et al., 2020: filters
            on the previous alignment, some predicted from `h_t`, and a
            prior that moves forward); "stepwise-monotonic" is
            `StepwiseMonotonicAttention(energy="luong")` (He et al., 2019:
            stay or move one position a step); "forward" and "forward-ta"
            are `ForwardAttention` (Zhang et al., 2018) without and with
            the transition agent; "multi-head-location" is
            `MultiHeadLocationAttention` (ESPnet's `AttMultiHeadLoc`, 4
            heads); "recurrent-location" is `RecurrentLocationAttention`
            (ESPnet's `AttLocRec`). Every name is an
            entry of the zoo's table, `kerattn.zoo.attentions`.
        score: "dot", "general" (the default), "concat" or "location"
            (global only; "location" is Luong's score from `h_t` alone,
            not the location-sensitive attention). "coverage" takes only
            "concat" (its default); "location-sensitive", "hard-monotonic"
            and "mocha" have their own.
        input_feeding: feed h~_{t-1} into the next step (section 3.3).
        num_layers: LSTM layers in the encoder and the decoder (4).
        units: LSTM cells per layer (1000).
        embedding_dim: word embedding size (1000).
        dropout: dropout on the embeddings and on h~_t (0.2).
        window: the local window half-width D (10).
        chunk_size: MoChA's chunk length `w` (2).
        max_source_length: the "location" score's maximum source length.
        reverse_source: read the (unpadded part of the) source in reverse,
            as the paper does (section 4.1, after Sutskever et al. 2014).
            The encoder's states are put back in source order, so the
            attention weights still line up with the source words.
        layer_dropout: also apply `dropout` between the encoder's stacked
            LSTM layers (the paper's dropout, after Zaremba et al. 2014, is
            on every non-recurrent connection; the decoder's stack runs in
            one scanned cell and gets it on its input and output only).
        initializer_range: a float `r` draws every kernel, recurrent
            kernel and embedding from uniform(-r, r), the paper's 0.1
            (section 4.1); None keeps Keras' initialisers (Glorot uniform
            kernels, orthogonal recurrent kernels, LSTM forget-gate bias 1).
            Biases keep Keras' initialisation either way.
        embeddings_initializer: a Keras initializer for both embeddings
            (Keras' `Embedding` argument), or "normal" for N(0, 1); it wins
            over `initializer_range` for them. None keeps Keras'
            uniform(-0.05, 0.05), or `initializer_range`'s when that is
            given. At 128 dimensions instead of the paper's 1000,
            unit-variance embeddings give the LSTMs' gates inputs of about
            the scale that the paper's 1000-dimensional uniform(-0.1, 0.1)
            ones have.
        bidirectional_encoder: the first encoder layer reads the source
            both ways, `units / 2` cells a direction, concatenated (OpenNMT's
            `brnn` encoder, GNMT's first layer; not in the paper, whose
            encoder reads one way). Each `h_s` then knows the words on both
            sides of its own; the decoder's first layer starts from the
            concatenated last states of the two directions.
        forget_bias: the forget-gate bias every LSTM (encoder and decoder)
            starts from: the paper's 0.0 (its initialisation draws every
            parameter from uniform(-0.1, 0.1), biases included, so they
            start at 0 on average) or Keras' 1.0 (`unit_forget_bias=True`,
            after Jozefowicz et al. 2015; the CPU presets keep it).
            `initializer_range` leaves biases alone: this is the switch.
        decoder_init: where the decoder's LSTMs start: "encoder" (the
            paper's: every encoder layer's last `(h, c)`) or "zeros". With
            "zeros", a one-way encoder (`bidirectional_encoder=False`,
            `reverse_source=False`) and a monotonic attention the model
            can emit its first output before it has read the whole source
            (`kerattn.decoding.StreamingDecoder`; the "g2p-streaming"
            preset).
        lookahead: 0, or a `LookaheadConvolution` of this many positions
            over the encoder's top layer (Amodei et al. 2016, section 3.5):
            each `h_s` also sees the next `lookahead` letters, and a
            streaming decoder waits for them before committing to an output
            that attends there (the model's `lookahead()`).
        wait_k, wait_rate: None, or the decoder's wait-k schedule
            (`AttentionRNN`'s; Ma et al. 2019): output `i` (from 0) attends
            only to the first `wait_k + floor(wait_rate * i)` source
            positions, in training as in decoding. With a one-way encoder
            read in order and `decoder_init="zeros"`, a soft attention can
            then stream (`kerattn.decoding.StreamingDecoder`): output `i`
            is written once those letters (and `lookahead` more) are read
            (the model's `reads(i)`).
        latency_loss_weight: 0, or MILk's latency loss (Arivazhagan et
            al. 2019) with this weight `lambda`, for
            `attention="hard-monotonic"`: the differentiable average
            lagging of the expected alignment's stops
            (`kerattn.losses.latency_loss`, a `LatencyRegularization` layer
            in the graph) is added to the likelihood, so that the attention
            learns to stop before the end of the source where it can (on
            the likelihood alone a one-way model may read the whole source
            before its first output, and then streams nothing).
        coverage_loss_weight: 0, or See et al.'s coverage loss (eq. 12-13)
            with this weight `lambda`, for `attention="coverage"`:
            `lambda sum_j min(a_tj, c^t_j)` a step (`kerattn.losses.
            coverage_loss`, a `CoverageRegularization` layer in the
            graph), as `bahdanau_nmt(coverage=True)` adds it.
        attention_options: more keyword arguments of the attention layer
            (`kerattn.zoo.attentions.make`), over the builder's sizes: e.g.
            `{"variant": "v1"}` for GMM attention, `{"score_bias_init":
            -1.0}` for a monotonic attention, `{"channels": ("previous",
            "cumulative")}` for Tacotron 2's location features; a name the
            layer does not take is refused, the layer checks the values.
            None: the layer's defaults.
        preset: named sizes, one of `PRESETS` ("tiny", "small", "base",
            "paper", and the grapheme-to-phoneme sizes "g2p",
            "g2p-streaming" and "g2p-paper"); a size given above overrides
            the preset's.
        name: the model's name.

    Returns:
        A `LuongNMT`: `{"source_ids", "target_in_ids"}` -> `logits` `(B, T,
        target_vocab_size)`, with `encode` / `step` for decoding.

    Example:

    >>> model = luong_nmt(100, 120, attention="local-p", units=16,
    ...                   embedding_dim=8, num_layers=2)
    >>> type(model).__name__, model.output_shape
    ('LuongNMT', (None, None, 120))
    """
    c = from_preset(PRESETS, preset, num_layers=num_layers, units=units,
                    embedding_dim=embedding_dim, dropout=dropout,
                    reverse_source=reverse_source, layer_dropout=layer_dropout,
                    initializer_range=initializer_range,
                    embeddings_initializer=embeddings_initializer,
                    bidirectional_encoder=bidirectional_encoder,
                    forget_bias=forget_bias, decoder_init=decoder_init)
    options = {k: c.pop(k) for k in ("reverse_source", "layer_dropout",
                                     "initializer_range", "embeddings_initializer",
                                     "bidirectional_encoder", "forget_bias",
                                     "decoder_init")}
    checks.sizes(source_vocab_size=source_vocab_size,
                 target_vocab_size=target_vocab_size, **c)
    checks.boolean("reverse_source", options["reverse_source"])
    checks.boolean("layer_dropout", options["layer_dropout"])
    checks.boolean("bidirectional_encoder", options["bidirectional_encoder"])
    checks.require(
        not options["bidirectional_encoder"] or c["units"] % 2 == 0, "units",
        "an even number with bidirectional_encoder=True (units / 2 cells a "
        "direction)", c["units"])
    if options["initializer_range"] is not None:
        checks.positive_number("initializer_range", options["initializer_range"])
    checks.number("forget_bias", options["forget_bias"])
    checks.one_of("decoder_init", options["decoder_init"], ("encoder", "zeros"))
    checks.nonnegative_int("lookahead", lookahead)
    checks.one_of("attention", attention, ATTENTIONS)
    checks.require(
        wait_k is None or attention not in ("hard-monotonic", "mocha"), "wait_k",
        "None with a hard monotonic attention (it decides itself where to "
        "stop, and streams without a schedule)", wait_k,
        note=f"attention={attention!r} would take the window's edge for the "
        "word's end and attend nowhere past it.")
    checks.nonnegative_number("latency_loss_weight", latency_loss_weight)
    checks.require(
        not latency_loss_weight or attention == "hard-monotonic",
        "latency_loss_weight", "0 unless attention='hard-monotonic' (the "
        "loss reads the expected alignment's stops)", latency_loss_weight,
        note=f"attention={attention!r} has no stopping distribution.")
    checks.nonnegative_number("coverage_loss_weight", coverage_loss_weight)
    checks.require(
        not coverage_loss_weight or attention == "coverage",
        "coverage_loss_weight", "0 unless attention='coverage' (the loss "
        "reads the coverage vector the attention keeps)", coverage_loss_weight,
        note=f"attention={attention!r} keeps no coverage vector.")
    if attention == "coverage":
        checks.require(score in (None, "concat"), "score",
                       "'concat' (or None) with attention='coverage'", score,
                       note="Coverage enters the concat score.")
        score = "concat"
    elif attention not in attentions.READS_SCORE:
        checks.require(score is None, "score",
                       f"None with attention={attention!r}", score,
                       note=f"attention={attention!r} has its own score.")
    checks.positive_int("chunk_size", chunk_size)
    score = "general" if score is None else score
    checks.require(
        attention in ("global", "coverage") or score != "location", "score",
        "'dot', 'general' or 'concat' for local attention", score,
        note=f"score='location' is a global score; attention={attention!r} "
        "is local.")
    n, e = c["units"], c["embedding_dim"]
    embedding_init = {"normal": keras.initializers.RandomNormal(stddev=1.0)}.get(
        options["embeddings_initializer"], options["embeddings_initializer"])
    if embedding_init is not None:
        try:
            keras.initializers.get(embedding_init)
        except (ValueError, TypeError):
            checks.fail("embeddings_initializer", "None, 'normal' or a Keras "
                        "initializer (a name such as 'uniform', or an object)",
                        options["embeddings_initializer"])
    embedding_kwargs = ({} if embedding_init is None
                        else {"embeddings_initializer": embedding_init})

    # === Layers ===
    align = attentions.make(attention, "luong", units=n, score=score,
                            max_source_length=max_source_length, window=window,
                            chunk_size=chunk_size, options=attention_options)
    layers = [
        keras.layers.Embedding(source_vocab_size, e, mask_zero=True,
                               name="source_embedding", **embedding_kwargs),
        *[_encoder_layer(n, k, options["bidirectional_encoder"])
          for k in range(c["num_layers"])],
        keras.layers.Embedding(target_vocab_size, e, mask_zero=True,
                               name="target_embedding", **embedding_kwargs),
        AttentionRNN(n, align, cell="lstm", order="luong",
                     input_feeding=input_feeding, num_layers=c["num_layers"],
                     wait_k=wait_k, wait_rate=wait_rate, name="decoder"),
        keras.layers.Dropout(c["dropout"], name="dropout"),
        keras.layers.Dense(target_vocab_size, name="output_projection"),
    ]
    # Optional parts exist only when used: encode_source looks them up.
    if options["reverse_source"]:
        layers.append(ReverseSequence(name="reverse_source"))
    if options["layer_dropout"]:
        layers.append(keras.layers.Dropout(c["dropout"], name="layer_dropout"))
    if lookahead:
        layers.append(LookaheadConvolution(lookahead, name="lookahead"))
    by_name = {layer.name: layer for layer in layers}
    get = by_name.__getitem__
    encoders = [get(f"encoder_{k + 1}") for k in range(c["num_layers"])]

    # === Training graph ===
    source_ids = keras.Input((None,), dtype="int32", name="source_ids")
    target_in_ids = keras.Input((None,), dtype="int32", name="target_in_ids")
    h_s, states, mask = encode_source(by_name, encoders, source_ids)  # (B, S, n)
    y = get("dropout")(get("target_embedding")(target_in_ids))   # (B, T, e)
    if options["decoder_init"] == "zeros":   # the graph's decoder takes no state
        states = None
    # A loss on the alignments (B, T, S): MILk's latency, See et al.'s coverage.
    regularize = (
        LatencyRegularization(latency_loss_weight, name="latency_loss")
        if latency_loss_weight > 0 else      # + lambda DAL(g), g_i = sum_j j a_ij
        CoverageRegularization(coverage_loss_weight, name="coverage_loss")
        if coverage_loss_weight > 0 else None)   # + lambda sum_j min(a_tj, c^t_j)
    decoded = get("decoder")(y, h_s, memory_mask=mask, initial_state=states,
                             return_attention_scores=regularize is not None)
    h_tilde = decoded if regularize is None else decoded[0]      # (B, T, n)
    logits = get("output_projection")(get("dropout")(h_tilde))   # (B, T, V_y)
    if regularize is not None:
        logits = regularize(decoded[1], step_mask=ops.not_equal(target_in_ids, 0),
                            location_mask=mask, passthrough=logits)
    model = LuongNMT(
        {"source_ids": source_ids, "target_in_ids": target_in_ids},
        logits, name=name)
    if options["initializer_range"] is not None:
        initialize_uniform(model, options["initializer_range"],
                           skip="embeddings" if embedding_init is not None else None)
    if options["forget_bias"] != 1.0:   # Keras' LSTMs start it at 1
        set_forget_bias(model, options["forget_bias"])
    return model


def _encoder_layer(n, k, bidirectional):
    """The `k`-th (from 0) encoder LSTM: `n` cells, or the first one read
    both ways with `n / 2` cells a direction."""
    if bidirectional and k == 0:
        return keras.layers.Bidirectional(
            LSTM(n // 2, return_sequences=True, return_state=True),
            name="encoder_1")
    return LSTM(n, return_sequences=True, return_state=True,
                name=f"encoder_{k + 1}")


def encode_source(by_name, encoders, source_ids):
    """`(B, S)` ids -> the top layer's `h_s` `(B, S, n)`, every layer's last
    `(h, c)` (the decoder's initial state) and the mask `(B, S)`.

    `by_name`: the layers by name; `reverse_source`, `layer_dropout` and
    `lookahead` are there only when the model uses them.
    """
    mask = ops.not_equal(source_ids, 0)
    reverse = by_name.get("reverse_source")
    if reverse is not None:
        source_ids = reverse(source_ids)          # [c, b, a, PAD]
    h_s = by_name["dropout"](by_name["source_embedding"](source_ids))  # (B, S, e)
    states = []
    for k, encoder in enumerate(encoders):
        if k and "layer_dropout" in by_name:
            h_s = by_name["layer_dropout"](h_s)
        h_s, *last = encoder(h_s, mask=mask)                   # (B, S, n)
        if len(last) == 4:   # both ways: [h_fwd, c_fwd, h_bwd, c_bwd]
            last = [ops.concatenate([last[0], last[2]], axis=-1),
                    ops.concatenate([last[1], last[3]], axis=-1)]
        states += last                                         # h, c (B, n)
    if reverse is not None:
        h_s = reverse(h_s, mask=mask)             # back in source order
    if "lookahead" in by_name:                    # h_s sees the next letters
        h_s = by_name["lookahead"](h_s, mask=mask)
    return h_s, states, mask


# === Decoding: encode once, then one step at a time ===

@keras.saving.register_keras_serializable(package="kerattn")
class LuongNMT(GenerativeModel):
    """Luong et al.'s model, built by `luong_nmt`: the training graph with
    `encode` and `step` for decoding (see `kerattn.zoo.GenerativeModel`).

    Args:
        inputs, outputs, name: those of Keras' functional `Model`; the
            builder (`luong_nmt`) passes them.

    Example:

    >>> import numpy as np
    >>> model = kerattn.zoo.luong_nmt(20, 30, preset="tiny")
    >>> state = model.encode(np.array([[5, 6, 7, 0]], "int32"), max_length=4)
    >>> logits, state, attention = model.step(np.array([2], "int32"), state, 0)
    >>> tuple(logits.shape)
    (1, 30)
    """

    beam_invariant = ("cache",)  # h_s and its projected keys

    def encode(self, source_ids, max_length=None):
        """`(B, S)` ids -> `{"states", "cache"}` (keys `W_a h_s` projected once)."""
        source_ids, _ = self.source_ids(source_ids)
        h_s, states, mask = encode_source(
            self.layers_by_name, numbered_layers(self, "encoder"), source_ids)
        decoder = self.get_layer("decoder")
        cache = decoder.precompute(h_s, mask)
        if self._decoder_starts_from_zeros():
            states = None
        return {
            "states": decoder.get_initial_state(ops.shape(source_ids)[0], states, cache),
            "cache": cache,
        }

    def step(self, tokens, state, index, attention_mode=None):
        """`(B,)` previous tokens -> `(logits (B, V), state, attention (B, S))`.

        `attention_mode`: a monotonic attention's mode ("hard", its
        decoding mode, when None; "parallel" is the training graph's).
        """
        y = self.get_layer("target_embedding")(tokens)         # (B, e)
        h_tilde, states, weights = self.get_layer("decoder").step(
            y, state["states"], state["cache"],
            attention_mode=attention_mode)                     # (B, n)
        logits = self.get_layer("output_projection")(h_tilde)
        return logits, {"states": states, "cache": state["cache"]}, weights

    def _decoder_starts_from_zeros(self):
        """`decoder_init="zeros"`: the training graph calls the decoder on
        the target, `h_s` and the mask alone, with no initial state (files
        saved before held a marker layer, `zero_decoder_init`, in front of
        `h_s`: the same three inputs)."""
        calls = keras_fixes.call_inputs(self.get_layer("decoder"))
        return bool(calls) and len(calls[0]) == 3

    def can_stream(self):
        """Whether the output at a step depends on the source read so far
        only (see `GenerativeModel.can_stream`): a hard monotonic attention
        (its decoding step reads the source up to where it stops) or a
        wait-k schedule (`wait_k`: a step reads a fixed prefix), an encoder
        that reads left to right, the source in order and a decoder started
        from zeros."""
        decoder = self.get_layer("decoder")
        if not (decoder.attention.reads_prefix or decoder.wait_k is not None):
            return False, ("its attention is not a hard monotonic one "
                           "(attention='hard-monotonic' or 'mocha') and its "
                           "decoder has no wait-k schedule (wait_k=k): a soft "
                           "attention reads the whole source at every step")
        if any(isinstance(layer, keras.layers.Bidirectional)
               for layer in self.layers):
            return False, "its encoder reads both ways (bidirectional_encoder=True)"
        if "reverse_source" in self.layers_by_name:
            return False, "it reads the source reversed (reverse_source=True)"
        if not self._decoder_starts_from_zeros():
            return False, ("its decoder starts from the encoder's last state "
                           "(decoder_init='encoder'): use decoder_init='zeros'")
        return True, ""

    def lookahead(self):
        """How many inputs past a position its `h_s` reads: the
        `LookaheadConvolution`'s size, 0 without one (see
        `GenerativeModel.lookahead`)."""
        layer = self.layers_by_name.get("lookahead")
        return 0 if layer is None else layer.lookahead

    def reads(self, index):
        """How many source positions output `index` reads at most: its
        decoder's wait-k schedule (`AttentionRNN.reads`), or None without
        one (see `GenerativeModel.reads`)."""
        return self.get_layer("decoder").reads(index)

    def extend_source(self, state, fresh):
        """`state` after the tokens committed on a prefix, on the longer
        prefix that `fresh` (`encode`'s) holds: the decoder grows its
        attention's state to the new length; the cache is the fresh one."""
        states = self.get_layer("decoder").extend_source(
            state["states"], fresh["cache"])
        return {"states": states, "cache": fresh["cache"]}


# === Presets: "paper" is section 4.1; the others fit a CPU ===

PRESETS = {
    "tiny": dict(num_layers=1, units=16, embedding_dim=8, dropout=0.0,
                 reverse_source=False, layer_dropout=False,
                 initializer_range=None, embeddings_initializer=None,
                 bidirectional_encoder=False, forget_bias=1.0),
    # The CPU sizes read the source reversed and start from the paper's
    # uniform(-0.1, 0.1), with unit-variance embeddings (at 128 dimensions),
    # and their first encoder layer reads both ways (OpenNMT's brnn, not the
    # paper): zoo/luong_nmt/RESULTS.md has the ablation that chose this,
    # 384 cells a layer in "base" included (its `wide` row).
    "small": dict(num_layers=2, units=128, embedding_dim=128,
                  reverse_source=True, layer_dropout=False,
                  initializer_range=0.1, embeddings_initializer="normal",
                  bidirectional_encoder=True, forget_bias=1.0),
    "base": dict(num_layers=2, units=384, embedding_dim=128,
                 reverse_source=True, layer_dropout=False,
                 initializer_range=0.1, embeddings_initializer="normal",
                 bidirectional_encoder=True, forget_bias=1.0),
    "paper": dict(num_layers=4, units=1000, embedding_dim=1000, dropout=0.2,
                  reverse_source=True, layer_dropout=True,
                  initializer_range=0.1, embeddings_initializer=None,
                  bidirectional_encoder=False, forget_bias=0.0,
                  decoder_init="encoder"),
    # Grapheme-to-phoneme (zoo/g2p): one layer, a two-way encoder.
    "g2p": dict(num_layers=1, units=256, embedding_dim=64, dropout=0.2,
                reverse_source=False, layer_dropout=False,
                initializer_range=None, embeddings_initializer=None,
                bidirectional_encoder=True, forget_bias=1.0),
    # ... at the papers' size (Toshniwal and Livescu 2016: 3 x 512 LSTMs,
    # 512-dimensional embeddings, dropout 0.2 on every non-recurrent
    # connection; their encoder reads both ways at every layer, this one's
    # first layer does, 256 cells a direction). A GPU's size.
    "g2p-paper": dict(num_layers=3, units=512, embedding_dim=512, dropout=0.2,
                      reverse_source=False, layer_dropout=True,
                      initializer_range=None, embeddings_initializer=None,
                      bidirectional_encoder=True, forget_bias=1.0),
    # ... read left to right and started from zeros: with a monotonic
    # attention it can emit phonemes as the letters come in.
    "g2p-streaming": dict(num_layers=1, units=256, embedding_dim=64, dropout=0.2,
                          reverse_source=False, layer_dropout=False,
                          initializer_range=None, embeddings_initializer=None,
                          bidirectional_encoder=False, forget_bias=1.0,
                          decoder_init="zeros"),
}

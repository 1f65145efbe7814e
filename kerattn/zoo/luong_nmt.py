"""Luong, Pham and Manning (2015) as a Keras functional model.

"Effective Approaches to Attention-based Neural Machine Translation".
Paper defaults (section 4.1): 4-layer stacked LSTMs of 1000 cells,
1000-dimensional embeddings, dropout 0.2, 50,000-word vocabularies; global
attention with any of the four scores, or local attention (local-m,
local-p) with a window D = 10; input feeding (section 3.3). Small sizes are
one keyword away:

    model = luong_nmt(8000, 8000, units=256, embedding_dim=256, num_layers=2)

Reading order (batch B, source length S, target length T, n units):

    x    = E_x source_ids                        (B, S, n)
    h_s  = LSTM^L(x)   (the top layer's states)  (B, S, n)    "encoder_k"
    y    = E_y target_in_ids                     (B, T, n)
    h~_t = AttentionRNN(y, h_s, encoder states)  (B, T, n)    "decoder"
         h_t = LSTM^L(h_{t-1}, [y_t; h~_{t-1}])   (input feeding)
         a_t = align(h_t, h_s), c_t = sum_s a_t(s) h_s
         h~_t = tanh(W_c [c_t; h_t])
    logits = W_s h~_t                            (B, T, V_y)  "output_projection"
"""

import keras
from keras import ops

from kerattn.layers import AttentionRNN, LocalAttention, LuongAttention
from kerattn.zoo.checks import check_builder_args
from kerattn.zoo.model import ZooModel

ATTENTIONS = ("global", "local-m", "local-p")


def luong_nmt(
    source_vocab_size=50000,
    target_vocab_size=50000,
    attention="global",
    score="general",
    input_feeding=True,
    num_layers=4,
    units=1000,
    embedding_dim=1000,
    dropout=0.2,
    window=10,
    max_source_length=None,
    name="luong_nmt",
):
    """The attentional encoder-decoder of Luong et al. (2015).

    Args:
        source_vocab_size, target_vocab_size: vocabulary sizes (PAD = 0).
        attention: "global", "local-m" or "local-p" (section 3.1-3.2).
        score: "dot", "general", "concat" or "location" (global only).
        input_feeding: feed h~_{t-1} into the next step (section 3.3).
        num_layers: LSTM layers in the encoder and the decoder (4).
        units: LSTM cells per layer (1000).
        embedding_dim: word embedding size (1000).
        dropout: dropout on embeddings, between encoder layers and on h~_t
            (0.2).
        window: the local window half-width D (10).
        max_source_length: the "location" score's maximum source length.
        name: the model's name.

    Returns:
        A functional `keras.Model`: `{"source_ids", "target_in_ids"}` ->
        `logits` `(B, T, target_vocab_size)`; `kerattn.zoo.incremental`
        gives its encode / step functions.

    Example:

    >>> model = luong_nmt(100, 120, attention="local-p", units=16,
    ...                   embedding_dim=8, num_layers=2)
    >>> model.output_shape
    (None, None, 120)
    """
    check_builder_args(
        dropout=dropout,
        source_vocab_size=source_vocab_size,
        target_vocab_size=target_vocab_size,
        num_layers=num_layers,
        units=units,
        embedding_dim=embedding_dim,
    )
    if attention not in ATTENTIONS:
        raise ValueError(f"`attention` must be one of {ATTENTIONS}; got {attention!r}.")
    if attention != "global" and score == "location":
        raise ValueError("score='location' is a global score; local attention "
                         f"takes 'dot', 'general' or 'concat' (got {attention!r}).")

    # === Layers ===
    source_embedding = keras.layers.Embedding(
        source_vocab_size, embedding_dim, mask_zero=True, name="source_embedding")
    encoders = [keras.layers.LSTM(units, return_sequences=True, return_state=True,
                                  name=f"encoder_{k + 1}")
                for k in range(num_layers)]
    if attention == "global":
        align = LuongAttention(score, max_length=max_source_length,
                               name="attention")
    else:
        mode = "monotonic" if attention == "local-m" else "predictive"
        align = LocalAttention(mode, window=window, score=score, name="attention")
    target_embedding = keras.layers.Embedding(
        target_vocab_size, embedding_dim, mask_zero=True, name="target_embedding")
    decoder = AttentionRNN(units, align, cell="lstm", order="luong",
                           input_feeding=input_feeding, num_layers=num_layers,
                           name="decoder")
    dropout_layer = keras.layers.Dropout(dropout, name="dropout")
    output_projection = keras.layers.Dense(target_vocab_size,
                                           name="output_projection")

    # === Functional Model ===
    source_ids = keras.Input((None,), dtype="int32", name="source_ids")
    target_in_ids = keras.Input((None,), dtype="int32", name="target_in_ids")
    h_s = dropout_layer(source_embedding(source_ids))      # (B, S, e)
    states = []
    for encoder in encoders:
        h_s, h_last, c_last = encoder(h_s)                 # (B, S, n)
        states += [h_last, c_last]
    y = dropout_layer(target_embedding(target_in_ids))     # (B, T, e)
    h_tilde = decoder(y, h_s, initial_state=states)        # (B, T, n)
    logits = output_projection(dropout_layer(h_tilde))     # (B, T, V_y)
    return ZooModel(
        {"source_ids": source_ids, "target_in_ids": target_in_ids},
        logits, name=name)


class LuongIncremental:
    """Encode once, then one decoder step at a time (shared weights)."""

    # State entries fixed per source sentence (beam search never reorders them).
    beam_invariant = ("cache",)

    def __init__(self, model, pad_id=0):
        get = model.get_layer
        self.source_embedding = get("source_embedding")
        self.encoders = sorted(
            (layer for layer in model.layers if layer.name.startswith("encoder_")),
            key=lambda layer: int(layer.name.split("_")[-1]))
        self.target_embedding = get("target_embedding")
        self.decoder = get("decoder")
        self.output_projection = get("output_projection")
        self.pad_id = pad_id

    def encode(self, source_ids):
        source_ids = ops.convert_to_tensor(source_ids, "int32")
        mask = ops.not_equal(source_ids, self.pad_id)
        h = self.source_embedding(source_ids)
        states = []
        for encoder in self.encoders:
            h, h_last, c_last = encoder(h, mask=mask)
            states += [h_last, c_last]
        return {
            "states": self.decoder.get_initial_state(ops.shape(source_ids)[0],
                                                     states),
            "cache": self.decoder.precompute(h, mask),
        }

    def step(self, tokens, state, index):
        y = self.target_embedding(tokens)
        out, states, weights = self.decoder.step(y, state["states"], state["cache"])
        logits = self.output_projection(out)
        return logits, {"states": states, "cache": state["cache"]}, weights

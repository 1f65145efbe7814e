"""Show, Attend and Tell: Xu et al. (2015), as a Keras functional model.

"Show, Attend and Tell: Neural Image Caption Generation with Visual
Attention". A convolutional encoder gives L annotation vectors a_i (the
14 x 14 x 512 conv5_4 map of VGG in the paper), an LSTM decoder is started
from their mean, and at every word a soft (deterministic) or hard
(stochastic) attention picks the context z_t. Defaults follow the authors'
reference code (arctic-captions): 100-d word embeddings, an LSTM of 1000
units, a 512-d attention MLP, the gating scalar beta, the deep output and the
doubly stochastic penalty (lambda = 1). Small sizes are one keyword away:

    model = show_attend_tell(vocab_size=20, image_shape=(8, 45, 1),
                             embedding_dim=32, units=128, attention_units=64)

Reading order (shapes for batch B, image H x W x C, caption length T):

    a    = CNN(image)                               (B, h, w, D)   "encoder"
    a_i  = reshape(a)                               (B, L, D)      "annotations"
    h_0  = tanh(f_init,h(mean_i a_i)),
    c_0  = tanh(f_init,c(mean_i a_i))               (B, n)         "init_h", "init_c"
    E y  = embedding(caption_in_ids)                (B, T, m)      "embedding"
    alpha_t = softmax_i(w^T tanh(W_a a_i + W_h h_{t-1}))           \\
    z_t  = beta_t sum_i alpha_ti a_i  (soft)  or  a_{s_t}, s_t ~ alpha_t (hard)
    h_t, c_t = LSTM([E y_{t-1}; z_t], h_{t-1}, c_{t-1})  (B, T, n + D) "decoder"
    logits = L_o tanh(E y_{t-1} + L_h h_t + L_z z_t)     (B, T, V)  "deep_output_*",
                                                                    "output_projection"
    + lambda sum_i (1 - sum_t alpha_ti)^2 (eq. 14)                  "doubly_stochastic"

Hard attention trains with the REINFORCE update of eq. 12: the training graph
takes the target ids as a third input (`caption_out_ids`) and its
`HardAttentionReinforce` layer adds the score-function term (with the
moving-average baseline, decay 0.9) and the entropy term to the loss; the
compiled token cross-entropy supplies the first term. Differences from the
paper: one sample of the locations per caption (the paper's estimator
averages N samples), and the "with probability 0.5 use the expected
context" trick of section 4.1 is not applied. At inference the hard model
uses the expected context (the paper's evaluation) through the
`Captioner`.
"""

import keras
from keras import ops

from kerattn.layers import (
    AttentionRNN,
    DoublyStochasticRegularization,
    HardAttentionReinforce,
    HardVisualAttention,
    SoftVisualAttention,
)
from kerattn.zoo.checks import check_builder_args
from kerattn.zoo.model import ZooModel

ATTENTIONS = ("soft", "hard")


def small_cnn(filters=(64, 128), pool_sizes=((2, 2), (1, 1)), name="encoder"):
    """The default encoder: 3x3 conv blocks (two convs each) and max pooling.

    Returns:
        A `keras.Sequential` mapping `(B, H, W, C)` to `(B, h, w, filters[-1])`.
    """
    if len(filters) != len(pool_sizes):
        raise ValueError(
            f"`encoder_filters` and `encoder_pool_sizes` must have the same "
            f"length; got {len(filters)} and {len(pool_sizes)}.")
    blocks = []
    for k, (f, pool) in enumerate(zip(filters, pool_sizes), 1):
        check_builder_args(encoder_filters=f)
        blocks += [
            keras.layers.Conv2D(f, 3, padding="same", activation="relu",
                                name=f"conv{k}_1"),
            keras.layers.Conv2D(f, 3, padding="same", activation="relu",
                                name=f"conv{k}_2"),
        ]
        if tuple(pool) != (1, 1):
            blocks.append(keras.layers.MaxPooling2D(tuple(pool), name=f"pool{k}"))
    return keras.Sequential(blocks, name=name)


def show_attend_tell(
    vocab_size=10000,
    attention="soft",
    image_shape=(224, 224, 3),
    encoder=None,
    feature_shape=None,
    encoder_filters=(64, 128),
    encoder_pool_sizes=((2, 2), (1, 1)),
    embedding_dim=100,
    units=1000,
    attention_units=512,
    selector=True,
    dropout=0.5,
    doubly_stochastic=1.0,
    lambda_r=1.0,
    lambda_e=0.01,
    baseline_decay=0.9,
    seed=None,
    name=None,
):
    """Show, Attend and Tell (Xu et al., 2015): the training graph.

    Args:
        vocab_size: caption ids are `< vocab_size`; 0 is PAD and is masked.
        attention: "soft" (section 4.2) or "hard" (section 4.1).
        image_shape: `(H, W, C)` of the input images.
        encoder: None for `small_cnn(encoder_filters, encoder_pool_sizes)`,
            or any Keras model or layer mapping images to a feature map
            `(B, h, w, D)`, e.g. `keras.applications.VGG19(include_top=False,
            weights=None)` (no download: the machines are offline).
        feature_shape: `(L, D)` to take precomputed annotation vectors as
            the input `features` instead of images.
        encoder_filters, encoder_pool_sizes: the default encoder's sizes.
        embedding_dim: `m`, the word embedding size (100).
        units: `n`, the LSTM units (1000).
        attention_units: the hidden size of the attention MLP `f_att` (512).
        selector: bool, the gating scalar `beta_t` (section 4.2.1).
        dropout: dropout before the output projection (0.5).
        doubly_stochastic: `lambda` of eq. 14 (0 turns it off).
        lambda_r, lambda_e: hard attention's REINFORCE and entropy weights.
        baseline_decay: the moving-average baseline's decay (0.9).
        seed: the hard attention sampler's seed.
        name: the model's name (`show_attend_tell_<attention>` when None).

    Returns:
        A functional `keras.Model`. Inputs: `images` `(B, H, W, C)` (or
        `features` `(B, L, D)`), `caption_in_ids` `(B, T)` (BOS y_1 ...), and
        for hard attention `caption_out_ids` `(B, T)` (y_1 ... EOS, the
        targets, for the reward). Output: `logits` `(B, T, vocab_size)`.
        `Captioner(model, vocab)` decodes with it.

    Example:

    >>> model = show_attend_tell(20, image_shape=(8, 45, 1),
    ...     encoder_filters=(8,), encoder_pool_sizes=((2, 2),),
    ...     embedding_dim=8, units=16, attention_units=8)
    >>> model.output_shape
    (None, None, 20)
    """
    if attention not in ATTENTIONS:
        raise ValueError(f"`attention` must be one of {ATTENTIONS}; got {attention!r}.")
    check_builder_args(dropout=dropout, vocab_size=vocab_size,
                       embedding_dim=embedding_dim, units=units,
                       attention_units=attention_units)
    for arg, value in (("doubly_stochastic", doubly_stochastic),
                       ("lambda_r", lambda_r), ("lambda_e", lambda_e)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise ValueError(f"`{arg}` must be a non-negative float; got {value!r}.")
    shape = feature_shape if feature_shape is not None else image_shape
    want = 2 if feature_shape is not None else 3
    arg = "feature_shape" if feature_shape is not None else "image_shape"
    if (not isinstance(shape, (tuple, list)) or len(shape) != want
            or any(isinstance(d, bool) or not isinstance(d, int) or d < 1
                   for d in shape)):
        raise ValueError(f"`{arg}` must be a tuple of {want} positive ints; "
                         f"got {shape!r}.")
    hard = attention == "hard"

    # === Layers ===
    if feature_shape is None and encoder is None:
        encoder = small_cnn(encoder_filters, encoder_pool_sizes)
    init_h = keras.layers.Dense(units, activation="tanh", name="init_h")
    init_c = keras.layers.Dense(units, activation="tanh", name="init_c")
    embedding = keras.layers.Embedding(vocab_size, embedding_dim, mask_zero=True,
                                       name="embedding")
    if hard:
        attention_layer = HardVisualAttention(attention_units, gating=selector,
                                              seed=seed, name="attention")
    else:
        attention_layer = SoftVisualAttention(attention_units, gating=selector,
                                              name="attention")
    decoder = AttentionRNN(units, attention_layer, cell="lstm", order="bahdanau",
                           output_state="current", name="decoder")
    deep_output_h = keras.layers.Dense(embedding_dim, name="deep_output_h")
    deep_output_z = keras.layers.Dense(embedding_dim, use_bias=False,
                                       name="deep_output_z")
    output_dropout = keras.layers.Dropout(dropout, name="output_dropout")
    output_projection = keras.layers.Dense(vocab_size, name="output_projection")

    # === Functional Model ===
    inputs = {}
    if feature_shape is None:
        images = keras.Input(tuple(image_shape), name="images")
        inputs["images"] = images
        feature_map = encoder(images)                          # (B, h, w, D)
        if len(feature_map.shape) != 4 or None in feature_map.shape[1:]:
            raise ValueError(
                "`encoder` must map images to a feature map (B, h, w, D) of "
                f"known size; got {tuple(feature_map.shape)}.")
        h, w, d = feature_map.shape[1:]
        a = keras.layers.Reshape((h * w, d), name="annotations")(feature_map)
    else:
        a = keras.Input(tuple(feature_shape), name="features")  # (B, L, D)
        inputs["features"] = a
    caption_in_ids = keras.Input((None,), dtype="int32", name="caption_in_ids")
    inputs["caption_in_ids"] = caption_in_ids
    mean_a = keras.layers.GlobalAveragePooling1D(name="mean_annotation")(a)
    h0, c0 = init_h(mean_a), init_c(mean_a)                    # (B, n)
    y = embedding(caption_in_ids)                              # (B, T, m)
    step_mask = ops.not_equal(caption_in_ids, 0)
    if hard:
        out, alphas, samples = decoder(
            y, a, initial_state=[h0, c0], return_attention_scores=True,
            return_attention_samples=True)                     # (B, T, n + D)
    else:
        out, alphas = decoder(y, a, initial_state=[h0, c0],
                              return_attention_scores=True)
    h_t, z_t = out[..., :units], out[..., units:]
    t = ops.tanh(y + deep_output_h(h_t) + deep_output_z(z_t))  # (B, T, m)
    logits = output_projection(output_dropout(t))              # (B, T, V)
    if hard:
        caption_out_ids = keras.Input((None,), dtype="int32", name="caption_out_ids")
        inputs["caption_out_ids"] = caption_out_ids
        logits = HardAttentionReinforce(
            lambda_r, lambda_e, baseline_decay, name="reinforce")(
                logits, caption_out_ids, alphas, samples)
    if doubly_stochastic:
        logits = DoublyStochasticRegularization(
            doubly_stochastic, name="doubly_stochastic")(
                alphas, step_mask=step_mask, passthrough=logits)
    logits = keras.layers.Identity(name="logits")(logits)
    return ZooModel(inputs, logits, name=name or f"show_attend_tell_{attention}")


class ShowAttendTellIncremental:
    """Encode an image once, then one word at a time (shared weights).

    The encoder half is the training graph's own sub-graph (input to
    annotations and initial states), so no encoder code is repeated.
    """

    # State entries fixed per source sentence (beam search never reorders them).
    beam_invariant = ("cache",)

    def __init__(self, model, pad_id=0):
        get = model.get_layer
        self.decoder = get("decoder")
        self.units = self.decoder.units
        self.embedding = get("embedding")
        self.deep_output_h = get("deep_output_h")
        self.deep_output_z = get("deep_output_z")
        self.output_projection = get("output_projection")
        self.input_name = "features" if "features" in model.input else "images"
        mean = get("mean_annotation")
        self.encoder = keras.Model(
            model.input[self.input_name],
            [mean.input, get("init_h").output, get("init_c").output])
        self.pad_id = pad_id

    @property
    def grid(self):
        """The `(h, w)` grid of annotation vectors (None for features)."""
        try:
            layer = [lay for lay in self.encoder.layers
                     if lay.name == "annotations"][0]
        except IndexError:
            return None
        return tuple(layer.input.shape[1:3])

    def encode(self, images):
        """`(B, H, W, C)` images -> the decoding state (keys projected once)."""
        a, h0, c0 = self.encoder(images)
        return {
            "states": self.decoder.get_initial_state(ops.shape(a)[0], [h0, c0]),
            "cache": self.decoder.precompute(a),
        }

    def step(self, tokens, state, index):
        """`(B,)` previous words -> `(logits (B, V), state, attention (B, L))`."""
        y = self.embedding(tokens)                                   # (B, m)
        out, states, weights = self.decoder.step(y, state["states"], state["cache"])
        h_t, z_t = out[:, : self.units], out[:, self.units:]
        t = ops.tanh(y + self.deep_output_h(h_t) + self.deep_output_z(z_t))
        logits = self.output_projection(t)
        return logits, {"states": states, "cache": state["cache"]}, weights

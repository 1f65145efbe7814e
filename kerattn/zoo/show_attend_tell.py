"""Show, Attend and Tell: Xu et al. (2015), as a Keras functional model.

"Show, Attend and Tell: Neural Image Caption Generation with Visual
Attention". A convolutional encoder gives L annotation vectors a_i (the
14 x 14 x 512 conv5_4 map of VGG in the paper), an LSTM decoder is started
from their mean, and at every word a soft (deterministic) or hard
(stochastic) attention picks the context z_t. Defaults follow the authors'
reference code (arctic-captions): 100-d word embeddings, an LSTM of 1000
units, a 512-d attention MLP, the gating scalar beta, the deep output and the
doubly stochastic penalty (lambda = 1): the "paper" preset. Named sizes
(`PRESETS`, at the end of this file) are one keyword away:

    model = show_attend_tell(vocab_size=20, image_shape=(8, 45, 1),
                             preset="small")

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
compiled token cross-entropy supplies the first term. With
`expectation_rate=0.5` (the paper, small and base presets) a caption takes the expected
context instead of a sample with probability 0.5 (section 4.1). The graph
draws one sample of the locations per caption; the paper's estimator
averages N samples, which is the data's part (the captioning recipe's
`--samples-per-caption N` repeats each caption N times in its batch). At
inference the hard model
uses the expected context (the paper's evaluation) through the
`Captioner`.

The file reads top to bottom: the layers and the training graph, then
`ShowAttendTell.encode` (the graph's own image-to-annotations sub-graph and
`initial_states`) and `.step` (one `AttentionRNN.step`, the cell its
training loop runs, and the same `readout`), then the presets.
"""

import weakref

import keras
from keras import ops

from kerattn import checks
from kerattn.layers import (
    AttentionRNN,
    DoublyStochasticRegularization,
    LearnedInitialState,
    HardAttentionReinforce,
    HardVisualAttention,
    SoftVisualAttention,
)
from kerattn.zoo.model import GenerativeModel, from_preset

ATTENTIONS = ("soft", "hard")
INITIAL_STATES = ("mean", "learned", "zeros")


def small_cnn(filters=(64, 128), pool_sizes=((2, 2), (1, 1)), name="encoder"):
    """The default encoder: 3x3 conv blocks (two convs each) and max pooling.

    Returns:
        A `keras.Sequential` mapping `(B, H, W, C)` to `(B, h, w, filters[-1])`.
    """
    checks.same("encoder_filters", len(filters), "encoder_pool_sizes",
                len(pool_sizes), "length")
    blocks = []
    for k, (f, pool) in enumerate(zip(filters, pool_sizes), 1):
        checks.positive_int("encoder_filters", f)
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
    encoder_filters=None,
    encoder_pool_sizes=None,
    embedding_dim=None,
    units=None,
    attention_units=None,
    selector=True,
    initial_state="mean",
    dropout=None,
    doubly_stochastic=None,
    lambda_r=1.0,
    lambda_e=None,
    expectation_rate=None,
    baseline_decay=0.9,
    seed=None,
    preset="paper",
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
        encoder_filters, encoder_pool_sizes: the default encoder's sizes
            ((64, 128) and ((2, 2), (1, 1))).
        embedding_dim: `m`, the word embedding size (100).
        units: `n`, the LSTM units (1000).
        attention_units: the hidden size of the attention MLP `f_att` (512).
        selector: bool, the gating scalar `beta_t` (section 4.2.1).
        initial_state: how the LSTM starts: "mean" (the paper, section
            3.1.2: `h_0 = tanh(f_init,h(mean_i a_i))`, likewise `c_0`),
            "learned" (a learned vector, the same for every image) or
            "zeros". The last two give the decoder no view of the image
            but through its attention (an ablation, not the paper).
        dropout: dropout before the output projection (0.5).
        doubly_stochastic: `lambda` of eq. 14 (1; 0 turns it off).
        lambda_r, lambda_e: hard attention's REINFORCE and entropy weights
            (1 and 0.01).
        expectation_rate: hard attention: the probability that a caption
            trains on the expected context instead of sampled locations
            (section 4.1; 0.5 in the paper, "small" and "base" presets, 0
            in "tiny": always sample).
        baseline_decay: the moving-average baseline's decay (0.9).
        seed: the hard attention sampler's seed.
        preset: named sizes, one of `PRESETS` ("tiny", "small", "base",
            "paper"); a size given above overrides the preset's.
        name: the model's name (`show_attend_tell_<attention>` when None).

    Returns:
        A `ShowAttendTell`. Inputs: `images` `(B, H, W, C)` (or `features`
        `(B, L, D)`), `caption_in_ids` `(B, T)` (BOS y_1 ...), and for hard
        attention `caption_out_ids` `(B, T)` (y_1 ... EOS, the targets, for
        the reward). Output: `logits` `(B, T, vocab_size)`. Its `encode` /
        `step` decode (`Captioner(model, vocab)`).

    Example:

    >>> model = show_attend_tell(20, image_shape=(8, 45, 1),
    ...     encoder_filters=(8,), encoder_pool_sizes=((2, 2),),
    ...     embedding_dim=8, units=16, attention_units=8)
    >>> type(model).__name__, model.output_shape
    ('ShowAttendTell', (None, None, 20))
    """
    checks.one_of("attention", attention, ATTENTIONS)
    checks.one_of("initial_state", initial_state, INITIAL_STATES)
    c = from_preset(PRESETS, preset, encoder_filters=encoder_filters,
                    encoder_pool_sizes=encoder_pool_sizes,
                    embedding_dim=embedding_dim, units=units,
                    attention_units=attention_units, dropout=dropout,
                    doubly_stochastic=doubly_stochastic, lambda_e=lambda_e,
                    expectation_rate=expectation_rate)
    checks.sizes(dropout=c["dropout"], vocab_size=vocab_size,
                 embedding_dim=c["embedding_dim"], units=c["units"],
                 attention_units=c["attention_units"])
    for arg, value in (("doubly_stochastic", c["doubly_stochastic"]),
                       ("lambda_r", lambda_r), ("lambda_e", c["lambda_e"])):
        checks.nonnegative_number(arg, value)
    shape = feature_shape if feature_shape is not None else image_shape
    want = 2 if feature_shape is not None else 3
    arg = "feature_shape" if feature_shape is not None else "image_shape"
    checks.require(
        isinstance(shape, (tuple, list)) and len(shape) == want
        and all(not isinstance(d, bool) and isinstance(d, int) and d >= 1
                for d in shape),
        arg, f"a tuple of {want} positive ints", shape)
    hard = attention == "hard"
    m, n = c["embedding_dim"], c["units"]

    # === Layers ===
    if feature_shape is None and encoder is None:
        encoder = small_cnn(c["encoder_filters"], c["encoder_pool_sizes"])
    if hard:
        attention_layer = HardVisualAttention(
            c["attention_units"], gating=selector, seed=seed,
            expectation_rate=c["expectation_rate"], name="attention")
    else:
        attention_layer = SoftVisualAttention(c["attention_units"],
                                              gating=selector, name="attention")
    layers = [
        keras.layers.GlobalAveragePooling1D(name="mean_annotation"),
        *(initial_state_layers(n, initial_state)),
        keras.layers.Embedding(vocab_size, m, mask_zero=True, name="embedding"),
        AttentionRNN(n, attention_layer, cell="lstm", order="bahdanau",
                     output_state="current", name="decoder"),
        keras.layers.Dense(m, name="deep_output_h"),
        keras.layers.Dense(m, use_bias=False, name="deep_output_z"),
        keras.layers.Dropout(c["dropout"], name="output_dropout"),
        keras.layers.Dense(vocab_size, name="output_projection"),
    ]
    get = {layer.name: layer for layer in layers}.__getitem__

    # === Training graph ===
    inputs = {}
    if feature_shape is None:
        images = keras.Input(tuple(image_shape), name="images")
        inputs["images"] = images
        feature_map = encoder(images)                          # (B, h, w, D)
        checks.require(
            len(feature_map.shape) == 4 and None not in feature_map.shape[1:],
            "encoder", "a model mapping images to a feature map (B, h, w, D) "
            "of known size",
            note=f"It maps them to shape {tuple(feature_map.shape)}.")
        h, w, d = feature_map.shape[1:]
        a = keras.layers.Reshape((h * w, d), name="annotations")(feature_map)
    else:
        a = keras.Input(tuple(feature_shape), name="features")  # (B, L, D)
        inputs["features"] = a
    caption_in_ids = keras.Input((None,), dtype="int32", name="caption_in_ids")
    inputs["caption_in_ids"] = caption_in_ids
    h0, c0 = initial_states(get, a)                            # (B, n)
    y = get("embedding")(caption_in_ids)                       # (B, T, m)
    step_mask = ops.not_equal(caption_in_ids, 0)
    decoded = get("decoder")(
        y, a, initial_state=[h0, c0], return_attention_scores=True,
        return_attention_samples=hard)                         # (B, T, n + D)
    out, alphas = decoded[0], decoded[1]
    logits = readout(get, out, y)                              # (B, T, V)
    if hard:
        caption_out_ids = keras.Input((None,), dtype="int32", name="caption_out_ids")
        inputs["caption_out_ids"] = caption_out_ids
        logits = HardAttentionReinforce(
            lambda_r, c["lambda_e"], baseline_decay, name="reinforce")(
                logits, caption_out_ids, alphas, decoded[2])
    if c["doubly_stochastic"]:
        logits = DoublyStochasticRegularization(
            c["doubly_stochastic"], name="doubly_stochastic")(
                alphas, step_mask=step_mask, passthrough=logits)
    logits = keras.layers.Identity(name="logits")(logits)
    return ShowAttendTell(inputs, logits, name=name or f"show_attend_tell_{attention}")


def initial_state_layers(n, kind):
    """The `init_h` and `init_c` layers of `initial_state=kind`."""
    if kind == "mean":
        return [keras.layers.Dense(n, activation="tanh", name=f"init_{s}")
                for s in "hc"]
    return [LearnedInitialState(n, trainable=kind == "learned", name=f"init_{s}")
            for s in "hc"]


def initial_states(get, a):
    """Annotations `(B, L, D)` -> `h_0`, `c_0` `(B, n)` from their mean (or,
    for a learned or zero initial state, the same vectors for every image)."""
    mean_a = get("mean_annotation")(a)                         # (B, D)
    return get("init_h")(mean_a), get("init_c")(mean_a)


def readout(get, out, y):
    """`[h_t; z_t]` and `E y_{t-1}` -> logits `L_o tanh(E y + L_h h + L_z z)`
    (eq. 7; any leading shape)."""
    units = get("decoder").units
    h_t, z_t = out[..., :units], out[..., units:]
    t = ops.tanh(y + get("deep_output_h")(h_t) + get("deep_output_z")(z_t))
    return get("output_projection")(get("output_dropout")(t))


# === Decoding: encode once, then one step at a time ===

# The image-to-annotations sub-graph of each model, built once.
_ANNOTATORS = weakref.WeakKeyDictionary()


@keras.saving.register_keras_serializable(package="kerattn")
class ShowAttendTell(GenerativeModel):
    """Show, Attend and Tell, built by `show_attend_tell`: the training graph
    with `encode` and `step` (see `kerattn.zoo.GenerativeModel`).

    At inference the hard model uses the expected context (the paper's
    evaluation).

    Args:
        inputs, outputs, name: those of Keras' functional `Model`; the
            builder (`show_attend_tell`) passes them.

    Example:

    >>> import numpy as np
    >>> model = kerattn.zoo.show_attend_tell(
    ...     30, feature_shape=(6, 8), preset="tiny")
    >>> state = model.encode(np.zeros((1, 6, 8), "float32"), max_length=4)
    >>> logits, state, attention = model.step(np.array([2], "int32"), state, 0)
    >>> tuple(logits.shape)
    (1, 30)
    """

    beam_invariant = ("cache",)  # the annotations and their projected keys

    @property
    def encoder_input_name(self):
        return "features" if "features" in self.input else "images"

    @property
    def grid(self):
        """The `(h, w)` grid of annotation vectors (None for features)."""
        if self.encoder_input_name == "features":
            return None
        return tuple(self.get_layer("annotations").input.shape[1:3])

    def annotations(self, inputs):
        """Images `(B, H, W, C)` (or features) -> annotations `(B, L, D)`:
        the training graph's own sub-graph, whatever the encoder."""
        if self.encoder_input_name == "features":
            return ops.convert_to_tensor(inputs, self.compute_dtype)
        if self not in _ANNOTATORS:
            _ANNOTATORS[self] = keras.Model(
                self.input["images"], self.get_layer("annotations").output)
        return _ANNOTATORS[self](inputs)

    def encode(self, images, max_length=None):
        """Images (or features) -> `{"states", "cache"}` (keys projected once)."""
        a = self.annotations(images)                                # (B, L, D)
        h0, c0 = initial_states(self.get_layer, a)
        decoder = self.get_layer("decoder")
        cache = decoder.precompute(a)
        return {
            "states": decoder.get_initial_state(ops.shape(a)[0], [h0, c0], cache),
            "cache": cache,
        }

    def step(self, tokens, state, index):
        """`(B,)` previous words -> `(logits (B, V), state, attention (B, L))`."""
        y = self.get_layer("embedding")(tokens)                     # (B, m)
        out, states, weights = self.get_layer("decoder").step(
            y, state["states"], state["cache"])                     # (B, n + D)
        logits = readout(self.get_layer, out, y)
        return logits, {"states": states, "cache": state["cache"]}, weights


# === Presets: "paper" follows arctic-captions; the others fit a CPU ===

PRESETS = {
    "tiny": dict(encoder_filters=(8,), encoder_pool_sizes=((2, 2),),
                 embedding_dim=8, units=16, attention_units=8,
                 expectation_rate=0.0),
    # The CPU sizes give one annotation per 9-pixel digit cell of a strip (no
    # pooling after the first convolution, then an 8 x 9 window: a 1 x 5 grid
    # whose locations see about one cell each) and train hard attention with
    # the paper's expected context half the time. zoo/show_attend_tell/
    # RESULTS.md has the study that chose this: on a finer grid whose
    # locations see half of each neighbour, attention learns to look beside
    # the digit it names.
    "small": dict(encoder_filters=(32, 64), encoder_pool_sizes=((1, 1), (8, 9)),
                  embedding_dim=64, units=128, attention_units=128, dropout=0.2,
                  doubly_stochastic=0.01, expectation_rate=0.5),
    "base": dict(encoder_filters=(32, 64), encoder_pool_sizes=((1, 1), (8, 9)),
                 embedding_dim=64, units=256, attention_units=128, dropout=0.2,
                 doubly_stochastic=0.01, lambda_e=0.002, expectation_rate=0.5),
    "paper": dict(encoder_filters=(64, 128), encoder_pool_sizes=((2, 2), (1, 1)),
                  embedding_dim=100, units=1000, attention_units=512,
                  dropout=0.5, doubly_stochastic=1.0, lambda_e=0.01,
                  expectation_rate=0.5),
}

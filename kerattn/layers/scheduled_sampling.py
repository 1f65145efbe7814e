"""Scheduled sampling (Bengio et al. 2015) for `AttentionRNN`'s training pass.

A sampler is given to a decoder by assignment (`decoder.sampler = ...`);
in training (`training=True`) the decoder then runs its scheduled loop: at
each step after the first, each row's input is, with probability `p`, made
from the decoder's own previous output instead of the given (ground-truth)
one. Without a sampler, or outside training, nothing changes (the loop
whose input products are taken before it starts keeps its speed). The
randomness of a whole pass is drawn before the loop (a JAX scan cannot
advance a seed generator), from the decoder's own seed generator (a state
the training step carries, seeded by the sampler's `seed`; not saved). `p` is a Python float read when the training
function is traced: `kerattn.callbacks.SamplingSchedule` sets it at each
epoch and has the training function traced again.
"""

import keras
from keras import ops

from kerattn import checks


class ScheduledSampler:
    """The part the two samplers share: the probability, the coins, the
    choice between the given and the model's own input.

    A subclass defines `_own_input(output, noise)` (the input the model
    makes from its previous output) and may draw more noise
    (`_draw_more`)."""

    def __init__(self, probability=0.0, seed=None):
        self.probability = probability
        checks.int_at_least("seed", seed, 0, allow_none=True)
        self.seed = seed

    @property
    def probability(self):
        """`p`, the probability of the model's own input (a float in [0, 1])."""
        return self._probability

    @probability.setter
    def probability(self, value):
        checks.number("probability", value, low=0.0, high=1.0)
        self._probability = float(value)

    def draw(self, batch, steps, output_dim, seed=None):
        """The randomness of one pass: `{"coin": (batch, steps)}` uniform,
        1 at the first step (whose input is always the given one), and what
        the subclass draws. `seed`: a `keras.random.SeedGenerator` (the
        decoder's) or an int; None: the sampler's `seed`."""
        seed = self.seed if seed is None else seed
        if not isinstance(seed, keras.random.SeedGenerator):
            seed = keras.random.SeedGenerator(seed)
        coin = keras.random.uniform((batch, steps), seed=seed)
        first = ops.expand_dims(ops.arange(steps) == 0, 0)
        noise = {"coin": ops.where(first, ops.ones_like(coin), coin)}
        noise.update(self._draw_more(batch, steps, output_dim, seed))
        return noise

    def _draw_more(self, batch, steps, output_dim, seed):
        return {}

    def next_input(self, output, given, noise):
        """The step's input: `given` `(batch, input_dim)`, or where the
        row's coin is below `p`, the model's own input from its previous
        `output`."""
        own = ops.cast(self._own_input(output, noise), given.dtype)
        sample = ops.expand_dims(noise["coin"] < self.probability, -1)
        return ops.where(sample, own, given)


class ScheduledEmbeddingSampler(ScheduledSampler):
    """Scheduled sampling of the model's own tokens (Bengio et al. 2015,
    section 2.4; TensorFlow Addons' `ScheduledEmbeddingTrainingSampler`):
    with probability `p`, the next input is the embedding of a token drawn
    from `softmax(readout(output))`, the model's prediction at the previous
    step (its argmax with `greedy=True`).

    Args:
        embedding: the model's target embedding, a callable from int ids
            `(batch,)` to `(batch, input_dim)` (a Keras `Embedding`).
        readout: the model's output layer, a Keras layer from the decoder's
            output `(batch, output_dim)` to logits `(batch, V)` (its
            `compute_output_shape` gives `V`).
        probability: float `p` in [0, 1] (0: teacher forcing); a schedule
            sets it (`kerattn.callbacks.SamplingSchedule`).
        greedy: bool, the argmax instead of a sample.
        seed: optional int, the sampler's seed.

    Example:

    >>> import numpy as np, keras
    >>> from kerattn.layers import AttentionRNN, LuongAttention
    >>> embedding, readout = keras.layers.Embedding(12, 6), keras.layers.Dense(12)
    >>> decoder = AttentionRNN(8, LuongAttention("general"), order="luong")
    >>> decoder.sampler = ScheduledEmbeddingSampler(embedding, readout,
    ...                                             probability=0.25, seed=1)
    >>> y = embedding(np.array([[1, 4, 5, 6]]))
    >>> out = decoder(y, np.random.rand(1, 5, 8).astype("float32"), training=True)
    >>> tuple(out.shape)
    (1, 4, 8)
    """

    def __init__(self, embedding, readout, probability=0.0, greedy=False,
                 seed=None):
        checks.function("embedding", embedding, "a callable from ids to vectors "
                        "(the model's target Embedding)")
        checks.instance("readout", readout, keras.layers.Layer,
                        "a Keras layer from the decoder's output to logits")
        checks.boolean("greedy", greedy)
        super().__init__(probability, seed)
        self.embedding, self.readout, self.greedy = embedding, readout, greedy

    def _vocabulary(self, output_dim):
        return int(self.readout.compute_output_shape((1, output_dim))[-1])

    def _draw_more(self, batch, steps, output_dim, seed):
        if self.greedy:
            return {}
        # Gumbel-max: argmax(logits + g) is a sample of softmax(logits).
        u = keras.random.uniform((batch, steps, self._vocabulary(output_dim)),
                                 minval=1e-20, maxval=1.0, seed=seed)
        return {"gumbel": -ops.log(-ops.log(u))}

    def _own_input(self, output, noise):
        logits = ops.cast(self.readout(output), "float32")
        if not self.greedy:
            logits = logits + noise["gumbel"]
        return self.embedding(ops.argmax(logits, axis=-1))


class ScheduledOutputSampler(ScheduledSampler):
    """Scheduled sampling of the model's own outputs (TensorFlow Addons'
    `ScheduledOutputTrainingSampler`): with probability `p`, the next input
    is the previous step's output itself, or `transform(output)`.

    Args:
        probability: float `p` in [0, 1], as `ScheduledEmbeddingSampler`'s.
        transform: optional Keras layer (or callable) from the decoder's
            output to an input (tfa's `next_inputs_fn`); None: the output
            is the input (their sizes must be equal).
        seed: optional int, the sampler's seed.

    Example:

    >>> import numpy as np
    >>> from kerattn.layers import AttentionRNN, LuongAttention
    >>> decoder = AttentionRNN(6, LuongAttention("general"), order="luong")
    >>> decoder.sampler = ScheduledOutputSampler(probability=1.0)
    >>> y = np.random.rand(2, 3, 6).astype("float32")
    >>> tuple(decoder(y, np.random.rand(2, 4, 6).astype("float32"),
    ...               training=True).shape)
    (2, 3, 6)
    """

    def __init__(self, probability=0.0, transform=None, seed=None):
        if transform is not None:
            checks.function("transform", transform,
                            "a layer or callable from outputs to inputs")
        super().__init__(probability, seed)
        self.transform = transform

    def _own_input(self, output, noise):
        return output if self.transform is None else self.transform(output)

"""Keras' `GRU` and `LSTM`, with the encoder's loop done as the decoder's is.

`GRU` and `LSTM` are Keras' layers (same arguments, cells, weights, weight
names and outputs) with one override, `inner_loop`, the hook where Keras'
own cuDNN paths plug in. Keras' generic loop calls the cell layer once per
time step (on torch, a Python call with all of `Layer.__call__`'s work each
step, the input product included). Here:

1. the input products `x_t W + b` of all steps are one matmul before the
   loop, and the weights are read once (`recurrent_stack.cell_weights`);
2. the loop applies the cell's equations with `keras.ops`
   (`recurrent_stack.cell_step`, the same functions as `AttentionRNN`'s
   decoder), over `scan` on every backend, masked rows keeping their state;
3. on torch, where the inputs allow it, the whole sequence is one call of
   torch's fused `torch.gru` / `torch.lstm` on packed sequences
   (`torch_recurrent.py`, which also runs cuDNN on a CUDA device).

Keras' semantics are kept exactly, including those of masks: a padded step
keeps the row's state, and its output is the previous step's output, or
zeros with `zero_output_for_mask=True` (which `Bidirectional` sets when it
returns sequences); with `go_backwards=True` the outputs come in the order
they were computed, last time step first.

Where a case is not covered Keras' own loop runs, unchanged:
`recurrent_dropout`, `unroll=True`, `use_cudnn=True`, TensorFlow with a
GPU (Keras' cuDNN kernel), and JAX (see `_keeps_keras_loop`). The input `dropout` is Keras' own mask, drawn
once per sequence as in Keras' cuDNN path.

A model saved with Keras' classes loads as it was saved (Keras' loop); one
built with these saves them as `kerattn>GRU` / `kerattn>LSTM`, with the
same weights file.
"""

import keras
from keras import ops, tree

from kerattn import checks
from kerattn.layers.recurrent_stack import cell_step, cell_weights, input_product
from kerattn.layers.scan import scan_carry


class FastRecurrentLoop:
    """The `inner_loop` shared by `GRU` and `LSTM` (a mixin before the
    Keras class): the fast paths, and Keras' loop where they do not apply;
    and the checks of the arguments Keras leaves to a backend's error.

    `inner_loop(sequences, initial_state, mask, training)` returns
    `(last_output, outputs, states)` as Keras' `backend.rnn` does: outputs
    `(batch, T, units)` in the order computed, states a list.
    """

    def __init__(self, units, **kwargs):
        checks.positive_int("units", units)
        for name in ("dropout", "recurrent_dropout"):
            checks.number(name, kwargs.get(name, 0.0), 0.0, 1.0, high_open=True)
        super().__init__(units, **kwargs)

    def call(self, sequences, initial_state=None, mask=None, training=False):
        shape = sequences.shape
        checks.nonempty("sequences", sequences)
        if self.built:
            checks.same("sequences", shape[-1], "the inputs the layer was built for",
                        self.cell.kernel.shape[0], "feature size")
        checks.mask("mask", mask, tuple(shape[:2]))
        if initial_state is not None:
            states = (list(initial_state) if isinstance(initial_state, (list, tuple))
                      else [initial_state])
            count = len(tree.flatten(self.cell.state_size))
            checks.require(len(states) == count, "initial_state",
                           f"{count} tensor(s) of shape (batch, {self.cell.units})",
                           f"{len(states)} tensor(s)")
            for state in states:
                checks.shape("initial_state", state, (shape[0], self.cell.units))
        return super().call(sequences, initial_state=initial_state, mask=mask,
                            training=training)

    def _keeps_keras_loop(self):
        if self.cell.recurrent_dropout or self.unroll or self.use_cudnn is True:
            return True
        # JAX: Keras' `lax.scan` over the cell is one compiled loop already,
        # and it was as fast as this one (figure 3, 0.97-1.02 of it).
        if keras.backend.backend() == "jax":
            return True
        # TensorFlow on a GPU: Keras' cuDNN kernel (masks included).
        return (keras.backend.backend() == "tensorflow"
                and bool(keras.distribution.list_devices("gpu")))

    def inner_loop(self, sequences, initial_state, mask, training=False):
        if self._keeps_keras_loop():
            return super().inner_loop(sequences, initial_state, mask,
                                      training=training)
        if tree.is_nested(mask):
            mask = mask[0]
        states = list(initial_state) if tree.is_nested(initial_state) else [initial_state]
        if training and self.cell.dropout:   # one mask a sequence, as Keras
            keep = self.cell.get_dropout_mask(sequences[:, 0, :])
            sequences = sequences * ops.expand_dims(keep, 1)
        if keras.backend.backend() == "torch":
            from kerattn.layers import torch_recurrent

            try:
                return torch_recurrent.fused_loop(self, sequences, states, mask)
            except NotImplementedError:
                pass
        return self._scan_loop(sequences, states, mask)

    def _scan_loop(self, sequences, states, mask):
        """Steps 1 and 2 of the module docstring, on every backend."""
        cell, dtype = self.cell, self.cell.compute_dtype
        weights = cell_weights(cell, dtype)
        x_proj = input_product(ops.cast(sequences, dtype), weights)  # (B, T, G)
        states = [ops.cast(s, dtype) for s in states]
        steps = ops.moveaxis(x_proj, 1, 0)                            # (T, B, G)
        keep = None if mask is None else ops.moveaxis(ops.cast(mask, "bool"), 1, 0)
        if self.go_backwards:
            steps = ops.flip(steps, 0)
            keep = None if keep is None else ops.flip(keep, 0)
        zeros = ops.zeros_like(states[0])
        # A padded step before any real one (padding first, e.g. a reversed
        # right-padded row) repeats the "previous output": Keras' JAX loop
        # takes the first state for it (keras/src/backend/jax/rnn.py), its
        # TensorFlow and torch loops zeros. Each backend is matched.
        first = states[0] if keras.backend.backend() == "jax" else zeros

        def body(carry, step):
            old, previous = carry
            x_t, keep_t = step if keep is not None else (step, None)
            h, new = cell_step(cell, x_t, old, weights)
            if keep_t is None:
                return new, h
            keep_t = ops.expand_dims(keep_t, -1)
            new = [ops.where(keep_t, n, o) for n, o in zip(new, old)]
            held = zeros if self.zero_output_for_mask else previous
            return new, ops.where(keep_t, h, held)

        xs = steps if keep is None else (steps, keep)
        (final, _), (_, outputs) = scan_carry(body, (states, first), xs)
        outputs = ops.moveaxis(outputs, 0, 1)                         # (B, T, u)
        return outputs[:, -1], outputs, list(final)


@keras.saving.register_keras_serializable(package="kerattn")
class GRU(FastRecurrentLoop, keras.layers.GRU):
    """Keras' `keras.layers.GRU`, with the loop of `kerattn.layers.recurrent`.

    The same weights and results as `keras.layers.GRU`; only the loop
    differs (input products before it, torch's fused kernel where it
    applies).

    Args:
        units: the state's size.
        **kwargs: every other argument of `keras.layers.GRU` (`reset_after`,
            `return_sequences`, `return_state`, `go_backwards`, `dropout`,
            ...), with Keras' meaning and defaults.

    Example:

    >>> import numpy as np
    >>> x = np.random.default_rng(0).normal(size=(2, 5, 3)).astype("float32")
    >>> mine, theirs = GRU(4), keras.layers.GRU(4)
    >>> _, _ = mine(x), theirs(x)
    >>> theirs.set_weights(mine.get_weights())
    >>> mask = np.array([[True] * 3 + [False] * 2, [True] * 5])
    >>> same = keras.ops.all(keras.ops.abs(mine(x, mask=mask) - theirs(x, mask=mask)) < 1e-5)
    >>> bool(same)
    True
    """


@keras.saving.register_keras_serializable(package="kerattn")
class LSTM(FastRecurrentLoop, keras.layers.LSTM):
    """Keras' `keras.layers.LSTM`, with the loop of `kerattn.layers.recurrent`.

    The same weights and results as `keras.layers.LSTM`; only the loop
    differs.

    Args:
        units: the state's size.
        **kwargs: every other argument of `keras.layers.LSTM`, with Keras'
            meaning and defaults.

    Example:

    >>> import numpy as np
    >>> x = np.random.default_rng(0).normal(size=(2, 5, 3)).astype("float32")
    >>> mine, theirs = LSTM(4, go_backwards=True), keras.layers.LSTM(4, go_backwards=True)
    >>> _, _ = mine(x), theirs(x)
    >>> theirs.set_weights(mine.get_weights())
    >>> bool(keras.ops.all(keras.ops.abs(mine(x) - theirs(x)) < 1e-5))
    True
    """

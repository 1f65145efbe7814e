"""The GRU/LSTM stack of the recurrent attention decoder, in `keras.ops`.

`RecurrentStack` is the part of `AttentionRNNCell` that knows the cells'
equations and nothing of attention: the weights read once per call, the
bottom cell's product with the tokens, one step up the stack. The cells are
Keras' `GRUCell` / `LSTMCell` (they own, build and save the weights); their
equations are applied here exactly as Keras' cells compute them (both GRU
forms, gates `z, r, h` and `i, f, c, o`).
"""

import keras
from keras import ops

from kerattn.layers.attention_utils import project


def is_lstm(cell):
    """Whether `cell` is a Keras `LSTMCell` (else a `GRUCell`)."""
    return isinstance(cell, keras.layers.LSTMCell)


def cell_weights(cell, dtype):
    """`(kernel, recurrent_kernel, input_bias, recurrent_bias)` of a Keras
    `GRUCell` / `LSTMCell`, as tensors of `dtype`.

    A bias is None where the cell has none: GRU `reset_after=False` and
    LSTM carry their one bias on the input side, and a cell built with
    `use_bias=False` has neither.
    """
    bias_in = bias_rec = None
    if cell.use_bias:
        bias = ops.cast(cell.bias, dtype)
        if not is_lstm(cell) and cell.reset_after:
            bias_in, bias_rec = bias[0], bias[1]
        else:
            bias_in = bias
    return (ops.cast(cell.kernel, dtype), ops.cast(cell.recurrent_kernel, dtype),
            bias_in, bias_rec)


def input_product(x, weights):
    """`x W + b_input` for a cell's `cell_weights`, any leading shape: the
    part of a step that does not depend on the state, so that a loop can
    compute it for every step in one product before it starts."""
    kernel, _, bias, _ = weights
    product = project(x, kernel)
    return product if bias is None else product + bias


def cell_step(cell, x_proj, states, weights):
    """One step of `cell` from its input product `x_proj = x W + b_input`.

    Keras' `GRUCell` (both `reset_after` forms, gates `z, r, h`) and
    `LSTMCell` (gates `i, f, c, o`), as they compute them, on weights read
    once by `cell_weights`. Returns `(h, new states of the cell)`.
    """
    _, recurrent, _, bias_rec = weights
    act, rec_act, u = cell.activation, cell.recurrent_activation, cell.units
    if is_lstm(cell):
        h, c = states
        z = x_proj + ops.matmul(h, recurrent)
        z_i, z_f, z_c, z_o = ops.split(z, 4, axis=-1)
        c = rec_act(z_f) * c + rec_act(z_i) * act(z_c)
        h = rec_act(z_o) * act(c)
        return h, [h, c]
    (h,) = states
    x_z, x_r, x_h = ops.split(x_proj, 3, axis=-1)
    if cell.reset_after:  # h~ = tanh(W x + b + r * (U h + b_U))
        inner = ops.matmul(h, recurrent)
        if bias_rec is not None:
            inner = inner + bias_rec
        z = rec_act(x_z + inner[:, :u])
        r = rec_act(x_r + inner[:, u:2 * u])
        hh = act(x_h + r * inner[:, 2 * u:])
    else:  # h~ = tanh(W x + b + U (r * h))
        inner = ops.matmul(h, recurrent[:, :2 * u])
        z = rec_act(x_z + inner[:, :u])
        r = rec_act(x_r + inner[:, u:])
        hh = act(x_h + ops.matmul(r * h, recurrent[:, 2 * u:]))
    h = z * h + (1 - z) * hh
    return h, [h]


class RecurrentStack:
    """A mixin for a layer with `rnn_cells` (Keras GRU/LSTM cells, bottom
    first), `cell_type` ("gru" or "lstm"), `units`, `num_layers`,
    `inputs_dim` (the token part of the bottom input) and an optional
    `attentional` Dense layer (Luong's `W_c`).

    The general path: with `keras_cell` set (any Keras RNN cell, the one
    entry of `rnn_cells`), a step calls the cell itself on its whole input
    row, `cell(x, states) -> (output, states)`, its states kept as a flat
    list (`state_sizes`); nothing is multiplied before the loop. The host
    sets `keras_cell` (None on the fast path) in its `__init__`: not a
    class attribute, which on torch would hide the layer that torch's
    module keeps.
    """

    @property
    def rnn_cell(self):
        """The bottom cell of the stack."""
        return self.rnn_cells[0]

    @property
    def states_per_layer(self):
        if self.keras_cell is not None:
            return len(self.state_sizes)
        return 1 if self.cell_type == "gru" else 2

    @property
    def num_cell_states(self):
        return self.states_per_layer * self.num_layers

    @property
    def state_sizes(self):
        """The size of each state vector, in the flat order of the cell
        states (`(batch, size)` each)."""
        if self.keras_cell is not None:
            return list(keras.tree.flatten(self.keras_cell.state_size))
        return [self.units] * self.num_cell_states

    def top_hidden(self, cell_states):
        """The top layer's hidden state `h` in a flat list of cell states."""
        return cell_states[(self.num_layers - 1) * self.states_per_layer]

    # --- the weights, read once per call --------------------------------------

    def loop_weights(self):
        """The stack's and Luong's weights as tensors of the compute dtype.

        Read once per call, outside the loop. Returns a dict: `layers`, one
        `cell_weights` tuple per cell; `token_kernel` and `feed_kernel`,
        the bottom kernel's rows for `y_{t-1}` and for the fed vector (None
        without one); `attentional`, `W_c` (Luong).
        """
        dtype = self.compute_dtype
        attentional = (None if self.attentional is None
                       else ops.cast(self.attentional.kernel, dtype))
        if self.keras_cell is not None:   # the cell reads its own weights
            return {"layers": None, "attentional": attentional}
        layers = [cell_weights(cell, dtype) for cell in self.rnn_cells]
        kernel, m = layers[0][0], self.inputs_dim
        has_feed = kernel.shape[0] > m
        return {
            "layers": layers,
            "token_kernel": kernel[:m] if has_feed else kernel,
            "feed_kernel": kernel[m:] if has_feed else None,
            "attentional": attentional,
        }

    def project_inputs(self, inputs, weights):
        """`y W[:m] + b`, the bottom cell's product with the tokens alone.

        `inputs` is `(batch, m)` or `(batch, T, m)`; the result has the
        cell's gate width (`3 units` GRU, `4 units` LSTM) as last axis.
        """
        if self.keras_cell is not None:   # no product before the loop
            return ops.convert_to_tensor(inputs, self.compute_dtype)
        x = project(inputs, weights["token_kernel"])
        bias = weights["layers"][0][2]
        return x if bias is None else x + bias

    # --- one step up the stack ------------------------------------------------

    def _cell_step(self, k, x_proj, states, weights):
        """Cell `k` from its input product: `(h, new states of the cell)`."""
        return cell_step(self.rnn_cells[k], x_proj, states, weights["layers"][k])

    def _stack(self, x_proj, cell_states, weights):
        """Up the stack from the bottom cell's input product (the general
        path: from its input row)."""
        if self.keras_cell is not None:
            return self._keras_cell_step(x_proj, cell_states)
        per, new = self.states_per_layer, []
        for k in range(self.num_layers):
            if k > 0:  # the layer below's output times this cell's kernel
                x_proj = input_product(h, weights["layers"][k])
            h, states = self._cell_step(k, x_proj,
                                        cell_states[k * per:(k + 1) * per],
                                        weights)
            new += states
        return h, new

    def _keras_cell_step(self, x, cell_states):
        """The general path's step: the Keras cell on its input row, its
        flat states packed as its `state_size` nests them."""
        cell, dtype = self.keras_cell, self.compute_dtype
        structure = cell.state_size
        if not keras.tree.is_nested(structure):
            structure = [structure]
        states = keras.tree.pack_sequence_as(structure, list(cell_states))
        output, new = cell(x, states)
        new = [ops.cast(s, dtype) for s in keras.tree.flatten(new)]
        return ops.cast(output, dtype), new

    def run_stack(self, x, cell_states, weights=None):
        """One step up the stack from the bottom input `x` (its whole row,
        `[y; feed]`): `(top output, new flat cell states)`."""
        weights = self.loop_weights() if weights is None else weights
        x = ops.convert_to_tensor(x, self.compute_dtype)
        cell_states = [ops.convert_to_tensor(s, self.compute_dtype)
                       for s in cell_states]
        if self.keras_cell is not None:
            return self._keras_cell_step(x, cell_states)
        return self._stack(input_product(x, weights["layers"][0]),
                           cell_states, weights)

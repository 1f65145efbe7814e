"""A recurrent attention decoder: a GRU/LSTM cell + attention + feeding rule.

`AttentionRNN` runs the whole target sequence (training, scoring);
`AttentionRNNCell` is one step of it (incremental decoding). Inside the
loop only recurrent work is done: the bottom cell's product with the
embedded tokens is one matmul over all steps before the loop, and the
weights of the cells, the attention and Luong's attentional layer are
applied with `keras.ops` (the Keras sublayers own, build and save them).
"""

import functools

import keras
from keras import ops
from keras import tree

from kerattn import checks
from kerattn import keras_fixes
from kerattn.layers.attention_utils import mask_as, wait_reads
from kerattn.layers.base_attention import BaseAttention
from kerattn.layers.multiple_attention import as_one_attention, layer_from
from kerattn.layers.recurrent_stack import RecurrentStack, input_product
from kerattn.layers.scan import masked_scan

CELLS = ("gru", "lstm")
ORDERS = ("bahdanau", "luong")
# What order "luong"'s step outputs (None: "attention" with the attentional
# layer, "cell_and_context" without).
STEP_OUTPUTS = ("attention", "cell", "cell_and_context")


def _check_window(window):
    """`attention_window`: None or `(backward, forward)`, as a tuple."""
    if window is None:
        return None
    checks.require(
        isinstance(window, (list, tuple)) and len(window) == 2
        and all(isinstance(w, int) and not isinstance(w, bool) for w in window)
        and window[0] >= 0 and window[1] >= 1, "attention_window",
        "None or (backward >= 0, forward >= 1) positions around the last "
        "attended one", window)
    return tuple(window)


def _check_activation(activation):
    checks.one_of("attentional_activation", activation, ("tanh", None))


def _check_step_output(step_output, order):
    checks.one_of("step_output", step_output, (None,) + STEP_OUTPUTS)
    checks.require(
        step_output is None or order == "luong", "step_output",
        "None for order='bahdanau' (its step outputs [s; c]; "
        "`output_state` picks the state)", step_output)


def _cell_from(cell, order, units, num_layers):
    """`cell`: "gru", "lstm", or a Keras RNN cell (a layer with a
    `state_size`, called as `cell(inputs, states) -> (output, states)`),
    maybe as a saved config."""
    if isinstance(cell, str):
        checks.one_of("cell", cell, CELLS)
        return cell
    cell = layer_from(cell)
    checks.require(
        isinstance(cell, keras.layers.Layer) and hasattr(cell, "state_size"),
        "cell", f'one of {CELLS!r} or a Keras RNN cell (a layer with a '
        "`state_size`, e.g. keras.layers.StackedRNNCells([...]))",
        type(cell).__name__)
    sizes = keras.tree.flatten(cell.state_size)
    checks.require(
        sizes and all(isinstance(n, int) for n in sizes), "cell",
        "a cell whose `state_size` is ints (one per state vector)",
        cell.state_size)
    checks.require(
        order == "luong", "order",
        "'luong' with a Keras cell (Bahdanau's order attends with the "
        "previous state, which a general cell does not name; use cell="
        "'gru' or 'lstm')", order)
    checks.require(
        num_layers == 1, "num_layers",
        "1 with a Keras cell (stack inside it: keras.layers."
        "StackedRNNCells)", num_layers)
    size = getattr(cell, "output_size", None)
    checks.require(
        not isinstance(size, int) or size == units, "units",
        f"the cell's output size, {size}", units)
    return cell


def _check_args(units, attention, cell, order, attentional_units,
                num_layers, output_state, input_feeding, attentional_layer,
                wait_k=None, wait_rate=1.0):
    """The arguments AttentionRNN and its cell share; the attention layer."""
    checks.positive_int("units", units)
    checks.positive_int("wait_k", wait_k, allow_none=True)
    checks.positive_number("wait_rate", wait_rate)
    checks.require(wait_k is not None or wait_rate == 1.0, "wait_rate",
                   "1.0 without wait_k (it is the rate of a wait-k schedule)",
                   wait_rate)
    checks.positive_int("num_layers", num_layers)
    checks.positive_int("attentional_units", attentional_units,
                        allow_none=True)
    # A saved config holds a dict; tfa's list of mechanisms becomes one.
    attention = as_one_attention(layer_from(attention))
    checks.instance(
        "attention", attention, BaseAttention,
        "a single-head kerattn attention layer (a kerattn.layers."
        "BaseAttention, e.g. BahdanauAttention or LuongAttention)")
    checks.one_of("order", order, ORDERS)
    checks.one_of("output_state", output_state, ("previous", "current"))
    checks.boolean("input_feeding", input_feeding)
    checks.boolean("attentional_layer", attentional_layer)
    return attention


@keras.saving.register_keras_serializable(package="kerattn")
class AttentionRNNCell(RecurrentStack, keras.layers.Layer):
    """One step of `AttentionRNN`: a GRU/LSTM stack, an attention, a feeding rule.

    A plain function of what it is given: no option is set on it from
    outside. `call(inputs, states, memory)` returns `(output, new_states,
    extras)`, where `extras` holds the step's attention `weights`. The
    encoder's projected keys, values and mask (`memory`, from
    `AttentionRNN.precompute`) are an argument of every step, never a state.

    The state is a dict, read by name only (the searches and the loop map
    over it as a tree):

    - `"cells"`: the stack's states, layer by layer (GRU `[h]`, LSTM `[h,
      c]`), each `(batch, units)`;
    - `"feed"` (Luong's input feeding only): `h~_{t-1}`;
    - `"attention"`: the attention's own state, whatever its layout
      (`BaseAttention.initial_state`: `()` for a stateless attention, the
      alignment history of coverage or location-sensitive attention, ...);
      the cell passes it to the attention's `step` and keeps what comes
      back, without reading it;
    - `"step"` `(batch, 1)` float32 (whatever the dtype policy: bfloat16
      counts exactly only to 256): each row's own count of its real
      (unpadded) steps, the `position` the attention gets (local-m's
      `p_t = t`) and a wait-k schedule reads, whatever the other rows of its
      batch do.

    Being state, all of it is kept at padded steps and reordered by beam
    search.

    The cells are Keras' `GRUCell` / `LSTMCell`, their equations applied
    with `keras.ops` (`RecurrentStack`). The bottom cell's input is `[y_{t-1}; feed]` (the context for
    Bahdanau's order, `h~_{t-1}` for Luong's input feeding); its product
    splits as `y_{t-1} W[:m] + b + feed W[m:]`, and `AttentionRNN` computes
    the token part, which depends on the targets alone, for every step at
    once (`project_inputs`) before its loop. A single step (`call`)
    multiplies the whole row.

    `AttentionRNN` builds and drives it; use it directly to write a decoding
    loop of your own.

    Args:
        cell, units, attention, order, input_feeding, num_layers: as
            `AttentionRNN`'s (`input_feeding` is False for order
            "bahdanau" here).
        output_state, reset_after, attentional_layer, step_output: likewise
            (`step_output` resolved: None is read as `AttentionRNN` says).
        attentional_units: the size of Luong's `h~_t = tanh(W_c [c; h])`
            (an int: `AttentionRNN` gives `units` for None).
        wait_k, wait_rate: as `AttentionRNN`'s.
        **kwargs: base layer keyword arguments.

    Example:

    >>> import numpy as np
    >>> from kerattn.layers import AttentionRNN, BahdanauAttention
    >>> decoder = AttentionRNN(16, BahdanauAttention(12))
    >>> _ = decoder(np.zeros((2, 6, 8), "float32"), np.zeros((2, 9, 10), "float32"))
    >>> memory = decoder.precompute(np.zeros((2, 9, 10), "float32"))
    >>> states = decoder.get_initial_state(2)
    >>> output, states, extras = decoder.cell(np.zeros((2, 8), "float32"),
    ...                                       states, decoder.memory_of(memory))
    >>> tuple(output.shape), tuple(extras["weights"].shape)
    ((2, 26), (2, 9))
    """

    def __init__(self, cell, units, attention, order, input_feeding,
                 attentional_units, num_layers=1, output_state="previous",
                 reset_after=True, attentional_layer=True, wait_k=None,
                 wait_rate=1.0, attention_window=None,
                 attentional_activation="tanh", step_output=None, **kwargs):
        super().__init__(**kwargs)
        attention = _check_args(units, attention, cell, order, attentional_units,
                                num_layers, output_state, input_feeding,
                                attentional_layer, wait_k, wait_rate)
        _check_activation(attentional_activation)
        _check_step_output(step_output, order)
        if step_output is None:
            step_output = ("attention" if attentional_layer
                           else "cell_and_context")
        self.step_output = step_output
        self.wait_k, self.wait_rate = wait_k, float(wait_rate)
        self.attention_window = _check_window(attention_window)
        self.output_state = output_state
        cell = _cell_from(cell, order, units, num_layers)
        self.units = units
        self.num_layers = num_layers
        self.order = order
        self.input_feeding = input_feeding
        self.attentional_units = attentional_units
        if not isinstance(cell, str):   # the general path (RecurrentStack)
            self.cell_type, self.keras_cell = "keras", cell
            self.rnn_cells = [cell]
        else:
            self.cell_type, self.keras_cell = cell, None
            if cell == "gru":
                cell_cls = functools.partial(keras.layers.GRUCell,
                                             reset_after=reset_after)
            else:
                cell_cls = keras.layers.LSTMCell
            # A stack of cells; attention reads (and Bahdanau's feeds) the top.
            self.rnn_cells = [
                cell_cls(units, dtype=self.dtype_policy,
                         name=cell if k == 0 else f"{cell}_{k + 1}")
                for k in range(num_layers)
            ]
        for rnn_cell in self.rnn_cells:
            rnn_cell.supports_masking = True  # AttentionRNN's loop applies masks
        self.attention = attention
        self.attentional = None
        if order == "luong" and attentional_layer:
            # h~_t = tanh(W_c [c_t; h_t]) (Luong et al., 2015, eq. 5);
            # tfa's attention_layer has no activation (None).
            self.attentional = keras.layers.Dense(
                attentional_units, activation=attentional_activation,
                use_bias=False,
                dtype=self.dtype_policy, name="attentional",
            )
        self.supports_masking = True

    @property
    def feeds(self):
        """Whether the state carries Luong's fed-back attentional vector
        (`h~_{t-1}`, or the context `c_{t-1}` without the attentional
        layer)."""
        return self.order == "luong" and self.input_feeding

    def feed_dim(self, memory_dim):
        """The size of the fed-back vector: `h~_t`'s, or the context's
        (`memory_dim`) without the attentional layer."""
        if self.attentional is None:
            checks.require(memory_dim is not None, "cache",
                           "the dict of `precompute(memory)` (the fed context "
                           "has the memory's size)", None)
            return self.attention.context_dim(int(memory_dim))
        return self.attentional_units

    def output_dim(self, memory_dim):
        """The size of a step's output for a memory of `memory_dim` features."""
        if self.order == "bahdanau" or self.step_output == "cell_and_context":
            # [s; c] or [h_t; c_t]
            return self.units + self.attention.context_dim(int(memory_dim))
        if self.step_output == "cell":
            return self.units
        return self.feed_dim(memory_dim)

    def build_for(self, inputs_dim, memory_dim):
        feed = 0
        context_dim = self.attention.context_dim(int(memory_dim))
        if self.order == "bahdanau":
            feed = context_dim
        elif self.input_feeding:
            feed = self.feed_dim(memory_dim)
        self.memory_dim = int(memory_dim)
        self.inputs_dim = int(inputs_dim)
        if not self.rnn_cells[0].built:   # a Keras cell may come built
            self.rnn_cells[0].build((None, inputs_dim + feed))
        for cell in self.rnn_cells[1:]:
            cell.build((None, self.units))
        if not self.attention.built:
            self.attention.build((None, self.units), (None, None, memory_dim))
        if self.attentional is not None:
            self.attentional.build((None, context_dim + self.units))
        self.built = True

    def build(self, *args, **kwargs):
        # Built by AttentionRNN.build (it knows the memory size).
        self.built = True

    # --- the attention, through its step protocol --------------------------------

    def attend(self, query, state, memory, training=None, noise=None,
               mode=None, constrain=False):
        """`(context, weights, next attention state)` for one query
        `(batch, units)`: the attention's `step` (`BaseAttention`'s step
        protocol), at each row's own position `state["step"]`.

        The attention runs in this cell's dtype scope when it shares its
        dtype policy (the caller's `__call__` has set it); an attention of
        another policy runs in its own (`keras_fixes.autocast_scope`), from
        inputs of its own dtype. The context and weights come back in this
        cell's compute dtype; the state in the dtypes the attention keeps.
        """
        attention = self.attention
        position = ops.cast(state["step"][:, 0], "int32")
        if self.wait_k is not None:   # this step's window of the memory
            memory = {**memory, "mask": ops.logical_and(
                memory["mask"], self.window(position, ops.shape(memory["mask"])[1]))}
        if constrain and self.attention_window is not None:
            memory = {**memory, "mask": ops.logical_and(
                memory["mask"], self.constraint(state["last"],
                                                ops.shape(memory["mask"])[1]))}
        kwargs = dict(position=position, training=training,
                      noise={} if noise is None else noise, mode=mode)
        if attention.dtype_policy.name == self.dtype_policy.name:
            result = attention.step(query, memory, state["attention"], **kwargs)
        else:
            dtype = attention.compute_dtype
            cast = {k: v if k == "mask" else ops.cast(v, dtype)
                    for k, v in memory.items()}
            with keras_fixes.autocast_scope(dtype):
                result = attention.step(ops.cast(query, dtype), cast,
                                        state["attention"], **kwargs)
        context, weights, next_state = result
        dtype = self.compute_dtype
        return ops.cast(context, dtype), ops.cast(weights, dtype), next_state

    def constraint(self, last, length):
        """The attention constraint's mask: `(batch, length)`, True at
        positions `last - backward .. last + forward - 1` around each row's
        last attended position `last` `(batch, 1)`."""
        backward, forward = self.attention_window
        j = ops.expand_dims(ops.arange(length, dtype="float32"), 0)
        return ops.logical_and(ops.greater_equal(j, last - float(backward)),
                               ops.less(j, last + float(forward)))

    def window(self, position, length):
        """The `wait_k` schedule's mask: `(batch, length)`, True where the
        step at each row's `position` (`(batch,)` int) may read
        (`attention_utils.wait_reads`)."""
        reads = wait_reads(position, self.wait_k, self.wait_rate)
        return ops.less(ops.expand_dims(ops.arange(length), 0),
                        ops.expand_dims(reads, -1))

    def initial_state(self, batch_size, cache, cell_states=None):
        """The named state before the first step (see `AttentionRNN`):
        `cell_states` (zeros when None), a zero feed, the attention's own
        `initial_state(cache, batch_size)` and a zero step count."""
        dtype = self.compute_dtype
        if cell_states is None:
            cell_states = [ops.zeros((batch_size, size), dtype)
                           for size in self.state_sizes]
        state = {"cells": [ops.cast(s, dtype) for s in cell_states]}
        if self.feeds:
            memory_dim = (cache["values"].shape[-1] if cache is not None
                          else getattr(self, "memory_dim", None))
            state["feed"] = ops.zeros(
                (batch_size, self.feed_dim(memory_dim)), dtype)
        state["attention"] = self.attention.initial_state(cache, batch_size)
        # float32 whatever the policy: bfloat16 counts exactly to 256 only.
        state["step"] = ops.zeros((batch_size, 1), "float32")
        if self.attention_window is not None:   # the last attended position
            state["last"] = ops.zeros((batch_size, 1), "float32")
        return state

    def recur(self, x_proj, state, weights):
        """The recurrence alone, `(h_t, next state)`, from the bottom input
        product: Luong's order without input feeding and with a stateless
        attention, where it does not depend on the attention."""
        h, cells = self._stack(x_proj, state["cells"], weights)
        return h, {**state, "cells": cells, "step": state["step"] + 1.0}

    def _bottom_product(self, x, feed, weights, projected):
        """The bottom cell's input product for `[y_{t-1}; feed]`.

        `projected`: `x` is already `y_{t-1} W[:m] + b` (`project_inputs`,
        the loop), and only the fed part is multiplied here; else `x` is the
        embedded token and the row is multiplied whole (one product: a
        single step gains nothing from the split).
        """
        if self.keras_cell is not None:   # the cell's whole input row
            return x if feed is None else ops.concatenate([x, feed], -1)
        if projected:
            if feed is None:
                return x
            return x + ops.matmul(feed, weights["feed_kernel"])
        row = x if feed is None else ops.concatenate([x, feed], -1)
        return input_product(row, weights["layers"][0])

    def luong_output(self, h, context, weights=None):
        """Order "luong"'s `(output, attentional vector)` from the top state
        `h` and the context `c`. The attentional vector (what input feeding
        feeds back) is `h~ = tanh(W_c [c; h])`, or `c` without the
        attentional layer (TensorFlow Addons' `attention`); the output is
        it (`step_output="attention"`), `h` ("cell") or `[h; c]`
        ("cell_and_context").

        `weights`: those of `loop_weights` (in the loop); None applies the
        `attentional` layer itself (the parallel form, any leading shape).
        """
        context = ops.cast(context, h.dtype)
        if self.attentional is None:
            attentional = context
        elif not (self.feeds or self.step_output == "attention"):
            attentional = None   # neither fed back nor output
        else:
            pair = ops.concatenate([context, h], -1)
            if weights is None:
                attentional = self.attentional(pair)
            else:
                attentional = self.attentional.activation(
                    ops.matmul(pair, weights["attentional"]))
        if self.step_output == "cell":
            return h, attentional
        if self.step_output == "cell_and_context":
            return ops.concatenate([h, context], -1), attentional
        return attentional, attentional

    def step_with(self, x, state, memory, weights, projected, training=None,
                  noise=None, mode=None, constrain=False):
        """`call` with the weights of `loop_weights` given, from the embedded
        token (`projected=False`) or from its input product
        (`projected=True`, `project_inputs`): what `AttentionRNN`'s loop
        runs. `mode` is the attention's (`mode_for`). Returns `(output,
        next state, weights)`."""
        cells, feed = state["cells"], state.get("feed")
        attend = functools.partial(self.attend, state=state, memory=memory,
                                   training=training, noise=noise, mode=mode,
                                   constrain=constrain)
        if self.order == "bahdanau":
            # c_i from s_{i-1}; s_i = f(s_{i-1}, y_{i-1}, c_i).
            s_prev = self.top_hidden(cells)
            context, alignment, attention_state = attend(s_prev)
            h, cells = self._stack(
                self._bottom_product(x, context, weights, projected),
                cells, weights)
            # [s_{i-1}; c_i]: what the deep output layer reads (appendix A);
            # [h_t; z_t] for Xu et al. (2015), eq. 7 (output_state="current").
            state_out = h if self.output_state == "current" else s_prev
            output = ops.concatenate([state_out, context], axis=-1)
        else:
            h, cells = self._stack(
                self._bottom_product(x, feed, weights, projected),
                cells, weights)
            context, alignment, attention_state = attend(h)
            output, attentional = self.luong_output(h, context, weights)
        new = {"cells": cells}
        if feed is not None:
            new["feed"] = attentional
        new["attention"] = attention_state
        new["step"] = state["step"] + 1.0
        if "last" in state:
            new["last"] = ops.cast(ops.expand_dims(
                ops.argmax(alignment, axis=-1), -1), "float32")
        return output, new, alignment

    def call(self, inputs, states, memory=None, training=None, noise=None,
             attention_mode=None):
        """One decoder step.

        Args:
            inputs: `(batch, input_dim)`, the embedded previous token.
            states: the named state (`AttentionRNN.get_initial_state`).
            memory: `{"keys", "values", "mask"}` with a boolean mask
                (`AttentionRNN.memory_of`).
            training: bool.
            noise: optional, this step's slice of the attention's
                `draw_noise` (`{}`: the attention draws its own).
            attention_mode: the attention's mode (monotonic attention:
                "parallel" or "hard"; `mode_for` resolves None).

        Returns:
            `(output (batch, output_dim), next state, extras)`; `extras`
            has the step's attention `weights` `(batch, S)`.
        """
        checks.require(
            isinstance(memory, dict) and {"keys", "values", "mask"} <= set(memory),
            "memory", "the encoder's `{keys, values, mask}` "
            "(`AttentionRNN.memory_of(decoder.precompute(h))`), or call "
            "AttentionRNN instead", type(memory).__name__)
        output, state, weights = self.step_with(
            inputs, states, memory, self.loop_weights(), False, training,
            noise, self.attention.mode_for(attention_mode, decoding=True),
            constrain=True)
        return output, state, {"weights": weights}


    def get_config(self):
        raise NotImplementedError(
            "AttentionRNNCell is serialized through AttentionRNN."
        )


@keras.saving.register_keras_serializable(package="kerattn")
class AttentionRNN(keras.layers.Layer):
    """A recurrent attention decoder: GRU/LSTM + any attention + feeding rule.

    Two orders of the classic papers:

    - `order="bahdanau"` (Bahdanau et al., 2014, section 3.1): attend with
      the previous state, feed the context into the cell,

          c_i = sum_j alpha_ij h_j,  alpha_i = attention(s_{i-1}, h)
          s_i = f(s_{i-1}, [y_{i-1}; c_i])

      and output `[s_{i-1}; c_i]` (`units + memory_dim` features): with
      `y_{i-1}` that is what the deep output layer of the paper's appendix
      A.2.2 reads to predict `y_i`. The new state `s_i` goes on to the next
      step (and is the final state with `return_state=True`).
    - `order="luong"` (Luong et al., 2015, section 3): run the cell, attend
      with its output, and form the attentional vector

          h_t = f(h_{t-1}, [y_{t-1}; h~_{t-1}])   (input feeding, section 3.3)
          c_t = sum_s a_t(s) h_s,  a_t = attention(h_t, h)
          h~_t = tanh(W_c [c_t; h_t])

      and output `h~_t`. With `attentional_layer=False` there is no `W_c`:
      the step outputs `[h_t; c_t]` (`units + memory_dim` features), the
      state and the context that a readout of its own reads, as See et al.
      (2017), section 2.1, read `[s_t; h*_t]`, and input feeding feeds back
      the context `c_{t-1}`. `step_output=` picks another output: the
      attentional vector alone (`h~_t`, or `c_t` without `W_c`), the state
      `h_t`, or `[h_t; c_t]`; with `attentional_activation=None` these are
      TensorFlow Addons' `AttentionWrapper` exactly (its
      `attention_layer_size`, `output_attention` and default
      `cell_input_fn`: docs/migrating_from_tfa.md). Without input feeding
      the recurrence does not depend on the attention, and the layer runs
      the cell over the whole target first and attends once (the parallel
      form: same outputs, faster training), unless the attention reads its
      own past alignments.

    The attention is called through `BaseAttention`'s step protocol and
    nothing else: an attention that scores with its own past (coverage,
    location-sensitive, monotonic attention and MoChA, hard attention's
    samples) keeps it as its state, which the decoder carries under
    `"attention"` in its named state (`AttentionRNNCell`), so the same loop,
    `step()` and beam search serve every family. A monotonic attention also
    has two modes (`mode_for`): the full pass trains on its expected
    alignment ("parallel") and `step()` decodes with the hard one, unless
    `attention_mode=` says otherwise.

    The loop is `scan_carry` (`keras.ops.scan`; `tf.scan` on TensorFlow)
    over the steps of `AttentionRNNCell`, closing over the encoder's keys,
    values and mask, so it trains with `model.fit` on every backend, with
    and without `jit_compile` (XLA on TensorFlow). Before the loop, the keys
    (`U_a h_j`, `W_a h_s`) are projected once per source (`precompute`), the
    bottom cell's product with the embedded targets is one matmul over all
    steps, and the weights are read once; inside it, the cells' equations
    and the attention are applied with `keras.ops`. `step()` runs one
    decoder step for incremental decoding.

    Args:
        units: int, the cell's units.
        attention: a single-head attention layer of kerattn
            (`BahdanauAttention`, `LuongAttention`, `LocalAttention`,
            `SoftVisualAttention`, ...), used with one decoder step as query;
            or a list of them, queried at once with their contexts
            concatenated (`MultipleAttention`, tfa's list of mechanisms).
        cell: "gru" or "lstm" (Keras' `GRUCell` / `LSTMCell`, `num_layers`
            of them: the fast path, the bottom cell's product with the
            targets taken for every step before the loop), or any Keras RNN
            cell (a layer with a `state_size`, called as `cell(inputs,
            states) -> (output, new states)`: `keras.layers.StackedRNNCells`,
            `SimpleRNNCell`, a cell of your own): the general path, called
            at each step on its whole input row `[y_{t-1}; feed]`, with
            order "luong" and `num_layers=1` (stack inside the cell); its
            output size must be `units` (the attention's query). Its states
            are the state's `"cells"`, flat in `keras.tree.flatten` order
            of its `state_size`. TensorFlow Addons wrapped any cell this
            way.
        order: "bahdanau" or "luong".
        num_layers: int, the depth of the stack of cells (4 in Luong et al.);
            attention reads the top layer, input feeding enters the bottom.
        input_feeding: bool, Luong's input feeding (ignored for "bahdanau").
        attentional_units: int, the size of `h~_t` ("luong"); `units` when
            None.
        attentional_layer: bool (order "luong" only; ignored for
            "bahdanau"): True outputs Luong's `h~_t = tanh(W_c [c_t; h_t])`;
            False builds no `W_c` and outputs `[h_t; c_t]`, the top state and
            the context (`units + memory_dim` features), and feeds back the
            context `c_{t-1}` with input feeding (tfa's
            `attention_layer_size=None`); it takes no `attentional_units`.
        step_output: None, "attention", "cell" or "cell_and_context" (order
            "luong" only): what a step outputs. "attention": the
            attentional vector, `h~_t` (or `c_t` without the attentional
            layer; tfa's `output_attention=True`); "cell": the top state
            `h_t` (tfa's `output_attention=False`); "cell_and_context":
            `[h_t; c_t]`. None: "attention" with the attentional layer,
            "cell_and_context" without. What input feeding feeds back is
            the attentional vector whatever the output.
        attentional_activation: "tanh" (Luong et al.'s `h~_t = tanh(W_c
            [c_t; h_t])`) or None, the attentional layer without an
            activation, `h~_t = W_c [c_t; h_t]`: TensorFlow Addons'
            `AttentionWrapper(attention_layer_size=...)` (a `Dense` without
            activation or bias).
        output_state: "previous" or "current" (order "bahdanau" only):
            output `[s_{i-1}; c_i]` (Bahdanau et al.) or `[s_i; c_i]` (the
            new state, as Xu et al. (2015), eq. 7, read `h_t` and `z_t`).
        return_state: bool, also return the final states.
        wait_k: None (every step reads the whole memory), or a wait-k
            schedule (Ma et al. 2019, STACL): step `i` (from 0, each row's
            own) reads only the first `wait_k + floor(wait_rate * i)`
            memory positions (`attention_utils.wait_reads`), in training,
            scoring and decoding alike (in the loop: no parallel form).
            Over a one-way encoder this makes the output at step `i` depend
            on that prefix of the input alone: a streaming decoder writes it
            once the prefix is read (`kerattn.decoding.StreamingDecoder`,
            `kerattn.zoo.luong_nmt(wait_k=k)`). For the soft attentions: a
            hard monotonic one takes the window's edge for the source's end
            and attends nowhere past it (`luong_nmt` refuses the pair).
        wait_rate: float > 0, the memory positions read per step written
            (1: STACL's wait-k; above 1 where outputs are shorter than
            inputs, e.g. 1.2 for phonemes of letters).
        attention_window: None, or `(backward, forward)`: the attention
            constraint at inference of Deep Voice 3 (Ping et al., 2018,
            its monotonic attention constraint) as ESPnet's
            `_apply_attention_constraint` writes it, for any attention and
            any batch: each decoding step (`step()`, not the training pass)
            attends only to positions `last - backward .. last + forward -
            1`, `last` the previous step's most attended position (0 before
            the first), kept in the named state as `"last"`. ESPnet's
            defaults are `(1, 3)`. It narrows the step's memory mask, which
            every attention honours; an attention that keeps its own
            history (location-sensitive, forward) reads it unchanged.
        reset_after: bool ("gru" only). False is the GRU of Cho et al. (2014)
            and Bahdanau et al. (2014), `h~ = tanh(W x + U (r * h))`, the
            reset gate applied before the recurrent matrix. True (Keras'
            default, the cuDNN form) applies it after, `tanh(W x + r * (U
            h + b_U))`, with a second bias vector.
        **kwargs: base layer keyword arguments.

    Call arguments:
        inputs: `(batch, T, input_dim)` the (embedded) previous target tokens.
        memory: `(batch, S, memory_dim)` the encoder outputs.
        inputs_mask: optional boolean `(batch, T)`; the implicit mask when
            None. Padded steps keep the previous state.
        memory_mask: optional boolean `(batch, S)`; the implicit mask when
            None.
        initial_state: optional list of the cells' states, layer by layer
            (GRU: `[h]`, LSTM: `[h, c]` per layer), each `(batch, units)`;
            zeros when None.
        return_attention_scores: bool, also return the alignment history.
        return_attention_samples: bool (with an attention that samples a
            location, `sample_of`: `HardVisualAttention`): also
            return the one-hot locations the hard attention used at each step
            `(batch, T, S)` (sampled in training, argmax at inference); the
            memory's length `S` must be known.
        training: bool.
        attention_mode: for an attention with modes (`HardMonotonicAttention`,
            `MonotonicChunkwiseAttention`: "parallel", the expected
            alignment, or "hard"): the mode of every step; None takes the
            full pass's ("parallel", what training differentiates), where
            `step()` takes the decoding one ("hard"; `mode_for`).

    Returns:
        `outputs` `(batch, T, output_dim)`; with `return_state=True` then the
        final state (the dict `{"cells", ("feed",) "attention", "step"}`
        of `AttentionRNNCell`, as `step()` takes it); with `return_attention_scores=True` then the alignments
        `(batch, T, S)`; with `return_attention_samples=True` then the
        samples `(batch, T, S)`.

    Example:

    >>> import numpy as np
    >>> from kerattn.layers import BahdanauAttention
    >>> y = np.random.rand(2, 6, 8).astype("float32")      # embedded targets
    >>> h = np.random.rand(2, 9, 10).astype("float32")     # encoder outputs
    >>> decoder = AttentionRNN(16, BahdanauAttention(12))
    >>> out, alignments = decoder(y, h, return_attention_scores=True)
    >>> tuple(out.shape), tuple(alignments.shape)
    ((2, 6, 26), (2, 6, 9))
    """

    def __init__(self, units, attention, cell="gru", order="bahdanau",
                 input_feeding=True, attentional_units=None, num_layers=1,
                 output_state="previous", return_state=False, reset_after=True,
                 attentional_layer=True, wait_k=None, wait_rate=1.0,
                 attention_window=None, attentional_activation="tanh",
                 step_output=None, **kwargs):
        super().__init__(**kwargs)
        attention = _check_args(units, attention, cell, order, attentional_units,
                                num_layers, output_state, input_feeding,
                                attentional_layer, wait_k, wait_rate)
        attention_window = _check_window(attention_window)
        _check_activation(attentional_activation)
        _check_step_output(step_output, order)
        self.step_output = step_output
        self.attentional_activation = attentional_activation
        self.output_state = output_state
        for name, flag in (("return_state", return_state),
                           ("reset_after", reset_after)):
            checks.boolean(name, flag)
        checks.require(
            order != "luong" or attentional_layer or attentional_units is None,
            "attentional_units", "None with attentional_layer=False (there is "
            "no attentional vector h~_t to size)", attentional_units)
        checks.require(cell == "gru" or reset_after, "reset_after",
                       "True for an LSTM cell (it is a GRU option)", reset_after)
        self.reset_after = reset_after
        self.units = units
        self.order = order
        self.input_feeding = input_feeding if order == "luong" else False
        self.attentional_layer = attentional_layer if order == "luong" else False
        self.attentional_units = attentional_units
        self.num_layers = num_layers
        self.return_state = return_state
        self.supports_masking = True
        # Scheduled sampling's draws (`sampler`): a state the training step
        # carries, not a weight (not saved). A fixed seed: building a decoder
        # takes nothing from the global random state.
        self._sampling_seed = keras.random.SeedGenerator(0, name="sampling_seed")
        # Named "cell": the weights' paths in saved files (`.../cell/gru/...`).
        self.cell = AttentionRNNCell(
            cell, units, attention, order, self.input_feeding,
            attentional_units or units, num_layers=num_layers,
            output_state=output_state, reset_after=reset_after,
            attentional_layer=self.attentional_layer, wait_k=wait_k,
            wait_rate=wait_rate, attention_window=attention_window,
            attentional_activation=attentional_activation,
            step_output=step_output,
            dtype=self.dtype_policy, name="cell",
        )

    # --- the parts -------------------------------------------------------------

    @property
    def attention(self):
        return self.cell.attention

    @property
    def cell_type(self):
        """"gru", "lstm", or "keras" (a Keras cell: `cell.keras_cell`)."""
        return self.cell.cell_type

    @property
    def wait_k(self):
        return self.cell.wait_k

    @property
    def attention_window(self):
        """The attention constraint at inference (`__init__`'s argument); a
        trained decoder takes one by assignment, e.g. `decoder.attention_window
        = (1, 3)`, before its decoding functions are built."""
        return self.cell.attention_window

    @attention_window.setter
    def attention_window(self, window):
        self.cell.attention_window = _check_window(window)

    @property
    def wait_rate(self):
        return self.cell.wait_rate

    @property
    def sampler(self):
        """Scheduled sampling in training (`kerattn.layers.
        ScheduledEmbeddingSampler` or `ScheduledOutputSampler`), given by
        assignment, `decoder.sampler = ...`; None (the default): teacher
        forcing. Not saved with the layer: a training choice."""
        return getattr(self, "_sampler", None)

    @sampler.setter
    def sampler(self, sampler):
        from kerattn.layers.scheduled_sampling import ScheduledSampler

        if sampler is not None:
            checks.instance("sampler", sampler, ScheduledSampler,
                            "None or a kerattn.layers.ScheduledEmbeddingSampler / "
                            "ScheduledOutputSampler")
        self._sampler = sampler
        if sampler is not None and sampler.seed is not None:
            self._sampling_seed.state.assign(
                keras.random.SeedGenerator(sampler.seed).state.value)

    @property
    def parallel(self):
        """Whether training runs the parallel form: Luong's order without
        input feeding, an attention whose state is empty (it does not
        read its own past) and no wait-k schedule."""
        return self._parallel_for(self._attention_state_spec(None, None))

    def _parallel_for(self, attention_state):
        # A wait-k schedule narrows each step's memory mask at the row's own
        # step: the loop's work (every family honours the step's mask).
        return (self.order == "luong" and not self.input_feeding
                and not tree.flatten(attention_state) and self.wait_k is None)

    @property
    def stateless_attention(self):
        """Whether the attention keeps no state (`initial_state` empty)."""
        return not tree.flatten(self._attention_state_spec(None, None))

    def _attention_state_spec(self, batch, length):
        """The attention's state for a symbolic source: its layout and
        dtypes as `KerasTensor`s (`initial_state` on a symbolic cache)."""
        dtype = self.compute_dtype
        cache = {"keys": keras.KerasTensor((batch, length, None), dtype),
                 "values": keras.KerasTensor((batch, length, None), dtype),
                 "mask": keras.KerasTensor((batch, length), dtype)}
        return self.attention.initial_state(cache, batch)

    def build(self, inputs_shape, memory_shape):
        checks.rank("inputs", inputs_shape, (3,), "(batch, T, input_dim)")
        checks.rank("memory", memory_shape, (3,), "(batch, S, memory_dim)")
        self._dims = (inputs_shape[-1], memory_shape[-1])
        self.cell.build_for(inputs_shape[-1], memory_shape[-1])
        self.built = True

    def _check(self, inputs, memory, inputs_mask=None, memory_mask=None):
        checks.rank("inputs", inputs.shape, (3,), "(batch, T, input_dim)")
        checks.rank("memory", memory.shape, (3,), "(batch, S, memory_dim)")
        checks.nonempty("memory", memory)
        checks.same("inputs", inputs.shape[0], "memory", memory.shape[0],
                    "batch size")
        dims = getattr(self, "_dims", None)
        if dims:
            checks.same("inputs", inputs.shape[-1],
                        "the input size this layer was built with", dims[0],
                        "last dimension")
            checks.same("memory", memory.shape[-1],
                        "the memory size this layer was built with",
                        dims[1], "last dimension")
        checks.mask("inputs_mask", inputs_mask, tuple(inputs.shape[:2]))
        checks.mask("memory_mask", memory_mask, tuple(memory.shape[:2]))

    # --- incremental decoding ------------------------------------------------

    def precompute(self, memory, memory_mask=None):
        """The per-source cache: projected keys, values and the mask.

        Args:
            memory: `(batch, S, memory_dim)` encoder outputs.
            memory_mask: optional boolean `(batch, S)`.

        Returns:
            A dict `{"keys", "values", "mask"}` for `step()`.
        """
        checks.rank("memory", memory.shape, (3,), "(batch, S, memory_dim)")
        if memory_mask is None:
            memory_mask = ops.ones(ops.shape(memory)[:2], dtype="bool")
        return {
            "keys": self.attention.project_key(memory),
            "values": memory,
            "mask": mask_as(memory_mask, self.compute_dtype),
        }

    @staticmethod
    def memory_of(cache):
        """The cache as the steps read it: the same dict with the mask made
        boolean (once per call, not at every step)."""
        return {**cache, "mask": cache["mask"] > 0.5}

    def get_initial_state(self, batch_size, initial_state=None, cache=None):
        """The named state at the first step (see the class docstring).

        Args:
            batch_size: int or scalar tensor.
            initial_state: optional cell states (see `call`); zeros when
                None.
            cache: the dict from `precompute`: the attention's
                `initial_state` reads it (an alignment history has the
                source's length and starts from its mask); may be None for
                an attention without state.
        """
        if cache is None and not self.stateless_attention:
            checks.fail("cache", "the dict of `precompute(memory, "
                        f"memory_mask)` (the attention {type(self.attention).__name__} "
                        "starts its state from it)", None)
        cell_states = None
        if initial_state is not None:
            cell_states = list(initial_state) if isinstance(
                initial_state, (list, tuple)) else [initial_state]
            checks.require(
                len(cell_states) == self.cell.num_cell_states,
                "initial_state",
                f"a list of {self.cell.num_cell_states} tensor(s) of shapes "
                f"(batch, {self.cell.state_sizes}) for cell={self.cell_type!r} and "
                f"num_layers={self.num_layers} (layer by layer: GRU [h], "
                "LSTM [h, c])", len(cell_states))
            for s, size in zip(cell_states, self.cell.state_sizes):
                checks.rank("initial_state", s.shape, (2,),
                            f"(batch, {size})")
        return self.cell.initial_state(batch_size, cache, cell_states)

    def step(self, inputs, states, cache, training=None, attention_mode=None):
        """One decoder step.

        Args:
            inputs: `(batch, input_dim)` the embedded previous token.
            states: the named state from `get_initial_state` or the
                previous step.
            cache: the dict from `precompute`.
            training: bool.
            attention_mode: for an attention with modes (monotonic
                attention): its mode; None takes its decoding mode
                ("hard"), where `call` takes the full pass's ("parallel").
                In training's "parallel" mode the attention draws its own
                noise here (`call` draws it before its loop): a loop of
                your own that compiles a scan should call the cell with
                `noise=` (the attention's `draw_noise`) instead.

        Returns:
            `(output (batch, output_dim), next state, weights (batch, S))`.
        """
        output, state, extras = self.cell(
            inputs, states, self.memory_of(cache), training=training,
            attention_mode=attention_mode)
        return output, state, extras["weights"]

    def reads(self, index):
        """How many memory positions the step at `index` (from 0) may read
        under `wait_k`'s schedule (an int), or None without one.

        >>> from kerattn.layers import LuongAttention
        >>> AttentionRNN(8, LuongAttention(), order="luong", wait_k=3).reads(2)
        5
        """
        if self.wait_k is None:
            return None
        return int(ops.convert_to_numpy(
            wait_reads(ops.convert_to_tensor([index], "int32"), self.wait_k,
                       self.wait_rate))[0])

    def extend_source(self, states, cache):
        """`states` after some steps on a source, for the longer source of
        `cache` (a streaming decoder's next prefix): the attention grows its
        own state (`extend_source`); the rest does not depend on the
        source."""
        return {**states, "attention": self.attention.extend_source(
            states["attention"], cache)}

    # --- the whole sequence --------------------------------------------------

    def call(self, inputs, memory, inputs_mask=None, memory_mask=None,
             initial_state=None, return_attention_scores=False,
             return_attention_samples=False, training=None,
             attention_mode=None):
        self._check(inputs, memory, inputs_mask, memory_mask)
        mode = self.attention.mode_for(attention_mode, decoding=False)
        batch = ops.shape(inputs)[0]
        cache = self.precompute(memory, memory_mask)
        state = self.get_initial_state(batch, initial_state, cache)
        if return_attention_samples:
            self._check_samples(memory, state)
        cell = self.cell
        params = cell.loop_weights()
        dtype = self.compute_dtype
        if self.sampler is not None and training:
            final, emitted = self._scheduled_loop(
                inputs, memory, cache, state, params, inputs_mask, training,
                mode, return_attention_samples)
            return self._results(final, emitted, inputs_mask,
                                 return_attention_scores, return_attention_samples)
        # y_{t-1} W[:m] + b for every step at once: (batch, T, gates).
        projected = cell.project_inputs(inputs, params)
        if self._parallel_for(state["attention"]):   # the state at hand
            # Luong without input feeding: the recurrence ignores attention,
            # so run the cell over all steps, then attend once (each row's
            # first step is position 0).
            def recur(state, x_proj):
                h, new = cell.recur(x_proj, state, params)
                return new, h

            final, h = masked_scan(recur, state, projected, inputs_mask,
                                   ops.zeros((batch, self.units), dtype))
            context, weights = self.attention(
                h, cache["values"], projected_key=cache["keys"],
                value_mask=cache["mask"] > 0.5, query_mask=inputs_mask,
                return_attention_scores=True, training=training,
            )
            emitted = {"outputs": cell.luong_output(h, context)[0],
                       "weights": weights}
        else:
            memory_args = self.memory_of(cache)
            # Drawn outside the loop (a seed generator cannot advance inside
            # a JAX scan), scanned over with the inputs.
            noise = self.attention.draw_noise(
                memory_args, ops.shape(inputs)[1], training=training, mode=mode)

            def attend_step(state, x_t):
                output, new, weights = cell.step_with(
                    x_t["x"], state, memory_args, params, True,
                    training=training, noise=x_t.get("noise", {}), mode=mode)
                return new, output, weights, new

            xs = {"x": projected, **({"noise": noise} if noise else {})}
            final, emitted = self._step_loop(attend_step, state, xs, inputs_mask,
                                             memory, return_attention_samples)
        return self._results(final, emitted, inputs_mask,
                             return_attention_scores, return_attention_samples)

    def _step_loop(self, step, carry, xs, inputs_mask, memory,
                   return_attention_samples):
        """`masked_scan` over `step(carry, x_t) -> (carry, output, weights,
        decoder state)`, keeping each step's output and weights (and the
        attention's sampled location): the loop of the decoder's steps."""
        batch, dtype = ops.shape(memory)[0], self.compute_dtype

        def scan_step(carry, x_t):
            carry, output, weights, state = step(carry, x_t)
            kept = {"outputs": output, "weights": weights}
            if return_attention_samples:
                kept["sample"] = self.attention.sample_of(state["attention"])
            return carry, kept

        source = ops.zeros((batch, ops.shape(memory)[1]), dtype)
        zeros = {"outputs": ops.zeros(
            (batch, self.cell.output_dim(memory.shape[-1])), dtype),
            "weights": source}
        if return_attention_samples:
            zeros["sample"] = source
        return masked_scan(scan_step, carry, xs, inputs_mask, zeros)

    def _results(self, final, emitted, inputs_mask, return_attention_scores,
                 return_attention_samples):
        """`call`'s results from the loop's: padded steps zeroed, then the
        state, weights and samples asked for."""
        outputs = emitted["outputs"]
        weights = emitted["weights"]
        if inputs_mask is not None:
            keep = ops.expand_dims(ops.cast(inputs_mask, "bool"), -1)
            outputs = ops.where(keep, outputs, ops.zeros_like(outputs))
            weights = ops.where(keep, weights, ops.zeros_like(weights))
        weights = ops.cast(weights, outputs.dtype)
        result = (outputs,)
        if self.return_state:
            result += (final,)
        if return_attention_scores:
            result += (weights,)
        if return_attention_samples:
            result += (ops.cast(emitted["sample"], outputs.dtype),)
        return result[0] if len(result) == 1 else result

    def _scheduled_loop(self, inputs, memory, cache, state, params, inputs_mask,
                        training, mode, return_attention_samples):
        """Training with a `sampler` (Bengio et al. 2015): each step's input
        is the given one or, with the sampler's probability, one made from
        the previous step's output (carried in the loop). The inputs are
        multiplied inside the loop (they are not all known before it)."""
        cell, dtype = self.cell, self.compute_dtype
        batch, steps = ops.shape(inputs)[0], ops.shape(inputs)[1]
        memory_args = self.memory_of(cache)
        output_dim = cell.output_dim(memory.shape[-1])
        noise = self.attention.draw_noise(memory_args, steps, training=training,
                                          mode=mode)
        sampling = self.sampler.draw(batch, steps, output_dim,
                                     seed=self._sampling_seed)

        def sampled_step(carry, x_t):
            x = self.sampler.next_input(carry["previous"],
                                        ops.cast(x_t["x"], dtype), x_t["sampling"])
            output, new, weights = cell.step_with(
                x, carry["decoder"], memory_args, params, False,
                training=training, noise=x_t.get("noise", {}), mode=mode)
            return {"decoder": new, "previous": output}, output, weights, new

        xs = {"x": inputs, "sampling": sampling, **({"noise": noise} if noise else {})}
        carry = {"decoder": state, "previous": ops.zeros((batch, output_dim), dtype)}
        final, emitted = self._step_loop(sampled_step, carry, xs, inputs_mask,
                                         memory, return_attention_samples)
        return final["decoder"], emitted

    def _check_samples(self, memory, state):
        checks.require(
            self.attention.sample_of(state["attention"]) is not None,
            "attention", "an attention that samples locations (its "
            "`sample_of` gives each step's)", type(self.attention).__name__,
            note="`return_attention_samples=True` needs a HardVisualAttention.")
        checks.require(
            memory.shape[1] is not None, "memory",
            "of a known length (axis 1) with return_attention_samples=True",
            f"shape {tuple(memory.shape)}")

    def compute_output_spec(self, inputs, memory, inputs_mask=None,
                            memory_mask=None, initial_state=None,
                            return_attention_scores=False,
                            return_attention_samples=False, training=None,
                            attention_mode=None):
        self._check(inputs, memory)
        b, t, s = inputs.shape[0], inputs.shape[1], memory.shape[1]
        attention_state = self._attention_state_spec(b, s)
        if return_attention_samples:
            self._check_samples(memory, {"attention": attention_state})
        dtype = self.compute_dtype
        result = (keras.KerasTensor(
            (b, t, self.cell.output_dim(memory.shape[-1])), dtype=dtype),)
        if self.return_state:
            final = {"cells": [keras.KerasTensor((b, size), dtype=dtype)
                               for size in self.cell.state_sizes]}
            if self.cell.feeds:
                final["feed"] = keras.KerasTensor(
                    (b, self.cell.feed_dim(memory.shape[-1])), dtype=dtype)
            final["attention"] = attention_state
            final["step"] = keras.KerasTensor((b, 1), dtype="float32")
            result += (final,)
        if return_attention_scores:
            result += (keras.KerasTensor((b, t, s), dtype=dtype),)
        if return_attention_samples:
            result += (keras.KerasTensor((b, t, s), dtype=dtype),)
        return result[0] if len(result) == 1 else result

    def compute_mask(self, inputs, previous_mask):
        return previous_mask

    def get_config(self):
        config = super().get_config()
        config.update({
            "units": self.units,
            "attention": keras.saving.serialize_keras_object(self.attention),
            "cell": (self.cell_type if self.cell.keras_cell is None else
                     keras.saving.serialize_keras_object(self.cell.keras_cell)),
            "order": self.order,
            "input_feeding": self.input_feeding,
            "attentional_units": self.attentional_units,
            "num_layers": self.num_layers,
            "output_state": self.output_state,
            "return_state": self.return_state,
            "reset_after": self.reset_after,
            "attentional_layer": self.attentional_layer,
            "wait_k": self.wait_k,
            "wait_rate": self.wait_rate,
            "attention_window": (None if self.attention_window is None
                                 else list(self.attention_window)),
            "attentional_activation": self.attentional_activation,
        })
        if self.step_output is not None:   # older files lack it
            config["step_output"] = self.step_output
        return config

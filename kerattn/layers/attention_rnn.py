"""A recurrent attention decoder: a GRU/LSTM cell + attention + feeding rule."""

import keras
from keras import ops

from kerattn.layers import attention_utils as utils
from kerattn.layers.base_attention import BaseAttention
from kerattn.layers.local_attention import LocalAttention

CELLS = ("gru", "lstm")
ORDERS = ("bahdanau", "luong")


def _check_args(units, attention, cell, order, attentional_units,
                num_layers, output_state):
    """The arguments AttentionRNN and its cell share; the attention layer."""
    utils.check_positive_int("units", units)
    utils.check_positive_int("num_layers", num_layers)
    utils.check_positive_int("attentional_units", attentional_units,
                             allow_none=True)
    if isinstance(attention, dict):
        attention = keras.saving.deserialize_keras_object(attention)
    if not isinstance(attention, BaseAttention):
        raise ValueError(
            "`attention` must be a single-head kerattn attention layer "
            "(a kerattn.layers.BaseAttention, e.g. BahdanauAttention or "
            f"LuongAttention); received {attention!r}."
        )
    if cell not in CELLS:
        raise ValueError(f"`cell` must be one of {CELLS}; received {cell!r}.")
    if order not in ORDERS:
        raise ValueError(f"`order` must be one of {ORDERS}; received {order!r}.")
    if output_state not in ("previous", "current"):
        raise ValueError("`output_state` must be 'previous' or 'current'; "
                         f"received {output_state!r}.")
    return attention


@keras.saving.register_keras_serializable(package="kerattn")
class AttentionRNNCell(keras.layers.Layer):
    """One step of `AttentionRNN`, for `keras.layers.RNN`.

    The states are `[*cell_states, (feed,) step]`; `step` counts decoder
    steps (local-m needs `t`). The encoder's projected keys, values and mask
    (`memory`) are set on the cell by `AttentionRNN` for the duration of a
    call and read by every step as loop constants (Keras' RNN has no
    `constants` argument any more). They used to ride along as extra states,
    which Keras' RNN masks and carries at every step: 20-25% of a
    `bahdanau_nmt` training step on JAX and torch (`benchmarks/bahdanau.py`).
    The output is the step's output (see `AttentionRNN`), followed by the step's attention
    weights when `emit_weights` is set.

    `AttentionRNN` builds and drives it; use the cell directly only to put
    it in a `keras.layers.RNN` of your own.

    Args:
        cell: `"gru"` or `"lstm"`.
        units: the recurrent units.
        attention: a single-head attention layer (e.g. `BahdanauAttention`).
        order: `"bahdanau"` (attend with the previous state, then update)
            or `"luong"` (update, then attend with the new state).
        input_feeding: feed the previous step's attentional vector (Luong)
            or context (Bahdanau) back into the RNN input.
        attentional_units: the size of Luong's `h~_t = tanh(W_c [c; h])`;
            None for Bahdanau order.
        num_layers: stacked recurrent layers.
        output_state: `"previous"` or `"current"`: which state the step
            outputs beside the context (`AttentionRNN`).
        **kwargs: base layer keyword arguments.

    Example:

    >>> import numpy as np
    >>> from kerattn.layers import AttentionRNN, BahdanauAttention
    >>> decoder = AttentionRNN(16, BahdanauAttention(12))
    >>> _ = decoder(np.zeros((2, 6, 8), "float32"), np.zeros((2, 9, 10), "float32"))
    >>> type(decoder.cell).__name__, decoder.cell.units
    ('AttentionRNNCell', 16)
    """

    def __init__(self, cell, units, attention, order, input_feeding,
                 attentional_units, num_layers=1, output_state="previous",
                 **kwargs):
        super().__init__(**kwargs)
        attention = _check_args(units, attention, cell, order, attentional_units,
                                num_layers, output_state)
        self.output_state = output_state
        self.cell_type = cell
        self.units = units
        self.num_layers = num_layers
        self.order = order
        self.input_feeding = input_feeding
        self.attentional_units = attentional_units
        cell_cls = keras.layers.GRUCell if cell == "gru" else keras.layers.LSTMCell
        # A stack of cells; attention reads (and Bahdanau's feeds) the top.
        self.rnn_cells = [
            cell_cls(units, dtype=self.dtype_policy,
                     name=cell if k == 0 else f"{cell}_{k + 1}")
            for k in range(num_layers)
        ]
        for rnn_cell in self.rnn_cells:
            rnn_cell.supports_masking = True  # the RNN loop applies masks
        self.attention = attention
        self.attentional = None
        if order == "luong":
            # h~_t = tanh(W_c [c_t; h_t]) (Luong et al., 2015, eq. 5).
            self.attentional = keras.layers.Dense(
                attentional_units, activation="tanh", use_bias=False,
                dtype=self.dtype_policy, name="attentional",
            )
        self.supports_masking = True  # masks are applied by keras.layers.RNN
        self.emit_weights = False
        self.emit_samples = False  # hard attention: the sampled locations too
        self.noise_dim = 0  # hard attention in training: noise rides on the inputs
        self._noise = None
        self.skip_attention = False  # the parallel Luong form
        self.memory = None  # (keys, values, bool mask), set per call

    @property
    def rnn_cell(self):
        """The bottom cell of the stack."""
        return self.rnn_cells[0]

    @property
    def states_per_layer(self):
        return 1 if self.cell_type == "gru" else 2

    @property
    def num_cell_states(self):
        return self.states_per_layer * self.num_layers

    def top_hidden(self, cell_states):
        """The top layer's hidden state `h` in a flat list of cell states."""
        return cell_states[(self.num_layers - 1) * self.states_per_layer]

    def run_stack(self, x, cell_states, training=None):
        """One step up the stack: `(top output, new flat cell states)`."""
        per, new = self.states_per_layer, []
        for k, cell in enumerate(self.rnn_cells):
            x, states = cell(x, list(cell_states[k * per:(k + 1) * per]),
                             training=training)
            new += list(states) if isinstance(states, (list, tuple)) else [states]
        return x, new

    @property
    def state_size(self):
        sizes = [self.units] * self.num_cell_states
        if self.order == "luong" and self.input_feeding:
            sizes.append(self.attentional_units)
        return sizes + [1]

    @property
    def output_size(self):
        return self.units if self.order == "luong" and self.skip_attention else (
            self.attentional_units if self.order == "luong"
            else self.units + self.value_dim)

    def build_for(self, inputs_dim, memory_dim):
        self.value_dim = memory_dim
        feed = 0
        if self.order == "bahdanau":
            feed = memory_dim
        elif self.input_feeding:
            feed = self.attentional_units
        self.rnn_cells[0].build((None, inputs_dim + feed))
        for cell in self.rnn_cells[1:]:
            cell.build((None, self.units))
        if not self.attention.built:
            self.attention.build((None, self.units), (None, None, memory_dim))
        if self.attentional is not None:
            self.attentional.build((None, memory_dim + self.units))
        self.built = True

    def build(self, input_shape):
        # Built by AttentionRNN.build (it knows the memory size).
        self.built = True

    def attend(self, query, step):
        if self.memory is None:
            raise ValueError("AttentionRNNCell runs inside AttentionRNN, which "
                             "sets its memory; call AttentionRNN instead.")
        keys, values, memory_mask = self.memory
        kwargs = {}
        if isinstance(self.attention, LocalAttention):
            kwargs["query_start"] = ops.cast(step[0, 0], "int32")
        if self.emit_samples:
            kwargs["return_sample"] = True
        if self._noise is not None:
            kwargs["sample_noise"] = self._noise
        result = self.attention(
            query, values, projected_key=keys, value_mask=memory_mask,
            return_attention_scores=True, **kwargs,
        )
        if self.emit_samples:
            context, weights, info = result
            self._sample = info["sample"]
            return context, weights
        return result

    def call(self, inputs, states, training=None):
        self._noise = None
        if self.noise_dim:
            inputs, self._noise = (inputs[:, : -self.noise_dim],
                                   inputs[:, -self.noise_dim:])
        states = list(states)
        n = self.num_cell_states
        cell_states, rest = states[:n], states[n:]
        feed = None
        if self.order == "luong" and self.input_feeding:
            feed, rest = rest[0], rest[1:]
        (step,) = rest
        weights = None

        if self.order == "bahdanau":
            # c_i from s_{i-1}; s_i = f(s_{i-1}, y_{i-1}, c_i).
            s_prev = self.top_hidden(cell_states)
            context, weights = self.attend(s_prev, step)
            h, new_cell = self.run_stack(ops.concatenate([inputs, context], -1),
                                         cell_states, training=training)
            # [s_{i-1}; c_i]: what the deep output layer reads (appendix A);
            # [h_t; z_t] for Xu et al. (2015), eq. 7 (output_state="current").
            state_out = h if self.output_state == "current" else s_prev
            output = ops.concatenate([state_out, context], axis=-1)
        else:
            x = inputs if feed is None else ops.concatenate([inputs, feed], -1)
            h, new_cell = self.run_stack(x, cell_states, training=training)
            if self.skip_attention:
                output = h
            else:
                context, weights = self.attend(h, step)
                output = self.attentional(ops.concatenate([context, h], -1))
        new_states = list(new_cell)
        if feed is not None:
            new_states = new_states + [output]
        new_states = new_states + [step + 1.0]
        if self.emit_weights and weights is not None:
            output = ops.concatenate([output, ops.cast(weights, output.dtype)], -1)
            if self.emit_samples:
                output = ops.concatenate(
                    [output, ops.cast(self._sample, output.dtype)], -1)
        return output, new_states

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

      and output `h~_t`. Without input feeding the recurrence does not
      depend on the attention, and the layer runs the cell over the whole
      target first and attends once (the parallel form: same outputs,
      faster training).

    The loop is Keras' own `keras.layers.RNN` over an `AttentionRNNCell`
    that carries the encoder's keys, values and mask as extra states, so it
    trains with `model.fit` on every backend, with and without
    `jit_compile` (XLA on TensorFlow). The keys (`U_a h_j`, `W_a h_s`) are
    projected once per source (`precompute`), and `step()` runs one
    decoder step for incremental decoding.

    Args:
        units: int, the cell's units.
        attention: a single-head attention layer of kerattn
            (`BahdanauAttention`, `LuongAttention`, `LocalAttention`,
            `SoftVisualAttention`, ...), used with one decoder step as query.
        cell: "gru" or "lstm".
        order: "bahdanau" or "luong".
        num_layers: int, the depth of the stack of cells (4 in Luong et al.);
            attention reads the top layer, input feeding enters the bottom.
        input_feeding: bool, Luong's input feeding (ignored for "bahdanau").
        attentional_units: int, the size of `h~_t` ("luong"); `units` when
            None.
        output_state: "previous" or "current" (order "bahdanau" only):
            output `[s_{i-1}; c_i]` (Bahdanau et al.) or `[s_i; c_i]` (the
            new state, as Xu et al. (2015), eq. 7, read `h_t` and `z_t`).
        return_state: bool, also return the final states.
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
        return_attention_samples: bool (with a `HardVisualAttention`): also
            return the one-hot locations the hard attention used at each step
            `(batch, T, S)` (sampled in training, argmax at inference); the
            memory's length `S` must be known.
        training: bool.

    Returns:
        `outputs` `(batch, T, output_dim)`; with `return_state=True` then the
        final state list (`[*cell_states, (feed,) step]`, as `step()` takes
        it); with `return_attention_scores=True` then the alignments
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
                 output_state="previous", return_state=False, **kwargs):
        super().__init__(**kwargs)
        attention = _check_args(units, attention, cell, order, attentional_units,
                                num_layers, output_state)
        self.output_state = output_state
        for name, flag in (("input_feeding", input_feeding),
                           ("return_state", return_state)):
            if not isinstance(flag, bool):
                raise ValueError(f"`{name}` must be a bool; received {flag!r}.")
        self.units = units
        self.cell_type = cell
        self.order = order
        self.input_feeding = input_feeding if order == "luong" else False
        self.attentional_units = attentional_units
        self.num_layers = num_layers
        self.return_state = return_state
        self.supports_masking = True
        step_cell = AttentionRNNCell(
            cell, units, attention, order, self.input_feeding,
            attentional_units or units, num_layers=num_layers,
            output_state=output_state, dtype=self.dtype_policy, name="cell",
        )
        self.rnn = keras.layers.RNN(
            step_cell, return_sequences=True, return_state=True,
            # Padded steps output zeros (the output is not the first state).
            zero_output_for_mask=True,
            dtype=self.dtype_policy, name="rnn",
        )

    # --- the parts -------------------------------------------------------------

    @property
    def cell(self):
        return self.rnn.cell

    @property
    def attention(self):
        return self.rnn.cell.attention

    @property
    def parallel(self):
        """Whether training runs the parallel form (Luong, no feeding)."""
        return self.order == "luong" and not self.input_feeding

    def build(self, inputs_shape, memory_shape):
        utils.check_rank("inputs", inputs_shape, (3,), "(batch, T, input_dim)")
        utils.check_rank("memory", memory_shape, (3,), "(batch, S, memory_dim)")
        self._dims = (inputs_shape[-1], memory_shape[-1])
        self.cell.build_for(inputs_shape[-1], memory_shape[-1])
        self.rnn.built = True
        self.built = True

    def _check(self, inputs, memory, inputs_mask=None, memory_mask=None):
        utils.check_rank("inputs", inputs.shape, (3,), "(batch, T, input_dim)")
        utils.check_rank("memory", memory.shape, (3,), "(batch, S, memory_dim)")
        utils.check_nonempty("memory", memory)
        utils.check_same("inputs", inputs.shape[0], "memory", memory.shape[0],
                         "batch size")
        dims = getattr(self, "_dims", None)
        if dims:
            utils.check_same("inputs", inputs.shape[-1],
                             "the input size this layer was built with", dims[0],
                             "last dimension")
            utils.check_same("memory", memory.shape[-1],
                             "the memory size this layer was built with",
                             dims[1], "last dimension")
        utils.check_mask("inputs_mask", inputs_mask, tuple(inputs.shape[:2]))
        utils.check_mask("memory_mask", memory_mask, tuple(memory.shape[:2]))

    # --- incremental decoding ------------------------------------------------

    def precompute(self, memory, memory_mask=None):
        """The per-source cache: projected keys, values and the mask.

        Args:
            memory: `(batch, S, memory_dim)` encoder outputs.
            memory_mask: optional boolean `(batch, S)`.

        Returns:
            A dict `{"keys", "values", "mask"}` for `step()`.
        """
        utils.check_rank("memory", memory.shape, (3,), "(batch, S, memory_dim)")
        if memory_mask is None:
            memory_mask = ops.ones(ops.shape(memory)[:2], dtype="bool")
        return {
            "keys": self.attention.project_key(memory),
            "values": memory,
            "mask": ops.cast(memory_mask, self.compute_dtype),
        }

    def _memory(self, cache):
        """The cache as the cell's loop constants `(keys, values, bool mask)`.

        The mask is made boolean here, once per call, not at every step.
        """
        return cache["keys"], cache["values"], cache["mask"] > 0.5

    def get_initial_state(self, batch_size, initial_state=None):
        """`[*cell_states, (feed,) step]` at the first step."""
        dtype = self.compute_dtype
        if initial_state is None:
            cell_states = [ops.zeros((batch_size, self.units), dtype)
                           for _ in range(self.cell.num_cell_states)]
        else:
            cell_states = list(initial_state) if isinstance(
                initial_state, (list, tuple)) else [initial_state]
            if len(cell_states) != self.cell.num_cell_states:
                raise ValueError(
                    f"`initial_state` must be a list of "
                    f"{self.cell.num_cell_states} tensor(s) of shape (batch, "
                    f"{self.units}) for cell={self.cell_type!r} and "
                    f"num_layers={self.num_layers} (layer by layer: GRU [h], "
                    f"LSTM [h, c]); received {len(cell_states)}."
                )
            for s in cell_states:
                utils.check_rank("initial_state", s.shape, (2,),
                                 f"(batch, {self.units})")
        states = [ops.cast(s, dtype) for s in cell_states]
        if self.input_feeding:
            states.append(ops.zeros((batch_size, self.cell.attentional_units),
                                    dtype))
        states.append(ops.zeros((batch_size, 1), dtype))
        return states

    def step(self, inputs, states, cache, training=None):
        """One decoder step.

        Args:
            inputs: `(batch, input_dim)` the embedded previous token.
            states: the list from `get_initial_state` or the previous step.
            cache: the dict from `precompute`.

        Returns:
            `(output (batch, output_dim), new_states, weights (batch, S))`.
        """
        self.cell.emit_weights = True
        self.cell.skip_attention = False
        self.cell.memory = self._memory(cache)
        try:
            output, new_states = self.cell(inputs, list(states), training=training)
        finally:
            self.cell.emit_weights = False
            self.cell.memory = None
        out_dim = self._output_dim(cache["values"].shape[-1])
        return output[:, :out_dim], list(new_states), output[:, out_dim:]

    # --- the whole sequence --------------------------------------------------

    def call(self, inputs, memory, inputs_mask=None, memory_mask=None,
             initial_state=None, return_attention_scores=False,
             return_attention_samples=False, training=None):
        self._check(inputs, memory, inputs_mask, memory_mask)
        if return_attention_samples:
            self._check_samples(memory)
        batch = ops.shape(inputs)[0]
        cache = self.precompute(memory, memory_mask)
        states = self.get_initial_state(batch, initial_state)
        cell = self.cell
        samples = None  # hard attention's locations (the sequential path only)
        if self.parallel:
            # Luong without input feeding: the recurrence ignores attention,
            # so run the cell over all steps, then attend once.
            cell.skip_attention, cell.emit_weights = True, False
            try:
                result = self.rnn(inputs, initial_state=states,
                                  mask=inputs_mask, training=training)
            finally:
                cell.skip_attention = False
            h, final = result[0], list(result[1:])
            kwargs = {}
            if isinstance(self.attention, LocalAttention):
                kwargs["query_start"] = 0
            context, weights = self.attention(
                h, cache["values"], projected_key=cache["keys"],
                value_mask=cache["mask"] > 0.5, query_mask=inputs_mask,
                return_attention_scores=True, **kwargs,
            )
            outputs = cell.attentional(ops.concatenate([context, h], -1))
        else:
            cell.emit_weights = return_attention_scores or return_attention_samples
            cell.emit_samples = return_attention_samples
            rnn_inputs = inputs
            if (training and self._samples_in_training()
                    and memory.shape[1] is not None):
                # Hard attention samples a location per step. The uniform
                # noise is drawn here, outside the loop, and rides along
                # with the inputs (a seed generator cannot advance inside a
                # JAX scan).
                noise = keras.random.uniform(
                    tuple(ops.shape(inputs)[:2]) + (int(memory.shape[1]),),
                    seed=self.attention.seed_generator, dtype=inputs.dtype)
                rnn_inputs = ops.concatenate([inputs, noise], axis=-1)
                cell.noise_dim = int(memory.shape[1])
            cell.memory = self._memory(cache)
            try:
                result = self.rnn(rnn_inputs, initial_state=states,
                                  mask=inputs_mask, training=training)
            finally:
                cell.emit_weights = cell.emit_samples = False
                cell.noise_dim = 0
                cell.memory = None
            outputs, final = result[0], list(result[1:])
            weights = None
            if return_attention_scores or return_attention_samples:
                out_dim = self._output_dim(memory.shape[-1])
                weights = outputs[..., out_dim:]
                outputs = outputs[..., :out_dim]
            if return_attention_samples:
                length = int(memory.shape[1])
                weights, samples = weights[..., :length], weights[..., length:]
        if inputs_mask is not None:
            keep = ops.expand_dims(ops.cast(inputs_mask, "bool"), -1)
            outputs = ops.where(keep, outputs, ops.zeros_like(outputs))
            if weights is not None:
                weights = ops.where(keep, weights, ops.zeros_like(weights))
            if samples is not None:
                samples = ops.where(keep, samples, ops.zeros_like(samples))
        result = (outputs,)
        if self.return_state:
            result += (final,)
        if return_attention_scores:
            result += (weights,)
        if return_attention_samples:
            result += (samples,)
        return result[0] if len(result) == 1 else result

    def _samples_in_training(self):
        from kerattn.layers.visual_attention import HardVisualAttention

        return isinstance(self.attention, HardVisualAttention)

    def _check_samples(self, memory):
        from kerattn.layers.visual_attention import HardVisualAttention

        if not isinstance(self.attention, HardVisualAttention):
            raise ValueError(
                "`return_attention_samples=True` needs a HardVisualAttention "
                f"attention; this layer has {type(self.attention).__name__}.")
        if memory.shape[1] is None:
            raise ValueError(
                "`return_attention_samples=True` needs the memory's length "
                "(axis 1) to be known; got shape "
                f"{tuple(memory.shape)}.")

    def _output_dim(self, memory_dim):
        if self.order == "bahdanau":
            return self.units + int(memory_dim)
        return self.cell.attentional_units

    def compute_output_spec(self, inputs, memory, inputs_mask=None,
                            memory_mask=None, initial_state=None,
                            return_attention_scores=False,
                            return_attention_samples=False, training=None):
        self._check(inputs, memory)
        if return_attention_samples:
            self._check_samples(memory)
        b, t = inputs.shape[0], inputs.shape[1]
        dtype = self.compute_dtype
        result = (keras.KerasTensor((b, t, self._output_dim(memory.shape[-1])),
                                    dtype=dtype),)
        if self.return_state:
            final = [keras.KerasTensor((b, self.units), dtype=dtype)
                     for _ in range(self.cell.num_cell_states)]
            if self.input_feeding:
                final.append(keras.KerasTensor((b, self.cell.attentional_units),
                                               dtype=dtype))
            final.append(keras.KerasTensor((b, 1), dtype=dtype))
            result += (final,)
        if return_attention_scores:
            result += (keras.KerasTensor((b, t, memory.shape[1]), dtype=dtype),)
        if return_attention_samples:
            result += (keras.KerasTensor((b, t, memory.shape[1]), dtype=dtype),)
        return result[0] if len(result) == 1 else result

    def compute_mask(self, inputs, previous_mask):
        return previous_mask

    def get_config(self):
        config = super().get_config()
        config.update({
            "units": self.units,
            "attention": keras.saving.serialize_keras_object(self.attention),
            "cell": self.cell_type,
            "order": self.order,
            "input_feeding": self.input_feeding,
            "attentional_units": self.attentional_units,
            "num_layers": self.num_layers,
            "output_state": self.output_state,
            "return_state": self.return_state,
        })
        return config

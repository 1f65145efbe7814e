"""`ZooModel`: the functional model every zoo builder returns.

A `keras.Model` built the functional way (`ZooModel(inputs, outputs)`),
with one addition: it checks what it is given before the backend sees it.
A user's mistake gets a `ValueError` that names the input and says what was
expected, instead of a backend stack trace or, worse, silently wrong output
(Keras casts float ids to int32 without a word; JAX clamps an
out-of-vocabulary id, or gathers NaN).

What is checked, and when:

- always, including inside `fit`'s compiled step on every backend (these
  need only the static shape and dtype): each input's rank, its fixed
  sizes, no zero-length axis, and integer dtype for token-id inputs;
- the values of token ids, in `[0, vocab_size)` (`[0, vocab_size + S)`
  for the inputs a copying model names in `extended_ids`), and one batch size for
  all inputs: when the data arrive as NumPy arrays (or lists), in
  `model(x)`, `fit`, `evaluate`, `predict` and the `*_on_batch` methods;
- the values of token ids arriving through a `tf.data.Dataset` given to
  `fit`, `evaluate` or `predict`, on every backend: the dataset is mapped
  with TensorFlow assertions that run in its own pipeline, on the host,
  before a batch reaches the backend (`benchmarks/id_check.py` measures
  what that costs), and a batch with an id out of range stops the call
  with the same ValueError. A backend tensor is not read back to the host
  for this (a device sync per step).

The vocabulary size of a token-id input is read from the embedding that
consumes it (`keras.layers.Embedding.input_dim`, or
`TransformerEmbedding.vocab_size`), so the checks also hold on a model
loaded from a `.keras` file.
"""

import warnings

import keras
import numpy as np

from keras import tree

from kerattn import checks, keras_fixes


def numbered_layers(model, prefix):
    """The layers named `<prefix>_1`, `<prefix>_2`, ... of `model`, in order."""
    import re

    pattern = re.compile(re.escape(prefix) + r"_(\d+)")
    found = {}
    for layer in model.layers:
        match = pattern.fullmatch(layer.name)
        if match:
            found[int(match.group(1))] = layer
    return [found[k] for k in sorted(found)]


def from_preset(presets, preset, **given):
    """The sizes of `presets[preset]`, with every argument not None on top.

    `presets["paper"]` holds every size keyword of the builder (the paper's
    values); a smaller preset names what it changes.

    Raises:
        ValueError: for a preset that is not in `presets`.
    """
    checks.one_of("preset", preset, tuple(presets))
    config = dict(presets["paper"], **presets[preset])
    config.update({k: v for k, v in given.items() if v is not None})
    return config


def initialize_uniform(model, scale, seed=None, skip=None):
    """Redraw every kernel, recurrent kernel and embedding of `model` from
    uniform(-scale, scale), as Sutskever et al. (2014) and Luong et al.
    (2015) initialise; biases, scalars (a learned scale or score bias,
    whose initial value is its meaning) and weights whose path ends with
    `skip` keep their initialisation.

    Example:

    >>> model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    >>> initialize_uniform(model, 0.1, seed=0)
    >>> float(np.abs(keras.ops.convert_to_numpy(model.weights[0])).max()) <= 0.1
    True
    """
    checks.positive_number("scale", scale)
    generator = keras.random.SeedGenerator(seed)
    for weight in model.weights:
        if (weight.path.endswith("bias") or not weight.trainable
                or len(weight.shape) == 0
                or (skip and weight.path.endswith(skip))):
            continue
        weight.assign(keras.random.uniform(weight.shape, -scale, scale,
                                           dtype=weight.dtype, seed=generator))


def set_forget_bias(model, value):
    """Set the forget-gate bias of every LSTM cell in `model` to `value`.

    Keras starts it at 1 (`unit_forget_bias=True`, after Jozefowicz et al.
    2015); a paper that draws every parameter from uniform(-r, r), as
    Luong et al. (2015) do, starts it near 0. The cells are found through
    `LSTM`, `Bidirectional` and `AttentionRNN` (whose stack of cells is
    its `cell.rnn_cells`); a Keras LSTM bias is `[i, f, c, o]`, `units`
    each. Returns the number of cells set.

    Example:

    >>> model = keras.Sequential([keras.Input((4, 3)), keras.layers.LSTM(2)])
    >>> set_forget_bias(model, 0.0)
    1
    >>> keras.ops.convert_to_numpy(model.layers[0].cell.bias).tolist()
    [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    """
    checks.number("forget_bias", value)
    cells, seen = [], set()

    def walk(layer):
        if id(layer) in seen:
            return
        seen.add(id(layer))
        if isinstance(layer, keras.layers.LSTMCell):
            cells.append(layer)
            return
        children = list(getattr(layer, "layers", None) or [])
        children += [getattr(layer, a, None)
                     for a in ("cell", "forward_layer", "backward_layer")]
        children += list(getattr(layer, "rnn_cells", None) or [])
        for child in children:
            if isinstance(child, keras.layers.Layer):
                walk(child)

    walk(model)
    for cell in cells:
        bias = keras.ops.convert_to_numpy(cell.bias).copy()
        bias[cell.units:2 * cell.units] = value
        cell.bias.assign(bias)
    return len(cells)


def _vocab_size(layer):
    if isinstance(layer, keras.layers.Embedding):
        return int(layer.input_dim)
    size = getattr(layer, "vocab_size", None)
    return int(size) if isinstance(size, int) else None


# Starts the message of a tf.data id check, followed by the input's name in
# backticks, so that it is found again in whichever error the backend wraps
# it in.
_ID_ERROR = "kerattn id check: "


def _ids_expected(vocab, extended_by=None, length=None):
    if extended_by is None:
        return (f"token ids in [0, {vocab}) (0 is PAD), the vocabulary of this "
                "model's embedding")
    bound = f"{vocab} + {length}" if length is not None else f"{vocab} + S"
    return (f"token ids in [0, {bound}) (0 is PAD): the vocabulary of this "
            f"model's embedding, then one id per position of `{extended_by}` "
            "(a copying model's extended vocabulary)")


def _is_dataset(x):
    """A `tf.data.Dataset`, recognised without importing TensorFlow."""
    return any(c.__module__.startswith("tensorflow") and c.__name__ in (
        "DatasetV2", "Dataset") for c in type(x).__mro__)


def _is_array_like(x):
    return isinstance(x, (np.ndarray, list, tuple, int, float, np.generic))


@keras.saving.register_keras_serializable(package="kerattn")
class ZooModel(keras_fixes.BuildOnOneReplicasBatch, keras.Model):
    """A functional `keras.Model` that validates its inputs.

    Built exactly as `keras.Model(inputs, outputs, name=...)`; everything
    else (compile, fit, save, export) is Keras'. See the module docstring
    for what is checked.

    Args:
        inputs: a dict of `keras.Input`s, by name.
        outputs: the output tensor(s).
        **kwargs: forwarded to `keras.Model` (e.g. `name`).

    Example:

    >>> import keras
    >>> import numpy as np
    >>> ids = keras.Input((None,), dtype="int32", name="ids")
    >>> x = keras.layers.Embedding(10, 4)(ids)
    >>> model = ZooModel({"ids": ids}, keras.layers.Dense(2)(x))
    >>> tuple(model({"ids": np.array([[1, 2, 9]])}).shape)
    (1, 3, 2)
    >>> model({"ids": np.array([[1, 2, 10]])})
    Traceback (most recent call last):
    ...
    ValueError: ...`ids` must be token ids in [0, 10)...
    """

    # Inputs whose token ids extend past the vocabulary of the embedding
    # that reads them by one id per position of another input, `{input:
    # that input}`: a copying model's extended vocabulary (See et al.,
    # 2017), `V + k` for the k-th source word outside the vocabulary. Their
    # ids are checked against `[0, V + S)`, S that input's length.
    extended_ids = {}

    # The signature of `Functional.__init__`, so that `Model.from_config`
    # revives a saved ZooModel as a functional model.
    def __init__(self, inputs, outputs, name=None, **kwargs):
        super().__init__(inputs, outputs, name=name, **kwargs)
        self._input_specs = None

    # --- What the inputs must be ----------------------------------------

    @property
    def layers_by_name(self):
        """`{name: layer}` of the model's layers (optional parts of a model
        exist only when it uses them: look them up here)."""
        return {layer.name: layer for layer in self.layers}

    def _specs(self):
        """`{name: (shape, is_ids, vocab_size)}`, from the graph, cached."""
        if getattr(self, "_input_specs", None) is not None:
            return self._input_specs
        inputs = list(self.inputs)
        consumers = {id(t): [] for t in inputs}
        for layer in self.layers:
            for call in keras_fixes.call_inputs(layer):
                for t in call:
                    if id(t) in consumers:
                        consumers[id(t)].append(layer)
        vocab_sizes = [v for v in map(_vocab_size, self.layers) if v]
        fallback = max(vocab_sizes) if vocab_sizes else None
        specs = {}
        for t in inputs:
            is_ids = "int" in keras.backend.standardize_dtype(t.dtype)
            vocab = None
            if is_ids:
                direct = [v for v in map(_vocab_size, consumers[id(t)]) if v]
                vocab = min(direct) if direct else fallback
            specs[t.name] = (tuple(t.shape), is_ids, vocab)
        self._input_specs = specs
        return specs

    def _named(self, x):
        """`x` as `{input name: value}`, or None when it can't be matched."""
        specs = self._specs()
        if isinstance(x, dict):
            return {k: v for k, v in x.items() if k in specs}
        flat = tree.flatten(x) if isinstance(x, (list, tuple)) and len(
            specs) > 1 else [x]
        if len(flat) != len(specs):
            return None
        return dict(zip(specs, flat))

    def check_inputs(self, x, values=True):
        """Raise a ValueError when `x` is not what this model takes.

        Args:
            x: the model's inputs (a dict by input name, as `fit` takes).
            values: also read NumPy values (token-id ranges, batch sizes).
        """
        named = self._named(x)
        if not named:
            return
        batch_sizes = {}
        for name, value in named.items():
            if value is None or isinstance(value, keras.KerasTensor):
                continue
            shape, is_ids, vocab = self._specs()[name]
            as_array = values and _is_array_like(value)
            if as_array:
                value = np.asarray(value)
            got = tuple(getattr(value, "shape", ()) or ())
            dtype = getattr(value, "dtype", None)
            expected = "(batch, " + ", ".join(
                "time" if d is None else str(d) for d in shape[1:]) + ")"
            checks.rank(name, got, (len(shape),), expected)
            for axis, (want, have) in enumerate(zip(shape[1:], got[1:]), 1):
                have = checks.known_dim(have)
                if have is None:  # a symbolic dimension (jax.export)
                    continue
                checks.require(want is None or have == want, name,
                               f"shaped {expected}", got)
                if have == 0:
                    checks.nonempty(name, value, axes=(axis,), what="position")
            if dtype is not None:
                if is_ids:
                    checks.integer_ids(name, value)
                else:
                    dtype = keras.backend.standardize_dtype(dtype)
                    checks.require(dtype not in ("bool", "string"), name,
                                   "numeric", note=f"Received dtype {dtype}.")
            if not as_array:
                continue
            if got:
                batch_sizes[name] = got[0]
            if is_ids and value.size:
                low, high = int(value.min()), int(value.max())
                bad = low if low < 0 else high
                bound, expected_ids = vocab, _ids_expected(vocab)
                other = self.extended_ids.get(name)
                if vocab is not None and other is not None:
                    source = named.get(other)
                    if _is_array_like(source):
                        source = np.asarray(source)
                    length = (checks.static_dim(source, 1) if len(
                        getattr(source, "shape", ())) == 2 else None)
                    bound = None if length is None else vocab + length
                    expected_ids = _ids_expected(vocab, other, length)
                checks.require(
                    low >= 0 and (bound is None or high < bound), name,
                    expected_ids, bad)
        sizes = list(batch_sizes.items())
        for other, size in sizes[1:]:
            checks.same(sizes[0][0], sizes[0][1], other, size, "batch size")

    # --- Where the checks run -------------------------------------------

    def call(self, inputs, training=None, mask=None, **kwargs):
        self.check_inputs(inputs)
        return super().call(inputs, training=training, mask=mask, **kwargs)

    def _check_data(self, x):
        if isinstance(x, dict) or _is_array_like(x):
            self.check_inputs(x)

    def checked_dataset(self, dataset):
        """`dataset` (a `tf.data.Dataset` of `x` or `(x, y[, w])`) mapped
        with assertions that every token id of this model's inputs is in
        `[0, vocab_size)`; they run in the dataset's pipeline (TensorFlow,
        on the host), so they hold on every backend. `fit`, `evaluate` and
        `predict` call this on a dataset they are given.

        Args:
            dataset: a `tf.data.Dataset`.

        Returns:
            The mapped dataset; iterating it past a bad id raises
            TensorFlow's InvalidArgumentError carrying the message below
            (`fit`, `evaluate` and `predict` turn it into a ValueError).
        """
        import tensorflow as tf

        specs = self._specs()
        checked = {n: v for n, (_, ids, v) in specs.items() if ids and v}
        if not checked:
            return dataset

        def check(*element):
            x = element[0]
            named = self._named(x) or {}
            asserts = []
            for name, value in named.items():
                if name not in checked or not value.dtype.is_integer:
                    continue
                other = self.extended_ids.get(name)
                message = (f"{_ID_ERROR}`{name}` must be "
                           f"{_ids_expected(checked[name], other)}; a batch of "
                           "the dataset holds one out of range.")
                bound = tf.cast(checked[name], value.dtype)
                if other is not None and other in named:
                    bound += tf.cast(tf.shape(named[other])[1], value.dtype)
                asserts += [tf.debugging.assert_non_negative(value, message),
                            tf.debugging.assert_less(value, bound, message)]
            with tf.control_dependencies(asserts):
                element = tf.nest.map_structure(tf.identity, element)
            return element if len(element) > 1 else element[0]

        return dataset.map(check, num_parallel_calls=tf.data.AUTOTUNE,
                           deterministic=True)

    def _run(self, method, x, args, kwargs):
        """`method(x, ...)` of keras.Model, with a dataset's ids checked
        (`x`, and `validation_data` of `fit`)."""
        self._check_data(x)
        validation = kwargs.get("validation_data")
        if not (_is_dataset(x) or _is_dataset(validation)):
            return method(x, *args, **kwargs)
        if _is_dataset(validation):
            kwargs["validation_data"] = self.checked_dataset(validation)
        if _is_dataset(x):
            x = self.checked_dataset(x)
        try:
            with keras_fixes.jax_variables_kept(self):
                return method(x, *args, **kwargs)
        except Exception as error:   # TensorFlow's, through any backend
            text = str(error)
            failed = [(name, vocab) for name, (_, ids, vocab) in
                      self._specs().items()
                      if ids and vocab and f"{_ID_ERROR}`{name}`" in text]
            if not failed:
                raise
            name, vocab = failed[0]
            checks.fail(name, _ids_expected(vocab, self.extended_ids.get(name)),
                        note="A batch of the tf.data dataset holds an id out "
                        "of range.")

    def fit(self, x=None, *args, **kwargs):
        return self._run(super().fit, x, args, kwargs)

    def evaluate(self, x=None, *args, **kwargs):
        return self._run(super().evaluate, x, args, kwargs)

    def predict(self, x, *args, **kwargs):
        return self._run(super().predict, x, args, kwargs)

    def train_on_batch(self, x, *args, **kwargs):
        self._check_data(x)
        return super().train_on_batch(x, *args, **kwargs)

    def test_on_batch(self, x, *args, **kwargs):
        self._check_data(x)
        return super().test_on_batch(x, *args, **kwargs)

    def predict_on_batch(self, x):
        self._check_data(x)
        return super().predict_on_batch(x)


_SOURCE_INPUT_DEPRECATED = ("GenerativeModel.source_input is deprecated: use "
                            "`encoder_input_name`.")


class GenerativeModel(ZooModel):
    """A zoo model that writes a sequence: `encode` once, then `step`.

    The one contract between a generative zoo model and decoding
    (`kerattn.decoding.generate`, `Translator`, `Captioner`, the exported
    SavedModels). Each model is its own registered subclass (`BahdanauNMT`,
    `TransformerNMT`, `ShowAttendTell`, ...) built by its zoo builder;
    `encode` and `step` call the training graph's own layers through the
    same functions the builder used, so a model is written once, and a
    `.keras` file loads back as the same class.

    Class attributes:
        encoder_input_name: the name of the input `encode` reads
            (`"source_ids"`, or `"images"` / `"features"` for captioning);
            `source_input` is its deprecated alias.
        beam_invariant: the entries of the state dict that are the same for
            every hypothesis of one input (encoder outputs, projected keys):
            beam search never reorders them.
        extended_ids: `{input: input}` (`ZooModel`), the inputs that hold
            extended ids (a copying model's; empty for the others).
        copies: whether `step` writes extended ids, `V + k` for the k-th
            source word outside the vocabulary (See et al., 2017; False for
            every model but `pointer_generator`).

    Methods:
        encode(inputs, max_length) -> state: a dict of batch-leading tensors.
            `max_length` is the most tokens a search will write (a key/value
            cache is sized by it; models without one ignore it).
        step(tokens, state, index) -> (logits, state, attention): the
            previous token of each row `(batch,)` (BOS at `index` 0) to the
            next token's logits `(batch, vocab)` (or log-probabilities over
            `output_size(S)` ids), the new state and the attention over the
            source `(batch, S)` (None without attention).
        output_size(source_length): the size of `step`'s last axis.
        generate(inputs, ...): encode, then greedy / beam / sampling
            (`kerattn.decoding.generate`).
        can_stream() -> (ok, why): the streaming declaration
            (`kerattn.decoding.StreamingDecoder`, with the three below):
            whether an output may be committed before the input ends.
        lookahead() -> int: how many inputs past an attended position
            must be read first.
        reads(index) -> int or None: how many inputs the output at
            `index` reads when a fixed schedule says so (a wait-k decoder;
            None: where a hard attention stops says).
        extend_source(state, fresh) -> state: how a state carries over to
            a longer prefix.

    Args:
        inputs, outputs, name: those of Keras' functional `Model`; each zoo
            builder passes them.

    Example:

    >>> import numpy as np
    >>> model = kerattn.zoo.luong_nmt(20, 30, preset="tiny")
    >>> isinstance(model, GenerativeModel), model.beam_invariant
    (True, ('cache',))
    >>> tuple(model.generate(np.array([[5, 6, 0]]), max_length=3)["tokens"].shape)
    (1, 3)
    """

    encoder_input_name = "source_ids"
    beam_invariant = ()
    copies = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "source_input" in cls.__dict__:
            warnings.warn(_SOURCE_INPUT_DEPRECATED, DeprecationWarning,
                          stacklevel=2)
            cls.encoder_input_name = cls.__dict__["source_input"]

    def __getattr__(self, name):
        # Only reached when normal lookup fails, so `source_input` is not
        # an attribute (Keras' saving reads every attribute of a model).
        if name == "source_input":
            warnings.warn(_SOURCE_INPUT_DEPRECATED, DeprecationWarning,
                          stacklevel=2)
            return self.encoder_input_name
        parent = getattr(super(), "__getattr__", None)   # torch's Module
        if parent is None:
            raise AttributeError(
                f"{type(self).__name__!r} object has no attribute {name!r}")
        return parent(name)

    @property
    def inputs_are_ids(self):
        """Whether `encode` reads token ids (else images or features)."""
        return self._specs()[self.encoder_input_name][1]

    @property
    def encoder_input_shape(self):
        """The shape of one example of that input (no batch axis)."""
        return self._specs()[self.encoder_input_name][0][1:]

    def output_size(self, source_length):
        """The size of `step`'s last axis (the ids a search can write) for
        inputs of `source_length` positions.

        The training graph's output size, the target vocabulary `V`, unless
        the model says otherwise: a copying model writes an extended
        vocabulary of `V + source_length` ids (`kerattn.zoo.
        pointer_generator`). The searches read the size off the step's
        output; codecs and users read it here.

        Args:
            source_length: the length of the (padded) inputs to `encode`.

        Returns:
            An int.

        Example:

        >>> model = kerattn.zoo.bahdanau_nmt(20, 30, preset="tiny")
        >>> model.output_size(7)
        30
        """
        return int(self.output_shape[-1])

    def encode(self, inputs, max_length=None):
        raise NotImplementedError

    def step(self, tokens, state, index):
        raise NotImplementedError

    # --- streaming (`kerattn.decoding.StreamingDecoder`) ----------------------

    def can_stream(self):
        """Whether this model's output at a step depends on the input read
        so far only, so that a streaming decoder may commit to it before
        the input ends: `(ok, why)`, `why` the reason in words when not.

        No here; a model that can stream says so, and implements
        `extend_source`.
        """
        return False, (f"{type(self).__name__} does not declare that it "
                       "can stream")

    def lookahead(self):
        """How many inputs past a position the encoder's state there reads
        (0: none, the default): a streaming decoder commits to an output
        whose attention stopped at position `t` once `t + lookahead() + 1`
        inputs are read. A model whose encoder looks ahead says so here
        (`luong_nmt(lookahead=k)`)."""
        return 0

    def reads(self, index):
        """How many inputs the output at `index` (from 0) reads at most,
        when a fixed schedule says so (a wait-k decoder, `luong_nmt(
        wait_k=k)`): a streaming decoder commits to it once that many
        inputs, and `lookahead()` more, are read. None (the default): no
        schedule; where the model's hard attention stops says."""
        return None

    def extend_source(self, state, fresh):
        """The decoding `state` reached on a prefix of the input, carried
        over to a longer prefix whose `encode` gave `fresh` (a streaming
        decoder's next `feed`). Implemented by the models that stream."""
        raise NotImplementedError(
            f"{type(self).__name__} does not stream (`can_stream`)")

    def generate(self, inputs, max_length=50, strategy="greedy", bos_id=2,
                 eos_id=3, **options):
        """Encode `inputs`, then decode: `kerattn.decoding.generate(self, ...)`.

        Args:
            inputs: `(batch, ...)` source ids (PAD = 0) or images.
            max_length: the number of tokens to write (EOS included).
            strategy: "greedy", "beam" or "sample".
            bos_id, eos_id: the target vocabulary's special ids (the
                `WordVocabulary` defaults).
            **options: the strategy's options (`beam_width`,
                `length_penalty`, ... for "beam"; `temperature`, `top_k`,
                `top_p`, `seed` for "sample").

        Returns:
            A dict: `tokens` `(batch, max_length)` of the best hypothesis,
            `scores`, `lengths`, and `attention` `(batch, max_length, S)`
            for a model with attention.

        Example:

        >>> import numpy as np
        >>> model = kerattn.zoo.bahdanau_nmt(20, 30, preset="tiny")
        >>> out = model.generate(np.array([[5, 6, 7, 0]]), max_length=4,
        ...                      strategy="beam", beam_width=2)
        >>> tuple(out["tokens"].shape)
        (1, 4)
        """
        from kerattn.decoding.generate import generate

        return generate(self, inputs, max_length=max_length, strategy=strategy,
                        bos_id=bos_id, eos_id=eos_id, **options)

    def source_ids(self, source_ids):
        """`source_ids` as an int32 tensor, and its mask (PAD = 0 is False)."""
        source_ids = keras.ops.convert_to_tensor(source_ids, "int32")
        return source_ids, keras.ops.not_equal(source_ids, 0)

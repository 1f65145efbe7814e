"""The one decoding front door: encode, then greedy / beam / sampling.

    model.generate(inputs)  ==  generate(model, inputs)

`generate` is a function of tensors (compile it whole with
`compile_decoder`); `Generator` is what `Translator` and `Captioner` call:
it pads each batch to a few shapes and compiles each shape once;
`decode_function` is the fixed-shape function their `export` methods hand
to `kerattn.export`. None of them knows any model class: a generative model
(`kerattn.zoo.GenerativeModel`) brings `encode`, `step`, `beam_invariant`
and `inputs_are_ids`, and the loops of `kerattn.decoding.search` know only
a step function.
"""

import collections
import inspect

import keras
import numpy as np
from keras import ops

from kerattn import checks
from kerattn.datasets.padding import pad_ids
from kerattn.decoding.compiled import compile_decoder
from kerattn.decoding.search import beam_search, greedy_search, sample

STRATEGIES = ("greedy", "beam", "sample")
# The options each strategy takes: its search's arguments, less those
# `generate` fills in itself.
_FILLED = ("step_fn", "state", "batch_size", "bos_id", "eos_id", "pad_id",
           "max_length", "num_return", "beam_invariant")
OPTIONS = {
    strategy: tuple(name for name in inspect.signature(search).parameters
                    if name not in _FILLED)
    for strategy, search in (("greedy", greedy_search), ("beam", beam_search),
                             ("sample", sample))
}
# What decoding asks of a model: the protocol of kerattn.zoo.GenerativeModel.
PROTOCOL = ("encode", "step", "beam_invariant", "inputs_are_ids")


def _check_model(model):
    checks.require(
        isinstance(model, keras.Model) and all(hasattr(model, a) for a in PROTOCOL),
        "model", "a generative kerattn.zoo model (a kerattn.zoo.GenerativeModel "
        "with `encode` and `step`, e.g. kerattn.zoo.bahdanau_nmt(), or a "
        ".keras file loaded with kerattn.load_model)",
        model)


def strategy_of(strategy, beam_width, options):
    """The `generate` strategy a codec's call asks for, and its options.

    `strategy=None` means "beam" when `beam_width > 1` or a beam option is
    given, else "greedy"; a `beam_width` other than 1 needs "beam".
    """
    checks.positive_int("beam_width", beam_width)
    if strategy is None:
        strategy = "beam" if beam_width > 1 or options else "greedy"
    if strategy == "beam":
        options = dict(options, beam_width=beam_width)
    else:
        checks.require(beam_width == 1, "beam_width",
                       f"1 with strategy={strategy!r}", beam_width)
    return strategy, options


def decode_function(model, vocab, max_length, beam_width=1, strategy=None,
                    **options):
    """`inputs -> int32 tokens (batch, max_length)`: what an export traces.

    Args:
        model: a generative zoo model.
        vocab: the target vocabulary (its special ids are used).
        max_length: the tokens written per row.
        beam_width, strategy, **options: as for `Translator.__call__`.

    Returns:
        A function of one tensor, written with `keras.ops`.

    Example:

    >>> model = kerattn.zoo.bahdanau_nmt(20, 30, preset="tiny")
    >>> from kerattn.datasets import WordVocabulary
    >>> vocab = WordVocabulary.build(["a b"])
    >>> decode = decode_function(model, vocab, max_length=4, beam_width=2)
    >>> tuple(decode(np.array([[5, 6, 0]], "int32")).shape)
    (1, 4)
    """
    _check_model(model)
    checks.positive_int("max_length", max_length)
    strategy, options = strategy_of(strategy, beam_width, dict(options))

    def decode(inputs):
        tokens = generate(model, inputs, max_length=max_length,
                          strategy=strategy, bos_id=vocab.bos_id,
                          eos_id=vocab.eos_id, pad_id=vocab.pad_id,
                          **options)["tokens"]
        return ops.cast(tokens, "int32")

    return decode


def generate(model, inputs, max_length=50, strategy="greedy", bos_id=2, eos_id=3,
             pad_id=0, num_return=1, **options):
    """Encode `inputs` with `model`, then greedy search, beam search or sampling.

    Args:
        model: a `kerattn.zoo.GenerativeModel` (any zoo translation model,
            `show_attend_tell`).
        inputs: `(batch, S)` source ids (PAD = 0; a copying model's
            extended ids, `V + k` for a source's k-th word outside its
            vocabulary, whose steps then write `model.output_size(S)` ids),
            or `(batch, H, W, C)` images / `(batch, L, D)` features for
            captioning.
        max_length: the number of tokens written (EOS included).
        strategy: "greedy", "beam" or "sample".
        bos_id, eos_id, pad_id: the target vocabulary's special ids.
        num_return: with "beam", how many hypotheses to return, best first;
            1 returns the best without the beam axis.
        **options: `min_length` (all); `beam_width`, `length_penalty`,
            `coverage_penalty`, `no_repeat_ngram_size`,
            `never_worse_than_greedy` ("beam", see `beam_search`);
            `temperature`, `top_k`, `top_p`, `seed` ("sample").

    Returns:
        A dict: `tokens` int32 `(batch, max_length)` (PAD after EOS),
        `scores` and `lengths` `(batch,)`, and `attention` `(batch,
        max_length, S)` when the model returns attention; with "beam" and
        `num_return > 1`, each has a hypothesis axis after the batch.

    Example:

    >>> model = kerattn.zoo.bahdanau_nmt(20, 30, preset="tiny")
    >>> out = generate(model, np.array([[5, 6, 7, 0]], "int32"), max_length=5,
    ...                strategy="beam", beam_width=3)
    >>> tuple(out["tokens"].shape), tuple(out["attention"].shape)
    ((1, 5), (1, 5, 4))
    """
    _check_model(model)
    checks.one_of("strategy", strategy, STRATEGIES)
    for option in options:
        checks.require(
            option in OPTIONS[strategy], option,
            f"an option of strategy={strategy!r}, one of "
            f"{OPTIONS[strategy]}", options[option],
            note=next((f"It is an option of strategy={other!r}."
                       for other in STRATEGIES if option in OPTIONS[other]),
                      None))
    checks.positive_int("max_length", max_length)
    checks.positive_int("num_return", num_return)
    checks.min_rank("inputs", inputs.shape, 2, "(batch, ...)")
    if model.inputs_are_ids:
        checks.integer_ids("inputs", inputs)
    state = model.encode(inputs, max_length=max_length)
    common = dict(step_fn=model.step, state=state,
                  batch_size=int(inputs.shape[0]), bos_id=bos_id,
                  eos_id=eos_id, pad_id=pad_id, max_length=max_length)
    if strategy == "greedy":
        return greedy_search(**common, **options)
    if strategy == "sample":
        return sample(**common, **options)
    if model.inputs_are_ids:
        options.setdefault("source_mask", ops.not_equal(inputs, 0))
    out = beam_search(beam_invariant=model.beam_invariant,
                      num_return=num_return, **common, **options)
    if num_return == 1:  # the best hypothesis, without the beam axis
        out = {key: value if key.startswith("step_") else value[:, 0]
               for key, value in out.items()}
    return out


def export_decoder(kind, model, path, input_spec, target_vocab, max_length,
                   beam_width, source_vocab=None, command_line_options=None,
                   **search_kwargs):
    """The codecs' `export`: `decode_function` handed to `kerattn.export`.

    On TensorFlow and JAX, `kerattn.export.export_serving` traces the
    decode function; on PyTorch, the model goes through its `.keras` file to
    `python -m kerattn.export KIND` under TensorFlow, with
    `command_line_options` (the vocabularies as JSON and the sizes).
    """
    from kerattn import export

    checks.positive_int("beam_width", beam_width)
    checks.positive_int("max_length", max_length)
    if keras.backend.backend() == "torch":
        options = dict(command_line_options, beam_width=beam_width,
                       max_length=max_length, search_kwargs=search_kwargs)
        return export.command_line.run_under_tensorflow(kind, model, path, options)
    decode = decode_function(model, target_vocab, max_length, beam_width,
                             **search_kwargs)
    metadata = dict(kind=kind, beam_width=beam_width, max_length=max_length,
                    batch_size=int(input_spec.shape[0]), search=search_kwargs)
    if source_vocab is not None:
        metadata["max_source_length"] = int(input_spec.shape[1])
    return export.export_serving(model, decode, path, input_spec, target_vocab,
                                 max_length, source_vocab=source_vocab,
                                 metadata=metadata)


def _bucket(n, minimum):
    """The next power of two >= n (and >= minimum): few compiled shapes."""
    size = minimum
    while size < n:
        size *= 2
    return size


class Generator:
    """`generate` for NumPy batches of any size, compiled once per shape.

    Rows are padded to a power-of-two batch (and token-id sources to a
    power-of-two length, at least 8) so that a handful of shapes compile
    (XLA under TensorFlow, `jax.jit` under JAX, eager without autograd under
    torch; see `compile_decoder`), and each compiled function is kept for
    its options. For a long-running server the cache is bounded:

    - a call of more than `max_batch` rows runs in chunks of `max_batch`,
      so batch shapes are the powers of two up to `max_batch`;
    - a token-id source longer than `max_source_length` is truncated to
      its first `max_source_length` tokens (the exported SavedModel does
      the same at its `max_source_length`), so source lengths are the
      powers of two from 8 up to `max_source_length`;
    - at most `max_compiled` configurations (`max_length`, strategy,
      options) are kept, the least recently used dropped first.

    The cache thus holds at most `max_compiled` functions, each compiling
    at most (batch buckets x length buckets) shapes. `traces` counts each
    configuration and padded shape the decode function was traced for
    (under torch, which runs eagerly, every call counts).

    Args:
        model: a `kerattn.zoo.GenerativeModel`.
        jit_compile: compile (False: run eagerly, for debugging).
        max_batch: the most rows decoded at once (a power of two).
        max_source_length: the longest token-id source kept, in tokens.
        max_compiled: the most configurations kept compiled.

    Call arguments:
        inputs: a NumPy batch, `(n, S)` ids or `(n, ...)` images; or a list
            of id lists of any lengths (padded with 0 here).
        max_length, strategy, bos_id, eos_id, pad_id, num_return,
            **options: as `generate`.

    Returns:
        The dict of `generate`, as NumPy arrays of `n` rows.

    Example:

    >>> model = kerattn.zoo.transformer_nmt(20, 30, preset="tiny")
    >>> generator = Generator(model)
    >>> out = generator([[5, 6, 7], [8, 9]], max_length=4, strategy="sample",
    ...                 seed=1)
    >>> out["tokens"].shape
    (2, 4)
    >>> generator.buckets()       # batch sizes x source lengths
    (9, 8)
    """

    def __init__(self, model, jit_compile=True, max_batch=256,
                 max_source_length=1024, max_compiled=16):
        _check_model(model)
        checks.boolean("jit_compile", jit_compile)
        for name, value, low in (("max_batch", max_batch, 1),
                                 ("max_source_length", max_source_length, 8)):
            checks.int_at_least(name, value, low)
            checks.require(value & (value - 1) == 0, name, "a power of two",
                           value)
        checks.positive_int("max_compiled", max_compiled)
        self.model = model
        self.jit_compile = jit_compile
        self.max_batch = max_batch
        self.max_source_length = max_source_length
        self.max_compiled = max_compiled
        self._compiled = collections.OrderedDict()
        self.traces = collections.Counter()

    def buckets(self):
        """`(batch sizes, source lengths)`: how many padded shapes a
        configuration can compile (one source shape for images)."""
        batches = self.max_batch.bit_length()
        if not self.model.inputs_are_ids:
            return batches, 1
        return batches, self.max_source_length.bit_length() - 3

    def pad(self, inputs):
        """`(n, padded batch)`: rows to a power of two, id lengths too."""
        if self.model.inputs_are_ids:
            rows = [list(np.asarray(r).reshape(-1))[: self.max_source_length]
                    for r in inputs]
            width = _bucket(max([len(r) for r in rows] + [1]), 8)
            empty = [[]] * (_bucket(len(rows), 1) - len(rows))
            return len(rows), pad_ids(rows + empty, width)
        inputs = np.asarray(inputs, "float32")
        batch = np.zeros((_bucket(len(inputs), 1),) + inputs.shape[1:], "float32")
        batch[: len(inputs)] = inputs
        return len(inputs), batch

    def _function(self, key, max_length, strategy, options):
        if key in self._compiled:
            self._compiled.move_to_end(key)
            return self._compiled[key]

        def run(x):
            self.traces[(key, tuple(x.shape))] += 1   # runs when traced
            return generate(self.model, x, max_length=max_length,
                            strategy=strategy, **options)

        self._compiled[key] = compile_decoder(run, self.model.variables,
                                              self.jit_compile)
        while len(self._compiled) > self.max_compiled:
            self._compiled.popitem(last=False)
        return self._compiled[key]

    def __call__(self, inputs, max_length=50, strategy="greedy", **options):
        key = (max_length, strategy, tuple(sorted(options.items())))
        function = self._function(key, max_length, strategy, options)
        parts = []
        for start in range(0, max(len(inputs), 1), self.max_batch):
            n, batch = self.pad(inputs[start:start + self.max_batch])
            result = function(batch)
            parts.append({k: ops.convert_to_numpy(v)[:n]
                          for k, v in result.items()})
        if len(parts) == 1:
            return parts[0]
        return {k: _concatenate([p[k] for p in parts]) for k in parts[0]}


def _concatenate(arrays):
    """Chunks' results as one: rows stacked, other axes zero-padded to the
    widest chunk (attention over a source padded to another length)."""
    widest = np.max([a.shape for a in arrays], axis=0)
    return np.concatenate([
        np.pad(a, [(0, 0)] + [(0, int(w - d)) for w, d in
                              zip(widest[1:], a.shape[1:])]) for a in arrays])

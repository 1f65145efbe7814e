"""Strings in, strings out: a zoo translation model with its vocabularies."""

import inspect

import numpy as np
from keras import ops

from kerattn.decoding.compiled import compile_decoder
from kerattn.decoding.search import search_incremental


def _bucket(n, minimum):
    """The next power of two >= n (and >= minimum): few compiled shapes."""
    size = minimum
    while size < n:
        size *= 2
    return size


class Translator:
    """Translate strings with a `kerattn.zoo` translation model.

    Args:
        model: a zoo translation model (e.g. `kerattn.zoo.bahdanau_nmt()`),
            trained or loaded from a `.keras` file.
        source_vocab, target_vocab: the vocabularies the model was trained
            with (`WordVocabulary` or keras-hub based `WordPieceVocabulary`);
            the special ids come from them.
        max_length: the default maximum output length in tokens.
        jit_compile: compile "encode, then search" with the backend's
            compiler (XLA under TensorFlow, `jax.jit` under JAX; see
            `kerattn.decoding.compiled`); torch runs eagerly without
            autograd. Batches are padded to power-of-two sizes and source
            lengths, so each shape compiles once and later calls reuse it.

    Call arguments:
        texts: a list of strings.
        beam_width: int; 1 is greedy decoding.
        max_length: optional int overriding the default.
        return_alignments: bool; if True also return, per sentence, the
            `(target tokens, source tokens)` attention matrix of the chosen
            hypothesis with both token lists.
        **search_kwargs: `length_penalty`, `coverage_penalty`,
            `no_repeat_ngram_size`, `min_length` of `beam_search`.

    Returns:
        A list of translations (and the list of alignment dicts).

    Example:

    >>> from kerattn.datasets import WordVocabulary
    >>> src = WordVocabulary.build(["Permission denied", "File not found"])
    >>> tgt = WordVocabulary.build(["Permission refusée", "Fichier introuvable"])
    >>> model = kerattn.zoo.bahdanau_nmt(len(src), len(tgt), embedding_dim=8,
    ...                                  units=8, alignment_units=8, maxout_units=4)
    >>> # ... model.fit(...) ...
    >>> translator = Translator(model, src, tgt, max_length=6)
    >>> texts, alignments = translator(["File not found"], beam_width=2,
    ...                                return_alignments=True)
    >>> len(texts), alignments[0]["source_tokens"]
    (1, ['File', '▁not', '▁found'])
    """

    def __init__(self, model, source_vocab, target_vocab, max_length=40,
                 jit_compile=True):
        from kerattn import zoo

        from kerattn.decoding.search import check_vocabulary
        from kerattn.layers.attention_utils import check_positive_int
        from kerattn.zoo.checks import check_model

        check_model(model, "a kerattn.zoo translation model")
        check_vocabulary("source_vocab", source_vocab, ("encode_batch", "unk_id"))
        check_vocabulary("target_vocab", target_vocab)
        check_positive_int("max_length", max_length)
        specs = getattr(model, "_specs", None)
        for name, vocab, key in (("source_vocab", source_vocab, "source_ids"),
                                 ("target_vocab", target_vocab, "target_in_ids")):
            size = specs()[key][2] if specs and key in specs() else None
            if size is not None and len(vocab) > size:
                raise ValueError(
                    f"`{name}` has {len(vocab)} tokens, more than the model's "
                    f"{key} vocabulary of {size}: ids past {size - 1} would "
                    "have no embedding.")
        self.model = model
        self.source_vocab = source_vocab
        self.target_vocab = target_vocab
        self.max_length = max_length
        self.jit_compile = jit_compile
        self.incremental = zoo.incremental(model, pad_id=source_vocab.pad_id)
        # Key/value caches (Transformer) are sized for the output length.
        self._encode_takes_length = "max_length" in inspect.signature(
            self.incremental.encode).parameters
        self._compiled = {}

    def _encode_texts(self, texts):
        if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
            raise ValueError("`texts` must be a list of strings; got "
                             f"{type(texts).__name__}.")
        ids = [i or [self.source_vocab.unk_id]
               for i in self.source_vocab.encode_batch(texts)]
        # Padded rows (all PAD) attend to nothing and are dropped after.
        batch = np.full((_bucket(len(ids), 1), _bucket(max(map(len, ids)), 8)),
                        self.source_vocab.pad_id, "int32")
        for row, i in enumerate(ids):
            batch[row, : len(i)] = i
        return batch

    def __call__(self, texts, beam_width=1, max_length=None,
                 return_alignments=False, **search_kwargs):
        if not texts:
            return ([], []) if return_alignments else []
        max_length = max_length or self.max_length
        source = self._encode_texts(texts)
        search = self._search(beam_width, max_length, search_kwargs)
        result = search(source)
        n = len(texts)
        tokens = ops.convert_to_numpy(result["tokens"])[:n]
        attention = result.get("attention")
        attention = (None if attention is None
                     else ops.convert_to_numpy(attention)[:n])
        if tokens.ndim == 3:  # beam search: the best of the n-best
            tokens = tokens[:, 0]
            attention = None if attention is None else attention[:, 0]
        v = self.target_vocab
        translations = [v.decode(row) for row in tokens]
        if not return_alignments:
            return translations
        alignments = []
        for row, text in enumerate(texts):
            src = self.source_vocab.display_tokens(text)
            out = list(tokens[row])
            end = out.index(v.eos_id) + 1 if v.eos_id in out else len(out)
            alignments.append({
                "source_tokens": src,
                "target_tokens": v.tokens(out[:end]),
                "weights": None if attention is None
                else attention[row, :end, : len(src)],
            })
        return translations, alignments

    def export(self, path, beam_width=1, max_length=None, max_source_length=64,
               batch_size=16, **search_kwargs):
        """Write a TensorFlow SavedModel that translates strings.

        Its `serve` signature takes `text`, a `(N,)` `tf.string` batch, and
        returns `{"translation": (N,) tf.string, "tokens": (N, max_length)}`;
        tokenisation and the search run in the graph. It loads with
        `tf.saved_model.load` where only tensorflow and tensorflow-text are
        installed. Works from every backend (PyTorch: through the `.keras`
        file under TensorFlow, in a subprocess). See
        `kerattn.export.export_translator` for the arguments.

        Example:

        >>> # translator.export("exported/en_fr", beam_width=5)
        """
        from kerattn.export import export_translator

        return export_translator(self, path, beam_width=beam_width,
                                 max_length=max_length,
                                 max_source_length=max_source_length,
                                 batch_size=batch_size, **search_kwargs)

    def _search(self, beam_width, max_length, search_kwargs):
        """The (compiled) function `source ids -> search result`, cached."""
        key = (beam_width, max_length, tuple(sorted(search_kwargs.items())))
        if key in self._compiled:
            return self._compiled[key]
        encode_kwargs = {"max_length": max_length} if self._encode_takes_length else {}

        def run(source):
            return search_incremental(
                self.incremental, source, self.target_vocab, beam_width,
                max_length, source_pad_id=self.source_vocab.pad_id,
                encode_kwargs=encode_kwargs, **search_kwargs)

        self._compiled[key] = compile_decoder(run, self.model.variables,
                                              self.jit_compile)
        return self._compiled[key]

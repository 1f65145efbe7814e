"""Strings in, strings out: a zoo translation model with its vocabularies."""

from kerattn.decoding.generate import Generator


def strategy_of(strategy, beam_width, options):
    """The `generate` strategy a codec's call asks for, and its options."""
    from kerattn.layers.attention_utils import check_positive_int

    check_positive_int("beam_width", beam_width)
    if strategy is None:
        strategy = "beam" if beam_width > 1 or options else "greedy"
    if strategy == "beam":
        options = dict(options, beam_width=beam_width)
    elif beam_width != 1:
        raise ValueError(f"`beam_width` must be 1 with strategy={strategy!r}; "
                         f"received {beam_width}.")
    return strategy, options


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
            lengths, so each shape compiles once and later calls reuse it
            (`kerattn.decoding.Generator`).

    Call arguments:
        texts: a list of strings.
        beam_width: int; 1 is greedy decoding.
        max_length: optional int overriding the default.
        return_alignments: bool; if True also return, per sentence, the
            `(target tokens, source tokens)` attention matrix of the chosen
            hypothesis with both token lists.
        strategy: None ("beam" when `beam_width > 1` or a beam option is
            given, else "greedy"), "greedy", "beam" or "sample".
        **options: `length_penalty`, `coverage_penalty`,
            `no_repeat_ngram_size`, `min_length`, `never_worse_than_greedy`
            of `beam_search`; `temperature`, `top_k`, `top_p`, `seed` of
            `sample`.

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
    >>> len(translator(["File not found"], strategy="sample", temperature=0.8,
    ...                seed=0))
    1
    """

    def __init__(self, model, source_vocab, target_vocab, max_length=40,
                 jit_compile=True):
        from kerattn.decoding.search import check_vocabulary
        from kerattn.layers.attention_utils import check_positive_int

        self.generator = Generator(model, jit_compile)
        if not model.inputs_are_ids:
            raise ValueError("`model` must be a zoo translation model (token "
                             f"ids in); {model.name!r} reads "
                             f"{model.encoder_input_name!r}: use a Captioner.")
        check_vocabulary("source_vocab", source_vocab, ("encode_batch", "unk_id"))
        check_vocabulary("target_vocab", target_vocab)
        check_positive_int("max_length", max_length)
        for name, vocab, key in (("source_vocab", source_vocab, "source_ids"),
                                 ("target_vocab", target_vocab, "target_in_ids")):
            size = model._specs()[key][2] if key in model._specs() else None
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

    def _source_ids(self, texts):
        if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
            raise ValueError("`texts` must be a list of strings; got "
                             f"{type(texts).__name__}.")
        # An empty text is one unknown word (a row of PAD attends to nothing).
        return [i or [self.source_vocab.unk_id]
                for i in self.source_vocab.encode_batch(texts)]

    def __call__(self, texts, beam_width=1, max_length=None,
                 return_alignments=False, strategy=None, **options):
        if not texts:
            return ([], []) if return_alignments else []
        strategy, options = strategy_of(strategy, beam_width, options)
        v = self.target_vocab
        result = self.generator(
            self._source_ids(texts), max_length=max_length or self.max_length,
            strategy=strategy, bos_id=v.bos_id, eos_id=v.eos_id,
            pad_id=v.pad_id, **options)
        tokens, attention = result["tokens"], result.get("attention")
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

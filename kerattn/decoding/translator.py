"""Strings in, strings out: a zoo translation model with its vocabularies."""

import keras

from kerattn import checks
from kerattn.datasets import copying
from kerattn.decoding.generate import Generator, export_decoder, strategy_of


# What a Translator's `search` (and a run folder's) may hold, each with
# the values it takes: an int in [low, high], a number >= 0 (or one of the
# words given), a boolean.
MAX_BEAM = 1024
SEARCH_OPTIONS = {"beam_width": (int, 1, MAX_BEAM),
                  "max_length": (int, 1, 1 << 16),
                  "min_length": (int, 0, 1 << 16),
                  "no_repeat_ngram_size": (int, 0, 1 << 16),
                  "length_penalty": (float, "average"),
                  "coverage_penalty": (float,),
                  "never_worse_than_greedy": (bool,)}


def search_options(name, search):
    """`search` checked: a dict of `SEARCH_OPTIONS` keys, each with a
    value of its kind (a run folder's is untrusted input)."""
    search = {} if search is None else search
    checks.require(isinstance(search, dict) and set(search) <= set(SEARCH_OPTIONS),
                   name, f"a dict of search options among {tuple(SEARCH_OPTIONS)}",
                   sorted(search) if isinstance(search, dict) else search)
    for key, value in search.items():
        kind, *rest = SEARCH_OPTIONS[key]
        where = f"{name}[{key!r}]"
        if kind is bool:
            checks.boolean(where, value)
        elif kind is int:
            checks.int_in_range(where, value, rest[0], rest[1] + 1)
        else:
            checks.require(value in rest or (
                not isinstance(value, (bool, str)) and isinstance(value, (int, float))
                and 0 <= value < float("inf")), where,
                "a number >= 0" + "".join(f" or {w!r}" for w in rest), value)
    return dict(search)


class Translator:
    """Translate strings with a `kerattn.zoo` translation model.

    Args:
        model: a zoo translation model (e.g. `kerattn.zoo.bahdanau_nmt()`),
            trained or loaded from a `.keras` file.
        source_vocab, target_vocab: the vocabularies the model was trained
            with (`WordVocabulary` or keras-hub based `WordPieceVocabulary`);
            the special ids come from them.
        max_length: the default maximum output length in tokens (None:
            `search`'s, else 40).
        jit_compile: compile "encode, then search" with the backend's
            compiler (XLA under TensorFlow, `jax.jit` under JAX; see
            `kerattn.decoding.compiled`); torch runs eagerly without
            autograd. Batches are padded to power-of-two sizes and source
            lengths, so each shape compiles once and later calls reuse it
            (`kerattn.decoding.Generator`).
        max_batch: the most texts decoded at once; a longer list runs in
            chunks (a power of two, 256).
        max_source_length: a text of more tokens is translated from its
            first `max_source_length` tokens (a power of two, 1024), as the
            exported SavedModel truncates at its own `max_source_length`.
        search: the default search of every call: a dict of `beam_width`,
            `max_length` and the beam options below (`SEARCH_OPTIONS`), as
            a recipe chose them (`kerattn.load_run` gives a run's
            translator its own); a call's arguments override them (a
            default `min_length` longer than the call's `max_length` is
            cut to it; a `max_length` given here wins over `search`'s),
            and a call with a `strategy` other than "beam" uses only its
            `max_length`.

    Call arguments:
        texts: a list of strings.
        beam_width: int; 1 is greedy decoding (None: `search`'s, else 1).
        max_length: optional int overriding the translator's.
        return_alignments: bool; if True also return, per sentence, the
            `(target tokens, source tokens)` attention matrix of the chosen
            hypothesis with both token lists.
        strategy: None ("beam" when `beam_width > 1` or a beam option is
            given, else "greedy"), "greedy", "beam" or "sample".
        **options: `length_penalty`, `coverage_penalty`,
            `no_repeat_ngram_size`, `min_length`, `never_worse_than_greedy`
            and `num_return` (the n-best, at most `beam_width`) of
            `beam_search`; `temperature`, `top_k`, `top_p`, `seed` of
            `sample`.

    Returns:
        A list of translations (and the list of alignment dicts). With
        `num_return=n > 1`: for each text, its `n` best hypotheses, best
        first, each `{"translation", "score" (the search's ranking score),
        "log_prob"}` (and `"alignment"`, its alignment dict, with
        `return_alignments`); TensorFlow Addons' `BeamSearchDecoder`'s
        n-best as strings.

    A copying model (`kerattn.zoo.pointer_generator`, See et al. 2017;
    its `copies` is True) reads and writes extended ids: each text's words outside the
    vocabulary get the ids `V, V + 1, ...` (`kerattn.datasets.
    extend_source`), and a written id `V + k` comes out as the text's k-th
    such word, spelled as in the input. Such a model has one vocabulary
    for the source and the target, as See et al.'s: `source_vocab` and
    `target_vocab` must be the same `WordVocabulary` (a ValueError
    otherwise; no map between two vocabularies is offered), and it is not
    exported (`export` raises a ValueError: the SavedModel's in-graph
    tokeniser builds no per-text word lists). `pointer_generator(...,
    copy=False)`, which writes ids `< V` alone and embeds an OOV as UNK
    whichever id it is given, is translated and exported as any model.

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

    def __init__(self, model, source_vocab, target_vocab, max_length=None,
                 jit_compile=True, max_batch=256, max_source_length=1024,
                 search=None):
        self.search = search_options("search", search)
        self.generator = Generator(model, jit_compile, max_batch=max_batch,
                                   max_source_length=max_source_length)
        checks.require(model.inputs_are_ids, "model",
                       "a zoo translation model (token ids in)", model.name,
                       note=f"It reads {model.encoder_input_name!r}: use a "
                            "Captioner.")
        checks.vocabulary("source_vocab", source_vocab, ("encode_batch", "unk_id"))
        checks.vocabulary("target_vocab", target_vocab)
        if max_length is None:
            max_length = self.search.get("max_length", 40)
        checks.positive_int("max_length", max_length)
        for name, vocab, key in (("source_vocab", source_vocab, "source_ids"),
                                 ("target_vocab", target_vocab, "target_in_ids")):
            size = model._specs()[key][2] if key in model._specs() else None
            checks.require(
                size is None or len(vocab) <= size, name,
                f"at most as large as the model's {key} vocabulary of {size}",
                note=f"It has {len(vocab)} tokens: ids past {size and size - 1} "
                     "would have no embedding.")
        # A model that writes extended ids: its vocabulary size V, the first
        # OOV's id. One that only reads them (pointer_generator's copy=False
        # baseline) reads UNK for an OOV alike, and is served as any other.
        self.vocab_size = None
        if getattr(model, "copies", False):
            for name, vocab in (("source_vocab", source_vocab),
                                ("target_vocab", target_vocab)):
                checks.vocabulary(name, vocab, ("stoi", "itos", "tokenize"))
            checks.require(
                target_vocab is source_vocab or (
                    list(target_vocab.itos) == list(source_vocab.itos)
                    and getattr(target_vocab, "lowercase", False)
                    == getattr(source_vocab, "lowercase", False)),
                "target_vocab", "the source vocabulary for a model that copies "
                "from its source (one vocabulary, as See et al. 2017: an id "
                "means the same word on both sides)",
                note=f"It has {len(target_vocab)} tokens, source_vocab "
                     f"{len(source_vocab)}, and they differ.")
            self.vocab_size = model._specs()[model.encoder_input_name][2]
        self.model = model
        self.source_vocab = source_vocab
        self.target_vocab = target_vocab
        self.max_length = max_length
        self.jit_compile = jit_compile

    def _source_ids(self, texts):
        """The texts' id lists, and each text's OOV words (None unless the
        model reads extended ids)."""
        checks.strings("texts", texts)
        v = self.source_vocab
        if self.vocab_size is None:
            rows, oovs = v.encode_batch(texts), None
        else:
            rows, oovs = [], []
            for text in texts:
                ids, words = copying.extend_source(
                    v, v.tokenize(text, v.lowercase), self.vocab_size)
                rows.append(ids)
                oovs.append(words)
        # An empty text is one unknown word (a row of PAD attends to nothing).
        return [i or [v.unk_id] for i in rows], oovs

    def _decode(self, ids, oovs, row):
        v = self.target_vocab
        if oovs is None:
            return v.decode(ids)
        return copying.decode_extended(v, ids, oovs[row], self.vocab_size)

    def _tokens(self, ids, oovs, row):
        v = self.target_vocab
        if oovs is None:
            return v.tokens(ids)
        return copying.extended_tokens(v, ids, oovs[row], self.vocab_size)

    def __call__(self, texts, beam_width=None, max_length=None,
                 return_alignments=False, strategy=None, **options):
        if not texts:
            return ([], []) if return_alignments else []
        max_length = max_length or self.max_length
        beam_width, options = self._search(beam_width, max_length, strategy,
                                           options)
        strategy, options = strategy_of(strategy, beam_width, options)
        # No attention history is kept where no alignment is asked for.
        options.setdefault("return_attention", bool(return_alignments))
        v = self.target_vocab
        source_ids, oovs = self._source_ids(texts)
        result = self.generator(
            source_ids, max_length=max_length or self.max_length,
            strategy=strategy, bos_id=v.bos_id, eos_id=v.eos_id,
            pad_id=v.pad_id, **options)
        tokens, attention = result["tokens"], result.get("attention")
        if options.get("num_return", 1) > 1:   # the n-best of each text
            return self._n_best(texts, result, oovs, return_alignments)
        translations = [self._decode(ids, oovs, row)
                        for row, ids in enumerate(tokens)]
        if not return_alignments:
            return translations
        alignments = [self._alignment(text, tokens[row], None if attention is None
                                      else attention[row], oovs, row)
                      for row, text in enumerate(texts)]
        return translations, alignments

    def _alignment(self, text, ids, attention, oovs, row):
        """One hypothesis' alignment dict, up to its EOS."""
        v = self.target_vocab
        src = self.source_vocab.display_tokens(text)
        out = list(ids)
        end = out.index(v.eos_id) + 1 if v.eos_id in out else len(out)
        return {"source_tokens": src,
                "target_tokens": self._tokens(out[:end], oovs, row),
                "weights": None if attention is None else attention[:end, : len(src)]}

    def _n_best(self, texts, result, oovs, return_alignments):
        """Each text's hypotheses, best first: `{"translation", "score",
        "log_prob"}` (and its alignment dict with `return_alignments`)."""
        tokens, attention = result["tokens"], result.get("attention")
        out = []
        for row, text in enumerate(texts):
            hypotheses = []
            for k in range(tokens.shape[1]):
                hypothesis = {"translation": self._decode(tokens[row, k], oovs, row),
                              "score": float(result["scores"][row, k]),
                              "log_prob": float(result["log_probs"][row, k])}
                if return_alignments:
                    hypothesis["alignment"] = self._alignment(
                        text, tokens[row, k], None if attention is None
                        else attention[row, k], oovs, row)
                hypotheses.append(hypothesis)
            out.append(hypotheses)
        return out

    def _search(self, beam_width, max_length, strategy, options):
        """A call's `beam_width` and options over the default `search`
        (`max_length`, the call's, already resolved)."""
        if strategy in (None, "beam"):
            defaults = dict(self.search)
            defaults.pop("max_length", None)
            beam_width = defaults.pop("beam_width", 1) if beam_width is None \
                else beam_width
            if "min_length" in defaults:   # a default fits a shorter call
                defaults["min_length"] = min(defaults["min_length"], max_length)
            options = {**defaults, **options}
        return (1 if beam_width is None else beam_width), options

    def export(self, path, beam_width=None, max_length=None, max_source_length=64,
               batch_size=16, **search_kwargs):
        """Write a TensorFlow SavedModel that translates strings.

        Its `serve` signature (also `serving_default`) takes `text`, a
        `(N,)` `tf.string` batch, and returns `{"translation": (N,)
        tf.string, "tokens": (N, max_length) int32}`; tokenisation
        (`kerattn.datasets.TextCodec`), the encoder, the search and
        detokenisation run in the graph. It loads with `tf.saved_model.load`
        where only tensorflow and tensorflow-text are installed. Works from
        every backend (PyTorch: through the `.keras` file under TensorFlow,
        in a subprocess). The decode function is built here and handed to
        `kerattn.export.export_serving`, which knows no Translator.

        Args:
            path: the SavedModel directory to write.
            beam_width: 1 is greedy decoding; None (with the other options)
                the translator's `search`, as a call.
            max_length: output tokens; the translator's default if None.
            max_source_length: sources are truncated to this many tokens.
            batch_size: the compiled chunk; any batch size is served.
            **search_kwargs: as for `__call__` (`length_penalty`,
                `coverage_penalty`, `no_repeat_ngram_size`, `min_length`).

        Returns:
            `path`.

        Example:

        >>> # translator.export("exported/en_fr", beam_width=5)
        >>> # import tensorflow as tf, tensorflow_text   # any process
        >>> # tf.saved_model.load("exported/en_fr").serve(tf.constant(["File not found"]))
        """
        checks.require(
            self.vocab_size is None, "model",
            "a model that writes no extended ids (not a copying one), to be "
            "exported as a SavedModel", self.model.name,
            note="A copying model's extended vocabulary (each text's words "
            "outside the vocabulary) is built in Python by this Translator; "
            "the SavedModel's in-graph tokeniser has no such step. Serve the "
            "Translator, or the .keras file.")
        max_length = max_length or self.max_length
        beam_width, search_kwargs = self._search(
            beam_width, max_length, search_kwargs.get("strategy"), search_kwargs)
        checks.positive_int("max_source_length", max_source_length)
        checks.positive_int("batch_size", batch_size)
        return export_decoder(
            "translator", self.model, path,
            keras.InputSpec(shape=(batch_size, max_source_length), dtype="int32"),
            self.target_vocab, max_length, beam_width,
            source_vocab=self.source_vocab,
            command_line_options=dict(
                source_vocab=self.source_vocab.to_json(),
                target_vocab=self.target_vocab.to_json(),
                max_source_length=max_source_length, batch_size=batch_size),
            **search_kwargs)

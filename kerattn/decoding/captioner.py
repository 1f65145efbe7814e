"""Images in, captions out: a Show, Attend and Tell model with its vocabulary."""

import keras
import numpy as np

from kerattn import checks
from kerattn.decoding.generate import Generator, export_decoder, strategy_of


class Captioner:
    """Caption images with a `kerattn.zoo.show_attend_tell` model.

    Args:
        model: a show_attend_tell model (soft or hard), trained or loaded
            from a `.keras` file.
        vocab: the caption vocabulary (`WordVocabulary`); the special ids
            come from it.
        max_length: the default maximum caption length in tokens.
        jit_compile: compile "encode, then search" with the backend's
            compiler (see `kerattn.decoding.compiled`); batches are padded
            to power-of-two sizes so each size compiles once
            (`kerattn.decoding.Generator`).
        max_batch: the most images decoded at once; more run in chunks (a
            power of two, 256).

    Call arguments:
        images: `(B, H, W, C)` array (or `(B, L, D)` features for a model
            built with `feature_shape`).
        beam_width: int; 1 is greedy decoding.
        max_length: optional int overriding the default.
        return_attention: bool; if True also return, per image, a dict with
            the caption's `words` and `maps`, the attention of each word
            (EOS included) over the annotation grid, `(words, h, w)` (or
            `(words, L)` for features).
        strategy: None ("beam" when `beam_width > 1` or a beam option is
            given, else "greedy"), "greedy", "beam" or "sample".
        **options: `length_penalty`, `no_repeat_ngram_size`, `min_length`
            of `beam_search`; `temperature`, `top_k`, `top_p`, `seed` of
            `sample`.

    Returns:
        A list of captions (and the list of attention dicts).

    Example:

    >>> import numpy as np
    >>> from kerattn.datasets import WordVocabulary
    >>> vocab = WordVocabulary.build(["six five zero", "four eight"])
    >>> model = kerattn.zoo.show_attend_tell(len(vocab), image_shape=(8, 45, 1),
    ...     encoder_filters=(4,), encoder_pool_sizes=((2, 2),), embedding_dim=8,
    ...     units=8, attention_units=8)
    >>> # ... model.fit(...) ...
    >>> captioner = Captioner(model, vocab, max_length=5)
    >>> images = np.zeros((2, 8, 45, 1), "float32")
    >>> captions, attention = captioner(images, beam_width=2, return_attention=True)
    >>> len(captions), attention[0]["maps"].shape[1:]   # over the 4 x 22 grid
    (2, (4, 22))
    """

    def __init__(self, model, vocab, max_length=20, jit_compile=True,
                 max_batch=256):
        self.generator = Generator(model, jit_compile, max_batch=max_batch)
        checks.require(not model.inputs_are_ids, "model",
                       "a captioning model (images or features in)", model.name,
                       note="It reads token ids: use a Translator.")
        checks.vocabulary("vocab", vocab)
        checks.positive_int("max_length", max_length)
        self.model = model
        self.vocab = vocab
        self.max_length = max_length
        self.jit_compile = jit_compile

    def __call__(self, images, beam_width=1, max_length=None,
                 return_attention=False, strategy=None, **options):
        images = np.asarray(images, "float32")
        expected = tuple(self.model.encoder_input_shape)
        checks.shape("images", images, ("batch",) + expected)
        if len(images) == 0:
            return ([], []) if return_attention else []
        strategy, options = strategy_of(strategy, beam_width, options)
        v = self.vocab
        result = self.generator(
            images, max_length=max_length or self.max_length, strategy=strategy,
            bos_id=v.bos_id, eos_id=v.eos_id, pad_id=v.pad_id, **options)
        tokens, attention = result["tokens"], result["attention"]
        captions = [v.decode(row) for row in tokens]
        if not return_attention:
            return captions
        grid = self.model.grid
        maps = []
        for row in range(len(images)):
            out = list(tokens[row])
            end = out.index(v.eos_id) + 1 if v.eos_id in out else len(out)
            weights = attention[row, :end]
            if grid is not None:
                weights = weights.reshape((end,) + grid)
            maps.append({"words": v.tokens(out[:end]), "maps": weights})
        return captions, maps

    def export(self, path, beam_width=1, max_length=None, batch_size=16,
               **search_kwargs):
        """Write a TensorFlow SavedModel: images in, caption strings out.

        Its `serve` signature takes `images`, `(N, H, W, C)` float32 (or
        `(N, L, D)` features), and returns `{"caption": (N,) tf.string,
        "tokens": (N, max_length) int32}`. Works from every backend, as
        `Translator.export`.

        Args:
            path: the SavedModel directory to write.
            beam_width: 1 is greedy decoding.
            max_length: caption tokens; the captioner's default if None.
            batch_size: the compiled chunk; any batch size is served.
            **search_kwargs: as for `__call__`.

        Returns:
            `path`.

        Example:

        >>> # captioner.export("exported/captioner", beam_width=3)
        >>> # import tensorflow as tf
        >>> # tf.saved_model.load("exported/captioner").serve(images)["caption"]
        """
        max_length = max_length or self.max_length
        checks.positive_int("batch_size", batch_size)
        shape = tuple(self.model.encoder_input_shape)
        return export_decoder(
            "captioner", self.model, path,
            keras.InputSpec(shape=(batch_size,) + shape, dtype="float32"),
            self.vocab, max_length, beam_width,
            command_line_options=dict(vocab=self.vocab.to_json(),
                                      batch_size=batch_size),
            **search_kwargs)

"""Attention-over-attention (Cui et al., 2017)."""

import keras
from keras import ops

from kerattn import checks
from kerattn.layers import attention_utils as utils


@keras.saving.register_keras_serializable(package="kerattn")
class AttentionOverAttention(keras.layers.Layer):
    """The attention-over-attention of Cui et al. (2017), section 3.

    "Attention-over-Attention Neural Networks for Reading Comprehension".
    With `h_doc` `(|D|, 2d)` and `h_query` `(|Q|, 2d)`:

        M(i, j) = h_doc(i)^T h_query(j)                         (eq. 5)
        alpha(t) = softmax(M(1, t), ..., M(|D|, t))             (eq. 6)
        beta(t) = softmax(M(t, 1), ..., M(t, |Q|))              (eq. 7)
        beta = (1 / n) sum_{t=1}^{|D|} beta(t)                  (eq. 8)
        s = alpha^T beta                                        (eq. 9)

    `alpha` normalises over the (unpadded) document for each query word,
    `beta(t)` over the (unpadded) query for each document word, and the
    average of eq. 8 runs over the `n` unpadded document positions. `s`
    sums to 1 over the unpadded document. No weights.

    `pointer_sum(s, document_ids, candidate_ids)` gives
    `P(w | D, Q) = sum_{i in I(w, D)} s_i` (eq. 10) for each candidate.

    Args:
        **kwargs: base layer keyword arguments (`name`, `dtype`, ...); the
            layer has no weights and no options.

    Call arguments:
        document: `(batch, |D|, dim)` contextual embeddings `h_doc`.
        query: `(batch, |Q|, dim)` contextual embeddings `h_query`.
        document_mask: optional boolean `(batch, |D|)`; the implicit Keras
            mask of `document` when None.
        query_mask: optional boolean `(batch, |Q|)`; likewise.
        return_attention_scores: bool; if True also return a dict with
            `alpha` `(batch, |D|, |Q|)` and `beta` `(batch, |Q|)`.

    Returns:
        `s` of shape `(batch, |D|)` (and the dict).

    Example:

    >>> import numpy as np
    >>> doc = np.random.rand(2, 30, 8).astype("float32")
    >>> query = np.random.rand(2, 5, 8).astype("float32")
    >>> s = AttentionOverAttention()(doc, query)
    >>> tuple(s.shape)
    (2, 30)
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True
        self.built = True

    @staticmethod
    def _validate(document_shape, query_shape):
        checks.rank("document", document_shape, (3,), "(batch, |D|, dim)")
        checks.rank("query", query_shape, (3,), "(batch, |Q|, dim)")
        checks.same("document", document_shape[0], "query", query_shape[0],
                    "batch size")
        checks.same("document", document_shape[-1], "query", query_shape[-1],
                    "last dimension (M = h_doc h_query^T)")

    def call(self, document, query, document_mask=None, query_mask=None,
             return_attention_scores=False):
        self._validate(document.shape, query.shape)
        checks.nonempty("document", document)
        checks.nonempty("query", query)
        checks.mask("document_mask", document_mask, tuple(document.shape[:2]))
        checks.mask("query_mask", query_mask, tuple(query.shape[:2]))
        m = ops.matmul(document, ops.transpose(query, (0, 2, 1)))  # (b, D, Q)
        d_mask = None if document_mask is None else ops.cast(document_mask, "bool")
        q_mask = None if query_mask is None else ops.cast(query_mask, "bool")
        pair = utils.merge_masks(query_mask=d_mask, value_mask=q_mask)
        # alpha: softmax over the document (axis 1) for each query word.
        alpha = ops.transpose(
            utils.masked_softmax(
                ops.transpose(m, (0, 2, 1)),
                None if pair is None else ops.transpose(pair, (0, 2, 1)),
            ),
            (0, 2, 1),
        )
        # beta(t): softmax over the query for each document word.
        beta_t = utils.masked_softmax(m, pair)  # (b, D, Q)
        if d_mask is None:
            beta = ops.mean(beta_t, axis=1)
        else:
            n = ops.sum(ops.cast(d_mask, beta_t.dtype), axis=1, keepdims=True)
            beta = ops.sum(beta_t, axis=1) / ops.maximum(n, ops.ones_like(n))
        s = ops.sum(alpha * ops.expand_dims(beta, 1), axis=-1)  # (b, D)
        if return_attention_scores:
            return s, {"alpha": alpha, "beta": beta}
        return s

    @staticmethod
    def pointer_sum(s, document_ids, candidate_ids):
        """`P(w | D, Q) = sum_{i: D_i = w} s_i` for each candidate `w`.

        Args:
            s: `(batch, |D|)` document-level attention.
            document_ids: int `(batch, |D|)` the document's word ids.
            candidate_ids: int `(batch, C)` the candidate answers' ids.

        Returns:
            `(batch, C)` probabilities of the candidates.
        """
        checks.rank("s", s.shape, (2,), "(batch, |D|)")
        checks.rank("document_ids", document_ids.shape, (2,), "(batch, |D|)")
        checks.rank("candidate_ids", candidate_ids.shape, (2,), "(batch, C)")
        checks.integer_ids("document_ids", document_ids)
        checks.integer_ids("candidate_ids", candidate_ids)
        checks.same("s", s.shape[1], "document_ids", document_ids.shape[1],
                    "length |D|")
        checks.same("s", s.shape[0], "document_ids", document_ids.shape[0],
                    "batch size")
        checks.same("document_ids", document_ids.shape[0], "candidate_ids",
                    candidate_ids.shape[0], "batch size")
        hits = ops.equal(
            ops.expand_dims(candidate_ids, -1), ops.expand_dims(document_ids, 1)
        )  # (b, C, D)
        return ops.sum(ops.cast(hits, s.dtype) * ops.expand_dims(s, 1), axis=-1)

    def compute_mask(self, document, previous_mask=None):
        return None

    def compute_output_spec(self, document, query, document_mask=None,
                            query_mask=None, return_attention_scores=False):
        self._validate(document.shape, query.shape)
        s = keras.KerasTensor(document.shape[:2], dtype=self.compute_dtype)
        if not return_attention_scores:
            return s
        return s, {
            "alpha": keras.KerasTensor(
                tuple(document.shape[:2]) + (query.shape[1],),
                dtype=self.compute_dtype),
            "beta": keras.KerasTensor(query.shape[:2], dtype=self.compute_dtype),
        }


@keras.saving.register_keras_serializable(package="kerattn")
class PointerSum(keras.layers.Layer):
    """Pointer-sum attention (Kadlec et al., 2016; Cui et al., 2017, eq. 10).

        P(w | D, Q) = sum_{i in I(w, D)} s_i

    the document-level attention summed over the positions where each
    candidate word occurs. Padded candidates (id 0) match only padded
    document positions, whose weight is 0, so they get probability 0.

    Args:
        **kwargs: base layer keyword arguments (`name`, `dtype`, ...); the
            layer has no weights and no options.

    Call arguments:
        s: `(batch, |D|)` document-level attention.
        document_ids: int `(batch, |D|)`.
        candidate_ids: int `(batch, C)`.

    Returns:
        `(batch, C)` candidate probabilities.

    Example:

    >>> import numpy as np
    >>> s = np.array([[0.5, 0.3, 0.2]], "float32")
    >>> p = PointerSum()(s, np.array([[7, 8, 7]]), np.array([[7, 8]]))
    >>> np.round(np.asarray(p, "float64"), 2).tolist()
    [[0.7, 0.3]]
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.built = True

    def call(self, s, document_ids, candidate_ids):
        return AttentionOverAttention.pointer_sum(s, document_ids, candidate_ids)

    def compute_output_spec(self, s, document_ids, candidate_ids):
        return keras.KerasTensor((s.shape[0], candidate_ids.shape[1]),
                                 dtype=self.compute_dtype)

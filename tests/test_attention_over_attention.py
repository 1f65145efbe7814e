import numpy as np
import pytest

from cases import lengths_mask, np_masked_softmax, to_numpy
from kerattn.layers import AttentionOverAttention


def np_aoa(doc, query, d_mask, q_mask):
    """Cui et al. (2017), eq. 5-9, one example at a time, unpadded parts only."""
    s_all = np.zeros(doc.shape[:2])
    for b in range(doc.shape[0]):
        D = doc[b][d_mask[b]]
        Q = query[b][q_mask[b]]
        if len(D) == 0 or len(Q) == 0:
            continue
        M = D @ Q.T                                   # eq. 5
        alpha = np_masked_softmax(M.T).T              # eq. 6: over the document
        beta_t = np_masked_softmax(M)                 # eq. 7: over the query
        beta = beta_t.mean(0)                         # eq. 8
        s_all[b, d_mask[b]] = alpha @ beta            # eq. 9
    return s_all


def test_matches_numpy_equation():
    rng = np.random.default_rng(0)
    doc = rng.standard_normal((3, 12, 6)).astype("float32")
    query = rng.standard_normal((3, 5, 6)).astype("float32")
    d_mask = lengths_mask([12, 7, 3], 12)
    q_mask = lengths_mask([5, 2, 4], 5)
    s, extra = AttentionOverAttention()(
        doc, query, document_mask=d_mask, query_mask=q_mask,
        return_attention_scores=True)
    ref = np_aoa(doc, query, d_mask, q_mask)
    np.testing.assert_allclose(to_numpy(s), ref, atol=1e-5)
    # s sums to 1 over the unpadded document and is 0 on padding.
    np.testing.assert_allclose(to_numpy(s).sum(-1), 1.0, atol=1e-5)
    assert np.all(to_numpy(s)[~d_mask] == 0)
    np.testing.assert_allclose(to_numpy(extra["beta"]).sum(-1), 1.0, atol=1e-5)


def test_no_masks_and_empty_document():
    rng = np.random.default_rng(1)
    doc = rng.standard_normal((2, 8, 4)).astype("float32")
    query = rng.standard_normal((2, 3, 4)).astype("float32")
    s = AttentionOverAttention()(doc, query)
    ref = np_aoa(doc, query, np.ones((2, 8), bool), np.ones((2, 3), bool))
    np.testing.assert_allclose(to_numpy(s), ref, atol=1e-5)
    empty = AttentionOverAttention()(
        doc, query, document_mask=lengths_mask([8, 0], 8))
    empty = to_numpy(empty)
    assert np.all(empty[1] == 0) and not np.isnan(empty).any()


def test_pointer_sum_equals_per_candidate_sum():
    rng = np.random.default_rng(2)
    doc_ids = rng.integers(1, 6, (3, 15)).astype("int32")
    doc_ids[2, 9:] = 0
    s = rng.random((3, 15)).astype("float32")
    s[2, 9:] = 0
    s /= s.sum(-1, keepdims=True)
    candidates = np.array([[1, 2, 3, 9], [4, 5, 1, 2], [3, 3, 1, 7]], "int32")
    got = to_numpy(AttentionOverAttention.pointer_sum(s, doc_ids, candidates))
    ref = np.array([[s[b][doc_ids[b] == w].sum() for w in candidates[b]]
                    for b in range(3)])
    np.testing.assert_allclose(got, ref, atol=1e-6)
    assert got[0, 3] == 0  # a candidate absent from the document


def test_bad_arguments():
    layer = AttentionOverAttention()
    x = np.zeros((2, 5, 4), "float32")
    with pytest.raises(ValueError, match="`document` must have rank 3"):
        layer(np.zeros((2, 5), "float32"), x)
    with pytest.raises(ValueError, match="same last dimension"):
        layer(x, np.zeros((2, 3, 6), "float32"))
    with pytest.raises(ValueError, match="same batch size"):
        layer(x, np.zeros((3, 3, 4), "float32"))
    with pytest.raises(ValueError, match="`query_mask` must have shape"):
        layer(x, x, query_mask=np.ones((2, 4), bool))
    with pytest.raises(ValueError, match="`candidate_ids` must have rank 2"):
        AttentionOverAttention.pointer_sum(
            np.zeros((2, 5), "float32"), np.zeros((2, 5), "int32"),
            np.zeros((2,), "int32"))

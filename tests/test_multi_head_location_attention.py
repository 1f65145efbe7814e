"""Multi-head additive / location attention against a NumPy transcription
of ESPnet's `AttMultiHeadAdd`, `AttMultiHeadLoc` and
`AttMultiHeadMultiResLoc` (`espnet/nets/pytorch_backend/rnn/attentions.py`:
per head `e = gvec(tanh(mlp_k(enc) + mlp_att(loc_conv(att_prev)) +
mlp_q(dec_z)))`, `-inf` on padding, `softmax(scaling e)`, `c = mlp_o(cat_h
sum_j w_h v_h)`, `att_prev` uniform over the real frames at first), the
torch weights mapped to ours; inside `AttentionRNN` (full pass, steps, the
first target row shortest), 2,000 positions under `mixed_bfloat16`, a
`.keras` round trip (the bad arguments are in test_bad_input_suite.py)."""

import numpy as np
import pytest

from cases import (check_keras_round_trip, check_long_padded_pass,
                   check_steps_equal_pass, lengths_mask,
                   to_numpy)
from kerattn.layers import AttentionRNN, MultiHeadLocationAttention

CASES = {   # ESPnet class -> (our options, its softmax scaling)
    "AttMultiHeadAdd": (dict(location=False), lambda dk: 1 / np.sqrt(dk)),
    "AttMultiHeadLoc": (dict(location=True), lambda dk: 2.0),
    "AttMultiHeadMultiResLoc": (dict(location=True, multi_resolution=True),
                                lambda dk: 1 / np.sqrt(dk)),
}


def _f32(rng, *shape, scale=1.0):
    return (scale * rng.standard_normal(shape)).astype("float32")


def espnet_weights(rng, heads, enc, dec, dk, dv, chans, filts, multires):
    """Torch layouts: Linear (out, in), Conv2d (chans, 1, 1, width)."""
    w = {"mlp_q": [_f32(rng, dk, dec) for _ in range(heads)],
         "mlp_q_b": [_f32(rng, dk, scale=0.3) for _ in range(heads)],
         "mlp_k": [_f32(rng, dk, enc) for _ in range(heads)],
         "mlp_v": [_f32(rng, dv, enc) for _ in range(heads)],
         "gvec": [_f32(rng, 1, dk) for _ in range(heads)],
         "gvec_b": [_f32(rng, 1, scale=0.3) for _ in range(heads)],
         "mlp_o": _f32(rng, enc, heads * dv, scale=0.5)}
    if chans:
        w["loc_conv"], w["mlp_att"] = [], []
        for h in range(heads):
            half = filts * (h + 1) // heads if multires else filts
            w["loc_conv"].append(_f32(rng, chans, 1, 1, 2 * half + 1))
            w["mlp_att"].append(_f32(rng, dk, chans, scale=0.5))
    return w


def espnet_forward(enc, lengths, dec_z, att_prev, w, scaling):
    """One decoder step of ESPnet's multi-head attention: (c, [w_h])."""
    B, T, _ = enc.shape
    mask = np.arange(T)[None] < np.asarray(lengths)[:, None]
    c, ws = [], []
    for h in range(len(w["mlp_q"])):
        k = enc @ w["mlp_k"][h].T
        v = enc @ w["mlp_v"][h].T
        q = dec_z @ w["mlp_q"][h].T + w["mlp_q_b"][h]
        inside = k + q[:, None]
        if "loc_conv" in w:
            kern = w["loc_conv"][h][:, 0, 0]                     # (chans, width)
            half = kern.shape[1] // 2
            padded = np.pad(att_prev[h], ((0, 0), (half, half)))
            conv = np.stack([padded[:, t:t + kern.shape[1]] @ kern.T
                             for t in range(T)], 1)             # (B, T, chans)
            inside = inside + conv @ w["mlp_att"][h].T
        e = (np.tanh(inside) @ w["gvec"][h].T)[..., 0] + w["gvec_b"][h]
        e = np.where(mask, e, -np.inf)
        x = scaling * e
        p = np.exp(x - x.max(-1, keepdims=True))
        ws.append(p / p.sum(-1, keepdims=True))
        c.append(np.einsum("bt,btd->bd", ws[-1], v))
    return np.concatenate(c, 1) @ w["mlp_o"].T, ws


def port(att, w):
    att.query_kernel.assign(np.stack([m.T for m in w["mlp_q"]]))
    att.query_bias.assign(np.stack(w["mlp_q_b"]))
    att.key_kernel.assign(np.stack([m.T for m in w["mlp_k"]]))
    att.value_kernel.assign(np.stack([m.T for m in w["mlp_v"]]))
    att.score_kernel.assign(np.stack([g[0] for g in w["gvec"]]))
    att.score_bias.assign(np.concatenate(w["gvec_b"]))
    att.output_kernel.assign(w["mlp_o"].T)
    if "loc_conv" in w:
        for kernel, conv in zip(att.location_kernels, w["loc_conv"]):
            kernel.assign(conv[:, 0, 0].T[:, None, :])           # (width, 1, chans)
        att.location_projection.assign(np.stack([m.T for m in w["mlp_att"]]))


def make(name, heads=3, dk=4, dv=5, chans=2, filts=3):
    options, _ = CASES[name]
    kwargs = dict(options, filters=chans, kernel_size=2 * filts + 1) \
        if options["location"] else options
    return MultiHeadLocationAttention(heads, dk, value_dim=dv, **kwargs)


@pytest.mark.parametrize("name", sorted(CASES))
def test_layer_equals_espnet(name):
    """Two steps: from ESPnet's first history (uniform over the real
    frames), then from the first step's weights; the first row not the
    longest."""
    rng = np.random.default_rng(0)
    B, T, enc_dim, dec_dim, heads, dk, dv = 3, 9, 6, 5, 3, 4, 5
    options, scaling = CASES[name]
    enc, dec_z = _f32(rng, B, T, enc_dim), _f32(rng, B, dec_dim)
    lengths = [6, 9, 4]
    mask = lengths_mask(lengths, T)
    att = make(name, heads, dk, dv)
    att(dec_z, enc)
    w = espnet_weights(rng, heads, enc_dim, dec_dim, dk, dv,
                       2 if options["location"] else 0, 3,
                       options.get("multi_resolution", False))
    port(att, w)
    first = [mask / mask.sum(-1, keepdims=True)] * heads
    c, ws = espnet_forward(enc, lengths, dec_z, first, w, scaling(dk))
    context, mean, per_head = att(dec_z, enc, value_mask=mask,
                                  return_attention_scores=True,
                                  return_head_weights=True)
    np.testing.assert_allclose(to_numpy(per_head), np.stack(ws, 1), atol=1e-5)
    np.testing.assert_allclose(to_numpy(context), c, atol=1e-5)
    np.testing.assert_allclose(to_numpy(mean), np.mean(ws, 0), atol=1e-5)
    if options["location"]:
        dec_z2 = _f32(rng, B, dec_dim)
        c2, ws2 = espnet_forward(enc, lengths, dec_z2, ws, w, scaling(dk))
        context2, _, per_head2 = att(dec_z2, enc, value_mask=mask,
                                     alignment_history=np.stack(ws, 1).astype("float32"),
                                     return_attention_scores=True,
                                     return_head_weights=True)
        np.testing.assert_allclose(to_numpy(per_head2), np.stack(ws2, 1), atol=1e-5)
        np.testing.assert_allclose(to_numpy(context2), c2, atol=1e-5)


def test_decoder_steps_equal_the_full_pass():
    """`AttentionRNN` with the multi-resolution location heads: each head's
    history carried; `step()` equals the full pass on every real step; a
    fully padded source row gives zeros."""
    rng = np.random.default_rng(1)
    b, T, S = 4, 5, 8
    y, h = _f32(rng, b, T, 4), _f32(rng, b, S, 6)
    t_mask = lengths_mask([2, 5, 4, 3], T)
    mem_mask = lengths_mask([5, 8, 3, 0], S)
    decoder = AttentionRNN(7, make("AttMultiHeadMultiResLoc"), cell="gru",
                           return_state=True)
    out, final, al = decoder(y, h, inputs_mask=t_mask, memory_mask=mem_mask,
                             return_attention_scores=True)
    assert tuple(final["attention"]["alignment"].shape) == (b, 3, S)
    assert np.all(to_numpy(al)[3] == 0)
    check_steps_equal_pass(decoder, y, h, mem_mask, out, al, t_mask)


def test_long_padded_sources_under_mixed_bfloat16():
    check_long_padded_pass(AttentionRNN(8, MultiHeadLocationAttention(
        2, 4, location=True, filters=2, kernel_size=31, dtype="mixed_bfloat16"),
        cell="gru", dtype="mixed_bfloat16"))


def test_keras_file_round_trip(tmp_path):
    check_keras_round_trip(AttentionRNN(6, make("AttMultiHeadLoc", heads=2, dk=3, dv=2)),
                           str(tmp_path / "model.keras"))

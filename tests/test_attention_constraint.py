"""The attention constraint at inference (Deep Voice 3; ESPnet's
`_apply_attention_constraint` in `espnet/nets/pytorch_backend/rnn/
attentions.py`: energies outside `[last - backward, last + forward)` set to
-inf before the softmax, `last` the previous step's argmax, 0 at first),
batched: `AttentionRNN(attention_window=...)`'s steps against a NumPy
decoder, the training pass left as it was, a stateful attention kept inside
its window, the config and the setter."""

import keras
import numpy as np

from cases import lengths_mask, np_masked_softmax, to_numpy
from kerattn.layers import AttentionRNN, BahdanauAttention, ForwardAttention
from test_attention_rnn import np_gru


def _f32(rng, *shape, scale=1.0):
    return (scale * rng.standard_normal(shape)).astype("float32")


def np_constrain(e, last, backward, forward):
    """ESPnet's constraint on one row's energies (a copy)."""
    e = e.copy()
    if last - backward > 0:
        e[:last - backward] = -np.inf
    if last + forward < len(e):
        e[last + forward:] = -np.inf
    return e


def test_steps_match_numpy_and_the_training_pass_is_unconstrained():
    """Rows of different source lengths (the first not the longest) decoded
    together, each constrained around its own last position; sharp
    energies that would jump far without the constraint."""
    rng = np.random.default_rng(0)
    b, T, S, units, window = 3, 6, 12, 8, (1, 2)
    y, h = _f32(rng, b, T, 4), _f32(rng, b, S, 6, scale=2.0)
    mem_mask = lengths_mask([9, 12, 5], S)
    decoder = AttentionRNN(units, BahdanauAttention(5), cell="gru",
                           attention_window=window)
    plain = AttentionRNN(units, BahdanauAttention(5), cell="gru")
    decoder(y, h)
    plain(y, h)
    plain.set_weights(decoder.get_weights())
    att = decoder.attention
    att.v_a.assign(5.0 * att.v_a)
    plain.attention.v_a.assign(att.v_a)
    cell = decoder.cell.rnn_cells[0]
    W, U, v = (to_numpy(x) for x in (att.W_a, att.U_a, att.v_a))
    gru = [to_numpy(x) for x in (cell.kernel, cell.recurrent_kernel, cell.bias)]
    # The training pass: the same as without the constraint.
    np.testing.assert_allclose(to_numpy(decoder(y, h, memory_mask=mem_mask)),
                               to_numpy(plain(y, h, memory_mask=mem_mask)), atol=1e-6)
    cache = decoder.precompute(h, mem_mask)
    states = decoder.get_initial_state(b, cache=cache)
    s, last = np.zeros((b, units)), np.zeros(b, "int64")
    jumped = False
    for t in range(T):
        out, states, weights = decoder.step(y[:, t], states, cache)
        e = np.tanh((s @ W)[:, None] + h @ U) @ v
        free = np_masked_softmax(e, mem_mask)
        alpha = np.stack([np_masked_softmax(np_constrain(e[i], last[i], *window),
                                            mem_mask[i]) for i in range(b)])
        jumped |= bool(np.any(np.abs(free.argmax(-1) - last) > 2))
        np.testing.assert_allclose(to_numpy(weights), alpha, atol=1e-5)
        context = np.einsum("bs,bsd->bd", alpha, h)
        np.testing.assert_allclose(to_numpy(out), np.concatenate([s, context], -1),
                                   atol=1e-5)
        s = np_gru(np.concatenate([y[:, t], context], -1), s, *gru)
        last = alpha.argmax(-1)
        np.testing.assert_array_equal(to_numpy(states["last"])[:, 0], last)
    assert jumped   # without the constraint some step would have gone far


def test_a_stateful_attention_stays_inside_its_window():
    rng = np.random.default_rng(1)
    b, S = 2, 15
    decoder = AttentionRNN(6, ForwardAttention(4, filters=2, kernel_size=3),
                           cell="gru", attention_window=(0, 2))
    h = _f32(rng, b, S, 5)
    decoder(_f32(rng, b, 2, 3), h)
    cache = decoder.precompute(h, lengths_mask([11, 15], S))
    states = decoder.get_initial_state(b, cache=cache)
    last = np.zeros(b, "int64")
    for _ in range(6):
        _, states, weights = decoder.step(_f32(rng, b, 3), states, cache)
        weights = to_numpy(weights)
        for i in range(b):
            outside = np.ones(S, bool)
            outside[last[i]:last[i] + 2] = False
            assert np.all(weights[i, outside] == 0)
        last = weights.argmax(-1)


def test_config_and_setter(tmp_path):
    decoder = AttentionRNN(6, BahdanauAttention(4), attention_window=(1, 3))
    config = decoder.get_config()
    assert config["attention_window"] == [1, 3]
    again = AttentionRNN.from_config(config)
    assert again.attention_window == (1, 3)
    again.attention_window = None
    assert again.attention_window is None
    y_in, m_in = keras.Input((None, 3)), keras.Input((None, 5))
    model = keras.Model([y_in, m_in], decoder(y_in, m_in))
    path = str(tmp_path / "model.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert loaded.layers[-1].attention_window == (1, 3)

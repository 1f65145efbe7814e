"""Scheduled sampling (Bengio et al. 2015) in `AttentionRNN`'s training
pass: against a loop of the decoder's own steps in NumPy terms, on every
backend; `p = 0` is teacher forcing exactly; the schedule callback; the
hoisted loop untouched outside training; bad input named."""

import keras
import numpy as np
import pytest

from cases import lengths_mask, to_numpy
from kerattn import callbacks
from kerattn.layers import (AttentionRNN, BahdanauAttention, LuongAttention,
                            ScheduledEmbeddingSampler, ScheduledOutputSampler)

V, E, U, D = 7, 5, 6, 4


def _decoder(order="luong"):
    attention = LuongAttention("general") if order == "luong" else BahdanauAttention(5)
    return AttentionRNN(U, attention, cell="gru", order=order)


def _data(seed=0):
    rng = np.random.default_rng(seed)
    ids = np.array([[1, 3, 4, 0], [1, 5, 6, 2], [1, 2, 0, 0]], "int32")
    memory = rng.normal(size=(3, 5, D)).astype("float32")
    return ids, memory, ids != 0, lengths_mask([4, 5, 3], 5)


@pytest.mark.parametrize("order", ["luong", "bahdanau"])
def test_probability_zero_is_teacher_forcing(order):
    """With `p = 0` the scheduled loop (inputs multiplied inside it) gives
    the teacher-forced outputs of the hoisted loop, in training."""
    ids, memory, t_mask, s_mask = _data()
    embedding, readout = keras.layers.Embedding(V, E), keras.layers.Dense(V)
    decoder = _decoder(order)
    y = embedding(ids)
    forced = to_numpy(decoder(y, memory, inputs_mask=t_mask, memory_mask=s_mask,
                              training=True))
    decoder.sampler = ScheduledEmbeddingSampler(embedding, readout, probability=0.0, seed=3)
    sampled = to_numpy(decoder(y, memory, inputs_mask=t_mask, memory_mask=s_mask,
                               training=True))
    np.testing.assert_allclose(sampled, forced, atol=1e-5)


@pytest.mark.parametrize("order", ["luong", "bahdanau"])
def test_always_sampling_greedily_equals_the_models_own_steps(order):
    """`p = 1`, greedy: after the first step each input is the embedding of
    the argmax of the readout of the previous output. A loop of `step()`
    doing that by hand (NumPy argmax) gives the same outputs at every real
    step; padded steps keep the row's state (the first row ends early)."""
    ids, memory, t_mask, s_mask = _data(1)
    embedding, readout = keras.layers.Embedding(V, E), keras.layers.Dense(V)
    decoder = _decoder(order)
    y = embedding(ids)
    decoder(y, memory, memory_mask=s_mask)
    readout.build((None, decoder.cell.output_dim(D)))
    decoder.sampler = ScheduledEmbeddingSampler(embedding, readout, probability=1.0,
                                                greedy=True)
    out = to_numpy(decoder(y, memory, inputs_mask=t_mask, memory_mask=s_mask,
                           training=True))
    cache = decoder.precompute(memory, s_mask)
    states = decoder.get_initial_state(3, cache=cache)
    x = to_numpy(y)[:, 0]
    for t in range(ids.shape[1]):
        step_out, states, _ = decoder.step(x, states, cache)
        step_out = to_numpy(step_out)
        real = t_mask[:, t]
        np.testing.assert_allclose(out[real, t], step_out[real], atol=1e-5)
        x = to_numpy(embedding(np.argmax(to_numpy(readout(step_out)), -1)))


def test_output_sampling_feeds_the_output_back():
    """`ScheduledOutputSampler(1.0)`: the next input is the previous
    output (`step_output="cell"`, sizes equal), by hand with `step()`."""
    rng = np.random.default_rng(2)
    y = rng.normal(size=(2, 3, U)).astype("float32")
    memory = rng.normal(size=(2, 4, D)).astype("float32")
    decoder = AttentionRNN(U, BahdanauAttention(5), cell="gru", order="luong",
                           input_feeding=False, step_output="cell")
    decoder.sampler = ScheduledOutputSampler(1.0)
    out = to_numpy(decoder(y, memory, training=True))
    cache = decoder.precompute(memory)
    states = decoder.get_initial_state(2, cache=cache)
    x = y[:, 0]
    for t in range(3):
        step_out, states, _ = decoder.step(x, states, cache)
        np.testing.assert_allclose(out[:, t], to_numpy(step_out), atol=1e-5)
        x = to_numpy(step_out)
    # Outside training the sampler is not used: teacher forcing.
    assert not np.allclose(to_numpy(decoder(y, memory)), out, atol=1e-3)


def test_sampled_tokens_follow_the_probability():
    """With `p = 0.5` about half the later inputs are the model's own; the
    Gumbel-max draws follow `softmax(readout)`: a readout that puts 0.9 on
    one token is sampled to it about 90% of the time."""
    sampler = ScheduledEmbeddingSampler(keras.layers.Embedding(V, E),
                                        keras.layers.Dense(V), probability=0.5, seed=0)
    noise = sampler.draw(400, 6, U)
    coin = to_numpy(noise["coin"])
    assert np.all(coin[:, 0] == 1.0) and 0.45 < (coin[:, 1:] < 0.5).mean() < 0.55
    logits = np.log(np.array([0.9] + [0.1 / (V - 1)] * (V - 1), "float32"))
    picks = np.argmax(logits + to_numpy(noise["gumbel"]), -1)
    assert 0.87 < (picks == 0).mean() < 0.93


def test_the_schedule_changes_the_probability_each_epoch():
    """`SamplingSchedule` sets `p` at each epoch's start and the training
    step is traced again with it: a model trained 3 epochs sees 0, 0.5 and
    1, and its loss changes with the inputs it sees."""
    ids, memory, t_mask, s_mask = _data(3)
    embedding, readout = keras.layers.Embedding(V, E), keras.layers.Dense(V)
    decoder = _decoder()
    id_in = keras.Input((None,), dtype="int32")
    mem_in = keras.Input((None, D))
    logits = readout(decoder(embedding(id_in), mem_in))
    model = keras.Model([id_in, mem_in], logits)
    sampler = ScheduledEmbeddingSampler(embedding, readout, seed=0)
    decoder.sampler = sampler
    seen = []
    model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(
        from_logits=True))
    record = keras.callbacks.LambdaCallback(
        on_epoch_end=lambda epoch, logs: seen.append(sampler.probability))
    model.fit([ids, memory], ids, epochs=3, batch_size=3, verbose=0,
              callbacks=[callbacks.SamplingSchedule(sampler, lambda i: i / 2), record])
    assert seen == [0.0, 0.5, 1.0]


@pytest.mark.parametrize("make,match", [
    (lambda: ScheduledOutputSampler(probability=1.5), "`probability`"),
    (lambda: ScheduledOutputSampler(probability=-0.1), "`probability`"),
    (lambda: ScheduledOutputSampler(transform=3), "`transform`"),
    (lambda: ScheduledEmbeddingSampler(3, keras.layers.Dense(2)), "`embedding`"),
    (lambda: ScheduledEmbeddingSampler(keras.layers.Embedding(4, 2), len), "`readout`"),
    (lambda: callbacks.SamplingSchedule(object(), lambda i: 0.1), "`sampler`"),
])
def test_bad_input_is_named(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_a_decoder_takes_only_a_sampler():
    with pytest.raises(ValueError, match="`sampler` must be None or"):
        _decoder().sampler = "embedding"

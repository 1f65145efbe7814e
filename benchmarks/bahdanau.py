"""Figure 3: `bahdanau_nmt` training throughput vs the tutorial implementations.

Batch 64, source and target length 20 and 50, 128 units (embedding,
GRUs, alignment model, maxout), vocabularies of 1,000: target tokens per
second of one training step (forward, backward, Adam), median after
warm-up. Both sides compile the same way (`common.jit_for_backend`).

- ours: `kerattn.zoo.bahdanau_nmt` (the decoder loop is one
  `AttentionRNN`, i.e. `keras.layers.RNN` over a cell with the keys
  precomputed);
- peer: `benchmarks/peers/keras_tutorial_nmt.py`, the TensorFlow
  tutorial's Python loop over steps around `keras.layers.AdditiveAttention`
  (same architecture and parameter count);
- torch backend only, second peer: `benchmarks/peers/torch_tutorial_nmt.py`,
  PyTorch's tutorial `AttnDecoderRNN` in an eager loop.
"""

import numpy as np

from benchmarks import common

SIZE = dict(vocab=1000, embedding_dim=128, units=128, alignment_units=128,
            maxout_units=128, batch=64)
QUICK_SIZE = dict(vocab=50, embedding_dim=8, units=8, alignment_units=8,
                  maxout_units=4, batch=2)


def _data(s, length, seed=0):
    rng = np.random.default_rng(seed)
    shape = (s["batch"], length)
    x = {"source_ids": rng.integers(1, s["vocab"], shape).astype("int32"),
         "target_in_ids": rng.integers(1, s["vocab"], shape).astype("int32")}
    return x, rng.integers(1, s["vocab"], shape).astype("int32")


def _keras_models(s, length):
    import kerattn
    from benchmarks.peers.keras_tutorial_nmt import TutorialNMT

    sizes = {k: s[k] for k in ("embedding_dim", "units", "alignment_units",
                               "maxout_units")}
    # reset_after=True: the peers' GRU (Keras' and cuDNN's default), not the
    # paper preset's original GRU, so that both sides hold the same weights.
    ours = kerattn.zoo.bahdanau_nmt(s["vocab"], s["vocab"], reset_after=True,
                                    **sizes)
    peer = TutorialNMT(s["vocab"], **sizes)
    x, _ = _data(s, length)
    peer(x)  # build
    assert ours.count_params() == peer.count_params(), (
        ours.count_params(), peer.count_params())
    return ours, peer


def _torch_peer_time(s, length, repeats, warmup):
    import torch

    from benchmarks.peers.torch_tutorial_nmt import TutorialNMT, train_step_fn

    torch.manual_seed(0)
    model = TutorialNMT(s["vocab"], s["embedding_dim"], s["units"],
                        s["alignment_units"], s["maxout_units"])
    step = train_step_fn(model)
    x, y = _data(s, length)
    args = [torch.from_numpy(x["source_ids"]).long(),
            torch.from_numpy(x["target_in_ids"]).long(),
            torch.from_numpy(y).long()]
    return common.median_time(lambda: step(*args), repeats, warmup,
                              sync=lambda r: r.item())


def run(quick=False):
    import keras

    s = QUICK_SIZE if quick else SIZE
    lengths = (5,) if quick else (20, 50)
    repeats, warmup = (1, 1) if quick else (5, 2)
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    rows = []
    for length in lengths:
        keras.utils.set_random_seed(0)
        ours, peer = _keras_models(s, length)
        x, y = _data(s, length)
        tokens = s["batch"] * length
        t_ours = common.train_step_time(ours, x, y, loss, repeats, warmup,
                                        optimizer="adam")
        t_peer = common.train_step_time(peer, x, y, loss, repeats, warmup,
                                        optimizer="adam")
        extra = dict(length=length, ours_ms=1000 * t_ours, params=ours.count_params(),
                     jit_compile=common.jit_for_backend(), **s)
        rows.append(common.row(
            3, f"bahdanau_nmt train, T={length}", tokens / t_ours,
            tokens / t_peer, "Keras, TF-tutorial loop + AdditiveAttention",
            "target tok/s", target=2.0, higher_is_better=True,
            peer_ms=1000 * t_peer, **extra))
        if common.backend() == "torch":
            t_torch = _torch_peer_time(s, length, repeats, warmup)
            rows.append(common.row(
                3, f"bahdanau_nmt train, T={length}", tokens / t_ours,
                tokens / t_torch, "PyTorch tutorial AttnDecoderRNN (eager)",
                "target tok/s", target=1.0, higher_is_better=True,
                peer_ms=1000 * t_torch, **extra))
    return rows

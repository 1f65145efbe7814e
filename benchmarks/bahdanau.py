"""Figure 3: `bahdanau_nmt` training throughput vs the tutorial implementations.

Batch 64, source and target length 20 and 50, 128 units (embedding,
GRUs, alignment model, maxout), vocabularies of 1,000: target tokens per
second of one training step (forward, backward, Adam), median after
warm-up. Both sides compile the same way (`common.jit_for_backend`).

- ours: `kerattn.zoo.bahdanau_nmt` (the decoder loop is one
  `AttentionRNN`: `scan_carry` over the cell's equations applied with
  `keras.ops`, the keys and the token half of the bottom GRU's input
  product computed before the loop);
- peer: `benchmarks/peers/keras_tutorial_nmt.py`, the TensorFlow
  tutorial's Python loop over steps around `keras.layers.AdditiveAttention`
  (same architecture and parameter count);
- torch backend only, second peer: `benchmarks/peers/torch_tutorial_nmt.py`,
  PyTorch's tutorial `AttnDecoderRNN` in an eager loop.

A `mixed_bfloat16` row at T=20: both models built and trained under
that dtype policy (bfloat16 products, float32 weights), ours against the
Keras peer at the same policy, with ours' float32 throughput of the same
run beside it (`float32_tok_s`).

On torch, the profile of both steps at T=20 (`torch_profile`): each part
timed on its own, eagerly, the same way for ours and the PyTorch peer
(encoder forward; the whole forward; + the loss; + backward; the whole
training step), so that the differences say where the time goes.

Beside them, the recurrent counterpart of figure 6: the training step's
achieved FLOP/s (its matrix products counted analytically,
`forward_flops`) over the backend's compiled square float32 matmul
(`flops.matmul_flops_per_second`), at T=50.
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


def forward_flops(s, length):
    """Matmul FLOPs of one `bahdanau_nmt` forward pass (2 per multiply-add).

    Source and target of `length` tokens; `m` embedding, `n` units, `a`
    alignment units, `l` maxout units, `V` target vocabulary. Counted: the
    bidirectional encoder GRU, `s_0`, the keys `U_a h_j`, and per target step
    `W_a s`, the scores `v_a^T tanh(.)` and the context over the source, the
    decoder GRU on `[y; c]`, the deep output and the output projection.
    Element-wise gate arithmetic, softmax and the loss are not counted.
    """
    b, S, T = s["batch"], length, length
    m, n, a = s["embedding_dim"], s["units"], s["alignment_units"]
    l, V = s["maxout_units"], s["vocab"]
    gru = lambda inputs: 2 * 3 * n * (inputs + n)
    encoder = 2 * S * gru(m) + 2 * n * n + 2 * S * 2 * n * a
    step = (2 * n * a + 2 * S * a + 2 * S * 2 * n + gru(m + 2 * n)
            + 2 * (n + 2 * n + m) * 2 * l + 2 * l * V)
    return b * (encoder + T * step)


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
            "target tok/s", target=1.3, higher_is_better=True,
            peer_ms=1000 * t_peer, **extra))
        if common.backend() == "torch":
            t_torch = _torch_peer_time(s, length, repeats, warmup)
            rows.append(common.row(
                3, f"bahdanau_nmt train, T={length}", tokens / t_ours,
                tokens / t_torch, "PyTorch tutorial AttnDecoderRNN (eager)",
                "target tok/s", target=1.0, higher_is_better=True,
                peer_ms=1000 * t_torch, **extra))
    if common.backend() == "torch" and not quick:
        rows.append(torch_profile(s, 20, repeats, warmup))
    float32_tok_s = {r["length"]: r["ours"] for r in rows if "length" in r}
    if not quick:
        rows.append(_mixed_bfloat16_row(s, 20, loss, repeats, warmup,
                                        float32_tok_s[20]))
    # The recurrent FLOP/s figure, at the longest length.
    from benchmarks.flops import matmul_flops_per_second

    length = lengths[-1]
    t_ours = s["batch"] * length / float32_tok_s[length]
    flops = 3 * forward_flops(s, length)  # backward = two forward passes
    peak = matmul_flops_per_second(repeats, warmup,
                                   sizes=(64,) if quick else (1024, 2048))
    rows.append(common.row(
        3, f"bahdanau_nmt train step FLOP/s, T={length}", flops / t_ours / 1e9,
        peak / 1e9, "keras.ops.matmul (square, compiled)", "GFLOP/s",
        higher_is_better=True, step_ms=1000 * t_ours,
        train_gflop_per_step=flops / 1e9))
    return rows


def _mixed_bfloat16_row(s, length, loss, repeats, warmup, float32_tok_s):
    import keras

    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy("mixed_bfloat16")
    try:
        keras.utils.set_random_seed(0)
        ours, peer = _keras_models(s, length)
        x, y = _data(s, length)
        t_ours = common.train_step_time(ours, x, y, loss, repeats, warmup,
                                        optimizer="adam")
        t_peer = common.train_step_time(peer, x, y, loss, repeats, warmup,
                                        optimizer="adam")
    finally:
        keras.config.set_dtype_policy(previous)
    tokens = s["batch"] * length
    return common.row(
        3, f"bahdanau_nmt train mixed_bfloat16, T={length}", tokens / t_ours,
        tokens / t_peer, "Keras, TF-tutorial loop + AdditiveAttention, mixed_bfloat16",
        "target tok/s", target=1.3, higher_is_better=True, length=length,
        ours_ms=1000 * t_ours, peer_ms=1000 * t_peer,
        float32_tok_s=float32_tok_s, speedup_over_float32=tokens / t_ours / float32_tok_s,
        jit_compile=common.jit_for_backend(), **s)


def torch_profile(s, length, repeats, warmup):
    """Milliseconds of each part of ours' and the PyTorch peer's step."""
    import keras
    import torch

    from benchmarks.peers.torch_tutorial_nmt import TutorialNMT, train_step_fn
    from kerattn.zoo.bahdanau_nmt import encode_source

    def ms(fn):
        return 1000 * common.median_time(fn, repeats, warmup, sync=lambda r: r)

    keras.utils.set_random_seed(0)
    ours, _ = _keras_models(s, length)
    x, y = _data(s, length)
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    ours.compile(optimizer="adam", loss=loss, jit_compile=False)
    get = ours.get_layer
    tx = {k: keras.ops.convert_to_tensor(v) for k, v in x.items()}
    ty = keras.ops.convert_to_tensor(y)

    def forward_loss():
        return loss(ty, ours(tx, training=True))

    def backward():
        value = forward_loss()
        value.backward()
        return value

    parts = {
        "encoder_forward": ms(lambda: encode_source(get, tx["source_ids"])[0]),
        "forward": ms(lambda: ours(tx, training=True)),
        "forward_loss": ms(forward_loss),
        "forward_loss_backward": ms(backward),
        "train_step": ms(lambda: ours.train_on_batch(x, y)),
    }
    torch.manual_seed(0)
    peer = TutorialNMT(s["vocab"], s["embedding_dim"], s["units"],
                       s["alignment_units"], s["maxout_units"])
    src, tgt_in, tgt_out = (torch.from_numpy(a).long() for a in
                            (x["source_ids"], x["target_in_ids"], y))

    def peer_loss():
        logits = peer(src, tgt_in)
        return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                                 tgt_out.reshape(-1))

    def peer_backward():
        value = peer_loss()
        value.backward()
        return value

    step = train_step_fn(peer)
    peer_parts = {
        "encoder_forward": ms(lambda: peer.encoder(src)),
        "forward": ms(lambda: peer(src, tgt_in)),
        "forward_loss": ms(peer_loss),
        "forward_loss_backward": ms(peer_backward),
        "train_step": ms(lambda: step(src, tgt_in, tgt_out).item()),
    }

    def shares(p):
        return {"encoder_forward": p["encoder_forward"],
                "decoder_and_readout_forward": p["forward"] - p["encoder_forward"],
                "loss": p["forward_loss"] - p["forward"],
                "backward": p["forward_loss_backward"] - p["forward_loss"],
                "optimizer_and_trainer": p["train_step"] - p["forward_loss_backward"]}

    mine, theirs = shares(parts), shares(peer_parts)
    return common.row(
        3, f"bahdanau_nmt train step profile, T={length} (ms)",
        parts["train_step"], peer_parts["train_step"],
        "PyTorch tutorial AttnDecoderRNN (eager)", "ms/step", ours_parts=mine,
        peer_parts=theirs,
        notes="; ".join(f"{k} {mine[k]:.1f} vs {theirs[k]:.1f}" for k in mine))

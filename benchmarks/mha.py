"""Figure 1: multi-head attention, forward + backward, vs Keras (and torch).

Self-attention over `(32, T, 512)`, 8 heads of 64, T = 128 and 512: one
training step (forward, backward, SGD update) of a model that is just the
layer, compiled the same way on both sides (`common.jit_for_backend`):

- ours: `kerattn.layers.MultiHeadAttention(8, 64)`;
- peer: `keras.layers.MultiHeadAttention(8, 64)`, the same weights layout;
- torch backend only, second peer: `torch.nn.MultiheadAttention(512, 8,
  batch_first=True)` with a hand-written step (what a PyTorch user would
  pick instead), eager like Keras' torch trainer.

The weights are copied from the Keras layer into ours, so both compute
the same function (checked to 1e-4 before timing).
"""

import numpy as np

from benchmarks import common

BATCH, DIM, HEADS = 32, 512, 8


def _model(layer, length):
    import keras

    x = keras.Input((length, DIM))
    return keras.Model(x, layer(x, x))


def _torch_native_step_time(x, y, repeats, warmup):
    import torch

    mha = torch.nn.MultiheadAttention(DIM, HEADS, batch_first=True)
    opt = torch.optim.SGD(mha.parameters(), lr=0.01)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)

    def step():
        opt.zero_grad(set_to_none=True)
        out, _ = mha(xt, xt, xt, need_weights=False)
        loss = torch.nn.functional.mse_loss(out, yt)
        loss.backward()
        opt.step()
        return loss.detach()

    return common.median_time(step, repeats, warmup, sync=lambda r: r.item())


def run(quick=False):
    import keras

    from kerattn.layers import MultiHeadAttention

    lengths = (16,) if quick else (128, 512)
    batch = 2 if quick else BATCH
    repeats, warmup = (1, 1) if quick else (5, 2)
    rows = []
    for length in lengths:
        rng = np.random.default_rng(0)
        x = rng.standard_normal((batch, length, DIM)).astype("float32")
        y = rng.standard_normal((batch, length, DIM)).astype("float32")
        keras.utils.set_random_seed(0)
        theirs = _model(keras.layers.MultiHeadAttention(HEADS, DIM // HEADS),
                        length)
        ours = _model(MultiHeadAttention(HEADS, DIM // HEADS), length)
        ours.set_weights(theirs.get_weights())
        diff = float(np.max(np.abs(
            keras.ops.convert_to_numpy(ours(x)) -
            keras.ops.convert_to_numpy(theirs(x)))))
        assert diff < 1e-4, f"kerattn and Keras MHA differ by {diff}"
        t_ours = common.train_step_time(ours, x, y, "mse", repeats, warmup)
        t_theirs = common.train_step_time(theirs, x, y, "mse", repeats, warmup)
        flash = common.flash_attention_available(batch, length, HEADS,
                                                 DIM // HEADS, "float32")
        extra = dict(batch=batch, length=length, dim=DIM, heads=HEADS,
                     fused_kernel="keras.ops.dot_product_attention",
                     flash_attention=flash, jit_compile=common.jit_for_backend(),
                     max_abs_diff=diff)
        rows.append(common.row(
            1, f"MHA fwd+bwd, T={length}", 1000 * t_ours, 1000 * t_theirs,
            "keras.layers.MultiHeadAttention", "ms/step", target=1.0,
            notes="flash attention " + ("used" if flash else "not available"),
            **extra))
        if common.backend() == "torch":
            t_native = _torch_native_step_time(x, y, repeats, warmup)
            rows.append(common.row(
                1, f"MHA fwd+bwd, T={length}", 1000 * t_ours, 1000 * t_native,
                "torch.nn.MultiheadAttention", "ms/step", target=None, **extra))
    return rows

"""Figure 8: which fused attention kernel runs, and what it costs, at bfloat16.

Figure 1 runs at float32, where Keras offers no flash kernel on any
backend. Flash kernels (cuDNN's fused attention on JAX, PyTorch's flash
and memory-efficient kernels on torch) need 16-bit inputs and a GPU. This
figure repeats figure 1's training step, self-attention over `(32, T,
512)` with 8 heads of 64 at T = 512, under the `mixed_bfloat16` policy:

- ours: `kerattn.layers.MultiHeadAttention(8, 64)`;
- peer: `keras.layers.MultiHeadAttention(8, 64)`, the same weights.

Both are timed without a mask and with a padding mask (`attention_mask`
of shape `(batch, T, T)`; each row's keys end at its own length, the
longest row not first), since the zoo's models always pass one.

Each row also names the attention kernel each layer's forward pass ran,
read from what the backend executed, not from what was asked for:

- JAX: the custom calls in the compiled program (`__cudnn$fmha...` is
  cuDNN's fused attention); none means XLA's own ops;
- torch: the `aten::_scaled_dot_product_*` operator in a profile of the
  call (`flash`, `efficient`, `cudnn`, `math`; `flash_attention_for_cpu`
  is PyTorch's fused CPU kernel);
- TensorFlow: Keras' TensorFlow backend has no fused kernel, so XLA's ops.
"""

import numpy as np

from benchmarks import common, mha

BATCH, DIM, HEADS, LENGTH = mha.BATCH, mha.DIM, mha.HEADS, 512
POLICY = "mixed_bfloat16"


def _lengths(batch, length):
    """Key lengths, the longest not first: from length / 4 to length."""
    out = np.linspace(length // 4, length, batch).astype("int64")
    return np.roll(out, batch // 2)


def _model(layer, length, masked):
    import keras

    if not masked:
        return mha._model(layer, length)   # figure 1's model
    x = keras.Input((length, DIM))
    m = keras.Input((length, length), dtype="bool")
    return keras.Model([x, m], layer(x, x, attention_mask=m))


def observed_kernel(fn, *args):
    """The attention kernel the backend runs for `fn(*args)`, as a name."""
    backend = common.backend()
    if backend == "jax":
        import re

        import jax

        text = jax.jit(fn).lower(*args).as_text()
        calls = sorted(set(re.findall(r"__cudnn\$fmha\w*", text)))
        return "+".join(calls) if calls else "xla ops"
    if backend == "torch":
        import torch

        with torch.profiler.profile(
                activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            common.block(fn(*args))
        names = sorted({e.key for e in prof.key_averages()
                        if e.key.startswith("aten::_scaled_dot_product")})
        return "+".join(n[len("aten::_scaled_dot_product_"):] for n in names) \
            or "no fused op"
    return "xla ops"


def run(quick=False):
    import keras

    from kerattn.layers import MultiHeadAttention

    length = 16 if quick else LENGTH
    batch = 2 if quick else BATCH
    repeats, warmup = (1, 1) if quick else (5, 2)
    flash = common.flash_attention_available(batch, length, HEADS,
                                             DIM // HEADS, "bfloat16")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, length, DIM)).astype("float32")
    y = rng.standard_normal((batch, length, DIM)).astype("float32")
    keys = np.arange(length)[None, None, :] < _lengths(batch, length)[:, None, None]
    mask = np.broadcast_to(keys, (batch, length, length)).copy()
    rows = []
    for masked in (False, True):
        keras.utils.set_random_seed(0)
        theirs = keras.layers.MultiHeadAttention(HEADS, DIM // HEADS,
                                                 dtype=POLICY)
        ours = MultiHeadAttention(HEADS, DIM // HEADS, dtype=POLICY)
        their_model = _model(theirs, length, masked)
        our_model = _model(ours, length, masked)
        our_model.set_weights(their_model.get_weights())
        inputs = [x, mask] if masked else x
        diff = float(np.max(np.abs(
            keras.ops.convert_to_numpy(our_model(inputs)).astype("float32") -
            keras.ops.convert_to_numpy(their_model(inputs)).astype("float32"))))
        assert diff < 0.1, f"kerattn and Keras MHA differ by {diff} at bf16"
        xt = keras.ops.convert_to_tensor(x)
        mt = keras.ops.convert_to_tensor(mask)
        call = ((lambda layer: lambda a, m: layer(a, a, attention_mask=m))
                if masked else (lambda layer: lambda a: layer(a, a)))
        args = (xt, mt) if masked else (xt,)
        our_kernel = observed_kernel(call(ours), *args)
        their_kernel = observed_kernel(call(theirs), *args)
        t_ours = common.train_step_time(our_model, inputs, y, "mse", repeats,
                                        warmup)
        t_theirs = common.train_step_time(their_model, inputs, y, "mse",
                                          repeats, warmup)
        what = "padding mask" if masked else "no mask"
        rows.append(common.row(
            8, f"MHA fwd+bwd, T={length}, {POLICY}, {what}", 1000 * t_ours,
            1000 * t_theirs, "keras.layers.MultiHeadAttention", "ms/step",
            target=1.0, batch=batch, length=length, policy=POLICY,
            masked=masked, flash_attention=flash, ours_kernel=our_kernel,
            peer_kernel=their_kernel, max_abs_diff=diff,
            notes=f"kernel: ours {our_kernel}, Keras {their_kernel}; "
                  f"flash {'offered' if flash else 'not offered'} at bfloat16"))
    return rows

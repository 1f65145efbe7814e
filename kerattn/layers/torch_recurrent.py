"""The torch fast path of `kerattn.layers.GRU` / `LSTM`: one fused call.

`torch.gru` / `torch.lstm` run the whole sequence in ATen (cuDNN on a CUDA
device), where Keras' loop makes a Python call per step. They compute
Keras' equations with Keras' weights once these are laid out as torch
expects:

- LSTM: the gates are in the same order (`i, f, c, o`); the kernels are
  transposed; Keras' one bias is the input bias, the recurrent bias zero.
- GRU: only `reset_after=True` (torch's form,
  `n = tanh(W_n x + b_n + r * (U_n h + b_Un))`); Keras' gates `z, r, h` are
  reordered to torch's `r, z, n`; bias row 0 is the input bias, row 1 the
  recurrent one. `h' = z h + (1 - z) n` in both.

Masks: torch takes padding only as packed sequences, so a mask must be
right padding (each row's `True`s first) with at least one step a row; a
row's backward pass reads its own steps reversed, and the outputs are laid
out as Keras' loop lays them (padded steps first, in the order computed).

`fused_loop` raises `NotImplementedError` where it does not apply (the
other GRU form, other activations, other masks, inside `torch.compile`,
`torch.export` or a TorchScript trace, which would freeze the mask's
checks into the graph);
the caller then runs the generic `keras.ops` loop. This is the one module
of the layers package that imports torch.
"""

import keras
import torch
from torch.nn.utils import rnn as torch_rnn

from kerattn.layers.recurrent_stack import is_lstm


def _applies(layer):
    cell = layer.cell
    return (cell.activation is keras.activations.tanh
            and cell.recurrent_activation is keras.activations.sigmoid
            and (is_lstm(cell) or cell.reset_after)
            and not torch.compiler.is_compiling()
            and not torch.jit.is_tracing())


def _params(cell, dtype):
    """`[W_ih, W_hh, b_ih, b_hh]` in torch's layout, of `dtype`."""
    kernel = keras.ops.cast(cell.kernel, dtype)
    recurrent = keras.ops.cast(cell.recurrent_kernel, dtype)
    u = cell.units
    if is_lstm(cell):
        gates = 4
        bias_in = bias_rec = None
        if cell.use_bias:
            bias_in = keras.ops.cast(cell.bias, dtype)
    else:
        gates = 3

        def torch_order(w):   # Keras z, r, h -> torch r, z, n (last axis)
            return torch.cat([w[..., u:2 * u], w[..., :u], w[..., 2 * u:]], -1)

        kernel, recurrent = torch_order(kernel), torch_order(recurrent)
        bias_in = bias_rec = None
        if cell.use_bias:
            bias = torch_order(keras.ops.cast(cell.bias, dtype))
            bias_in, bias_rec = bias[0], bias[1]
    zeros = torch.zeros(gates * u, dtype=kernel.dtype, device=kernel.device)
    return [kernel.T, recurrent.T,
            zeros if bias_in is None else bias_in,
            zeros if bias_rec is None else bias_rec]


def _lengths(mask, steps):
    """Each row's length, or None without padding; NotImplementedError for
    a mask that is not right padding or has an empty row."""
    if mask is None:
        return None
    mask = keras.ops.convert_to_tensor(mask, "bool")
    lengths = mask.sum(1)
    right_padded = torch.arange(steps, device=mask.device)[None, :] < lengths[:, None]
    if not bool(torch.equal(right_padded, mask)) or int(lengths.min()) == 0:
        raise NotImplementedError("only right padding, no empty row")
    return None if int(lengths.min()) == steps else lengths


def _reverse_rows(x, lengths):
    """Each row's first `length` steps in reverse order, padding after."""
    steps = x.shape[1]
    t = torch.arange(steps, device=x.device)[None, :]
    index = torch.where(t < lengths[:, None], lengths[:, None] - 1 - t, t)
    return torch.gather(x, 1, index[..., None].expand(-1, -1, x.shape[-1]))


def _shift_right(y, lengths):
    """Row `b`'s first `length_b` steps moved to the end, zeros before."""
    steps = y.shape[1]
    t = torch.arange(steps, device=y.device)[None, :]
    start = (steps - lengths)[:, None]
    index = torch.clamp(t - start, min=0)
    moved = torch.gather(y, 1, index[..., None].expand(-1, -1, y.shape[-1]))
    return torch.where((t >= start)[..., None], moved, torch.zeros_like(moved))


def fused_loop(layer, sequences, states, mask):
    """Keras' `RNN.inner_loop` contract: `(last_output, outputs, states)`,
    by one call of `torch.gru` / `torch.lstm`; NotImplementedError where
    the module docstring says."""
    if not _applies(layer):
        raise NotImplementedError("not this cell's form")
    cell, dtype = layer.cell, layer.cell.compute_dtype
    x = keras.ops.cast(sequences, dtype)
    steps = x.shape[1]
    lengths = _lengths(mask, steps)
    params = _params(cell, dtype)
    hx = [keras.ops.cast(s, dtype)[None] for s in states]         # (1, B, u)
    hx = tuple(hx) if is_lstm(cell) else hx[0]
    run = torch.lstm if is_lstm(cell) else torch.gru
    training = torch.is_grad_enabled()
    if layer.go_backwards:
        x = torch.flip(x, [1]) if lengths is None else _reverse_rows(x, lengths)
    if lengths is None:
        y, *final = run(x, hx, params, True, 1, 0.0, training, False, True)
    else:
        packed = torch_rnn.pack_padded_sequence(x, lengths.cpu(), batch_first=True,
                                                enforce_sorted=False)
        order = packed.sorted_indices
        hx = (tuple(h.index_select(1, order) for h in hx) if is_lstm(cell)
              else hx.index_select(1, order))
        data, *final = run(packed.data, packed.batch_sizes, hx, params, True, 1,
                           0.0, training, False)
        y, _ = torch_rnn.pad_packed_sequence(
            torch_rnn.PackedSequence(data, packed.batch_sizes, order,
                                     packed.unsorted_indices),
            batch_first=True, total_length=steps)
        final = [h.index_select(1, packed.unsorted_indices) for h in final]
        if layer.go_backwards:      # Keras: padded steps first, then the row
            y = _shift_right(y, lengths)
        elif not layer.zero_output_for_mask:   # a padded step repeats the last
            t = torch.arange(steps, device=y.device)[None, :, None]
            last = torch.gather(y, 1, (lengths - 1)[:, None, None].expand(-1, 1, y.shape[-1]))
            y = torch.where(t < lengths[:, None, None], y, last)
    final = [h[0] for h in final]
    return y[:, -1], y, final

"""Figure 5: windowed attention vs full attention, time and memory by length.

Self-attention over `(1, n, 64)`, n = 256 ... 8192, forward pass, each
(layer, n) in a fresh process so that its peak memory is its own: host
memory on a CPU, device memory on a GPU (see
`benchmarks/windowed_attention.py`, which this figure runs):

- ours: `RestrictedSelfAttention(window=16)` (Vaswani et al. 2017, Table
  1: O(r n d)) and `LocalAttention("predictive", window=8)` (Luong et al.
  2015, local-p);
- peer: kerattn's full `ScaledDotProductAttention` with its n x n weights.

One row per (layer, n) with both times and memories, and one row per layer
for the growth from n = 4096 to 8192: linear growth is about 2x (full
attention's is about 4x).
"""

from benchmarks import common
from benchmarks.windowed_attention import measure

LENGTHS = (256, 512, 1024, 2048, 4096, 8192)
WINDOWED = {"restricted": "RestrictedSelfAttention(window=16)",
            "local_p": "LocalAttention(predictive, window=8)"}


def run(quick=False):
    lengths = (32, 64) if quick else LENGTHS
    repeats = 1 if quick else 3
    backend = common.backend()
    got = {(m, n): measure(backend, m, n, repeats)
           for m in ("full",) + tuple(WINDOWED) for n in lengths}
    rows = []
    for method, label in WINDOWED.items():
        for n in lengths:
            ours, full = got[method, n], got["full", n]
            memory = ours.get("memory", "host")   # host on a CPU, device on a GPU
            if "error" in ours or "error" in full:
                rows.append({"figure": 5, "name": f"{label}, n={n}",
                             "error": ours.get("error") or full.get("error")})
                continue
            rows.append(common.row(
                5, f"{label}, n={n}", 1000 * ours["seconds"],
                1000 * full["seconds"], "full ScaledDotProductAttention",
                "ms", ours_mib=ours["peak_mib"], peer_mib=full["peak_mib"],
                memory=memory, notes=f"{memory} memory "
                      f"{ours['peak_mib']:.0f} vs {full['peak_mib']:.0f} MiB"))
        a, b = lengths[-2], lengths[-1]
        if all("error" not in got[m, k] for m in (method, "full") for k in (a, b)):
            growth = lambda m, key: got[m, b][key] / max(got[m, a][key], 1e-9)
            rows.append(common.row(
                5, f"{label}: time growth n={a}->{b}",
                growth(method, "seconds"), growth("full", "seconds"),
                "full: time growth", "x", target=None,
                memory_growth=growth(method, "peak_mib"),
                full_memory_growth=growth("full", "peak_mib"),
                notes=f"memory growth {growth(method, 'peak_mib'):.2f}x vs "
                      f"full {growth('full', 'peak_mib'):.2f}x"))
    return rows

"""Pictures of attention: heatmaps of alignment weights.

Needs matplotlib (`pip install "kerattn[plot]"`).
"""

import numpy as np


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt
    except ImportError as e:  # pragma: no cover - depends on the install
        raise ImportError(
            "kerattn.plot needs matplotlib: pip install 'kerattn[plot]'"
        ) from e
    return plt


def attention_heatmap(weights, source_tokens, target_tokens, ax=None, title=None):
    """Draw a `(len(target_tokens), len(source_tokens))` weight matrix.

    Rows are output (target) tokens, columns input (source) tokens, as in
    Figure 3 of Bahdanau et al. (2014).

    Args:
        weights: array-like `(Tq, Tv)`, at least as large as the token lists
            (extra padded rows and columns are cut off).
        source_tokens: list of strings for the columns.
        target_tokens: list of strings for the rows.
        ax: optional matplotlib axes to draw on.
        title: optional title.

    Returns:
        The matplotlib axes.

    Example:

    >>> import numpy as np
    >>> ax = attention_heatmap(np.eye(2), ["a", "b"], ["x", "y"])
    """
    weights = np.asarray(weights, dtype="float32")
    if weights.ndim != 2:
        raise ValueError(
            f"`weights` must have shape (Tq, Tv); received shape {weights.shape}."
        )
    rows, cols = len(target_tokens), len(source_tokens)
    if weights.shape[0] < rows or weights.shape[1] < cols:
        raise ValueError(
            f"`weights` of shape {weights.shape} is smaller than the "
            f"({rows}, {cols}) given by `target_tokens` and `source_tokens`."
        )
    plt = _pyplot()
    if ax is None:
        _, ax = plt.subplots(figsize=(1 + 0.45 * cols, 1 + 0.4 * rows))
    ax.imshow(weights[:rows, :cols], cmap="gray", vmin=0.0, vmax=1.0)
    def label(token):  # word pieces' "a space came before" mark
        return str(token).replace("\u2581", "")

    ax.set_xticks(range(cols))
    ax.set_xticklabels([label(t) for t in source_tokens], rotation=90)
    ax.set_yticks(range(rows))
    ax.set_yticklabels([label(t) for t in target_tokens])
    if title:
        ax.set_title(title)
    return ax


def save_attention_heatmaps(examples, path, columns=2):
    """Save several heatmaps in one PNG.

    Args:
        examples: list of `(weights, source_tokens, target_tokens)`.
        path: the PNG file to write.
        columns: heatmaps per row of the figure.
    """
    plt = _pyplot()
    n = len(examples)
    if n == 0:
        raise ValueError("`examples` must hold at least one heatmap.")
    rows = (n + columns - 1) // columns
    width = max(len(src) for _, src, _ in examples)
    height = max(len(tgt) for _, _, tgt in examples)
    fig, axes = plt.subplots(
        rows,
        columns,
        figsize=(columns * (1.5 + 0.45 * width), rows * (1.5 + 0.4 * height)),
        squeeze=False,
    )
    for ax, (weights, src, tgt) in zip(axes.flat, examples):
        attention_heatmap(weights, src, tgt, ax=ax)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path

"""Pictures of attention: heatmaps of alignment weights.

Needs matplotlib (`pip install "kerattn[plot]"`).
"""

import numpy as np

from kerattn import checks

__all__ = ["attention_heatmap", "save_attention_heatmaps", "attention_overlay", "blend",
           "document_highlight"]


def _pyplot():
    # No matplotlib.use(): the notebook's inline backend stays, and without
    # a display matplotlib falls back to Agg by itself.
    return checks.installed("matplotlib.pyplot", "plot", "kerattn.plot")


def _finish(plt, fig, path):
    """Lay out `fig`; save it to `path` and close it (or return it if None)."""
    fig.tight_layout()
    if path is None:
        return fig
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


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
    checks.rank("weights", weights.shape, (2,), "(Tq, Tv)")
    rows, cols = len(target_tokens), len(source_tokens)
    checks.require(
        weights.shape[0] >= rows and weights.shape[1] >= cols, "weights",
        f"at least ({rows}, {cols}) in shape, the sizes of `target_tokens` "
        "and `source_tokens`", weights.shape)
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

    Returns:
        `path`.

    Example:

    >>> import numpy as np
    >>> examples = [(np.eye(2), ["Open", "%s"], ["Ouvrir", "%s"]),
    ...             (np.full((1, 2), 0.5), ["File", "missing"], ["Fichier"])]
    >>> save_attention_heatmaps(examples, "attention.png")
    'attention.png'
    """
    plt = _pyplot()
    checks.some("examples", examples, "one heatmap")
    n = len(examples)
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
    return _finish(plt, fig, path)


def _upsample(weights, shape):
    """A `(h, w)` map stretched (nearest) over an image of `shape[:2]`."""
    weights = np.asarray(weights, "float64")
    if weights.ndim == 1:
        weights = weights[None, :]
    rows = np.minimum(np.arange(shape[0]) * weights.shape[0] // shape[0],
                      weights.shape[0] - 1)
    cols = np.minimum(np.arange(shape[1]) * weights.shape[1] // shape[1],
                      weights.shape[1] - 1)
    return weights[rows][:, cols]


# The overlay's tint (orange): weight shows as colour, the image stays
# visible under it.
_TINT = np.array([1.0, 0.45, 0.0])


def blend(image, weights, alpha=0.6):
    """The image with an attention map alpha-blended over it, as RGB.

    Each pixel is `(1 - a) * gray + a * tint`, with `a = alpha * w / max w`:
    where the map gives no weight the image is untouched, and where it gives
    the most the tint covers `alpha` of it, so the digit under the weight
    stays visible (Xu et al.'s Figure 3 shows the same).

    Args:
        image: `(H, W)` or `(H, W, 1)` array, any range (scaled to [0, 1]).
        weights: a `(h, w)` (or `(L,)`) map, stretched over the image.
        alpha: the most opacity the tint reaches, in [0, 1].

    Returns:
        `(H, W, 3)` float RGB in [0, 1].

    Example:

    >>> rgb = blend(np.eye(4), np.array([[0.0, 1.0]]), alpha=0.5)
    >>> rgb.shape, rgb[0, 0].tolist(), rgb[0, 3].tolist()
    ((4, 4, 3), [1.0, 1.0, 1.0], [0.5, 0.225, 0.0])
    """
    checks.number("alpha", alpha, 0.0, 1.0)
    image = np.asarray(image, "float64")
    if image.ndim == 3 and image.shape[-1] == 1:
        image = image[..., 0]
    checks.rank("image", image.shape, (2,), "(H, W)")
    low, high = image.min(), image.max()
    gray = (image - low) / (high - low) if high > low else np.zeros_like(image)
    w = _upsample(weights, image.shape)
    a = alpha * (w / w.max() if w.max() > 0 else w)
    return (1.0 - a[..., None]) * gray[..., None] + a[..., None] * _TINT


def attention_overlay(image, maps, words, path=None, alpha=0.6):
    """Overlay each word's attention map on the image (Xu et al., Figure 3),
    alpha-blended (`blend`) so that the digit stays visible under it.

    Args:
        image: `(H, W)` or `(H, W, C)` array.
        maps: `(words, h, w)` attention maps over the annotation grid (a
            `Captioner` returns them), stretched over the image.
        words: the words, one per map.
        path: optional PNG file to write; the figure is returned otherwise.
        alpha: the most opacity the overlay reaches (where a map is
            largest; none where it is zero).

    Returns:
        `path`, or the matplotlib figure when `path` is None.

    Example:

    >>> import numpy as np
    >>> image = np.random.rand(8, 45)
    >>> maps = np.random.dirichlet(np.ones(22), size=(3, 4))   # 3 words, 4 x 22
    >>> attention_overlay(image, maps, ["six", "five", "</s>"], "overlay.png")
    'overlay.png'
    """
    plt = _pyplot()
    image = np.asarray(image, "float64")
    if image.ndim == 3 and image.shape[-1] == 1:
        image = image[..., 0]
    maps = np.asarray(maps)
    checks.same("maps", len(maps), "words", len(words), "length")
    n = len(words) + 1
    fig, axes = plt.subplots(n, 1, figsize=(1.2 + image.shape[1] / 6,
                                            n * (0.4 + image.shape[0] / 6)),
                             squeeze=False)
    axes[0, 0].imshow(image, cmap="gray")
    axes[0, 0].set_title("input", fontsize=8)
    for ax, weights, word in zip(axes[1:, 0], maps, words):
        ax.imshow(blend(image, weights, alpha), interpolation="nearest")
        ax.set_title(str(word).replace("\u2581", ""), fontsize=8)
    for ax in axes.flat:
        ax.axis("off")
    return _finish(plt, fig, path)


def document_highlight(sentences, word_weights, sentence_weights, path=None,
                       title=None, width=90):
    """Highlight a document's words and sentences by their HAN weights.

    As Figure 5 of Yang et al. (2016): a bar per sentence shows the sentence
    weight, and each word's background its word weight (scaled by the
    square root of its sentence's weight, as the paper does, so that words
    in unimportant sentences fade).

    Args:
        sentences: list of word lists (as the model read them).
        word_weights: `(S, W)` array; sentence_weights: `(S,)` array.
        path: optional PNG file to write; the figure is returned otherwise.
        title: optional title (e.g. the predicted and true label).
        width: characters per drawn line.

    Returns:
        `path`, or the matplotlib figure when `path` is None.

    Example:

    >>> import numpy as np
    >>> sentences = [["a", "fast", "game", "."], ["by", "kenta", "cho", "."]]
    >>> word_weights = np.array([[0.1, 0.5, 0.3, 0.1], [0.2, 0.4, 0.3, 0.1]])
    >>> figure = document_highlight(sentences, word_weights, np.array([0.8, 0.2]),
    ...                             title="games")
    >>> type(figure).__name__
    'Figure'
    """
    plt = _pyplot()
    word_weights = np.asarray(word_weights, "float64")
    sentence_weights = np.asarray(sentence_weights, "float64")
    lines = []  # (sentence index, [(word, weight)])
    for s, words in enumerate(sentences[: len(sentence_weights)]):
        line, length = [], 0
        for w, word in enumerate(words[: word_weights.shape[1]]):
            if line and length + len(word) + 1 > width:
                lines.append((s, line))
                line, length = [], 0
            line.append((word, word_weights[s, w] * np.sqrt(sentence_weights[s])))
            length += len(word) + 1
        lines.append((s, line))
    fig, ax = plt.subplots(figsize=(width * 0.09 + 1, 0.32 * len(lines) + 0.8))
    ax.axis("off")
    ax.set_xlim(0, width + 8)
    ax.set_ylim(len(lines), -1)
    top = max((wt for _, line in lines for _, wt in line), default=1.0) or 1.0
    last = None
    for row, (s, line) in enumerate(lines):
        if s != last:
            ax.barh(row, 6 * sentence_weights[s], left=0, height=0.7, color="tab:blue")
            last = s
        x = 8
        for word, weight in line:
            ax.text(x, row, word, fontsize=8, va="center", family="monospace",
                    bbox=dict(facecolor=(1.0, 0.2, 0.2, min(1.0, weight / top)),
                              edgecolor="none", pad=1))
            x += len(word) + 1
    if title:
        ax.set_title(title, fontsize=9)
    return _finish(plt, fig, path)

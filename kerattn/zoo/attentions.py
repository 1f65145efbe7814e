"""The attentions of the zoo's recurrent decoders, in one table.

`luong_nmt(attention=name)` and `bahdanau_nmt(attention=name)` build their
attention layer with `make(name, energy, ...)`, which looks `name` up in
`ATTENTIONS`: a new family is one entry here, a function of the builder's
energy and sizes that returns the layer (named "attention", the name the
models' `encode` / `step`, the run folders and the plots look for).

What a factory is given:

- `energy`: the score of the builder's paper. "additive" is Bahdanau et
  al.'s `v^T tanh(W s + U h)` with a hidden layer of `units`; "luong" is
  Luong et al.'s `score` ("dot", "general", "concat", "location"), and
  the families with an energy of their own take its multiplicative form
  (`energy="luong"` of the monotonic layers).
- `units`: the hidden size of an additive score (Bahdanau's alignment
  model; the decoder's width in `luong_nmt`).
- `score`, `max_source_length`: Luong's score and its location score's
  longest source; `window`: local attention's `D`; `chunk_size`: MoChA's
  `w`.
- `options`: more keyword arguments of the layer, which it checks.

`READS_SCORE` names the families that score with Luong's `score` (the
others refuse one in `luong_nmt`).
"""

from kerattn import checks
from kerattn.layers import (BahdanauAttention, DynamicConvolutionAttention,
                            ForwardAttention, GMMAttention,
                            HardMonotonicAttention, LocalAttention,
                            LocationSensitiveAttention, LuongAttention,
                            MultiHeadLocationAttention,
                            MonotonicChunkwiseAttention,
                            StepwiseMonotonicAttention)

ENERGIES = ("additive", "luong")


def _content(energy, units, score, max_source_length, coverage=False, **options):
    if energy == "additive":
        return BahdanauAttention(units, coverage=coverage, name="attention",
                                 **options)
    return LuongAttention(score, max_length=max_source_length,
                          coverage=coverage, name="attention", **options)


def _global(energy, units=None, score=None, max_source_length=None,
            options=None, **_):
    """Content-based attention over the whole source: Bahdanau et al.'s
    additive score, or Luong et al.'s global attention with its `score`."""
    return _content(energy, units, score, max_source_length, **(options or {}))


def _coverage(energy, units=None, score=None, max_source_length=None,
              options=None, **_):
    """The content score plus See et al.'s (2017) coverage term `w_c c^i`
    (eq. 11), on Bahdanau's score or Luong's concat score."""
    return _content(energy, units, score, max_source_length, coverage=True,
                    **(options or {}))


def _location_sensitive(energy, units=None, options=None, **_):
    """Chorowski et al.'s (2015) location-sensitive attention, an additive
    score of `units` whatever the builder's energy."""
    return LocationSensitiveAttention(units, name="attention", **(options or {}))


def _monotonic_size(energy, units):
    return {"energy": "luong"} if energy == "luong" else {"units": units}


def _hard_monotonic(energy, units=None, options=None, **_):
    """Raffel et al.'s (2017) hard monotonic attention on the builder's
    energy."""
    return HardMonotonicAttention(name="attention", **_monotonic_size(energy, units),
                                  **(options or {}))


def _stepwise(energy, units=None, options=None, **_):
    """He et al.'s (2019) stepwise monotonic attention on the builder's
    energy."""
    return StepwiseMonotonicAttention(name="attention",
                                      **_monotonic_size(energy, units),
                                      **(options or {}))


def _mocha(energy, units=None, chunk_size=2, options=None, **_):
    """Chiu and Raffel's (2018) MoChA on the builder's energy."""
    return MonotonicChunkwiseAttention(chunk_size=chunk_size, name="attention",
                                       **_monotonic_size(energy, units),
                                       **(options or {}))


def _gmm(energy, options=None, **_):
    """Graves' (2013) / Battenberg et al.'s (2020) GMM attention, v2b by
    default: location only, whatever the builder's energy."""
    return GMMAttention(name="attention", **(options or {}))


def _dca(energy, options=None, **_):
    """Battenberg et al.'s (2020) dynamic convolution attention: location
    only, whatever the builder's energy."""
    return DynamicConvolutionAttention(name="attention", **(options or {}))


def _forward(agent):
    def forward(energy, units=None, options=None, **_):
        """Zhang et al.'s (2018) forward attention on a location-sensitive
        score of `units`, with or without the transition agent."""
        return ForwardAttention(units, transition_agent=agent, name="attention",
                                **(options or {}))
    return forward


def _multi_head_location(energy, units=None, options=None, **_):
    """ESPnet's multi-head location attention (`AttMultiHeadLoc`): 4 heads
    of `units / 4` (at least 1) unless `options` say otherwise."""
    options = dict(options or {})
    heads = options.pop("num_heads", 4)
    key_dim = options.pop("key_dim", max(1, (units or heads) // heads))
    options.setdefault("location", True)
    return MultiHeadLocationAttention(heads, key_dim, name="attention", **options)


def _local(mode):
    def local(energy, score=None, window=10, options=None, **_):
        """Luong et al.'s local attention (section 3.2) with their `score`."""
        return LocalAttention(mode, window=window, score=score, name="attention",
                              **(options or {}))
    return local


# name -> factory(energy, units=, score=, max_source_length=, window=,
# chunk_size=, options=) -> the layer.
ATTENTIONS = {
    "global": _global,
    "coverage": _coverage,
    "location-sensitive": _location_sensitive,
    "hard-monotonic": _hard_monotonic,
    "mocha": _mocha,
    "stepwise-monotonic": _stepwise,
    "gmm": _gmm,
    "dca": _dca,
    "forward": _forward(None),
    "forward-ta": _forward("move"),
    "multi-head-location": _multi_head_location,
    "local-m": _local("monotonic"),
    "local-p": _local("predictive"),
}
# The families that score with Luong's `score`.
READS_SCORE = ("global", "coverage", "local-m", "local-p")


def make(name, energy, **spec):
    """The attention layer `name` of `ATTENTIONS` for a builder whose score
    is `energy` (see the module docstring for `spec`)."""
    checks.one_of("attention", name, list(ATTENTIONS))
    checks.one_of("energy", energy, ENERGIES)
    return ATTENTIONS[name](energy, **spec)

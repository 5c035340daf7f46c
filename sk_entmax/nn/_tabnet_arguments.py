"""TabNet's architecture arguments and what each may be, stated once.

The blocks of :mod:`sk_entmax.nn.tabnet_blocks` and the network check their own arguments
with these constraints, and the TabNet estimators' parameters of the same names are these
constraints (:data:`sk_entmax._parameters.TABNET_CONSTRAINTS` reads them). Plain Python in
the vocabulary of :mod:`sk_entmax.entmax.constraints`, no torch: the estimators' parameter
table imports it without importing the network.
"""

from __future__ import annotations

from sk_entmax.entmax.constraints import Boolean, Integer, Options, Real

__all__ = ["ARGUMENTS", "ENTMAX_ALPHA", "ENTMAX_MODES"]

ENTMAX_MODES = ("sparsemax", "entmax15", "constant", "adaptive")
#: ``entmax_alpha``: the alpha of "constant" mode, the start of "adaptive" mode's
ENTMAX_ALPHA = Real(1.0, 2.0, note="1 softmax, 1.5 entmax15, 2 sparsemax")
#: TabNet's architecture arguments and what each may be, stated once: the blocks and the
#: network check their own with these, and TabNetEntmaxClassifier's parameters of the same
#: names are these constraints
ARGUMENTS = {
    "n_d": Integer(1),
    "n_a": Integer(1),
    "n_steps": Integer(1),
    "gamma": Real(1.0),
    "n_independent": Integer(0),
    "n_shared": Integer(0),
    "momentum": Real(0.0, 1.0),
    "virtual_batch_size": Integer(2),
    "entmax_mode": Options(ENTMAX_MODES),
    "entmax_alpha": ENTMAX_ALPHA,
    "faithful_masks": Boolean(),
}

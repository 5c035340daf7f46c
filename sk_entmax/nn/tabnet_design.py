"""TabNet's mask design: where the first mask comes from and how the columns are chosen, as
one value.

:class:`MaskDesign` is the one argument of :class:`~sk_entmax.nn.TabNet` that says what a
zero in its masks proves. It depends on where the first mask comes from:

not ``faithful`` (the paper's design, and pytorch-tabnet's)
    the first step's attention features come from a feature transformer that reads *every*
    feature, so every later mask depends on every feature: a feature whose mask is 0 at
    every step still moves the masks, and through them the prediction. A zero says only
    that the step did not multiply the feature into its decision.
``faithful``
    the first step's mask is a learned, input-independent distribution over the features
    (``mapping(first_mask_logits)``), and each step reads ``M * X`` with the unmasked entries
    set to exactly 0 (``where(M > 0, X, 0)``, so not even an infinite or NaN value gets
    through). Each later mask is computed from the previous step's output, which read only
    masked features. So a row's prediction depends on X only through the features in the
    union of its step masks: changing a feature whose mask is 0 at every step cannot change
    that row's scores, bit for bit (in evaluation mode, where every operation is per row).
    The columns of one original feature (an embedding, a missing indicator) are certified
    together: the feature is unread when all of its columns are. :meth:`TabNet.never_read`
    gives that certificate.

    How much of a table it covers depends on how sparse the masks are. The first mask's
    logits get little signal early on (the masked values go through batch norms), so they
    drift at the optimizer's step size; mapped as they are (no ``warmup``), that drift
    zeroed features at random in sparsemax mode (whose zero threshold from a uniform mask
    is ``1 / (d - 1)``: a stalled fit when the informative ones went) and none in entmax15
    and adaptive mode (thresholds ``2 / sqrt(d - 1)`` and wider), which then certified
    nothing. With a ``warmup`` the first mask's logits are scaled so that a gap of ``1 / k``
    drops a feature in every mode (:meth:`TabNet.first_mask_scale`), ``k`` growing from 1
    to ``FIRST_MASK_SHARPNESS`` (30) over the warm-up: the mask stays dense while its
    logits learn which features matter, then sharpens onto them. The later masks' scores
    are multiplied by ``1 / (alpha - 1)``, which gives alpha-entmax sparsemax's zeros, and
    the regulariser is the entropy of the steps' mean mask, whose support is the features
    the row reads. Every zero is still an exact zero of the mapping: nothing is cut
    afterwards.

    The first mask's gradient says little about which features matter (its values scale
    inputs that batch norms then normalise: on titanic the sharpened mask settled on
    ``passengerClass`` or ``age`` instead of ``sex`` in 1 of 6 to 5 of 10 seeds). With a
    ``budget`` (the estimators' design) the columns are chosen on the loss instead, by
    backward elimination during the warm-up (:mod:`sk_entmax.nn.tabnet_selection`): the
    first mask is uniform over the columns kept and every later step's mask is restricted
    to them, so every row's certificate is every dropped column. With a
    ``first_step_share`` the certificate is per row: the first step narrows onto the
    columns the typical row needs, and the later steps choose per row, from what the row
    has read so far, among the other kept columns. With ``step_rest`` each later step may
    also read nothing (its *rest*), so a row whose needs the earlier steps met reads no
    more.

:func:`saved_design` reads the flat arguments that files saved before the design was one
value hold. Plain Python, no torch.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from sk_entmax.entmax.constraints import AnyOf, Boolean, Integer, Options, Real, check

__all__ = [
    "FIRST_MASK_SHARPNESS",
    "FIRST_MASK_WARMUP",
    "LEGACY_ARGUMENTS",
    "PAPER",
    "WARMUP_SHARE",
    "MaskDesign",
    "first_mask_warmup",
    "saved_design",
]

#: the scale the first mask's logits reach at the end of the warm-up, in units where a gap
#: of 1 drops a feature from a uniform mask (see :meth:`TabNet.first_mask_scale`)
FIRST_MASK_SHARPNESS = 30.0
#: the most training steps the estimators' faithful TabNets take to choose the columns they
#: read (their warm-up, the default of their ``mask_warmup``); a shorter fit's is
#: ``WARMUP_SHARE`` of its planned steps
FIRST_MASK_WARMUP = 600
#: the share of a fit's planned steps its warm-up takes, at most its ``mask_warmup``
WARMUP_SHARE = 2 / 3

_WARMUP = AnyOf(Options((None,)), Integer(1))
_SHARE = AnyOf(Options((None,)), Real(0.0, 1.0, low_open=True))
_OWNER = "MaskDesign"


def first_mask_warmup(steps: int | None, most: int = FIRST_MASK_WARMUP) -> int:
    """The warm-up of a faithful fit of ``steps`` training steps.

    ``WARMUP_SHARE`` (two thirds) of the planned steps, at most ``most``, so that a short
    fit chooses its columns too and then trains on them; an open-ended fit (``steps``
    None: a ``partial_fit`` net) takes ``most``.

    Parameters
    ----------
    steps : int or None
        The optimizer steps the fit plans (``max_epochs`` times the batches of an epoch).
    most : int, default=FIRST_MASK_WARMUP
        The longest warm-up (the estimators' ``mask_warmup``).

    Returns
    -------
    int
        At least 1.
    """
    if steps is None:
        return most
    return max(1, min(most, math.ceil(WARMUP_SHARE * steps)))


@dataclass(frozen=True)
class MaskDesign:
    """What a TabNet's masks are built to prove, as one value (see the module docstring).

    Parameters
    ----------
    faithful : bool, default=False
        Start from a learned, input-independent first mask instead of the paper's
        ``initial_splitter``, each step reading only the features its mask keeps, so that
        a zero in every step's mask proves the feature was not read.
    warmup : int or None, default=None
        With ``faithful``: the training steps over which the first mask sharpens (at
        least 1); every mask's scores are scaled so that each mode has sparsemax's zeros,
        and the regulariser is the entropy of the steps' mean mask. None: the first mask
        is the mapping of its logits, the regulariser the mean of the steps' entropies.
    budget : float or None, default=None
        With a ``warmup``: the share of the training loss, in (0, 1], that the columns
        the backward elimination drops may cost in all. None: the first mask is learned
        by gradient, then sharpened.
    first_step_share : float or None, default=None
        With a ``budget``: the first step narrows onto the kept columns whose typical
        loss rise is at least this share, in (0, 1], of the largest. None: the first step
        reads every kept column.
    step_rest : bool, default=False
        With a ``warmup``: each later step's mapping also takes a learned *rest* logit,
        so that a step may read nothing.

    Attributes
    ----------
    sharpened : bool
        ``faithful`` with a ``warmup``: the first mask sharpens, and the fit's objective
        settles only when the warm-up has ended.
    selecting : bool
        ``sharpened`` with a ``budget``: the columns are chosen by backward elimination.
    rests : bool
        ``sharpened`` with ``step_rest``: the later steps have their rest logits.

    Examples
    --------
    >>> from sk_entmax.nn.tabnet_design import MaskDesign
    >>> design = MaskDesign(faithful=True, warmup=60, budget=0.03)
    >>> design.sharpened, design.selecting
    (True, True)
    >>> MaskDesign().faithful
    False
    """

    faithful: bool = False
    warmup: int | None = None
    budget: float | None = None
    first_step_share: float | None = None
    step_rest: bool = False
    sharpened: bool = field(init=False, repr=False, compare=False)
    selecting: bool = field(init=False, repr=False, compare=False)
    rests: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        check("faithful", self.faithful, Boolean(), _OWNER)
        check("warmup", self.warmup, _WARMUP, _OWNER)
        check("budget", self.budget, _SHARE, _OWNER)
        check("first_step_share", self.first_step_share, _SHARE, _OWNER)
        check("step_rest", self.step_rest, Boolean(), _OWNER)
        sharpened = self.faithful and self.warmup is not None
        object.__setattr__(self, "sharpened", sharpened)
        object.__setattr__(self, "selecting", sharpened and self.budget is not None)
        object.__setattr__(self, "rests", sharpened and self.step_rest)

    @classmethod
    def of(cls, value: MaskDesign | Mapping[str, Any] | None) -> MaskDesign:
        """Read ``value`` as a design.

        Parameters
        ----------
        value : MaskDesign, mapping or None
            A design (returned as it is), the mapping of a design's fields (the form a
            model file stores), or None (the paper's design).

        Returns
        -------
        MaskDesign
            The design.

        Raises
        ------
        TypeError
            When ``value`` is none of these.
        """
        if value is None:
            return PAPER
        if isinstance(value, cls):
            return value
        if isinstance(value, Mapping):
            return cls(**value)
        raise TypeError(
            f"TabNet's mask_design must be a MaskDesign, a mapping of its fields or None, "
            f"got {value!r}"
        )

    def as_fields(self) -> dict[str, Any]:
        """Give the design's fields.

        Returns
        -------
        dict
            Each field's name and value (what :meth:`of` takes back).
        """
        return {f.name: getattr(self, f.name) for f in fields(self) if f.init}


#: the paper's design: the first step reads every feature
PAPER = MaskDesign()

#: the flat arguments of the design that files saved before it was one value hold, each
#: with the field of :class:`MaskDesign` it sets
LEGACY_ARGUMENTS = {
    "faithful_masks": "faithful",
    "first_mask_warmup": "warmup",
    "selection_budget": "budget",
    "first_step_share": "first_step_share",
    "step_rest": "step_rest",
}


def saved_design(arguments: dict[str, Any]) -> MaskDesign | None:
    """The design that the flat arguments of a file saved before the design was one value
    give (taken out of ``arguments``); None when ``arguments`` holds none of them.

    Parameters
    ----------
    arguments : dict
        A network's keyword arguments; the old ones (:data:`LEGACY_ARGUMENTS`) are removed.
    """
    old = {name: arguments.pop(name) for name in LEGACY_ARGUMENTS if name in arguments}
    if not old:
        return None
    return MaskDesign(**{LEGACY_ARGUMENTS[name]: value for name, value in old.items()})

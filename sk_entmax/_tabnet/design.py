"""The TabNet estimators' parameters as the network's mask design, mapped in one place: the
only module that reads ``faithful_masks`` (the rest of a fit asks the design)."""

from __future__ import annotations

from typing import Any

from sk_entmax.nn.tabnet_design import MaskDesign, first_mask_warmup
from sk_entmax.nn.tabnet_selection import FIRST_STEP_SHARE, SELECTION_BUDGET

__all__ = ["mask_design"]


def mask_design(params: dict[str, Any], steps: int | None, selects: bool = True) -> MaskDesign:
    """The :class:`~sk_entmax.nn.tabnet_design.MaskDesign` of a TabNet estimator's fit.

    ``faithful_masks=False`` is the paper's design. ``True`` is the estimators' faithful
    design: a warm-up of two thirds of the fit's planned steps, at most ``mask_warmup``
    (600 by default), and, when the
    task ``selects`` its columns on its loss, the selection's budget
    (``SELECTION_BUDGET``), the first step's share (``FIRST_STEP_SHARE``) and the later
    steps' rests. A pretrainer has no task loss to choose columns by: its first mask is
    learned by gradient.

    Parameters
    ----------
    params : dict
        The estimator's checked parameters.
    steps : int or None
        The optimizer steps the fit plans (None: open-ended, a ``partial_fit`` net).
    selects : bool, default=True
        Whether the task chooses its columns on its loss (False for the pretrainer).

    Returns
    -------
    MaskDesign
    """
    if not params["faithful_masks"]:
        return MaskDesign()
    warmup = first_mask_warmup(steps, params["mask_warmup"])
    if not selects:
        return MaskDesign(faithful=True, warmup=warmup)
    return MaskDesign(
        faithful=True,
        warmup=warmup,
        budget=SELECTION_BUDGET,
        first_step_share=FIRST_STEP_SHARE,
        step_rest=True,
    )

"""What a network's stored tensors look like, as its class declares them for persistence.

Each network class of :mod:`sk_entmax.nn` states, next to its code, a :class:`StateSpec`
(its class attribute ``state_spec``): the forms its tensors' names can take
(``layers.<i>.weight``), and for each constructor argument its kind and which stored tensors
bound it (:class:`Argument`, :class:`Extent`). :mod:`sk_entmax.persistence` reads the
declaration to check a file before it builds anything; the network itself never does. Plain
Python (no torch, no scikit-learn), so ``nn`` depends on nothing above it: these are data that
persistence interprets.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = [
    "BOOL",
    "INDEX",
    "MAX_INT",
    "REAL",
    "STR",
    "Argument",
    "Extent",
    "StateSpec",
    "name_form",
    "name_forms",
]

#: the largest int a network argument may hold (and the extent that bounds nothing)
MAX_INT = 2**31 - 1
#: an index in a tensor name (``layers.2.weight``)
INDEX = re.compile("[0-9]+")


def name_form(name: str) -> str:
    """A tensor name with each index as ``<i>``: ``layers.2.weight`` -> ``layers.<i>.weight``."""
    return INDEX.sub("<i>", name)


def name_forms(*templates: str) -> frozenset[str]:
    """Every name form the templates stand for, each ``(a|b)`` in a template being either."""
    out: set[str] = set()
    for template in templates:
        parts = re.split(r"\(([^()]*)\)", template)  # literal, choices, literal, ...
        choices = [[p] if i % 2 == 0 else p.split("|") for i, p in enumerate(parts)]
        out.update("".join(pick) for pick in itertools.product(*choices))
    return frozenset(out)


@dataclass(frozen=True)
class Extent:
    """How far the stored tensors of one name form (or of one name) let a network argument
    go.

    With ``axis``: the largest extent of that axis among the non-empty stored tensors of the
    form (an empty tensor holds nothing, whatever its shape says). Without: how many tensors
    of the form are stored, less ``less``. ``absent`` is the extent when the file stores no
    tensor of the form (an argument that then sizes nothing, such as ``cat_emb_dims``
    without categorical columns); None refuses every size.
    """

    form: str
    axis: int | None = None
    less: int = 0
    absent: int | None = None

    def of(self, shapes: Mapping[str, list[tuple[int, ...]]]) -> int:
        """The extent, from the stored shapes by name form (and by name)."""
        found = shapes.get(self.form, [])
        if not found and self.absent is not None:
            return self.absent
        if self.axis is None:
            return max(len(found) - self.less, 0)
        return max((s[self.axis] for s in found if len(s) > self.axis and math.prod(s)), default=0)

    def describe(self, shapes: Mapping[str, list[tuple[int, ...]]]) -> str:
        """The extent in words, for an error message."""
        if self.axis is None:
            less = f" less {self.less}" if self.less else ""
            return f"the {len(shapes.get(self.form, []))} stored tensors {self.form}{less}"
        extent = self.of(shapes)
        if not extent:
            return f"0: the file stores no non-empty {self.form}"
        return f"{extent}, the extent of axis {self.axis} of the stored {self.form}"


@dataclass(frozen=True)
class Argument:
    """One network argument: ``kind`` (int, ints, int or ints, real, real or None, reals or
    None, bool, str), and for ints what bounds each (``each``; None: any int up to
    :data:`MAX_INT`) and the number of entries of a sequence (``length``)."""

    kind: str
    each: Extent | None = None
    length: Extent | None = None


#: the arguments that size no tensor, by kind
REAL, BOOL, STR = Argument("real"), Argument("bool"), Argument("str")


@dataclass(frozen=True)
class StateSpec:
    """What persistence knows of a network class: the forms of its tensors' names (see
    :func:`name_forms`), and its arguments by name (every one its constructor takes)."""

    names: frozenset[str]
    arguments: dict[str, Argument]

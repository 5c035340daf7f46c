"""The network checks of :func:`~sk_entmax.persistence.load`, from the file's tensor names
and shapes alone, and the skeleton: the network the header describes, built on the meta device.

What each network class allows is its own declaration, ``state_spec`` (a
:class:`~sk_entmax.nn._tensor_spec.StateSpec`, next to its code in :mod:`sk_entmax.nn`); this
module interprets it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from sk_entmax._parameters import ALPHA
from sk_entmax.entmax.constraints import check as check_value
from sk_entmax.nn._tensor_spec import INDEX, MAX_INT, Extent, StateSpec, name_form
from sk_entmax.persistence._codec import _is_int
from sk_entmax.persistence._errors import _Invalid

# A network's size is in its arguments (n_d, n_steps, n_features, ...), its memory in the
# tensors they make. Before it builds anything, load checks both against what the file
# holds, from the tensors' names and shapes alone (safetensors reads them without reading the
# tensors):
#
# 1. names: every stored tensor (and alias) must be named as a tensor of a network of that
#    class can be (its state_spec.names): an extra tensor is refused before it can lend its
#    shape to a size;
# 2. arguments: each must be one the class takes, a plain value, and every int that sizes a
#    tensor at most what the stored tensors hold for it: the extent of an axis of the
#    non-empty tensors it sizes (n_d: the final layer's input width), or how many tensors it
#    makes (n_steps: one attention layer per step); so a size of N needs at least N stored
#    values, never an empty tensor of shape [N, 0];
# 3. skeleton: the network the arguments describe is built on PyTorch's meta device (shapes
#    only, no memory), and stopped as soon as it makes more tensors than the file holds
#    (stored ones and aliases, and _SKELETON_SLACK): its Python modules come with their
#    tensors, so the build is as small as the file, whatever the arguments multiply
#    (n_steps times n_independent);
# 4. the skeleton's tensors must be the stored ones, name for name, shape for shape.


_MAX_INT = MAX_INT
_WEIGHT_DTYPES = (torch.float32, torch.float64)
_LAYER_FACTORIES = frozenset({torch.empty, torch.zeros, torch.ones, torch.full, torch.tensor})
#: the skeleton may make this many tensors beyond the file's (stored and aliased), so that a
#: file that lacks a few is told which
_SKELETON_SLACK = 64


class _Skeleton(TorchFunctionMode):
    """Build a network's skeleton: every shape, no memory, at most ``limit`` tensors.

    Entered inside ``torch.device("meta")``, which puts every tensor the network makes on
    the meta device: it records shapes and dtypes and allocates nothing. torch.nn layers
    make their parameters and buffers with factory calls given ``device=None`` explicitly
    (their ``factory_kwargs``; :class:`~sk_entmax.nn.tabnet.GhostBatchNorm` does the same):
    each such call is one tensor of the network's state, and the build stops with
    :class:`_Invalid` at the first beyond ``limit``.
    """

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit
        self.made = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _LAYER_FACTORIES and "device" in kwargs and kwargs["device"] is None:
            self.made += 1
            if self.made > self.limit:
                raise _Invalid(
                    "the network arguments describe far more tensors than the file holds "
                    f"(stored and aliased, {self.limit - _SKELETON_SLACK}): the network is "
                    "not the one stored"
                )
            kwargs = {**kwargs, "device": "meta"}
        return func(*args, **kwargs)


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def _spec(module_cls: type) -> StateSpec:
    """What ``module_cls`` declares of its stored tensors and arguments."""
    return module_cls.state_spec


def _check_names(module_cls: type, stored: Mapping[str, tuple], aliases: Any) -> None:
    """Every stored tensor and alias named as a tensor of a ``module_cls`` can be."""
    module_name = module_cls.__name__
    if not isinstance(aliases, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in aliases.items()
    ):
        raise _Invalid("the tensor aliases are not a mapping of names to names")
    names = _spec(module_cls).names

    def known(name: str) -> bool:
        return "<" not in name and name_form(name) in names

    unknown = sorted(name for name in stored if not known(name))
    if unknown:
        raise _Invalid(
            f"the file holds {len(unknown)} tensor(s) no {module_name} has (not read): "
            f"{unknown[:5]}"
        )
    unknown = sorted({n for pair in aliases.items() for n in pair if not known(n)})
    if unknown:
        raise _Invalid(f"aliases name tensors no {module_name} has: {unknown[:5]}")


def _is_real(value: Any) -> bool:
    return (_is_int(value) and abs(value) <= _MAX_INT) or (
        isinstance(value, float) and math.isfinite(value)
    )


def _of_kind(kind: str, value: Any, items: list) -> bool:
    """Whether ``value`` (``items``: its entries, or itself) is of an argument ``kind``."""
    sequence = isinstance(value, (list, tuple))
    if kind == "int":
        return _is_int(value)
    if kind == "ints":
        return sequence and all(_is_int(v) for v in items)
    if kind == "int or ints":
        return all(_is_int(v) for v in items)
    if kind == "real":
        return _is_real(value)
    if kind == "real or None":
        return value is None or _is_real(value)
    if kind == "reals or None":
        return value is None or (sequence and all(_is_real(v) for v in items))
    if kind == "fields or None":  # a frozen value stored as its fields: names to scalars
        return value is None or (
            isinstance(value, dict)
            and all(isinstance(k, str) for k in value)
            and all(v is None or isinstance(v, (bool, int, float)) for v in value.values())
        )
    return isinstance(value, {"bool": bool, "str": str}[kind])


def _check_arguments(module_cls: type, kwargs: Any, stored: Mapping[str, tuple]) -> dict[str, Any]:
    """The network's keyword arguments: ones a ``module_cls`` takes, each a plain value of
    its kind, every size within what the stored tensors hold for it."""
    module_name = module_cls.__name__
    if not isinstance(kwargs, dict) or not all(isinstance(k, str) for k in kwargs):
        raise _Invalid("the network arguments are not a mapping of names to values")
    arguments = _spec(module_cls).arguments
    unknown = sorted(set(kwargs) - set(arguments))
    if unknown:
        raise _Invalid(f"network arguments {unknown[:5]} are not ones a {module_name} takes")
    # by name form, by indexed name, and by the name with only its last index as <i> (the
    # GLU layers of the first feature transformer: feature_transformers.0.layers.<i>...)
    shapes: dict[str, list[tuple[int, ...]]] = {}
    for name, (shape, _) in stored.items():
        form = name_form(name)
        indices = list(INDEX.finditer(name))
        last = name
        if indices:
            last = f"{name[: indices[-1].start()]}<i>{name[indices[-1].end() :]}"
        for key in dict.fromkeys((form, name, last)):
            shapes.setdefault(key, []).append(shape)

    def bounded(name: str, value: int, extent: Extent | None, what: str = "") -> None:
        limit = _MAX_INT if extent is None else min(extent.of(shapes), _MAX_INT)
        if abs(value) > limit:
            bound = "2**31 - 1" if extent is None else extent.describe(shapes)
            raise _Invalid(
                f"network argument {name}{what} = {value} exceeds {bound}: the network is "
                "not the one stored"
            )

    for name, value in kwargs.items():
        spec = arguments[name]
        sequence = isinstance(value, (list, tuple))
        items = list(value) if sequence else [value]
        if not _of_kind(spec.kind, value, items):
            raise _Invalid(f"network argument {name} = {value!r} is not {spec.kind}")
        if sequence and spec.length is not None and len(items) > spec.length.of(shapes):
            raise _Invalid(
                f"network argument {name} has {len(items)} entries, more than "
                f"{spec.length.describe(shapes)}: the network is not the one stored"
            )
        if spec.kind.startswith("int"):
            for i, item in enumerate(items):
                bounded(name, item, spec.each, f"[{i}]" if sequence else "")
    if "alpha" in kwargs:
        try:
            check_value("alpha", kwargs["alpha"], ALPHA)
        except ValueError as error:
            raise _Invalid(f"network argument {error}") from None
    return kwargs


def _skeleton(module_cls: type, kwargs: dict[str, Any], limit: int) -> torch.nn.Module:
    """The network ``kwargs`` build, on the meta device, with at most ``limit`` tensors."""
    try:
        with torch.device("meta"), _Skeleton(limit):
            return module_cls(**kwargs)
    except (TypeError, ValueError, RuntimeError, IndexError, OverflowError) as error:
        raise _Invalid(
            f"the network arguments do not build a {module_cls.__name__}: {error}"
        ) from None


def _match_tensors(
    expected: dict[str, tuple],
    stored: dict[str, tuple],
    aliases: Any,
    module_name: str,
) -> dict[str, str]:
    """Map each tensor of the network to the stored tensor it loads; refuse any mismatch."""
    if not isinstance(aliases, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in aliases.items()
    ):
        raise _Invalid("the tensor aliases are not a mapping of names to names")
    unknown = sorted(set(aliases) - set(expected))
    if unknown:
        raise _Invalid(f"aliases name tensors the network does not have: {unknown[:5]}")
    source = {name: aliases.get(name, name) for name in expected}
    needed = set(source.values())
    extra = sorted(set(stored) - needed)
    if extra:
        raise _Invalid(
            f"the file holds {len(extra)} tensor(s) the network does not have (not read): "
            f"{extra[:5]}"
        )
    missing = sorted(needed - set(stored))
    if missing:
        raise _Invalid(f"tensors of the network are missing from the file: {missing[:5]}")
    for name, (shape, dtype) in expected.items():
        stored_shape, stored_dtype = stored[source[name]]
        # weights may be float32 or float64 (a solver may train in either): the built network
        # takes the stored dtype, and load checks it again once built
        if stored_dtype != dtype and not (
            dtype.is_floating_point and stored_dtype in _WEIGHT_DTYPES
        ):
            raise _Invalid(
                f"tensor {name} is stored as {_dtype_name(stored_dtype)}; the network holds "
                f"{_dtype_name(dtype)} (nothing is cast)"
            )
        if stored_shape != shape:
            raise _Invalid(
                f"tensor {name} has shape {stored_shape} in the file but {shape} in the "
                f"{module_name} network the header describes"
            )
    return source

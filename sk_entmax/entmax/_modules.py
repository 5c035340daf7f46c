"""The base classes of the module twins of the core's functions: they hold the function's
arguments and call it, its parameter errors naming the module.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from sk_entmax.entmax.tracing import _CALLER, compiling

Output = torch.Tensor | tuple[torch.Tensor, torch.Tensor]


class _FunctionModule(nn.Module):
    """Base of the module twins of the functions here: it holds the function's arguments.

    A subclass names its functional twin in ``_function`` (a ``staticmethod``) and the
    arguments it hands on to it in ``_argument_names``, in the function's order. Its own
    ``__init__`` spells out the public signature and passes the values on by keyword; they
    are stored as attributes of those names, so that an ``nn.Parameter`` is registered (and
    learned) like any other.
    """

    _function: Callable[..., Output]
    _argument_names: tuple[str, ...] = ()
    return_support_size: bool = False

    def __init__(self, return_support_size: bool = False, **arguments: object) -> None:
        super().__init__()
        for name, value in arguments.items():
            setattr(self, name, value)
        self.return_support_size = return_support_size

    def _arguments(self) -> dict[str, object]:
        """The held arguments of ``_function``, by name."""
        return {name: getattr(self, name) for name in self._argument_names}

    def _call(self, *args: object, **kwargs: object) -> Output:
        """``_function(*args, **kwargs)``, its parameter errors naming this module's class."""
        if compiling():  # a ContextVar is out of torch.compile's reach: errors name owner
            return self._function(*args, **kwargs)
        token = _CALLER.set(type(self).__name__)  # called_as, without a generator's cost
        try:
            return self._function(*args, **kwargs)
        finally:
            _CALLER.reset(token)

    def _with_support(self, text: str) -> str:
        """``text`` followed by ``, return_support_size=True`` when that is set."""
        return text + (", return_support_size=True" if self.return_support_size else "")


class _MappingModule(_FunctionModule):
    """Module twin of a mapping: ``forward(X)`` applies ``_function`` with the held arguments.

    ``training`` follows the module's mode (the plain-op path in ``eval()`` mode) unless
    ``_passes_training`` is False, for the functions without that argument.
    """

    _passes_training: bool = True

    def forward(self, X: torch.Tensor) -> Output:
        """The mapping of ``X`` (and its support size, when asked for)."""
        arguments = self._arguments()
        if self._passes_training:
            arguments["training"] = self.training
        return self._call(X, **arguments, return_support_size=self.return_support_size)

    def extra_repr(self) -> str:
        held = (f"{name}={value!r}" for name, value in self._arguments().items())
        return self._with_support(", ".join(held))

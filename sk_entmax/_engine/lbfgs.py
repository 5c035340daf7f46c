"""L-BFGS with a strong-Wolfe line search, in torch, outside :mod:`torch.optim`.

The linear estimators' full-batch solver (:mod:`sk_entmax._engine.solver`) needs one quasi-Newton
run per fit. ``torch.optim.LBFGS`` would do, but building any :class:`torch.optim.Optimizer`
imports torch's compiler stack (``torch._dynamo``, about a second), which a user who fits
once pays on every run of their script. :class:`Lbfgs` is the same method without that
import: the usual two-loop recursion over the last ``history_size`` curvature pairs, scaled
by ``s'y / y'y``, and a line search that brackets a step meeting the strong Wolfe
conditions and narrows it by safeguarded cubic interpolation (Nocedal and Wright, Numerical
Optimization, algorithms 3.5, 3.6 and 7.4).

It has what skorch uses of an optimizer: ``param_groups`` (one group, whose ``lr`` scales
the first trial step of every line search), ``zero_grad``, ``step(closure)``,
``state_dict`` and ``load_state_dict``.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

import torch

__all__ = ["Lbfgs"]

#: the strong Wolfe constants: sufficient decrease (c1) and curvature (c2)
_C1, _C2 = 1e-4, 0.9
#: a step past the bracket's end grows at most this many times per trial
_EXTRAPOLATION = 10.0
#: a trial within this fraction of the bracket's width from either end is moved to its middle
_SAFEGUARD = 0.1


class Lbfgs(torch.optim.Optimizer):
    """Limited-memory BFGS over a set of tensors, one run per :meth:`step`.

    A :class:`torch.optim.Optimizer` whose ``add_param_group``, ``zero_grad``,
    ``state_dict`` and ``load_state_dict`` are its own: the base class's versions import
    torch's compiler stack the first time one of them runs.

    Parameters
    ----------
    params : iterable
        The tensors to optimize, or a list holding one parameter group (a dict with
        ``"params"``), as skorch passes them.
    lr : float, default=1.0
        The first trial step of each line search, relative to the quasi-Newton step (the
        very first search of a run starts at ``lr * min(1, 1 / ||g||_1)``).
    max_iter : int, default=20
        Iterations per :meth:`step`.
    max_eval : int or None, default=None
        Evaluations of the objective per :meth:`step` (``max_iter * 5 // 4`` when None).
    tolerance_grad : float, default=1e-7
        The run stops when the largest absolute gradient entry is at most this.
    tolerance_change : float, default=1e-9
        The run stops when the objective changes by at most this, relative to
        ``max(|f_old|, |f_new|, 1)`` (scipy's ``ftol``), or when the largest entry of a step
        is at most this.
    history_size : int, default=10
        Curvature pairs kept.
    line_search_fn : {"strong_wolfe"}, default="strong_wolfe"
        The line search; the only one there is.

    Attributes
    ----------
    param_groups : list of dict
        One group: ``"params"`` and the settings above.
    state : dict
        ``"n_iter"`` and ``"func_evals"``, counted over every :meth:`step` so far.
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1.0,
        max_iter: int = 20,
        max_eval: int | None = None,
        tolerance_grad: float = 1e-7,
        tolerance_change: float = 1e-9,
        history_size: int = 10,
        line_search_fn: str | None = "strong_wolfe",
    ) -> None:
        if line_search_fn != "strong_wolfe":
            raise ValueError(
                f"line_search_fn must be 'strong_wolfe', the only line search of Lbfgs; got "
                f"{line_search_fn!r}"
            )
        defaults = {
            "lr": lr,
            "max_iter": max_iter,
            "max_eval": max_iter * 5 // 4 if max_eval is None else max_eval,
            "tolerance_grad": tolerance_grad,
            "tolerance_change": tolerance_change,
            "history_size": history_size,
            "line_search_fn": line_search_fn,
            "differentiable": False,
        }
        super().__init__(params, defaults)
        self.state: dict[str, int] = {"n_iter": 0, "func_evals": 0}  # type: ignore[assignment]

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Set the one parameter group (its own settings over the defaults)."""
        if self.param_groups:
            raise ValueError("Lbfgs optimizes one parameter group (optimizer__param_groups)")
        params = param_group["params"]
        params = [params] if isinstance(params, torch.Tensor) else list(params)
        self.param_groups.append({**self.defaults, **param_group, "params": params})

    @property
    def _params(self) -> list[torch.Tensor]:
        return self.param_groups[0]["params"]

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear the parameters' gradients (``None``, or zeros in place)."""
        for p in self._params:
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                p.grad.detach_().zero_()

    def state_dict(self) -> dict[str, Any]:  # type: ignore[override]
        """The iteration and evaluation counts and the settings (no tensors)."""
        settings = {k: v for k, v in self.param_groups[0].items() if k != "params"}
        return {"state": dict(self.state), "param_groups": [settings]}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:  # type: ignore[override]
        """Restore what :meth:`state_dict` returned."""
        self.state = dict(state_dict["state"])
        self.param_groups[0].update(state_dict["param_groups"][0])

    def _point(self) -> torch.Tensor:
        return torch.cat([p.detach().reshape(-1) for p in self._params])

    def _gradient(self) -> torch.Tensor:
        return torch.cat(
            [
                torch.zeros(p.numel(), dtype=p.dtype, device=p.device)
                if p.grad is None
                else p.grad.detach().reshape(-1)
                for p in self._params
            ]
        )

    @torch.no_grad()
    def _place(self, x: torch.Tensor) -> None:
        offset = 0
        for p in self._params:
            n = p.numel()
            p.copy_(x[offset : offset + n].view_as(p))
            offset += n

    def step(self, closure: Callable[[], torch.Tensor]) -> torch.Tensor:  # type: ignore[override]
        """Run L-BFGS from the parameters' current values; leave them at the last accepted
        point.

        Parameters
        ----------
        closure : callable
            Clears the gradients, evaluates the objective at the parameters' values,
            accumulates its gradient into their ``.grad`` and returns it (a scalar tensor).

        Returns
        -------
        torch.Tensor
            The objective at the starting point.
        """
        settings = self.param_groups[0]
        run = _Run(self, closure, settings)
        return run.minimize()


class _Run:
    """One :meth:`Lbfgs.step`: the objective as a function of a flat point, and the loop."""

    def __init__(self, optimizer: Lbfgs, closure: Callable[[], torch.Tensor], settings: dict):
        self.optimizer = optimizer
        self.closure = closure
        self.lr = float(settings["lr"])
        self.max_iter = int(settings["max_iter"])
        self.max_eval = int(settings["max_eval"])
        self.tolerance_grad = float(settings["tolerance_grad"])
        self.tolerance_change = float(settings["tolerance_change"])
        self.history_size = int(settings["history_size"])
        self.evals = 0

    def evaluate(self, x: torch.Tensor) -> tuple[float, torch.Tensor]:
        """The objective and its gradient at ``x`` (the parameters are left at ``x``)."""
        self.optimizer._place(x)
        with torch.enable_grad():
            value = self.closure()
        self.evals += 1
        self.optimizer.state["func_evals"] += 1
        value = value.detach() if isinstance(value, torch.Tensor) else value
        return float(value), self.optimizer._gradient().clone()

    def direction(self, g: torch.Tensor, pairs: deque) -> torch.Tensor:
        """The two-loop recursion: minus the inverse-Hessian estimate times ``g``."""
        q = g.neg()
        if not pairs:
            return q
        alphas = []
        for s, y, rho in reversed(pairs):
            a = rho * float(s @ q)
            q.add_(y, alpha=-a)
            alphas.append(a)
        s, y, _ = pairs[-1]
        q.mul_(float(s @ y) / float(y @ y))
        for (s, y, rho), a in zip(pairs, reversed(alphas), strict=True):
            b = rho * float(y @ q)
            q.add_(s, alpha=a - b)
        return q

    def minimize(self) -> torch.Tensor:
        x = self.optimizer._point()
        f, g = self.evaluate(x)
        first_value = torch.tensor(f, dtype=torch.float64)
        if g.abs().max() <= self.tolerance_grad:
            return first_value
        pairs: deque = deque(maxlen=self.history_size)
        for n_iter in range(1, self.max_iter + 1):
            self.optimizer.state["n_iter"] += 1
            d = self.direction(g, pairs)
            gtd = float(g @ d)
            if gtd > -self.tolerance_change:  # no descent left along d
                break
            t = self.lr * (min(1.0, 1.0 / float(g.abs().sum())) if n_iter == 1 else 1.0)
            found = self.line_search(x, f, g, d, gtd, t)
            if found is None:  # no step decreased f enough: stay where we are
                self.optimizer._place(x)
                break
            t, f_new, g_new = found
            s = d.mul(t)
            y = g_new - g
            sy = float(s @ y)
            if sy > 1e-10:
                pairs.append((s, y, 1.0 / sy))
            x_old, f_old = x, f
            x, f, g = x_old + s, f_new, g_new
            if (
                self.evals >= self.max_eval
                or g.abs().max() <= self.tolerance_grad
                or s.abs().max() <= self.tolerance_change
                or abs(f_old - f) <= self.tolerance_change * max(abs(f_old), abs(f), 1.0)
            ):
                break
        self.optimizer._place(x)
        return first_value

    def line_search(
        self, x: torch.Tensor, f0: float, g0: torch.Tensor, d: torch.Tensor, gtd0: float, t: float
    ) -> tuple[float, float, torch.Tensor] | None:
        """A step ``t`` along ``d`` meeting the strong Wolfe conditions (or, when the
        evaluation budget runs out first, the best step that decreased f enough)."""
        prev = (0.0, f0, g0, gtd0)
        for trial in range(self.max_eval):
            if self.evals >= self.max_eval:
                break
            f_t, g_t = self.evaluate(x + d * t)
            gtd_t = float(g_t @ d)
            point = (t, f_t, g_t, gtd_t)
            if not math.isfinite(f_t):
                break
            if f_t > f0 + _C1 * t * gtd0 or (trial > 0 and f_t >= prev[1]):
                return self.zoom(x, f0, gtd0, d, low=prev, high=point)
            if abs(gtd_t) <= -_C2 * gtd0:
                return t, f_t, g_t
            if gtd_t >= 0:
                return self.zoom(x, f0, gtd0, d, low=point, high=prev)
            # still descending: extrapolate, at least a little and at most tenfold
            lower, upper = t + 0.01 * (t - prev[0]), t * _EXTRAPOLATION
            prev, t = point, _cubic_minimum(prev, point, lower, upper)
        return None if prev[0] == 0.0 else prev[:3]

    def zoom(
        self,
        x: torch.Tensor,
        f0: float,
        gtd0: float,
        d: torch.Tensor,
        low: tuple,
        high: tuple,
    ) -> tuple[float, float, torch.Tensor] | None:
        """Narrow ``[low, high]`` (``low`` decreased f enough and has the lower value) to a
        step meeting the strong Wolfe conditions."""
        d_max = float(d.abs().max())
        while self.evals < self.max_eval:
            a, b = sorted((low[0], high[0]))
            if (b - a) * d_max <= self.tolerance_change:
                break
            t = _cubic_minimum(low, high, a, b)
            if min(t - a, b - t) < _SAFEGUARD * (b - a):
                t = 0.5 * (a + b)
            f_t, g_t = self.evaluate(x + d * t)
            gtd_t = float(g_t @ d)
            point = (t, f_t, g_t, gtd_t)
            if f_t > f0 + _C1 * t * gtd0 or f_t >= low[1]:
                high = point
            else:
                if abs(gtd_t) <= -_C2 * gtd0:
                    return t, f_t, g_t
                if gtd_t * (high[0] - low[0]) >= 0:
                    high = low
                low = point
        return None if low[0] == 0.0 else low[:3]


def _cubic_minimum(one: tuple, two: tuple, lower: float, upper: float) -> float:
    """The minimizer in ``[lower, upper]`` of the cubic through two points' values and
    slopes (``(t, f, _, f')``); the interval's middle when the cubic has no minimum."""
    t1, f1, _, g1 = one
    t2, f2, _, g2 = two
    if t1 == t2:
        return 0.5 * (lower + upper)
    d1 = g1 + g2 - 3.0 * (f1 - f2) / (t1 - t2)
    square = d1 * d1 - g1 * g2
    if square < 0 or not math.isfinite(square):
        return 0.5 * (lower + upper)
    d2 = math.copysign(math.sqrt(square), t2 - t1)
    denominator = g2 - g1 + 2.0 * d2
    if denominator == 0:
        return 0.5 * (lower + upper)
    t = t2 - (t2 - t1) * (g2 + d2 - d1) / denominator
    return min(max(t, lower), upper)

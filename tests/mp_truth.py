"""The exact alpha-entmax by mpmath, the independent truth of the high-precision tests
(``tests/entmax/test_high_precision.py``, ``tests/test_exact_mapping.py``)."""

from __future__ import annotations

import math

import mpmath

NEG_INF = float("-inf")


def _truth_at(scores: list[float], alpha: float, dps: int) -> list:
    with mpmath.workdps(dps):
        x = [mpmath.mpf(v) for v in scores]
        beta = mpmath.mpf(alpha) - 1
        top = max(x)

        def p_at(t):
            return [(1 + beta * (v - t)) ** (1 / beta) if 1 + beta * (v - t) > 0 else 0 for v in x]

        lo, hi = top, top + 1 / beta  # the sum is >= 1 at lo, 0 at hi
        for _ in range(int(3.33 * dps) + 10):
            mid = (lo + hi) / 2
            if sum(p_at(mid)) >= 1:
                lo = mid
            else:
                hi = mid
        p = p_at(lo)
        total = sum(p)
        return [v / total for v in p]


def truth(row: list[float], alpha: float) -> list[float]:
    """alpha-entmax of ``row`` (``-inf`` entries map to 0) by mpmath bisection, with 40
    significant digits in the bases of the support: the precision grows with the smallest
    probability ``p`` by ``(alpha - 1) * log10(1 / p)`` digits."""
    scores = [v for v in row if v != NEG_INF]
    dps = 40
    while True:
        p = _truth_at(scores, alpha, dps)
        smallest = min(v for v in p if v > 0)
        need = 40 + max(0, math.ceil((alpha - 1) * -float(mpmath.log10(smallest))))
        if need <= dps:
            break
        dps = need
    values = iter(float(v) for v in p)
    return [next(values) if v != NEG_INF else 0.0 for v in row]

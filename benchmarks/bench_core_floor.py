"""Where the core's floor lies against softmax: the cost of one Newton pass, and of the whole.

Run from the repository root::

    PYTHONPATH=. python3 benchmarks/bench_core_floor.py [--threads 1] [--repeats 31]

Issue 17 asks for at most 4 times ``torch.softmax`` (forward+backward, float32, one thread)
at every shape and mapping of ``bench_core.py``. Softmax is one fused kernel each way; our
mappings find a threshold by Newton passes over the input, each a handful of eager ops
(a subtraction, a clamp, a power, two row sums and a few per-row ops), typically 3 to 8 of
them (``entmax_bisect``'s documentation). This script measures, on the benchmark's shapes and
inputs (``randn``, seed 0), with the public API only:

- ``pass``: the time of one pass, as the eager ops of a pass make it: ``[z - tau]_+`` and its
  two row sums (the mass and the support size) for sparsemax, with the square of it for
  1.5-entmax and with ``exp2((m - 1) log2(.))`` of it, clamped up to a normal floor, for
  alpha 1.33 (``m = 1 / (alpha - 1)``). The script runs these ops itself, on the input shifted
  to a row maximum of 0 (and scaled by ``alpha - 1``), at the start ``tau = -1``: a floor under
  one pass of the core, whose passes also take the few per-row ops;
- ``pass / softmax``: that pass over softmax's forward+backward in the same run; times the
  number of passes, a floor under the whole mapping (which adds the shift, the output, the
  backward and a few fresh tensors);
- ``measured / softmax``: the public mapping's forward+backward (``sparsemax``, ``entmax15``,
  ``entmax_bisect(X, 1.33)``) over softmax's;
- ``measured / pass``: the whole forward+backward in passes, to set beside the 3 to 8 passes
  the solver takes.

Every figure is the median of side-by-side timings (the order shuffled in each repeat). The
script also times one ``exp2(log2(.))`` over the input, the fractional power alpha 1.33
needs in every pass and in the backward.

How many passes the solver takes on an input, and the time of exactly one of the core's own
passes, cannot be measured through the public API: the pass cap and the solvers are private
to ``sk_entmax.entmax.activations``, and no documented hook (``n_iter`` sets the accuracy, and
below 24 switches to bisection; :func:`sk_entmax.entmax.algorithms.register_kernel` replaces
a case's implementation rather than instrumenting it) caps or counts the passes. The script
therefore times its own copy of a pass's ops instead of patching the core.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable
from functools import partial

import torch

import sk_entmax.entmax as ours

SHAPES = [(4096, 32), (1024, 1000), (64, 20000)]


# name: (the public mapping, its alpha: None for sparsemax)
MAPPINGS: dict[str, tuple[Callable[[torch.Tensor], torch.Tensor], float | None]] = {
    "sparsemax": (ours.sparsemax, None),
    "entmax15": (ours.entmax15, 1.5),
    "entmax_bisect a=1.33": (lambda X: ours.entmax_bisect(X, 1.33), 1.33),
}


def _one_pass(Zb: torch.Tensor, tau: torch.Tensor, m: float | None, D, G) -> None:
    """The eager ops of one Newton pass at threshold ``tau`` (see the module docstring)."""
    torch.sub(Zb, tau, out=D).relu_()
    if m is None:  # sparsemax: the mass and the support size
        D.sum(-1, keepdim=True)
        D.sign_().sum(-1, keepdim=True)
    elif m == 2:  # 1.5-entmax: the sum of [.]_+ and of its square
        D.sum(-1, keepdim=True)
        D.mul_(D).sum(-1, keepdim=True)
    else:  # g = [.]_+ ** (m - 1) by exp2(log2(.)), then p = g [.]_+
        floor = 2.0 ** (-120 / max(m - 1, 1))
        torch.clamp(D, min=floor, out=G).log2_().mul_(m - 1).exp2_()
        G.sum(-1, keepdim=True)
        G.mul_(D).sum(-1, keepdim=True)


def _seconds(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _fwd_bwd(fn: Callable[[torch.Tensor], torch.Tensor], X: torch.Tensor, dY: torch.Tensor):
    X = X.detach().requires_grad_()
    fn(X).backward(dY)


def _softmax(X: torch.Tensor) -> torch.Tensor:
    return torch.softmax(X, -1)


def _power_pass(Z: torch.Tensor) -> torch.Tensor:
    return torch.clamp(Z, min=2.0**-120).log2_().mul_(2.03).exp2_()


def _figures(mapping, alpha: float | None, X: torch.Tensor, dY: torch.Tensor, repeats: int):
    """``(pass seconds, pass / softmax, measured / softmax, measured / pass, power)`` for one
    mapping and input."""
    Z = X - X.amax(-1, keepdim=True)
    D = (-Z).clamp(max=1.0)  # values in [0, 1], as the power sees them
    m = None if alpha is None else 1 / (alpha - 1)
    Zb = Z if alpha is None else Z * (alpha - 1)
    tau = Zb.new_full((*Zb.shape[:-1], 1), -1.0)
    scratch = (torch.empty_like(Zb), torch.empty_like(Zb))
    timed = {
        "pass": partial(_one_pass, Zb, tau, m, *scratch),
        "softmax": partial(_fwd_bwd, _softmax, X, dY),
        "ours": partial(_fwd_bwd, mapping, X, dY),
        "power": partial(_power_pass, D),
    }
    for fn in timed.values():  # warm up
        fn()
    pass_, per_softmax, measured, in_passes, power = [], [], [], [], []
    for _ in range(repeats):
        order = list(timed)
        random.shuffle(order)
        t = {key: _seconds(timed[key]) for key in order}
        pass_.append(t["pass"])
        per_softmax.append(t["pass"] / t["softmax"])
        measured.append(t["ours"] / t["softmax"])
        in_passes.append(t["ours"] / t["pass"])
        power.append(t["power"] / t["softmax"])
    return tuple(statistics.median(v) for v in (pass_, per_softmax, measured, in_passes, power))


def run(repeats: int) -> list[dict]:
    """One row per (mapping, shape)."""
    rows = []
    for shape in SHAPES:
        gen = torch.Generator().manual_seed(0)
        X = torch.randn(*shape, generator=gen)
        dY = torch.randn(*shape, generator=gen)
        for name, (mapping, alpha) in MAPPINGS.items():
            pass_s, per_softmax, measured, in_passes, power = _figures(
                mapping, alpha, X, dY, repeats
            )
            rows.append(
                {
                    "name": name,
                    "shape": shape,
                    "pass_ms": pass_s * 1e3,
                    "pass_softmax": per_softmax,
                    "measured": measured,
                    "measured_passes": in_passes,
                    "power": power,
                }
            )
    return rows


def report(rows: list[dict]) -> None:
    print(
        "| mapping                | shape     | pass (ms) | pass / softmax "
        "| measured / softmax | measured / pass |"
    )
    print(f"|{'-' * 24}|{'-' * 11}|{'-' * 11}|{'-' * 16}|{'-' * 20}|{'-' * 17}|")
    for r in rows:
        shape = f"{r['shape'][0]}x{r['shape'][1]}"
        print(
            f"| {r['name']:<22} | {shape:<9} | {r['pass_ms']:>9.3f} | {r['pass_softmax']:>14.2f} "
            f"| {r['measured']:>18.1f} | {r['measured_passes']:>15.1f} |"
        )
    print("\none exp2(log2(.)) over the input / softmax forward+backward:")
    for shape in SHAPES:
        power = statistics.median(r["power"] for r in rows if r["shape"] == shape)
        print(f"  {shape[0]}x{shape[1]}: {power:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=31)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(
        f"torch {torch.__version__}, cpu, {args.threads} thread(s), float32, "
        f"median of {args.repeats} side-by-side figures\n"
    )
    report(run(args.repeats))


if __name__ == "__main__":
    main()

"""Where the core's floor lies against softmax: Newton passes needed, and the cost of one.

Run from the repository root::

    PYTHONPATH=. python3 benchmarks/bench_core_floor.py [--threads 1] [--repeats 31]

Issue 17 asks for at most 4 times ``torch.softmax`` (forward+backward, float32, one thread)
at every shape and mapping of ``bench_core.py``. Softmax is one fused kernel each way; our
mappings find a threshold by Newton passes over the input, each a handful of eager ops
(a subtraction, a clamp, a power, two row sums and a few per-row ops). This script measures,
on the benchmark's shapes and inputs (``randn``, seed 0):

- ``passes``: how many passes the solver takes on that input (the batch stops when its last
  row settles), found by capping the passes at 1, 2, ... until every row has settled;
- ``pass``: the time of one pass, the solver capped at 2 passes minus capped at 1, the
  median of side-by-side differences;
- ``passes x pass / softmax``: the Newton passes alone over softmax's forward+backward in
  the same run, a floor under the whole mapping (which adds the shift, the output, the
  backward and a few fresh tensors), beside ``measured / softmax``, the whole forward+backward.

``entmax_bisect`` at alpha 1.5 and ``sparsemax_bisect`` run the solvers of ``entmax15`` and
``sparsemax``. The script also times one ``exp2(log2(.))`` over the input, the fractional
power alpha 1.33 needs in every pass and in the backward.
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
import sk_entmax.entmax.activations as act

SHAPES = [(4096, 32), (1024, 1000), (64, 20000)]
Solver = Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]]


def _power_solver(alpha: float) -> Solver:
    beta = alpha - 1
    return lambda Z: act._power_newton(Z * beta, 1 / beta)


# name: (the public mapping, its Newton solver on rows whose max is 0)
MAPPINGS: dict[str, tuple[Callable[[torch.Tensor], torch.Tensor], Solver]] = {
    "sparsemax": (ours.sparsemax, act._sparsemax_newton),
    "entmax15": (ours.entmax15, _power_solver(1.5)),
    "entmax_bisect a=1.33": (lambda X: ours.entmax_bisect(X, 1.33), _power_solver(1.33)),
}


def _capped(solver: Solver, Z: torch.Tensor, passes: int) -> tuple[torch.Tensor, torch.Tensor]:
    saved = act._MAX_PASSES
    act._MAX_PASSES = passes
    try:
        return solver(Z)
    finally:
        act._MAX_PASSES = saved


def _passes(solver: Solver, Z: torch.Tensor) -> int:
    """The least pass cap at which every row of ``Z`` settles (the cap itself if none)."""
    for passes in range(1, act._MAX_PASSES + 1):
        _, settled = _capped(solver, Z, passes)
        if bool(settled.all()):
            return passes
    return act._MAX_PASSES


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


def _figures(mapping, solver: Solver, X: torch.Tensor, dY: torch.Tensor, repeats: int):
    """``(passes, pass seconds, floor, measured, power)`` for one mapping and input."""
    Z = X - X.amax(-1, keepdim=True)
    D = (-Z).clamp(max=1.0)  # values in [0, 1], as the power sees them
    passes = _passes(solver, Z)
    timed = {
        "one": partial(_capped, solver, Z, 1),
        "two": partial(_capped, solver, Z, 2),
        "softmax": partial(_fwd_bwd, _softmax, X, dY),
        "ours": partial(_fwd_bwd, mapping, X, dY),
        "power": partial(_power_pass, D),
    }
    for fn in timed.values():  # warm up
        fn()
    pass_, floor, measured, power = [], [], [], []
    for _ in range(repeats):
        order = list(timed)
        random.shuffle(order)
        t = {key: _seconds(timed[key]) for key in order}
        pass_.append(t["two"] - t["one"])
        floor.append(passes * (t["two"] - t["one"]) / t["softmax"])
        measured.append(t["ours"] / t["softmax"])
        power.append(t["power"] / t["softmax"])
    medians = (statistics.median(v) for v in (pass_, floor, measured, power))
    return (passes, *medians)


def run(repeats: int) -> list[dict]:
    """One row per (mapping, shape)."""
    rows = []
    for shape in SHAPES:
        gen = torch.Generator().manual_seed(0)
        X = torch.randn(*shape, generator=gen)
        dY = torch.randn(*shape, generator=gen)
        for name, (mapping, solver) in MAPPINGS.items():
            passes, pass_s, floor, measured, power = _figures(mapping, solver, X, dY, repeats)
            rows.append(
                {
                    "name": name,
                    "shape": shape,
                    "passes": passes,
                    "pass_ms": pass_s * 1e3,
                    "floor": floor,
                    "measured": measured,
                    "power": power,
                }
            )
    return rows


def report(rows: list[dict]) -> None:
    print(
        "| mapping                | shape     | passes | pass (ms) | passes x pass / softmax "
        "| measured / softmax |"
    )
    print(f"|{'-' * 24}|{'-' * 11}|{'-' * 8}|{'-' * 11}|{'-' * 25}|{'-' * 20}|")
    for r in rows:
        shape = f"{r['shape'][0]}x{r['shape'][1]}"
        print(
            f"| {r['name']:<22} | {shape:<9} | {r['passes']:>6} | {r['pass_ms']:>9.3f} "
            f"| {r['floor']:>23.1f} | {r['measured']:>18.1f} |"
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

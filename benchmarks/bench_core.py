"""Forward+backward time of the core mappings against the reference entmax 1.3.

Run from the repository root (needs the test extra, which brings ``entmax==1.3``)::

    python3 benchmarks/bench_core.py [--threads 1] [--repeats 15] [--device cpu]

Each repeat times ours, the reference and ``torch.softmax`` back to back on the same input,
in shuffled order, and forms the ratios within that repeat; the table shows the median ratio
over the repeats, so machine noise that hits a whole repeat cancels out.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable

import entmax as reference
import torch

import sk_entmax.entmax as ours

SHAPES = [(4096, 32), (1024, 1000), (64, 20000)]
FUNCTIONS: dict[str, tuple[Callable, Callable]] = {
    "sparsemax": (ours.sparsemax, reference.sparsemax),
    "entmax15": (ours.entmax15, reference.entmax15),
    "entmax_bisect a=1.33": (
        lambda X: ours.entmax_bisect(X, 1.33),
        lambda X: reference.entmax_bisect(X, 1.33),
    ),
    "entmax_bisect a=1.5": (
        lambda X: ours.entmax_bisect(X, 1.5),
        lambda X: reference.entmax_bisect(X, 1.5),
    ),
    "sparsemax_bisect": (ours.sparsemax_bisect, reference.sparsemax_bisect),
}


def _time(fn: Callable, X: torch.Tensor, dY: torch.Tensor) -> float:
    X = X.detach().requires_grad_()
    if X.is_cuda:
        torch.cuda.synchronize()
    start = time.perf_counter()
    Y = fn(X)
    Y.backward(dY)
    if X.is_cuda:
        torch.cuda.synchronize()
    return time.perf_counter() - start


def run(repeats: int, device: str) -> list[tuple[str, tuple[int, int], float, float]]:
    """Return ``(function, shape, median ours/reference, median ours/softmax)`` rows."""
    rows = []
    softmax = lambda X: torch.softmax(X, -1)  # noqa: E731
    for shape in SHAPES:
        torch.manual_seed(0)
        X = torch.randn(*shape, device=device)
        dY = torch.randn(*shape, device=device)
        for name, (mine, ref) in FUNCTIONS.items():
            for fn in (mine, ref, softmax):  # warm up
                _time(fn, X, dY)
            to_ref, to_softmax = [], []
            for _ in range(repeats):
                order = [("ours", mine), ("ref", ref), ("softmax", softmax)]
                random.shuffle(order)
                t = {key: _time(fn, X, dY) for key, fn in order}
                to_ref.append(t["ours"] / t["ref"])
                to_softmax.append(t["ours"] / t["softmax"])
            rows.append((name, shape, statistics.median(to_ref), statistics.median(to_softmax)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    rows = run(args.repeats, args.device)
    print(f"torch {torch.__version__}, {args.device}, {args.threads} thread(s), float32, "
          f"forward+backward, median of {args.repeats} side-by-side ratios")
    print(f"| {'function':<22} | {'shape':<12} | ours / entmax 1.3 | ours / softmax |")
    print(f"|{'-' * 24}|{'-' * 14}|{'-' * 19}|{'-' * 16}|")
    for name, shape, to_ref, to_softmax in rows:
        shape_s = f"{shape[0]}x{shape[1]}"
        print(f"| {name:<22} | {shape_s:<12} | {to_ref:>17.2f} | {to_softmax:>14.1f} |")
    summary: dict[str, list[float]] = {}
    for name, _, to_ref, _ in rows:
        summary.setdefault(name, []).append(to_ref)
    print("\nmedian over shapes, ours / entmax 1.3:")
    for name, ratios in summary.items():
        print(f"  {name:<22} {statistics.median(ratios):.2f}")


if __name__ == "__main__":
    main()

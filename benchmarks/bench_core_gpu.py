"""GPU tables of issue 43: the core against entmax 1.3 and softmax, the Triton kernels
against the torch path, and attention against SDPA and AdaSplash.

Run from the repository root, on a machine with CUDA (``cuda_checks.sh`` runs both parts)::

    PYTHONPATH=. python3 benchmarks/bench_core_gpu.py --part core [--device cuda]
        [--repeats 7] [--budget-s 100] [--quick]
    PYTHONPATH=. python3 benchmarks/bench_core_gpu.py --part attention [...]

Installs nothing and needs no network: a contender whose package does not import
(``entmax``, ``adasplash``, ``triton``) gets its columns marked absent, with the reason printed.
``--quick`` runs tiny shapes (a smoke test, on CPU too).

``--part core`` prints two tables, each row a shape and a mapping, forward+backward in
float32 (and bfloat16 at 1024 x 1000):

1. ours (the drop-in functions ``sparsemax``, ``entmax15``, ``entmax_bisect``: on CUDA the
   Triton kernels where they serve) against entmax 1.3 and ``torch.softmax``;
2. the Triton kernels against the torch path of the same functions
   (:func:`sk_entmax.entmax.kernels.set_enabled` off), with AdaSplash's ``triton_entmax``
   where it imports, the largest difference of the outputs and whether their zeros are the
   same.

``--part attention`` prints table 3: :func:`~sk_entmax.entmax.entmax_attention` (B=1, H=8,
d=64) against SDPA and AdaSplash's ``adasplash``, with our peak memory.

Times are medians over ``--repeats`` repeats after a warm-up; within a repeat the contenders
run back to back in shuffled order and each ratio is a median of per-repeat ratios. Compile
time is reported apart: "first call" is the first call's time (Triton compiling its kernels
for that shape's block size and dtype, or AdaSplash's), not counted in the medians. With
``--budget-s``, rows that would not finish within it are printed as skipped.
"""

from __future__ import annotations

import argparse
import importlib
import random
import signal
import statistics
import sys
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F

import sk_entmax.entmax as ours
from sk_entmax.entmax import kernels

Fn = Callable[..., torch.Tensor]


def _optional(name: str):
    """The module ``name``, or None with the reason printed."""
    try:
        return importlib.import_module(name)
    except Exception as exc:  # any failure: the comparison is optional
        print(f"note: {name} is absent ({type(exc).__name__}: {exc}); its columns are skipped")
        return None


class Clock:
    """Forward+backward timings on one device."""

    def __init__(self, device: str) -> None:
        self.cuda = device.startswith("cuda")

    def sync(self) -> None:
        if self.cuda:
            torch.cuda.synchronize()

    def once(self, fn: Fn, inputs: list[torch.Tensor], d_out: torch.Tensor) -> float:
        xs = [x.detach().requires_grad_() for x in inputs]
        self.sync()
        start = time.perf_counter()
        fn(*xs).backward(d_out)
        self.sync()
        return time.perf_counter() - start


class Stop(Exception):
    """Raised by SIGTERM (``timeout``'s first signal): the tables so far are printed."""


def _stop(signum, frame) -> None:
    raise Stop


def measure(clock: Clock, contenders: dict[str, Fn], inputs, d_out, repeats: int, budget):
    """``(first call s, [times])`` per contender; a contender that raises gets its error.
    Repeats after the first stop when ``budget`` runs out."""
    first, times = {}, {}
    for name, fn in contenders.items():
        try:
            first[name] = clock.once(fn, inputs, d_out)
            times[name] = []
        except Stop:
            raise
        except Exception as exc:
            first[name] = f"{type(exc).__name__}: {str(exc)[:60]}"
    names = [n for n in contenders if n in times]
    for repeat in range(repeats):
        if repeat and budget.spent():
            break
        random.shuffle(names)
        for name in names:
            times[name].append(clock.once(contenders[name], inputs, d_out))
    return first, times


def median_ratio(times: dict[str, list[float]], a: str, b: str) -> str:
    if a not in times or b not in times:
        return "-"
    return f"{statistics.median(x / y for x, y in zip(times[a], times[b], strict=True)):.2f}"


def ms(times: dict[str, list[float]], name: str) -> str:
    return f"{statistics.median(times[name]) * 1e3:.3f}" if name in times else "-"


class Budget:
    """Skips the rows that would not end within ``seconds`` (the longest row so far, doubled,
    as the estimate of the next)."""

    def __init__(self, seconds: float | None) -> None:
        self.seconds, self.start, self.longest = seconds, time.perf_counter(), 0.0

    def allows(self) -> bool:
        if self.seconds is None:
            return True
        return time.perf_counter() - self.start + 2 * self.longest < self.seconds

    def spent(self) -> bool:
        return self.seconds is not None and time.perf_counter() - self.start > self.seconds

    def row(self, started: float) -> None:
        self.longest = max(self.longest, time.perf_counter() - started)


# --------------------------------------------------------------------------- mappings

MAPPINGS = {  # name: (alpha, ours, entmax 1.3's name and arguments)
    "sparsemax": (2.0, lambda X: ours.sparsemax(X), ("sparsemax", ())),
    "entmax15": (1.5, lambda X: ours.entmax15(X), ("entmax15", ())),
    "entmax_bisect a=1.5": (1.5, lambda X: ours.entmax_bisect(X, 1.5), ("entmax_bisect", (1.5,))),
    "entmax_bisect a=1.33": (
        1.33,
        lambda X: ours.entmax_bisect(X, 1.33),
        ("entmax_bisect", (1.33,)),
    ),
}


def _torch_path(fn: Fn) -> Fn:
    def run(X: torch.Tensor) -> torch.Tensor:
        previous = kernels.set_enabled(False)
        try:
            return fn(X)
        finally:
            kernels.set_enabled(previous)

    return run


def core(args: argparse.Namespace) -> None:
    clock = Clock(args.device)
    reference = _optional("entmax")
    adasplash = _optional("adasplash")
    on_gpu = args.device.startswith("cuda")
    if not on_gpu:
        print(f"note: the Triton kernels serve CUDA tensors only; on {args.device} the 'Triton'")
        print("      columns time the torch path too")
    elif not kernels.available():
        print(f"note: the Triton kernels cannot run: {kernels.absent_reason()}")
    shapes = [(64, 100), (16, 3000)] if args.quick else args.shapes
    rows = [(s, torch.float32) for s in shapes]
    if not args.quick:
        rows.append(((1024, 1000), torch.bfloat16))
    budget = Budget(args.budget_s)
    table1, table2 = [], []
    try:
        _core_rows(args, clock, reference, adasplash, on_gpu, rows, budget, table1, table2)
    except Stop:
        table1.append("| stopped by the time limit here | | | | | | |")
        table2.append("| stopped by the time limit here | | | | | | | | | |")
    _print_core(table1, table2)


def _core_rows(args, clock, reference, adasplash, on_gpu, rows, budget, table1, table2):
    gen = torch.Generator().manual_seed(0)
    for (n, d), dtype in rows:
        X = torch.randn(n, d, generator=gen).to(args.device, dtype)
        dY = torch.randn(n, d, generator=gen).to(args.device, dtype)
        for name, (alpha, mine, (ref_name, ref_args)) in MAPPINGS.items():
            label = f"| {n} x {d} {str(dtype)[6:]} | {name} |"
            if not budget.allows():
                table1.append(f"{label} skipped (budget) |")
                table2.append(f"{label} skipped (budget) |")
                continue
            started = time.perf_counter()
            contenders: dict[str, Fn] = {"ours": mine, "torch path": _torch_path(mine)}
            contenders["softmax"] = lambda X: torch.softmax(X, -1)
            if reference is not None:
                ref = getattr(reference, ref_name)
                contenders["entmax 1.3"] = lambda X, f=ref, a=ref_args: f(X, *a)
            if adasplash is not None and on_gpu:
                contenders["adasplash"] = lambda X, a=alpha: adasplash.triton_entmax(X, alpha=a)
            first, times = measure(clock, contenders, [X], dY, args.repeats, budget)
            with torch.no_grad():
                P, R = mine(X), _torch_path(mine)(X)
                diff = (P.float() - R.float()).abs().max().item()
                zeros = "yes" if torch.equal(P == 0, R == 0) else "NO"
            firsts = ", ".join(
                f"{k} {v:.2f}" if isinstance(v, float) else f"{k} failed: {v}"
                for k, v in first.items()
            )
            table1.append(
                f"{label} {ms(times, 'ours')} | {ms(times, 'entmax 1.3')} | "
                f"{ms(times, 'softmax')} | {median_ratio(times, 'ours', 'entmax 1.3')} | "
                f"{median_ratio(times, 'ours', 'softmax')} |"
            )
            table2.append(
                f"{label} {ms(times, 'ours')} | {ms(times, 'torch path')} | "
                f"{median_ratio(times, 'ours', 'torch path')} | {ms(times, 'adasplash')} | "
                f"{median_ratio(times, 'ours', 'adasplash')} | {diff:.1e} | {zeros} | "
                f"{firsts} |"
            )
            budget.row(started)
            print(f"done {label}", file=sys.stderr, flush=True)


def _print_core(table1: list[str], table2: list[str]) -> None:
    print()
    print("## 1. core against entmax 1.3 and softmax (forward+backward, ms)")
    print()
    print("| shape | mapping | ours | entmax 1.3 | softmax | ours / entmax 1.3 | ours / softmax |")
    print("|---|---|---|---|---|---|---|")
    print("\n".join(table1))
    print()
    print("## 2. Triton kernels against the torch path (forward+backward, ms)")
    print()
    print(
        "| shape | mapping | Triton | torch path | Triton / torch | AdaSplash | "
        "Triton / AdaSplash | max abs diff | same zeros | first call, s (compile) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    print("\n".join(table2))


# --------------------------------------------------------------------------- attention


def attention(args: argparse.Namespace) -> None:
    clock = Clock(args.device)
    adasplash = _optional("adasplash")
    on_gpu = args.device.startswith("cuda")
    B, H, D = (1, 2, 16) if args.quick else (1, 8, 64)
    lengths = [64, 128] if args.quick else args.lengths
    cases = [("1.5", 1.5, False), ("1.33", 1.33, False), ("1.5 causal", 1.5, True)]
    per_head = torch.linspace(1.2, 1.9, H).view(1, H, 1, 1)
    cases.append(("per head 1.2-1.9", per_head, False))
    budget = Budget(args.budget_s)
    rows: list[str] = []
    try:
        _attention_rows(args, clock, adasplash, on_gpu, (B, H, D), lengths, cases, budget, rows)
    except Stop:
        rows.append("| stopped by the time limit here | | | | | | | | | |")
    _print_attention((B, H, D), rows)


def _attention_rows(args, clock, adasplash, on_gpu, shape, lengths, cases, budget, rows):
    B, H, D = shape
    gen = torch.Generator().manual_seed(0)
    for L in lengths:
        q, k, v, d_out = (torch.randn(B, H, L, D, generator=gen).to(args.device) for _ in range(4))
        for label, alpha, causal in cases:
            row = f"| {L} | {label} |"
            if not budget.allows():
                rows.append(f"{row} skipped (budget) |")
                continue
            started = time.perf_counter()
            a = alpha.to(args.device) if isinstance(alpha, torch.Tensor) else alpha
            contenders: dict[str, Fn] = {
                "ours": lambda q, k, v, a=a, c=causal: ours.entmax_attention(
                    q, k, v, alpha=a, is_causal=c
                ),
                "sdpa": lambda q, k, v, c=causal: F.scaled_dot_product_attention(
                    q, k, v, is_causal=c
                ),
            }
            if adasplash is not None and on_gpu and not isinstance(alpha, torch.Tensor):
                contenders["adasplash"] = lambda q, k, v, a=alpha, c=causal: adasplash.adasplash(
                    q, k, v, alpha=a, is_causal=c
                )
            repeats = args.repeats if L <= 8192 else 1
            if on_gpu:
                torch.cuda.reset_peak_memory_stats(args.device)
            first, times = measure(clock, contenders, [q, k, v], d_out, repeats, budget)
            peak = "-"
            if on_gpu:
                peak = f"{torch.cuda.max_memory_allocated(args.device) / 2**30:.2f}"
            diff = "-"
            if "adasplash" in times:
                with torch.no_grad():
                    mine = contenders["ours"](q, k, v)
                    diff = f"{(mine - contenders['adasplash'](q, k, v)).abs().max().item():.1e}"
            failed = "; ".join(f"{k}: {v}" for k, v in first.items() if not isinstance(v, float))
            rows.append(
                f"{row} {ms(times, 'ours')} | {ms(times, 'sdpa')} | "
                f"{median_ratio(times, 'ours', 'sdpa')} | {ms(times, 'adasplash')} | "
                f"{median_ratio(times, 'ours', 'adasplash')} | {diff} | {peak} | "
                f"{failed or '-'} |"
            )
            budget.row(started)
            print(f"done {row}", file=sys.stderr, flush=True)


def _print_attention(dims: tuple[int, int, int], rows: list[str]) -> None:
    B, H, D = dims
    print()
    shape = f"B={B}, H={H}, d={D}"
    print(f"## 3. attention against SDPA and AdaSplash ({shape}, forward+backward, ms)")
    print()
    print(
        "| L | alpha | ours | SDPA | ours / SDPA | AdaSplash | ours / AdaSplash | "
        "max abs diff | peak GiB (all) | failed |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("core", "attention"), required=True)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--budget-s", type=float, default=None)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--shapes",
        type=lambda s: tuple(int(v) for v in s.split("x")),
        nargs="+",
        default=[(4096, 32000), (64, 20000), (1024, 1000), (16384, 64)],
    )
    parser.add_argument("--lengths", type=int, nargs="+", default=[2048, 8192, 32768])
    args = parser.parse_args()
    random.seed(0)
    # the kernels are opt-in (SK_ENTMAX_TRITON=1); this benchmark is what measures them, so
    # "ours" and "Triton" take them here, and the "torch path" columns turn them off again
    kernels.set_enabled(True)
    print(
        f"torch {torch.__version__}, device {args.device}"
        + (
            f" ({torch.cuda.get_device_name(args.device)})"
            if args.device.startswith("cuda")
            else ""
        )
        + f", Triton kernels: {'available' if kernels.available() else 'absent'}"
    )
    signal.signal(signal.SIGTERM, _stop)
    (core if args.part == "core" else attention)(args)


if __name__ == "__main__":
    main()

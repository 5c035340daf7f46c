"""Forward+backward time of the core mappings against the reference entmax 1.3, and accuracy.

Run from the repository root (needs the test extra, which brings ``entmax==1.3``)::

    PYTHONPATH=. python3 benchmarks/bench_core.py [--threads 1 2] [--repeats 15]
        [--device cpu] [--compiled] [--scaling]

``--threads 1 2`` runs the whole table at each thread count in turn. On CPU "ours" is the
fused kernel (:mod:`sk_entmax.entmax.kernels.cpu`, numba) where it loads, and the column
"ours / torch form" sets it against the traceable torch form of the same call (the kernel
turned off), timed in the same repeats. ``--scaling`` adds issue 59's scaling figure: the
throughput of ours at 2 threads over 1 thread at 4096 x 1000 (bar: at least 1.7), measured in
pairs (1 thread and 2 threads back to back, their order alternating from round to round; the
median of the pairs' ratios, and their spread), beside two ceilings timed the same way in the
same rounds: a numba loop over the same blocks of 16 rows that reads and writes the bytes of
the kernel's forward and backward (the memory ceiling) and one that computes in registers
only (the compute ceiling, which shows whether both cores were free). A kernel that scales
like its memory ceiling in the same rounds is held back by the machine, one that trails it by
itself (:func:`scaling`).

``--before DIR`` adds a fifth contender, the same call by another version of the package
copied into ``DIR`` as ``sk_entmax_old`` (every ``sk_entmax`` renamed), and its column
"ours / before", so that a change is measured against what it replaces in the same repeats::

    git archive main sk_entmax | tar -x -C /tmp/before && cd /tmp/before \
        && mv sk_entmax sk_entmax_old \
        && grep -rl sk_entmax sk_entmax_old | xargs sed -i 's/\bsk_entmax\b/sk_entmax_old/g'

``--clock cpu`` times each call by the calling thread's CPU time (``time.thread_time``)
instead of the wall clock: with one thread every contender runs on the calling thread (numba's
serial loops, torch's ops), so the ratios no longer count the time other processes held the
core; they still count what those processes did to the caches. One thread only.

The load average (``os.getloadavg``) is printed before and after each table: the ratios to
softmax, a call of 0.1 to 10 ms, are only as good as the machine is idle.

``--compiled`` adds ``torch.compile(fullgraph=True)`` of ours as a fourth contender in each
repeat (issue 33): the columns "compiled / eager" (median ratio, bar: at most 1) and the
compile + first call time, in seconds.

Speed. Each repeat times ours, the reference and ``torch.softmax`` back to back on the same
float32 input (forward, then backward with the same cotangent), in shuffled order, and forms
the ratios within that repeat; a shape's figure is the median ratio over the repeats, so
machine noise that hits a whole repeat cancels out, and a function's figure is the median
over the three shapes. Each function has a bar on that median (issue 6), and the summary
marks PASS or FAIL.

Accuracy, at default settings on the same float32 inputs: the largest ``|sum p - 1|``, the
largest error against the float64 solution of an independent algorithm (a full sort for
sparsemax and 1.5-entmax, 100 bisection steps on our plain path otherwise), and the largest
error of the gradient against the float64 gradient of that solution, relative to its
largest entry. Bars: ``|sum p - 1| <= 1e-6`` and error ``<= 1e-5``.
"""

from __future__ import annotations

import argparse
import importlib
import os
import random
import statistics
import time
from collections.abc import Callable

import entmax as reference
import torch

import sk_entmax.entmax as ours
from sk_entmax.entmax.kernels import cpu

SHAPES = [(4096, 32), (1024, 1000), (64, 20000)]
Fn = Callable[[torch.Tensor], torch.Tensor]
#: name: the same call by the version given with ``--before`` (filled by :func:`_before`)
BEFORE: dict[str, Fn] = {}


def _ours_alpha(alpha: float) -> Fn:
    return lambda X, **kw: ours.entmax_bisect(X, alpha, **kw)


def _ref_alpha(alpha: float) -> Fn:
    return lambda X: reference.entmax_bisect(X, alpha)


# name: (ours, reference, bar on the median ratio ours / reference, float64 exact solution)
FUNCTIONS: dict[str, tuple[Fn, Fn, float, Fn]] = {
    "sparsemax": (
        ours.sparsemax,
        reference.sparsemax,
        0.2,
        lambda X: ours.sparsemax(X, training=False),
    ),
    "entmax15": (
        ours.entmax15,
        reference.entmax15,
        0.2,
        lambda X: ours.entmax15(X, training=False),
    ),
    "entmax_bisect a=1.33": (
        _ours_alpha(1.33),
        _ref_alpha(1.33),
        0.2,
        lambda X: ours.entmax_bisect(X, 1.33, n_iter=100, training=False),
    ),
    "entmax_bisect a=1.5": (
        _ours_alpha(1.5),
        _ref_alpha(1.5),
        0.2,
        lambda X: ours.entmax_bisect(X, 1.5, n_iter=100, training=False),
    ),
    "sparsemax_bisect": (
        ours.sparsemax_bisect,
        reference.sparsemax_bisect,
        0.2,
        lambda X: ours.sparsemax(X, training=False),
    ),
}
MAX_ERR, SUM_ERR = 1e-5, 1e-6


def _before(directory: str) -> None:
    """Fill :data:`BEFORE` from the package copied into ``directory`` as ``sk_entmax_old``."""
    import sys

    sys.path.insert(0, directory)
    old = importlib.import_module("sk_entmax_old.entmax")
    calls = {
        "sparsemax": old.sparsemax,
        "entmax15": old.entmax15,
        "entmax_bisect a=1.33": lambda X: old.entmax_bisect(X, 1.33),
        "entmax_bisect a=1.5": lambda X: old.entmax_bisect(X, 1.5),
        "sparsemax_bisect": old.sparsemax_bisect,
    }
    BEFORE.update({name: calls[name] for name in FUNCTIONS})


def _load() -> str:
    """The load averages over 1, 5 and 15 minutes."""
    return "load average {:.2f}, {:.2f}, {:.2f}".format(*os.getloadavg())


def _softmax(X: torch.Tensor) -> torch.Tensor:
    return torch.softmax(X, -1)


def _torch_form(fn: Fn) -> Fn:
    """``fn`` with the fused CPU kernel off: the traceable torch form of the same call."""

    def run(X: torch.Tensor) -> torch.Tensor:
        previous = cpu.set_enabled(False)
        try:
            return fn(X)
        finally:
            cpu.set_enabled(previous)

    return run


#: the clock of :func:`_time`: wall time, or with ``--clock cpu`` the calling thread's CPU time
CLOCK = {"clock": time.perf_counter}


def _time(fn: Fn, X: torch.Tensor, dY: torch.Tensor) -> float:
    X = X.detach().requires_grad_()
    if X.is_cuda:
        torch.cuda.synchronize()
    clock = CLOCK["clock"]
    start = clock()
    Y = fn(X)
    Y.backward(dY)
    if X.is_cuda:
        torch.cuda.synchronize()
    return clock() - start


def _accuracy(mine: Fn, exact: Fn, X: torch.Tensor, dY: torch.Tensor) -> tuple[float, ...]:
    """``(max |sum - 1|, max error, max gradient error / max |gradient|)`` against float64."""
    X32 = X.detach().requires_grad_()
    P = mine(X32)
    (grad,) = torch.autograd.grad(P, X32, dY)
    X64 = X.double().requires_grad_()
    P64 = exact(X64)
    (grad64,) = torch.autograd.grad(P64, X64, dY.double())
    P = P.detach().double()
    sum_err = (P.sum(-1) - 1).abs().max().item()
    err = (P - P64.detach()).abs().max().item()
    grad_err = ((grad.double() - grad64).abs().max() / grad64.abs().max()).item()
    return sum_err, err, grad_err


def run(repeats: int, device: str, compiled: bool = False) -> list[dict]:
    """One row per (function, shape): median ratios and accuracy figures (with ``compiled``,
    also the compiled contender's ratio to eager and its compile + first call time)."""
    rows = []
    for shape in SHAPES:
        gen = torch.Generator().manual_seed(0)
        X = torch.randn(*shape, generator=gen).to(device)
        dY = torch.randn(*shape, generator=gen).to(device)
        for name, (mine, ref, bar, exact) in FUNCTIONS.items():
            contenders = [
                ("ours", mine),
                ("ref", ref),
                ("softmax", _softmax),
                ("torch form", _torch_form(mine)),
            ]
            if name in BEFORE:
                contenders.append(("before", BEFORE[name]))
            first_call = None
            if compiled:
                torch.compiler.reset()
                fast = torch.compile(mine, fullgraph=True)
                first_call = _time(fast, X, dY)  # compile + first call
                contenders.append(("compiled", fast))
            for _, fn in contenders:  # warm up
                _time(fn, X, dY)
            to_ref, to_softmax, to_eager, eager_s, compiled_s, to_form = [], [], [], [], [], []
            to_before = []
            for _ in range(repeats):
                order = list(contenders)
                random.shuffle(order)
                t = {key: _time(fn, X, dY) for key, fn in order}
                to_ref.append(t["ours"] / t["ref"])
                to_softmax.append(t["ours"] / t["softmax"])
                to_form.append(t["ours"] / t["torch form"])
                if "before" in t:
                    to_before.append(t["ours"] / t["before"])
                eager_s.append(t["ours"])
                if compiled:
                    to_eager.append(t["compiled"] / t["ours"])
                    compiled_s.append(t["compiled"])
            sum_err, err, grad_err = _accuracy(mine, exact, X, dY)
            rows.append(
                {
                    "name": name,
                    "shape": shape,
                    "bar": bar,
                    "to_ref": statistics.median(to_ref),
                    "to_softmax": statistics.median(to_softmax),
                    "to_form": statistics.median(to_form),
                    "to_before": statistics.median(to_before) if to_before else None,
                    "sum_err": sum_err,
                    "err": err,
                    "grad_err": grad_err,
                    "eager_s": statistics.median(eager_s),
                    "to_eager": statistics.median(to_eager) if compiled else None,
                    "compiled_s": statistics.median(compiled_s) if compiled else None,
                    "first_call_s": first_call,
                }
            )
    return rows


def report_compiled(rows: list[dict]) -> bool:
    """The compiled columns (issue 33): True if compiled is at most eager on every row."""
    print(
        "\ntorch.compile(fullgraph=True), forward+backward; bar: compiled / eager <= 1\n"
        "| function               | shape     | compile + first call (s) | eager (ms) "
        "| compiled (ms) | compiled / eager |"
    )
    print(f"|{'-' * 24}|{'-' * 11}|{'-' * 26}|{'-' * 12}|{'-' * 15}|{'-' * 18}|")
    for r in rows:
        shape = f"{r['shape'][0]}x{r['shape'][1]}"
        print(
            f"| {r['name']:<22} | {shape:<9} | {r['first_call_s']:>24.1f} "
            f"| {1e3 * r['eager_s']:>10.2f} | {1e3 * r['compiled_s']:>13.2f} "
            f"| {r['to_eager']:>16.2f} |"
        )
    return all(r["to_eager"] <= 1 for r in rows)


def report(rows: list[dict]) -> bool:
    """Print the per-shape table, the summary with PASS/FAIL (issue 6's bars on the median
    over the shapes) and issue 59's goals; True if all pass."""
    before = rows[0]["to_before"] is not None
    print(
        "| function               | shape     | ours / entmax 1.3 | ours / softmax "
        "| ours / torch form |"
        + (" ours / before |" if before else "")
        + " max err | max abs(sum-1) | grad err (rel) |"
    )
    print(
        f"|{'-' * 24}|{'-' * 11}|{'-' * 19}|{'-' * 16}|{'-' * 19}|"
        + (f"{'-' * 15}|" if before else "")
        + f"{'-' * 9}|{'-' * 16}|{'-' * 16}|"
    )
    for r in rows:
        shape = f"{r['shape'][0]}x{r['shape'][1]}"
        print(
            f"| {r['name']:<22} | {shape:<9} | {r['to_ref']:>17.3f} | {r['to_softmax']:>14.2f} "
            f"| {r['to_form']:>17.3f} |"
            + (f" {r['to_before']:>13.3f} |" if before else "")
            + f" {r['err']:>7.1e} | {r['sum_err']:>14.1e} | {r['grad_err']:>14.1e} |"
        )
    print(
        "\nmedian over the shapes; accuracy bars: max err <= 1e-5, max abs(sum-1) <= 1e-6\n"
        "| function               | ours / entmax 1.3 | bar    | worst shape | ours / softmax "
        "| accuracy | result |"
    )
    print(f"|{'-' * 24}|{'-' * 19}|{'-' * 8}|{'-' * 13}|{'-' * 16}|{'-' * 10}|{'-' * 8}|")
    all_pass = True
    for name in FUNCTIONS:
        mine = [r for r in rows if r["name"] == name]
        median = statistics.median(r["to_ref"] for r in mine)
        worst = max(r["to_ref"] for r in mine)
        softmax = statistics.median(r["to_softmax"] for r in mine)
        accurate = all(r["err"] <= MAX_ERR and r["sum_err"] <= SUM_ERR for r in mine)
        passed = median <= mine[0]["bar"] and accurate
        all_pass &= passed
        print(
            f"| {name:<22} | {median:>17.3f} | <= {mine[0]['bar']:<3} | {worst:>11.3f} "
            f"| {softmax:>14.1f} | {'ok' if accurate else 'FAIL':<8} "
            f"| {'PASS' if passed else 'FAIL':<6} |"
        )
    return goals_59(rows) and all_pass


#: issue 59's goals: ours / softmax at most 2.5 at these shapes for these functions, and
#: ours / entmax 1.3 at most 0.2 at every shape for every function
SOFTMAX_GOAL, SOFTMAX_SHAPES = 2.5, [(1024, 1000), (64, 20000)]
SOFTMAX_FUNCTIONS = ["sparsemax", "entmax15", "entmax_bisect a=1.5", "entmax_bisect a=1.33"]
REFERENCE_GOAL = 0.2


def goals_59(rows: list[dict]) -> bool:
    """Print issue 59's goals per function (ours / entmax 1.3 at its worst shape; ours /
    softmax at each of :data:`SOFTMAX_SHAPES` measured); True if every one is met."""
    print(
        "\nissue 59's goals: ours / entmax 1.3 <= 0.2 at every shape; ours / softmax <= 2.5 at "
        "1024x1000 and 64x20000\n"
        "| function               | worst / entmax 1.3 | goal | softmax 1024x1000 "
        "| softmax 64x20000 | goal |"
    )
    print(f"|{'-' * 24}|{'-' * 20}|{'-' * 6}|{'-' * 19}|{'-' * 18}|{'-' * 6}|")
    met = True
    for name in FUNCTIONS:
        mine = [r for r in rows if r["name"] == name]
        worst = max(r["to_ref"] for r in mine)
        ok_ref = worst <= REFERENCE_GOAL
        figures = {r["shape"]: r["to_softmax"] for r in mine if r["shape"] in SOFTMAX_SHAPES}
        cells = [f"{figures[s]:.2f}" if s in figures else "-" for s in SOFTMAX_SHAPES]
        if name in SOFTMAX_FUNCTIONS and figures:
            ok_softmax = all(v <= SOFTMAX_GOAL for v in figures.values())
            softmax_goal = "PASS" if ok_softmax else "FAIL"
        else:
            ok_softmax, softmax_goal = True, "-"
        met &= ok_ref and ok_softmax
        print(
            f"| {name:<22} | {worst:>18.3f} | {'PASS' if ok_ref else 'FAIL'} "
            f"| {cells[0]:>17} | {cells[1]:>16} | {softmax_goal:<4} |"
        )
    return met


#: issue 59's scaling bar: the throughput at 2 threads at least this many times that at 1
SCALING_GOAL = 1.7

#: a round whose compute ceiling scales this well found both cores free for its loop
FREE_CORES = 1.9

#: rows per block of the ceilings' parallel loops (the kernel's ``ROW_BLOCK``)
CEILING_BLOCK = 16


def _ceilings() -> dict[str, tuple[Callable[..., None], ...]] | None:
    """The ceilings' loops (:func:`scaling`), each compiled twice, ``(serial, parallel)``:
    ``copy_forward`` (``P = Z / 2``) and ``copy_backward`` (``DX = P + DY``), which read and
    write the float32 arrays the kernel's forward and backward read and write, and
    ``compute``, a chain of multiply-adds in registers per row that touches no array but
    one result per block. The parallel ones spread blocks of :data:`CEILING_BLOCK` rows over
    numba's threads by ``prange``, as the kernel does. None where numba does not import."""
    try:
        import numba
    except ImportError:
        return None
    block = CEILING_BLOCK

    def copy_forward(Z, P):
        rows, width = Z.shape
        for b in numba.prange((rows + block - 1) // block):
            for r in range(b * block, min(rows, (b + 1) * block)):
                for j in range(width):
                    P[r, j] = Z[r, j] * 0.5

    def copy_backward(P, DY, DX):
        rows, width = P.shape
        for b in numba.prange((rows + block - 1) // block):
            for r in range(b * block, min(rows, (b + 1) * block)):
                for j in range(width):
                    DX[r, j] = P[r, j] + DY[r, j]

    def compute(out, rows, width):
        for b in numba.prange((rows + block - 1) // block):
            total = 0.0
            for r in range(b * block, min(rows, (b + 1) * block)):
                x0, x1, x2, x3 = r * 1e-6, 0.25, 0.5, 0.75
                for _ in range(width):  # (no fastmath: the chains stay as written)
                    x0 = x0 * 0.999 + 1e-3
                    x1 = x1 * 0.999 + 1e-3
                    x2 = x2 * 0.999 + 1e-3
                    x3 = x3 * 0.999 + 1e-3
                total += x0 + x1 + x2 + x3
            out[b] = total

    return {
        f.__name__: (numba.njit(nogil=True)(f), numba.njit(parallel=True, nogil=True)(f))
        for f in (copy_forward, copy_backward, compute)
    }


def _ceiling_calls(
    loops: dict[str, tuple[Callable[..., None], ...]], X: torch.Tensor, dY: torch.Tensor
) -> dict[str, Callable[[int], float]]:
    """``memory`` and ``compute``: each a call of its ceiling at ``n`` threads (the serial
    loops at 1, as the kernel's), returning its wall time; on arrays allocated once."""
    import numba
    import numpy as np

    Z, DY = X.numpy(), dY.numpy()
    P, DX = np.empty_like(Z), np.empty_like(Z)
    rows, width = Z.shape
    out = np.empty((rows + CEILING_BLOCK - 1) // CEILING_BLOCK)

    def memory(n: int) -> float:
        parallel = int(n > 1)
        numba.set_num_threads(n)
        start = time.perf_counter()
        loops["copy_forward"][parallel](Z, P)
        loops["copy_backward"][parallel](P, DY, DX)
        return time.perf_counter() - start

    def compute(n: int) -> float:
        numba.set_num_threads(n)
        start = time.perf_counter()
        loops["compute"][int(n > 1)](out, rows, width)
        return time.perf_counter() - start

    return {"memory": memory, "compute": compute}


def _spread(values: list[float]) -> str:
    """``median (min-max)``."""
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def scaling(repeats: int, shape: tuple[int, int] = (4096, 1000)) -> bool:
    """Throughput of ours at 2 threads over 1 thread at ``shape`` (issue 59: at least
    :data:`SCALING_GOAL`) per function, beside two ceilings measured in the same rounds;
    True if every function's median meets the bar.

    Each round times, for each of three contenders in turn (the order rotated from round to
    round), a pair: the contender at 1 thread and at 2 threads back to back (1 then 2 in
    even rounds, 2 then 1 in odd ones), each timed call after one untimed call at that
    thread count, and takes the pair's ratio, so that a slow period of the machine that
    covers a pair cancels out; a figure is the median of the pairs' ratios over the rounds,
    with their spread. The contenders:

    kernel
        the function, forward and backward (the figure the bar is on);
    memory ceiling
        numba loops over the same rows in the same blocks that read and write the same
        float32 arrays as the kernel's forward (``Z`` in, ``P`` out) and backward (``P`` and
        ``dY`` in, ``dX`` out), some 82 MB at 4096 x 1000, with one operation per entry, on
        arrays allocated once: the scaling the machine's memory system allows a loop that
        moves those bytes (alpha 1.33's backward reads ``dY`` only on the support and ``P``
        not at all, so it moves somewhat fewer);
    compute ceiling
        a register-only loop of multiply-adds, as many per row as the row has entries: the
        scaling the machine allows when memory is not in the way, that is whether the two
        cores were free for the process (another process's work on one of them shows here).

    Printed per function: the three scalings, the kernel's over the memory ceiling's (per
    round), the share of rounds in which the kernel and the copy loop reached the bar, the
    median times, the cores the process held during the 2-thread calls (its CPU time over
    the wall time), and the kernel's median scaling over the rounds whose compute ceiling
    reached :data:`FREE_CORES`. A kernel that trails its memory ceiling in the same rounds
    has a shortfall of its own; one that follows it shares the machine's."""
    gen = torch.Generator().manual_seed(0)
    X, dY = torch.randn(*shape, generator=gen), torch.randn(*shape, generator=gen)
    threads = torch.get_num_threads()
    loops = _ceilings()
    ceilings = _ceiling_calls(loops, X, dY) if loops is not None else {}
    goal = SCALING_GOAL
    print(
        f"\nscaling at {shape[0]}x{shape[1]}: time at 1 thread / time at 2 threads (bar "
        f"{goal}), median (min-max) of {repeats} pairs; ceilings in the same rounds: memory, "
        "a copy loop moving the kernel's bytes; compute, a register-only loop"
        + ("" if loops is not None else " (numba absent: no ceilings)")
    )
    print(
        "| function               | kernel 1t/2t      | goal | memory ceiling    "
        "| compute ceiling   | kernel / memory   | kernel >= 1.7 | copy >= 1.7 |"
    )
    print(
        f"|{'-' * 24}|{'-' * 19}|{'-' * 6}|{'-' * 19}|{'-' * 19}|{'-' * 19}|{'-' * 15}|{'-' * 13}|"
    )
    ok = True
    summaries = []
    try:
        for name, (mine, *_) in FUNCTIONS.items():
            calls: dict[str, Callable[[int], float]] = {
                "kernel": lambda n, mine=mine: _time(mine, X, dY),
                **ceilings,
            }
            ratios: dict[str, list[float]] = {key: [] for key in calls}
            times: dict[str, dict[int, list[float]]] = {key: {1: [], 2: []} for key in calls}
            held: dict[str, list[float]] = {key: [] for key in calls}
            keys = list(calls)
            for i in range(repeats):
                order = keys[i % len(keys) :] + keys[: i % len(keys)]
                for key in order:
                    t = {}
                    for n in (1, 2) if i % 2 == 0 else (2, 1):
                        torch.set_num_threads(n)
                        calls[key](n)  # (the pool of that thread count warmed up)
                        cpu_start = time.process_time()
                        t[n] = calls[key](n)
                        if n == 2:
                            held[key].append((time.process_time() - cpu_start) / t[n])
                        times[key][n].append(t[n])
                    ratios[key].append(t[1] / t[2])
            kernel = ratios["kernel"]
            median = statistics.median(kernel)
            ok &= median >= goal
            cells = [_spread(kernel), "PASS" if median >= goal else "FAIL"]
            reached = f"{sum(r >= goal for r in kernel)}/{repeats}"
            if ceilings:
                memory, compute = ratios["memory"], ratios["compute"]
                to_memory = [k / m for k, m in zip(kernel, memory, strict=True)]
                cells += [_spread(memory), _spread(compute), _spread(to_memory)]
                copied = f"{sum(r >= goal for r in memory)}/{repeats}"
            else:
                cells += ["-", "-", "-"]
                copied = "-"
            print(
                f"| {name:<22} | {cells[0]:<17} | {cells[1]} | {cells[2]:<17} | {cells[3]:<17} "
                f"| {cells[4]:<17} | {reached:>13} | {copied:>11} |"
            )
            summaries.append((name, times, ratios, held))
        if ceilings:
            _scaling_times(summaries, shape)
    finally:
        torch.set_num_threads(threads)
    return ok


def _scaling_times(summaries: list[tuple], shape: tuple[int, int]) -> None:
    """The second table of :func:`scaling`: median times, the memory ceiling's bandwidth,
    the cores the process held during the kernel's and the compute ceiling's 2-thread calls
    (its CPU time over the wall time: 2 where both threads ran throughout, working or
    waiting at the join; less where another process had one of the cores), and the kernel's
    scaling over the rounds that found both cores free."""
    megabytes = 5 * 4 * shape[0] * shape[1] / 1e6  # (3 arrays read, 2 written, float32)
    print(
        f"\nmedian times (ms) of the same rounds; memory ceiling: {megabytes:.0f} MB a call; "
        "cores held: the process's CPU time over the wall time of the 2-thread calls; last "
        f"column: the kernel's median over the rounds whose compute ceiling reached "
        f"{FREE_CORES} (their count)"
    )
    print(
        "| function               | kernel 1t | kernel 2t | memory 1t | memory 2t | GB/s 1t "
        "| GB/s 2t | compute 1t | compute 2t | cores held 2t: kernel, compute "
        "| kernel, cores free |"
    )
    print(
        f"|{'-' * 24}|{'-' * 11}|{'-' * 11}|{'-' * 11}|{'-' * 11}|{'-' * 9}|{'-' * 9}"
        f"|{'-' * 12}|{'-' * 12}|{'-' * 32}|{'-' * 20}|"
    )
    for name, times, ratios, held in summaries:
        ms = {
            key: {n: 1e3 * statistics.median(v) for n, v in by_n.items()}
            for key, by_n in times.items()
        }
        free = [
            k for k, c in zip(ratios["kernel"], ratios["compute"], strict=True) if c >= FREE_CORES
        ]
        cell = f"{statistics.median(free):.2f} ({len(free)})" if free else "- (0)"
        cores = (
            f"{statistics.median(held['kernel']):.2f}, {statistics.median(held['compute']):.2f}"
        )
        print(
            f"| {name:<22} | {ms['kernel'][1]:>9.2f} | {ms['kernel'][2]:>9.2f} "
            f"| {ms['memory'][1]:>9.2f} | {ms['memory'][2]:>9.2f} "
            f"| {megabytes / ms['memory'][1]:>7.1f} | {megabytes / ms['memory'][2]:>7.1f} "
            f"| {ms['compute'][1]:>10.2f} | {ms['compute'][2]:>10.2f} "
            f"| {cores:>30} | {cell:>18} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1])
    parser.add_argument("--scaling", action="store_true", help="add the 2-thread scaling")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--compiled", action="store_true", help="add torch.compile's columns")
    parser.add_argument(
        "--clock",
        choices=["wall", "cpu"],
        default="wall",
        help="cpu: the calling thread's CPU time (one thread only; robust to a loaded machine)",
    )
    parser.add_argument("--before", help="a directory holding another version as sk_entmax_old")
    parser.add_argument("--functions", nargs="+", default=list(FUNCTIONS), choices=FUNCTIONS)
    parser.add_argument(
        "--shapes", nargs="+", default=[f"{r}x{c}" for r, c in SHAPES], help="e.g. 512x100"
    )
    args = parser.parse_args()
    SHAPES[:] = [tuple(int(n) for n in s.split("x")) for s in args.shapes]
    for name in list(FUNCTIONS):
        if name not in args.functions:
            del FUNCTIONS[name]
    if args.before:
        _before(args.before)
    if args.clock == "cpu":
        if args.threads != [1] or args.scaling:
            parser.error("--clock cpu times the calling thread only: --threads 1, no --scaling")
        CLOCK["clock"] = time.thread_time
    kernel = "fused CPU kernel (numba)" if cpu.available() else "torch forms"
    all_pass = True
    for threads in args.threads:
        torch.set_num_threads(threads)
        print(
            f"torch {torch.__version__}, entmax {reference.__version__}, {args.device}, "
            f"{threads} thread(s), ours: {kernel}, float32, forward+backward, "
            f"median of {args.repeats} side-by-side ratios per shape, {args.clock} clock; "
            f"{_load()}\n"
        )
        rows = run(args.repeats, args.device, args.compiled)
        print(f"({_load()} at the end of the table)")
        all_pass &= report(rows)
        if args.compiled:
            all_pass &= report_compiled(rows)
        print()
    if args.scaling:
        print(_load())
        all_pass &= scaling(args.repeats)
        print(_load())
    print(f"\n{'all bars met' if all_pass else 'some bars missed'}")


if __name__ == "__main__":
    main()

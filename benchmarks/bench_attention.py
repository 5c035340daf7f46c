"""entmax attention against softmax attention (SDPA) and the naive entmax attention.

Run from the repository root::

    PYTHONPATH=. python3 benchmarks/bench_attention.py [--lengths 512 2048 8192]
        [--alphas 1.5 2 1.33] [--threads 1] [--repeats 5] [--device cpu] [--learned]
        [--compiled] [--module]

B = 1, H = 8 heads, d = 64, L = S, float32, forward + backward of ``out.sum()``-like
cotangent. ``--learned`` makes alpha one value per head, a tensor that requires a gradient
(a learned alpha, Correia et al., 2019): the backward then computes its derivative too.
Three contenders per length and alpha:

* ``ours``: :func:`sk_entmax.entmax.entmax_attention` (queries in blocks; the backward
  rebuilds each block's weights from one threshold per query row);
* ``naive``: the scores ``q k^T / sqrt(d)``, the core mapping (``sk_entmax.entmax.entmax``,
  the same exact solvers), then ``@ v``, through ordinary autograd, which keeps the full
  ``(B, H, L, S)`` weights;
* ``sdpa``: ``torch.nn.functional.scaled_dot_product_attention`` (softmax), the floor;
* ``compiled`` (with ``--compiled``): ``ours`` under ``torch.compile(fullgraph=True)``, alpha
  passed in (issue 33); its columns are the compile + first call time and compiled / ours.

``--module`` times :class:`~sk_entmax.nn.EntmaxMultiheadAttention` instead (embed 512,
H = 8 heads, ``need_weights=False``, one batch of L tokens; ``--learned`` learns alpha),
eager against compiled only.

Time: each repeat runs the contenders back to back on the same inputs in shuffled order and
forms the ratios within the repeat; the figure is the median ratio (machine noise that hits
a whole repeat cancels). Lengths of 8192 and more take ``max(2, repeats // 3)`` repeats. The
naive contender is timed only up to ``--naive-max-length`` (default 2048): beyond, its
weights alone take gigabytes.

Peak memory: each (contender, length) runs once in a fresh process. Once the inputs exist, the
process resets its peak resident set size to the current one (``/proc/self/clear_refs``), runs
the forward and backward, and reports the new peak (``VmHWM``) minus the resident size before
the call: the extra memory the forward and backward take. The naive
contender's process gets an address-space limit (``--naive-limit-gb``, default 12) so that
it fails cleanly, reported as ``> limit``, instead of exhausting a shared machine.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import statistics
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

from sk_entmax.entmax import entmax, entmax_attention

B, H, D = 1, 8, 64


def _inputs(L: int, device: str, seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    q, k, v, d_out = (torch.randn(B, H, L, D, generator=gen).to(device) for _ in range(4))
    return q, k, v, d_out


def _alpha(alpha: float, learned: bool, like: torch.Tensor) -> float | torch.Tensor:
    """``alpha`` itself, or (``learned``) one alpha per head that requires a gradient."""
    if not learned:
        return alpha
    return torch.full((H, 1, 1), alpha, device=like.device).requires_grad_()


def _ours(alpha: float, learned: bool = False):
    return lambda q, k, v: entmax_attention(q, k, v, alpha=_alpha(alpha, learned, q))


def _naive(alpha: float, learned: bool = False):
    def naive(q, k, v):
        scores = q @ k.transpose(-2, -1) / D**0.5
        return entmax(scores, _alpha(alpha, learned, q), dim=-1) @ v

    return naive


def _compiled(alpha: float, learned: bool = False):
    fn = torch.compile(lambda q, k, v, a: entmax_attention(q, k, v, alpha=a), fullgraph=True)
    return lambda q, k, v: fn(q, k, v, _alpha(alpha, learned, q))


def _module_rows(lengths, alphas, repeats, device, learned) -> None:
    """Eager against compiled EntmaxMultiheadAttention, forward + backward, printed."""
    from sk_entmax.nn import EntmaxMultiheadAttention

    for L in lengths:
        for alpha in alphas:
            torch.manual_seed(0)
            mha = EntmaxMultiheadAttention(
                512, H, batch_first=True, alpha=alpha, learn_alpha=learned
            )
            mha.to(device)
            x = torch.randn(1, L, 512, device=device)

            def eager(x=x, mha=mha):
                return mha(x, x, x, need_weights=False)[0]

            torch.compiler.reset()
            compiled = torch.compile(eager, fullgraph=True)
            start = time.perf_counter()
            compiled().sum().backward()
            first = time.perf_counter() - start
            eager().sum().backward()
            times = {"eager": [], "compiled": []}
            for _ in range(repeats):
                order = [("eager", eager), ("compiled", compiled)]
                random.shuffle(order)
                for key, fn in order:
                    if device == "cuda":
                        torch.cuda.synchronize()
                    start = time.perf_counter()
                    fn().sum().backward()
                    if device == "cuda":
                        torch.cuda.synchronize()
                    times[key].append(time.perf_counter() - start)
            ratios = [c / e for c, e in zip(times["compiled"], times["eager"], strict=True)]
            print(
                f"| {L:>5} | {alpha:<5} | {first:>24.1f} "
                f"| {1e3 * statistics.median(times['eager']):>10.2f} "
                f"| {1e3 * statistics.median(times['compiled']):>13.2f} "
                f"| {statistics.median(ratios):>16.2f} |",
                flush=True,
            )


def _sdpa(q, k, v):
    return F.scaled_dot_product_attention(q, k, v)


def _run(fn, q, k, v, d_out) -> float:
    q, k, v = (x.detach().requires_grad_() for x in (q, k, v))
    if q.is_cuda:
        torch.cuda.synchronize()
    start = time.perf_counter()
    fn(q, k, v).backward(d_out)
    if q.is_cuda:
        torch.cuda.synchronize()
    return time.perf_counter() - start


def time_rows(
    lengths, alphas, repeats, device, naive_max_length, learned, compiled=False
) -> list[dict]:
    rows = []
    for L in lengths:
        q, k, v, d_out = _inputs(L, device)
        n_rep = repeats if L < 8192 else max(2, repeats // 3)
        for alpha in alphas:
            contenders = {"ours": _ours(alpha, learned), "sdpa": _sdpa}
            if L <= naive_max_length:
                contenders["naive"] = _naive(alpha, learned)
            first = None
            if compiled:
                torch.compiler.reset()
                contenders["compiled"] = _compiled(alpha, learned)
                first = _run(contenders["compiled"], q, k, v, d_out)  # compile + first call
            for fn in contenders.values():  # warm up
                _run(fn, q, k, v, d_out)
            times = {key: [] for key in contenders}
            to_sdpa, to_naive = [], []
            for _ in range(n_rep):
                order = list(contenders.items())
                random.shuffle(order)
                t = {key: _run(fn, q, k, v, d_out) for key, fn in order}
                for key in t:
                    times[key].append(t[key])
                to_sdpa.append(t["ours"] / t["sdpa"])
                if "naive" in t:
                    to_naive.append(t["ours"] / t["naive"])
            rows.append(
                {
                    "L": L,
                    "alpha": alpha,
                    "ours_s": statistics.median(times["ours"]),
                    "sdpa_s": statistics.median(times["sdpa"]),
                    "naive_s": statistics.median(times["naive"]) if to_naive else None,
                    "to_sdpa": statistics.median(to_sdpa),
                    "to_naive": statistics.median(to_naive) if to_naive else None,
                    "repeats": n_rep,
                    "first_s": first,
                    "compiled_s": statistics.median(times["compiled"]) if compiled else None,
                }
            )
            print(_time_line(rows[-1]), flush=True)
    return rows


def _time_line(r: dict) -> str:
    naive = "-" if r["naive_s"] is None else f"{r['naive_s']:.3f}"
    to_naive = "-" if r["to_naive"] is None else f"{r['to_naive']:.2f}"
    line = (
        f"| {r['L']:>5} | {r['alpha']:<5} | {r['ours_s']:>8.3f} | {naive:>8} "
        f"| {r['sdpa_s']:>8.3f} | {to_naive:>12} | {r['to_sdpa']:>11.2f} | {r['repeats']:>7} |"
    )
    if r["compiled_s"] is not None:
        ratio = r["compiled_s"] / r["ours_s"]
        line += f" {r['first_s']:>8.1f} | {r['compiled_s']:>8.3f} | {ratio:>8.2f} |"
    return line


# ---------------------------------------------------------------------- peak memory


def _status(field: str) -> int:
    """A memory figure of this process from ``/proc/self/status``, in bytes."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def _reset_peak() -> bool:
    """Reset the peak RSS (VmHWM) to the current RSS (Linux >= 4.0); False if refused."""
    try:
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")
    except OSError:
        return False
    return True


def _child(
    contender: str, alpha: float, L: int, device: str, limit_gb: float, learned: bool
) -> None:
    """Run one forward+backward and print the extra peak RSS in bytes as JSON."""
    if limit_gb > 0:
        limit = int(limit_gb * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    torch.set_num_threads(1)
    q, k, v, d_out = _inputs(L, device)
    q, k, v = (x.requires_grad_() for x in (q, k, v))
    fn = {"ours": _ours(alpha, learned), "naive": _naive(alpha, learned), "sdpa": _sdpa}[contender]
    reset = _reset_peak()  # else the peak of importing torch may hide a smaller one
    before = _status("VmRSS")
    try:
        fn(q, k, v).backward(d_out)
    except (RuntimeError, MemoryError) as exc:
        print(json.dumps({"error": type(exc).__name__}))
        return
    if reset:
        peak = _status("VmHWM")
    else:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"extra": peak - before, "hwm_reset": reset}))


def memory_rows(lengths, alphas, device, naive_limit_gb, learned) -> list[dict]:
    rows = []
    cases = [("sdpa", 1.0)] + [("ours", a) for a in alphas] + [("naive", alphas[0])]
    for L in lengths:
        for contender, alpha in cases:
            limit = naive_limit_gb if contender == "naive" else 0
            cmd = [
                sys.executable,
                __file__,
                "--child",
                contender,
                str(alpha),
                str(L),
                "--device",
                device,
                "--limit-gb",
                str(limit),
                *(["--learned"] if learned else []),
            ]
            result = subprocess.run(cmd, capture_output=True, text=True, check=False)
            lines = [ln for ln in result.stdout.splitlines() if ln.startswith("{")]
            data = json.loads(lines[-1]) if lines else {"error": f"exit {result.returncode}"}
            extra = data.get("extra")
            label = contender if contender == "sdpa" else f"{contender} a={alpha}"
            rows.append({"L": L, "contender": label, "extra": extra, "limit": limit})
            shown = f"{extra / 2**20:,.0f} MB" if extra is not None else f"> {limit} GB limit"
            print(f"| {L:>5} | {label:<14} | {shown:>16} |", flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[512, 2048, 8192])
    parser.add_argument("--alphas", type=float, nargs="+", default=[1.5, 2.0, 1.33])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--naive-max-length", type=int, default=2048)
    parser.add_argument("--naive-limit-gb", type=float, default=12.0)
    parser.add_argument("--skip-time", action="store_true")
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument("--child", nargs=3, metavar=("CONTENDER", "ALPHA", "L"))
    parser.add_argument("--limit-gb", type=float, default=0.0)
    parser.add_argument(
        "--learned",
        action="store_true",
        help="one alpha per head, a tensor that requires a gradient (learned alpha)",
    )
    parser.add_argument("--compiled", action="store_true", help="add torch.compile's columns")
    parser.add_argument(
        "--module", action="store_true", help="EntmaxMultiheadAttention, eager vs compiled"
    )
    args = parser.parse_args()
    if args.child:
        contender, alpha, L = args.child
        _child(contender, float(alpha), int(L), args.device, args.limit_gb, args.learned)
        return
    torch.set_num_threads(args.threads)
    print(
        f"torch {torch.__version__}, {args.device}, {args.threads} thread(s), float32, "
        f"B={B}, H={H}, d={D}, L=S, forward+backward"
        f"{', one learned alpha per head' if args.learned else ''}\n"
    )
    if args.module:
        torch.set_num_threads(args.threads)
        print(
            f"EntmaxMultiheadAttention(512, {H}), {args.device}, {args.threads} thread(s), "
            f"forward+backward{', learned alpha' if args.learned else ''}\n"
            "| L     | alpha | compile + first call (s) | eager (ms) | compiled (ms) "
            f"| compiled / eager |\n|{'-' * 7}|{'-' * 7}|{'-' * 26}|{'-' * 12}|{'-' * 15}"
            f"|{'-' * 18}|"
        )
        _module_rows(args.lengths, args.alphas, args.repeats, args.device, args.learned)
        return
    if not args.skip_time:
        compiled_head = " first (s) | compiled | c / ours |" if args.compiled else ""
        compiled_rule = f"{'-' * 11}|{'-' * 10}|{'-' * 10}|" if args.compiled else ""
        print(
            "| L     | alpha | ours (s) | naive (s) | sdpa (s) | ours / naive "
            f"| ours / sdpa | repeats |{compiled_head}\n"
            f"|{'-' * 7}|{'-' * 7}|{'-' * 10}|{'-' * 11}|{'-' * 10}|{'-' * 14}"
            f"|{'-' * 13}|{'-' * 9}|{compiled_rule}"
        )
        time_rows(
            args.lengths,
            args.alphas,
            args.repeats,
            args.device,
            args.naive_max_length,
            args.learned,
            args.compiled,
        )
    if not args.skip_memory and args.device == "cpu":
        print(
            "\npeak extra memory of one forward+backward (fresh process each)\n"
            f"| L     | contender      | extra peak RSS   |\n|{'-' * 7}|{'-' * 16}|{'-' * 18}|"
        )
        memory_rows(args.lengths, args.alphas, args.device, args.naive_limit_gb, args.learned)


if __name__ == "__main__":
    main()

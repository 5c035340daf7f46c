"""Out-of-core training on Dask: 10,000,000 x 100 float32 rows (4 GB) in a process that holds
one block at a time (issue 49).

Run from the repository root (the ``dask`` extra installed)::

    PYTHONPATH=. python3 benchmarks/bench_scale_out.py                   # 10M rows, 3 passes
    PYTHONPATH=. python3 benchmarks/bench_scale_out.py --rows 2000000 --passes 2
    PYTHONPATH=. python3 benchmarks/bench_scale_out.py --quick           # checks the script

The data: ``rows x 100`` standard normal float32, generated lazily by
``dask.array.random.default_rng(0)`` in blocks of ``--block`` rows (default 100,000), and 20
classes from a known linear rule (the argmax of ``X @ W``, ``W`` standard normal, seed 1),
computed block by block; a test set of 200,000 rows from another seed. Each fit runs in a
fresh subprocess (Dask's synchronous scheduler), whose peak resident memory is read from
``resource.getrusage`` (``ru_maxrss``):

- "out of core": ``fit_blocks(SparsemaxClassifier(random_state=0), X, y, passes=P)``, test
  accuracy after each pass;
- "in memory": ``SparsemaxClassifier(random_state=0).fit`` (L-BFGS) on the first
  ``--subset`` rows (default 1,000,000) as one array.

Goals: the out-of-core process's peak at most 2 GB; its accuracy within 0.5 points of the
in-memory fit's; time per row reported beside the in-memory fit's.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import textwrap

_CHILD = textwrap.dedent(
    """
    import json, resource, sys, time
    import numpy as np
    import dask, dask.array as da
    from sk_entmax import SparsemaxClassifier
    from sk_entmax.scale_out import fit_blocks

    args = json.loads(sys.argv[1])
    dask.config.set(scheduler="synchronous")
    W = np.random.default_rng(1).standard_normal((100, 20)).astype(np.float32)
    rule = lambda b: np.argmax(b @ W, axis=1)
    X = da.random.default_rng(0).standard_normal(
        (args["rows"], 100), chunks=(args["block"], 100), dtype=np.float32
    )
    y = X.map_blocks(rule, drop_axis=1, dtype=np.int64)
    X_test = np.random.default_rng(7).standard_normal((200_000, 100)).astype(np.float32)
    y_test = rule(X_test)
    out = {"mode": args["mode"]}
    clf = SparsemaxClassifier(random_state=0)
    start = time.perf_counter()
    if args["mode"] == "in memory":
        n = args["subset"]
        X_mem, y_mem = dask.compute(X[:n], y[:n])
        loaded = time.perf_counter()
        clf.fit(X_mem, y_mem)
        out.update(rows=n, load_s=loaded - start, fit_s=time.perf_counter() - loaded)
        out["accuracy"] = [float(clf.score(X_test, y_test))]
    else:
        out.update(rows=args["rows"], accuracy=[], pass_s=[])
        for p in range(args["passes"]):
            t = time.perf_counter()
            # plain passes: partial_fit decays its own step with the stream (issue 60.7)
            fit_blocks(clf, X, y, classes=np.arange(20), passes=1, random_state=p)
            out["pass_s"].append(time.perf_counter() - t)
            out["accuracy"].append(float(clf.score(X_test, y_test)))
            print(json.dumps(out), flush=True)
        out["fit_s"] = sum(out["pass_s"])
    out["peak_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(out), flush=True)
    """
)


def child(args: dict) -> dict:
    result = subprocess.run(
        [sys.executable, "-c", _CHILD, json.dumps(args)], capture_output=True, text=True
    )
    if result.returncode:
        raise RuntimeError(result.stderr[-3000:])
    return json.loads(result.stdout.strip().splitlines()[-1])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--block", type=int, default=100_000)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--subset", type=int, default=1_000_000)
    parser.add_argument("--json", default=None)
    parser.add_argument("--quick", action="store_true", help="200,000 rows, 2 passes")
    args = parser.parse_args(argv)
    if args.quick:
        args.rows, args.block, args.passes, args.subset = 200_000, 20_000, 2, 50_000
    common = {"rows": args.rows, "block": args.block, "subset": args.subset}
    results = [
        child({**common, "mode": "out of core", "passes": args.passes}),
        child({**common, "mode": "in memory"}),
    ]
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=1)
    core, memory = results
    print("| fit | rows | peak memory, MiB | fit s | us per row (per pass) | test accuracy |")
    print("|---|---|---|---|---|---|")
    per_row = [1e6 * s / core["rows"] for s in core["pass_s"]]
    print(
        f"| out of core, {args.passes} passes | {core['rows']:,} | {core['peak_mib']:.0f} | "
        f"{core['fit_s']:.0f} | {', '.join(f'{v:.1f}' for v in per_row)} | "
        f"{', '.join(f'{a:.4f}' for a in core['accuracy'])} |"
    )
    print(
        f"| in memory (L-BFGS) | {memory['rows']:,} | {memory['peak_mib']:.0f} | "
        f"{memory['fit_s']:.0f} | {1e6 * memory['fit_s'] / memory['rows']:.1f} | "
        f"{memory['accuracy'][0]:.4f} |"
    )
    gap = 100 * (memory["accuracy"][0] - core["accuracy"][-1])
    print(f"\nin memory - out of core after {args.passes} passes: {gap:+.2f} points")


if __name__ == "__main__":
    main()

"""TabNet's epoch on a GPU at the defaults, the CPU's beside it, and pytorch-tabnet's (issue 42).

Run from the repository root on a machine with CUDA (``benchmarks/cuda_checks.sh`` runs it as
its ``tabnet_200k`` step)::

    PYTHONPATH=. python3 benchmarks/bench_tabnet_device.py                 # 200,000 rows
    PYTHONPATH=. python3 benchmarks/bench_tabnet_device.py --device cpu --quick   # checks it

The data: ``make_classification(240_000, n_features=20, n_informative=8, random_state=0)``,
40,000 rows held out (stratified), standardized. Fits, ``--epochs`` epochs each (default 2),
after one untimed warm-up fit per device (imports, the CUDA context):

- ours: ``TabNetEntmaxClassifier(random_state=0, max_epochs=E, device=D)`` at its defaults,
  on the GPU (``--device``, default "cuda") and on the CPU; the batch sizes are the
  automatic ones of each device;
- pytorch-tabnet (when importable; the script says so when it is not): ``TabNetClassifier``
  at its defaults (batch 1,024, ghost batch 128) on the GPU and on the CPU (torch's default
  threads), and on the GPU at our GPU sizes too (the batch and ghost batch of our fitted
  GPU net).

It prints one ``KEY`` line per fit (epoch seconds, the median of epochs 2..E, the batch and
ghost batch, the test accuracy after E epochs) and the ratios: ours GPU/CPU, and ours over
pytorch-tabnet's on the GPU at its defaults and at equal sizes. The goal of issue 42: our
default GPU epoch at most 0.6 s on an H200 (4.8 s before the device-chosen sizes).
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

import numpy as np
import torch
from helpers import EpochTimer
from sklearn.datasets import make_classification
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from sk_entmax import TabNetEntmaxClassifier
from sk_entmax.nn.tabnet import GhostBatchNorm


def data(rows: int):
    X, y = make_classification(rows + rows // 5, n_features=20, n_informative=8, random_state=0)
    X_tr, X_te, y_tr, y_te = train_test_split(
        X, y, test_size=rows // 5, stratify=y, random_state=0
    )
    scaler = StandardScaler().fit(X_tr)
    return (*(scaler.transform(a).astype(np.float32) for a in (X_tr, X_te)), y_tr, y_te)


def ours(X_tr, y_tr, X_te, y_te, device: str, epochs: int) -> dict:
    model = TabNetEntmaxClassifier(random_state=0, max_epochs=epochs, device=device)
    start = time.perf_counter()
    model.fit(X_tr, y_tr)
    fit_s = time.perf_counter() - start
    durations = [float(d) for d in model.net_.history[:, "dur"]]
    ghost = next(
        m.virtual_batch_size for m in model.net_.module_.modules() if isinstance(m, GhostBatchNorm)
    )
    return {
        "epoch_s": statistics.median(durations[1:] or durations),
        "fit_s": fit_s,
        "batch": model.net_.batch_size,
        "ghost": ghost,
        "acc": float(model.score(X_te, y_te)),
    }


def reference(X_tr, y_tr, X_te, y_te, device: str, epochs: int, sizes=None) -> dict:
    from pytorch_tabnet.tab_model import TabNetClassifier

    batch, ghost = sizes or (1024, 128)
    # pytorch-tabnet reads every batch's loss back to the host, so an epoch's end is synced
    timer = EpochTimer()
    model = TabNetClassifier(seed=0, verbose=0, device_name=device)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        model.fit(
            X_tr,
            y_tr,
            max_epochs=epochs,
            patience=0,
            batch_size=batch,
            virtual_batch_size=ghost,
            callbacks=[timer],
        )
    fit_s = time.perf_counter() - start
    return {
        "epoch_s": statistics.median(timer.durations[1:] or timer.durations),
        "fit_s": fit_s,
        "batch": batch,
        "ghost": ghost,
        "acc": float((model.predict(X_te) == y_te).mean()),
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="4,000 rows (checks the script)")
    args = parser.parse_args(argv)
    if args.quick:
        args.rows = 4_000
    X_tr, X_te, y_tr, y_te = data(args.rows)
    try:
        import pytorch_tabnet  # noqa: F401

        have_reference = True
    except ImportError:
        have_reference = False
        print("KEY pytorch-tabnet: absent (pip install pytorch-tabnet, or carry its wheel)")
    devices = [args.device] if args.device == "cpu" else [args.device, "cpu"]
    for device in devices:  # the first fits pay imports and the CUDA context: not timed
        TabNetEntmaxClassifier(max_epochs=1, random_state=0, device=device).fit(
            X_tr[:2000], y_tr[:2000]
        )
    # the most wanted figures first: a step cut at its time limit keeps the lines printed;
    # "our sizes" are those our fit on that device chose (its fitted net's batch and ghost
    # batch), so the fits of ours come first
    runs = [(f"ours {d}", ours, d, None) for d in devices]
    if have_reference:
        runs.append((f"pytorch-tabnet {devices[0]} defaults", reference, devices[0], None))
        if args.device != "cpu":
            runs.append(
                (f"pytorch-tabnet {args.device} our sizes", reference, args.device, "ours")
            )
            runs.append(("pytorch-tabnet cpu defaults", reference, "cpu", None))
    results = {}
    for name, fit, device, sizes in runs:
        kwargs = {}
        if sizes == "ours":
            mine = results[f"ours {device}"]
            kwargs["sizes"] = (mine["batch"], mine["ghost"])
        r = fit(X_tr, y_tr, X_te, y_te, device, args.epochs, **kwargs)
        results[name] = r
        print(
            f"KEY {name}: epoch {r['epoch_s']:.3f} s, fit {r['fit_s']:.1f} s, batch "
            f"{r['batch']} / ghost {r['ghost']}, test acc after {args.epochs} epochs "
            f"{r['acc']:.4f}, torch threads {torch.get_num_threads()}",
            flush=True,
        )

    def ratio(a: str, b: str) -> str:
        if a in results and b in results:
            return f"{results[a]['epoch_s'] / results[b]['epoch_s']:.2f}"
        return "n/a"

    d = args.device
    if d != "cpu":
        print(f"KEY epoch ours {d}/cpu: {ratio(f'ours {d}', 'ours cpu')}")
        print(
            f"KEY epoch ours/pytorch-tabnet on {d}, its defaults: "
            f"{ratio(f'ours {d}', f'pytorch-tabnet {d} defaults')}"
        )
        print(
            f"KEY epoch ours/pytorch-tabnet on {d}, equal sizes: "
            f"{ratio(f'ours {d}', f'pytorch-tabnet {d} our sizes')}"
        )
    print(
        f"KEY epoch ours/pytorch-tabnet on cpu, defaults: "
        f"{ratio('ours cpu', 'pytorch-tabnet cpu defaults')}"
    )


if __name__ == "__main__":
    main()

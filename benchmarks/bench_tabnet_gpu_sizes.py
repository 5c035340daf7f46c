"""Does TabNet lose accuracy at the automatic sizes chosen for a GPU? (issue 42)

On a GPU, ``batch_size="auto"`` and ``virtual_batch_size="auto"`` take large batches (16,384
rows and ghost batches of 1,024 at 200,000 rows) where a CPU takes 1,024 and 128: an epoch
then takes 13 optimizer steps instead of 196. This script fits both sizes on the same data
and seeds and compares their test accuracy: the mean difference with two paired standard
errors (goal: the GPU sizes within 2 SE of the CPU's). The arithmetic is the same on any
device, so the accuracy can be measured on a CPU; ``--device cuda`` also fits the GPU sizes
on the GPU and prints their epoch time.

Run from the repository root::

    PYTHONPATH=. python3 benchmarks/bench_tabnet_gpu_sizes.py          # 200,000 rows, 5 seeds
    PYTHONPATH=. python3 benchmarks/bench_tabnet_gpu_sizes.py --rows 50000 --max-epochs 100
    PYTHONPATH=. python3 benchmarks/bench_tabnet_gpu_sizes.py --quick  # checks the script

The data: ``make_classification(rows + rows // 5, n_features=20, n_informative=8,
random_state=0)``, a fifth held out as the test set (stratified), standardized on the
training rows. Each fit is ``TabNetEntmaxClassifier(random_state=seed,
max_epochs=--max-epochs)`` at its defaults otherwise, with the sizes of
:func:`sk_entmax._tabnet.sizing.auto_batch_size` and ``auto_virtual_batch_size`` for "cpu"
and for "cuda" given explicitly (so both run on the device asked for).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np
from _helpers import mean_2se, paired_2se
from sklearn.datasets import make_classification
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from sk_entmax import TabNetEntmaxClassifier
from sk_entmax._tabnet.sizing import auto_batch_size, auto_virtual_batch_size


def sizes(n_rows: int, device: str) -> dict[str, int]:
    batch = auto_batch_size(n_rows, device)
    return {"batch_size": batch, "virtual_batch_size": auto_virtual_batch_size(batch, device)}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--max-epochs", type=int, default=30)
    parser.add_argument("--device", default="cpu", help="where the fits run (cpu or cuda)")
    parser.add_argument("--json", default=None)
    parser.add_argument("--quick", action="store_true", help="5,000 rows, 2 seeds, 2 epochs")
    args = parser.parse_args(argv)
    if args.quick:
        args.rows, args.seeds, args.max_epochs = 5_000, 2, 2
    X, y = make_classification(
        args.rows + args.rows // 5, n_features=20, n_informative=8, random_state=0
    )
    X_tr, X_te, y_tr, y_te = train_test_split(
        X, y, test_size=args.rows // 5, stratify=y, random_state=0
    )
    scaler = StandardScaler().fit(X_tr)
    X_tr, X_te = (scaler.transform(a).astype(np.float32) for a in (X_tr, X_te))
    configs = {"cpu sizes": sizes(args.rows, "cpu"), "gpu sizes": sizes(args.rows, "cuda")}
    print(f"{args.rows:,} training rows, device {args.device}: {json.dumps(configs)}", flush=True)
    results: dict[str, dict[str, list[float]]] = {
        name: {"acc": [], "epoch_s": [], "epochs": []} for name in configs
    }
    for seed in range(args.seeds):
        for name, config in configs.items():
            model = TabNetEntmaxClassifier(
                random_state=seed, max_epochs=args.max_epochs, device=args.device, **config
            )
            start = time.perf_counter()
            model.fit(X_tr, y_tr)
            elapsed = time.perf_counter() - start
            durations = list(model.net_.history[:, "dur"])
            results[name]["acc"].append(float(model.score(X_te, y_te)))
            results[name]["epoch_s"].append(statistics.median(durations[1:] or durations))
            results[name]["epochs"].append(len(durations))
            print(
                f"seed {seed} {name}: test acc {results[name]['acc'][-1]:.4f}, "
                f"{len(durations)} epochs, epoch {results[name]['epoch_s'][-1]:.2f} s, "
                f"fit {elapsed:.1f} s",
                flush=True,
            )
    print()
    print("| sizes | batch | ghost batch | test accuracy +- 2 SE | epochs | epoch s |")
    print("|---|---|---|---|---|---|")
    for name, config in configs.items():
        mean, se = mean_2se(results[name]["acc"])
        print(
            f"| {name} | {config['batch_size']} | {config['virtual_batch_size']} | "
            f"{mean:.4f} +- {se:.4f} | {statistics.median(results[name]['epochs']):g} | "
            f"{statistics.median(results[name]['epoch_s']):.2f} |"
        )
    diff, se = paired_2se(results["gpu sizes"]["acc"], results["cpu sizes"]["acc"])
    verdict = "within" if abs(diff) <= se else ("above" if diff > 0 else "BELOW")
    print(f"\ngpu sizes - cpu sizes: {diff:+.4f} +- {se:.4f} (2 paired SE): {verdict}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"args": vars(args), "configs": configs, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()

"""A bit-for-bit snapshot of what the package computes, to check that a refactor changes nothing.

Records, through the public API only, the core's outputs and gradients (every exact map, the
root-finding maps at several alphas, scalar and per-row, each Fenchel-Young loss, both
``training`` paths, two dtypes, two axes) and what the estimators learn (linear, TabNet with
and without faithful masks, the regressor, ``partial_fit``, conformal sets). ``--compare``
reports every entry that differs by even one bit.

Run it before and after a change, one thread, the same machine::

    PYTHONPATH=. python3 benchmarks/bit_snapshot.py --out /tmp/before.pt    # at the old commit
    PYTHONPATH=. python3 benchmarks/bit_snapshot.py --compare /tmp/before.pt  # at the new one

``--core-only`` skips the estimators (seconds instead of about a minute).
"""

# ruff: noqa: B023  (each lambda is called at once, inside the loop that binds its variables)
from __future__ import annotations

import argparse
import sys

import numpy as np
import torch
from sklearn.datasets import load_iris, load_wine, make_regression

import sk_entmax.entmax as E
from sk_entmax import (
    EntmaxClassifier,
    SparseConformalClassifier,
    SparsemaxClassifier,
    TabNetEntmaxClassifier,
    TabNetEntmaxRegressor,
)

ALPHAS = (1.0, 1.25, 1.5, 2.0, 3.0)


def _leaf(shape: tuple[int, ...], dtype: torch.dtype, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(shape, generator=g, dtype=torch.float64) * 2).to(dtype).requires_grad_()


def _record(out: dict, name: str, fn, shape, dtype, seed: int, alpha=None) -> None:
    """The output of ``fn`` and the gradients of a fixed random projection of it."""
    x = _leaf(shape, dtype, seed)
    args = [x]
    a = None
    if alpha is not None:
        a = alpha.clone().requires_grad_() if isinstance(alpha, torch.Tensor) else alpha
        args.append(a)
    y = fn(*args)
    if isinstance(y, tuple):
        out[name + "/support"] = y[1].detach().clone()
        y = y[0]
    out[name + "/out"] = y.detach().clone()
    if y.requires_grad:
        g = torch.Generator().manual_seed(seed + 1)
        w = torch.randn(y.shape, generator=g, dtype=torch.float64).to(y.dtype)
        (y * w).sum().backward()
        out[name + "/dx"] = x.grad.clone()
        if isinstance(a, torch.Tensor) and a.grad is not None:
            out[name + "/dalpha"] = a.grad.clone()


def core() -> dict:
    out: dict = {}
    for dtype in (torch.float64, torch.float32):
        for shape, dim in (((6, 9), -1), ((3, 5, 7), 1)):
            tag = f"{str(dtype)[6:]}/{'x'.join(map(str, shape))}/d{dim}"
            per_row = torch.linspace(1.1, 2.6, shape[0], dtype=dtype).reshape(
                (shape[0],) + (1,) * (len(shape) - 1)
            )
            for training in (True, False):
                t = f"{tag}/t{int(training)}"
                _record(
                    out,
                    f"sparsemax/{t}",
                    lambda x: E.sparsemax(x, dim=dim, training=training, return_support_size=True),
                    shape,
                    dtype,
                    1,
                )
                _record(
                    out,
                    f"entmax15/{t}",
                    lambda x: E.entmax15(x, dim=dim, training=training, return_support_size=True),
                    shape,
                    dtype,
                    2,
                )
                _record(
                    out,
                    f"sparsemax_k3/{t}",
                    lambda x: E.sparsemax(x, dim=dim, k=3, training=training),
                    shape,
                    dtype,
                    3,
                )
                _record(
                    out,
                    f"entmax15_k3/{t}",
                    lambda x: E.entmax15(x, dim=dim, k=3, training=training),
                    shape,
                    dtype,
                    4,
                )
                for alpha in ALPHAS:
                    _record(
                        out,
                        f"entmax_bisect/a{alpha}/{t}",
                        lambda x, a: E.entmax_bisect(x, a, dim=dim, training=training),
                        shape,
                        dtype,
                        5,
                        alpha,
                    )
                    _record(
                        out,
                        f"entmax/a{alpha}/{t}",
                        lambda x, a: E.entmax(x, a, dim=dim, training=training),
                        shape,
                        dtype,
                        6,
                        alpha,
                    )
                _record(
                    out,
                    f"entmax_bisect/rows/{t}",
                    lambda x, a: E.entmax_bisect(x, a, dim=dim, training=training),
                    shape,
                    dtype,
                    7,
                    per_row,
                )
                _record(
                    out,
                    f"entmax/rows/{t}",
                    lambda x, a: E.entmax(x, a, dim=dim, training=training),
                    shape,
                    dtype,
                    8,
                    per_row,
                )
                _record(
                    out,
                    f"sparsemax_bisect/{t}",
                    lambda x: E.sparsemax_bisect(x, dim=dim, training=training),
                    shape,
                    dtype,
                    9,
                )
            _record(
                out, f"normmax/{tag}", lambda x: E.normmax_bisect(x, 2, dim=dim), shape, dtype, 10
            )
            _record(
                out, f"budget/{tag}", lambda x: E.budget_bisect(x, 3, dim=dim), shape, dtype, 11
            )
        # losses: 2-D scores, integer targets
        target = torch.tensor([0, 3, 8, 1, 4, 2])
        shape = (6, 9)
        _record(
            out, f"sparsemax_loss/{dtype}", lambda x: E.sparsemax_loss(x, target), shape, dtype, 12
        )
        _record(
            out, f"entmax15_loss/{dtype}", lambda x: E.entmax15_loss(x, target), shape, dtype, 13
        )
        _record(
            out,
            f"sparsemax_loss_k3/{dtype}",
            lambda x: E.sparsemax_loss(x, target, k=3),
            shape,
            dtype,
            14,
        )
        _record(
            out,
            f"sparsemax_bisect_loss/{dtype}",
            lambda x: E.sparsemax_bisect_loss(x, target),
            shape,
            dtype,
            15,
        )
        _record(
            out,
            f"normmax_loss/{dtype}",
            lambda x: E.normmax_bisect_loss(x, target),
            shape,
            dtype,
            16,
        )
        for alpha in ALPHAS:
            _record(
                out,
                f"entmax_loss/a{alpha}/{dtype}",
                lambda x, a: E.entmax_loss(x, target, a),
                shape,
                dtype,
                17,
                alpha,
            )
            _record(
                out,
                f"entmax_bisect_loss/a{alpha}/{dtype}",
                lambda x, a: E.entmax_bisect_loss(x, target, a),
                shape,
                dtype,
                18,
                alpha,
            )
        rows = torch.linspace(1.1, 2.6, 6, dtype=dtype).reshape(6, 1)
        _record(
            out,
            f"entmax_loss/rows/{dtype}",
            lambda x, a: E.entmax_loss(x, target, a),
            shape,
            dtype,
            19,
            rows,
        )
        _record(
            out,
            f"entmax_bisect_loss/rows/{dtype}",
            lambda x, a: E.entmax_bisect_loss(x, target, a),
            shape,
            dtype,
            20,
            rows,
        )
        # the module twins and attention
        x = _leaf((2, 3, 5, 4), dtype, 21)
        for alpha in (1.5, 2.0, 1.3):
            y = E.entmax_attention(x, x * 0.5, x.detach() + 1.0, alpha=alpha)
            out[f"attention/a{alpha}/{dtype}"] = y.detach().clone()
    return out


def _fit(est, X, y, method: str = "predict_proba") -> torch.Tensor:
    est.fit(X, y)
    return torch.as_tensor(np.asarray(getattr(est, method)(X), dtype=np.float64))


def estimators() -> dict:
    out: dict = {}
    Xi, yi = load_iris(return_X_y=True)
    Xw, yw = load_wine(return_X_y=True)
    Xw = (Xw - Xw.mean(0)) / Xw.std(0)
    out["linear/entmax"] = _fit(EntmaxClassifier(alpha=1.5, random_state=0), Xi, yi)
    out["linear/sparsemax_adam"] = _fit(
        SparsemaxClassifier(solver="adam", max_epochs=5, random_state=0), Xi, yi
    )
    est = EntmaxClassifier(alpha=1.3, solver="adam", random_state=0)
    for _ in range(3):
        est.partial_fit(Xi, yi, classes=np.unique(yi))
    out["linear/partial_fit"] = torch.as_tensor(est.predict_proba(Xi))
    for faithful in (True, False):
        est = TabNetEntmaxClassifier(max_epochs=30, faithful_masks=faithful, random_state=0)
        out[f"tabnet/faithful{faithful}/proba"] = _fit(est, Xw, yw)
        out[f"tabnet/faithful{faithful}/masks"] = torch.as_tensor(
            np.asarray(est.explain(Xw)[0], dtype=np.float64)
        )
        out[f"tabnet/faithful{faithful}/never_read"] = torch.as_tensor(
            np.asarray(est.never_read(Xw), dtype=np.float64)
        )
    Xr, yr = make_regression(n_samples=300, n_features=6, n_informative=3, random_state=0)
    out["tabnet/regressor"] = _fit(
        TabNetEntmaxRegressor(max_epochs=10, random_state=0), Xr, yr, "predict"
    )
    conf = SparseConformalClassifier(
        EntmaxClassifier(alpha=1.5, random_state=0), confidence_level=0.9, random_state=0
    )
    half = np.arange(len(yi)) % 2 == 0
    conf.fit(Xi[half], yi[half]).conformalize(Xi[~half], yi[~half])
    out["conformal/sets"] = torch.as_tensor(np.asarray(conf.predict_set(Xi), dtype=np.float64))
    return out


def estimator_keys() -> set[str]:
    """The entries :func:`estimators` writes, for a core-only comparison."""
    keys = {"linear/entmax", "linear/sparsemax_adam", "linear/partial_fit", "tabnet/regressor"}
    keys |= {"conformal/sets"}
    for faithful in (True, False):
        keys |= {f"tabnet/faithful{faithful}/{k}" for k in ("proba", "masks", "never_read")}
    return keys


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out")
    parser.add_argument("--compare")
    parser.add_argument("--core-only", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    snap = core()
    if not args.core_only:
        snap.update(estimators())
    if args.out:
        torch.save(snap, args.out)
        print(f"{len(snap)} entries written to {args.out}")
    if args.compare:
        ref = torch.load(args.compare)
        keys = sorted(set(ref) & set(snap))
        differ = [
            k
            for k in keys
            if ref[k].dtype != snap[k].dtype
            or ref[k].shape != snap[k].shape
            or not torch.equal(ref[k], snap[k])
        ]
        if args.core_only:  # the estimators' entries were not recomputed
            ref = {k: v for k, v in ref.items() if k in snap or k not in estimator_keys()}
        missing = sorted(set(ref) ^ set(snap))
        for k in differ:
            print("DIFFERS", k)
        for k in missing:
            print("ONLY IN ONE", k)
        print(f"{len(keys)} compared, {len(differ)} differ, {len(missing)} in only one snapshot")
        return 1 if differ or missing else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())

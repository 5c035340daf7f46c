"""Peak memory and time of ``sk_entmax.persistence.load`` on crafted hostile files (issue 26).

Run from the repository root::

    python benchmarks/bench_load_memory.py [--cap-gb 8] [--only NAME ...] [--keep DIR]

Each file is a few hundred bytes to a few MB: a header whose network arguments describe a
huge network, and tensors that are empty (zero bytes) or merely named. ``load`` must refuse
every one of them, and before doing so allocate next to nothing.

Each file is loaded once, in a fresh Python process that first imports torch, sk_entmax and
everything ``load`` needs (and loads one small valid model, so that lazy imports and first
calls are paid before the measurement), then resets its peak resident set size to the
current one (``/proc/self/clear_refs``; the peak since start when the kernel refuses) and
loads the crafted file. The table gives the file's size, the peak RSS above the RSS before
the call (MB), the seconds ``load`` took, and how it ended. The process gets an
address-space limit of its size after the imports plus ``--cap-gb`` (default 8) GB, so a
load that would exhaust a shared machine fails cleanly instead: its row reads "killed at the
N GB address-space cap", with the peak it reached.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

_MB = 2**20

_CHILD = r"""
import json, resource, sys, time

import torch  # noqa: F401
import sk_entmax  # noqa: F401
from sk_entmax import EntmaxClassifier, SparsemaxClassifier, TabNetEntmaxClassifier  # noqa: F401
from sk_entmax.persistence import load

def status(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return 0

path, warm, cap_gb = sys.argv[1], sys.argv[2], float(sys.argv[3])
load(warm)  # lazy imports, first calls
limit = status("VmSize") + int(cap_gb * 2**30)
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
try:
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")
    reset = True
except OSError:
    reset = False
before = status("VmRSS")
start = time.perf_counter()
try:
    load(path)
    outcome = "loaded"
except MemoryError:
    outcome = "MemoryError"
except Exception as error:  # noqa: BLE001 - reported, whatever it is
    text = str(error)
    if "allocate" in text or isinstance(error, MemoryError):
        outcome = "out of memory"
    else:
        outcome = type(error).__name__ + ": " + text.replace(path, "<path>")
seconds = time.perf_counter() - start
peak = status("VmHWM") if reset else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"extra": peak - before, "seconds": seconds, "outcome": outcome}))
"""


def _header(estimator: str, module: str, kwargs: dict, aliases: dict | None = None) -> dict:
    """A header with every entry load looks at; parameters and fitted attributes empty
    (checked after the network arguments)."""
    return {
        "format_version": 1,
        "sk_entmax_version": "0",
        "estimator": estimator,
        "params": {},
        "fitted": {},
        "net": {
            "module": module,
            "module_kwargs": {"__dict__": [[k, v] for k, v in kwargs.items()]},
            "batch_size": 1,
            "history": [],
            "aliases": aliases or {},
        },
    }


def _tabnet(**kwargs) -> dict:
    return _header(
        "TabNetEntmaxClassifier",
        "TabNetClassifierNet",
        {"n_features": 4, "n_outputs": 3, **kwargs},
    )


def _linear(**kwargs) -> dict:
    return _header(
        "EntmaxClassifier", "EntmaxLinearNet", {"n_features": 4, "n_outputs": 3, **kwargs}
    )


def _empty(*shape: int):
    import torch

    return torch.empty(shape)


def _with_arguments(header: dict, **changes) -> dict:
    header = json.loads(json.dumps(header))
    pairs = header["net"]["module_kwargs"]["__dict__"]
    for key, value in changes.items():
        [index] = [i for i, (name, _) in enumerate(pairs) if name == key]
        pairs[index][1] = value
    return header


def _held(header: dict, tensors: dict) -> dict[str, tuple[str, dict, dict]]:
    """Files made from a real TabNet file whose sizes are held by stored tensors."""
    import torch

    attention, norm = "tabnet.attentive_transformers", "tabnet.initial_splitter.layers"
    many = dict(tensors)
    for i in range(2000):
        many[f"{attention}.{i}.fc.weight"] = tensors[f"{attention}.0.fc.weight"].clone()
        many[f"{norm}.{i}.bn.weight"] = tensors[f"{norm}.0.bn.weight"].clone()
    return {
        "steps x layers held": (
            "real TabNet, n_steps=n_independent=2000, 2000 small tensors named for each",
            _with_arguments(header, n_steps=2000, n_independent=2000),
            many,
        ),
        "n_d=2**19 held": (
            "real TabNet, n_d=2**19, tabnet.final_mapping.weight stored as [3, 2**19] (6 MB)",
            _with_arguments(header, n_d=2**19),
            {**tensors, "tabnet.final_mapping.weight": torch.zeros(3, 2**19)},
        ),
        "n_features=2**22 held": (
            "real TabNet, n_features=2**22, tabnet.initial_bn.weight stored as [2**22] (16 MB)",
            _with_arguments(header, n_features=2**22, missing_fill=None),
            {**tensors, "tabnet.initial_bn.weight": torch.zeros(2**22)},
        ),
    }


def crafted_files(warm: str) -> dict[str, tuple[str, dict, dict]]:
    """name -> (description, header, tensors) of each crafted file; ``warm`` is a real
    TabNet file to derive some from."""
    from safetensors import safe_open

    big, top = 10**7, 2**31 - 1
    steps = 2 * 10**4
    files = {
        "n_d=4e6": (
            "TabNet n_d=4e6, one extra tensor of shape [4e6, 0]",
            _tabnet(n_d=4 * 10**6),
            {"x": _empty(4 * 10**6, 0)},
        ),
        "n_d=1e7": ("TabNet n_d=1e7, extra [1e7, 0]", _tabnet(n_d=big), {"x": _empty(big, 0)}),
        "n_a=1e7": ("TabNet n_a=1e7, extra [1e7, 0]", _tabnet(n_a=big), {"x": _empty(big, 0)}),
        "n_steps=2e4": (
            "TabNet n_steps=2e4, extra [2e4, 0]",
            _tabnet(n_steps=steps),
            {"x": _empty(steps, 0)},
        ),
        "n_independent=2e4": (
            "TabNet n_independent=2e4, extra [2e4, 0]",
            _tabnet(n_independent=steps),
            {"x": _empty(steps, 0)},
        ),
        "n_features=1e7": (
            "TabNet n_features=1e7, extra [1e7, 0]",
            _tabnet(n_features=big),
            {"x": _empty(big, 0)},
        ),
        "cat_emb_dims=1e7": (
            "TabNet one categorical column embedded in 1e7, extra [1e7, 0]",
            _tabnet(cat_idxs=[0], cat_dims=[2], cat_emb_dims=big),
            {"x": _empty(big, 0)},
        ),
        "cat_idxs=2e5": (
            "TabNet 2e5 categorical columns (2e5 embeddings), extra [2e5, 0]",
            _tabnet(
                n_features=2 * 10**5,
                cat_idxs=list(range(2 * 10**5)),
                cat_dims=[1] * (2 * 10**5),
            ),
            {"x": _empty(2 * 10**5, 0)},
        ),
        "hidden=[1]*1e6": (
            "Linear hidden_layer_sizes of 1e6 layers, extra [4, 0]",
            _linear(hidden_layer_sizes=[1] * 10**6),
            {"x": _empty(4, 0)},
        ),
        "n_d=2**31-1 named": (
            "TabNet n_d=2**31-1, tabnet.final_mapping.weight stored as [0, 2**31-1]",
            _tabnet(n_d=top),
            {"tabnet.final_mapping.weight": _empty(0, top)},
        ),
        "n_features=2**31-1 named": (
            "TabNet n_features=2**31-1, tabnet.initial_bn.weight stored as [2**31-1, 0]",
            _tabnet(n_features=top),
            {"tabnet.initial_bn.weight": _empty(top, 0)},
        ),
        "steps x layers named": (
            "TabNet n_steps=n_independent=2000, 2000 empty tensors named for each",
            _tabnet(n_steps=2000, n_independent=2000),
            {
                **{f"tabnet.attentive_transformers.{i}.fc.weight": _empty(0) for i in range(2000)},
                **{
                    f"tabnet.initial_splitter.layers.{i}.bn.weight": _empty(0) for i in range(2000)
                },
            },
        ),
    }
    # JSON itself: 2e6 empty lists in the training history (about 8 MB of header)
    history = _tabnet()
    history["net"]["history"] = [[]] * (2 * 10**6)
    files["history=[[]]*2e6"] = ("2e6 empty lists in the history (JSON)", history, {})
    with safe_open(warm, framework="pt") as handle:
        header = json.loads(handle.metadata()["sk_entmax"])
        tensors = {k: handle.get_tensor(k) for k in handle.keys()}
    files.update(_held(header, tensors))
    return files


def write_file(path: str, header: dict, tensors: dict) -> None:
    from safetensors.torch import save_file

    save_file(tensors, path, metadata={"sk_entmax": json.dumps(header)})


def _warm_file(folder: str) -> str:
    """A small valid model for the child's warm-up load."""
    import numpy as np

    from sk_entmax import TabNetEntmaxClassifier
    from sk_entmax.persistence import save

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(40, 4)), np.arange(40) % 3
    path = os.path.join(folder, "warm.safetensors")
    X[::5, 0] = np.nan  # a missing indicator
    clf = TabNetEntmaxClassifier(n_d=4, n_a=4, n_steps=2, max_epochs=1, random_state=0)
    save(clf.fit(X, y), path)
    return path


def measure(path: str, warm: str, cap_gb: float) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, path, warm, str(cap_gb)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    lines = out.stdout.strip().splitlines()
    if out.returncode or not lines:
        tail = (out.stderr.strip().splitlines() or ["?"])[-1]
        return {"extra": None, "seconds": None, "outcome": f"process failed: {tail}"}
    return json.loads(lines[-1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cap-gb", type=float, default=8.0)
    parser.add_argument("--only", nargs="*", help="names of the files to load")
    parser.add_argument("--keep", help="write the crafted files in this folder and keep them")
    args = parser.parse_args(argv)
    folder = args.keep or tempfile.mkdtemp(prefix="bench_load_memory_")
    os.makedirs(folder, exist_ok=True)
    warm = _warm_file(folder)
    files = crafted_files(warm)
    names = args.only or list(files)
    print("| file | bytes | peak RSS above before load (MB) | seconds | outcome |")
    print("|---|---:|---:|---:|---|")
    for name in names:
        _, header, tensors = files[name]
        path = os.path.join(folder, name.replace("*", "x").replace("=", "_") + ".safetensors")
        write_file(path, header, tensors)
        row = measure(path, warm, args.cap_gb)
        if row["extra"] is None:
            extra, seconds = "?", "?"
        else:
            extra = f"{row['extra'] / _MB:.1f}"
            seconds = f"{row['seconds']:.2f}"
        outcome = row["outcome"]
        if outcome in ("MemoryError", "out of memory"):
            outcome = f"killed at the {args.cap_gb:g} GB address-space cap"
        print(f"| {name} | {os.path.getsize(path)} | {extra} | {seconds} | {outcome[:110]} |")
        sys.stdout.flush()
        if not args.keep:
            os.remove(path)
    print()
    for name in names:
        print(f"- {name}: {files[name][0]}")


if __name__ == "__main__":
    main()

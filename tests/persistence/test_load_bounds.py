"""What a hostile file can make ``sk_entmax.persistence.load`` allocate (issue 26).

A file of a few hundred bytes whose header describes a huge network (``n_d=4e6`` with one
extra zero-byte tensor of shape ``[4e6, 0]``, ``n_steps=2e4``, ``n_features=1e7``, every
integer network argument at ``2**31 - 1``, ...) must be refused before anything of that size
exists: unknown tensors first, every argument bounded by the tensors it sizes, and the
network's skeleton built on the meta device only, with no more tensors than the file holds.

The memory is measured in one child process that imports torch and sk_entmax, loads one
valid model (lazy imports, first calls), then loads each crafted file with its peak RSS reset
before (``/proc/self/clear_refs``; the peak since the start where the kernel refuses) and
reports the peak above the RSS before the call. The child has an address-space limit and a
per-file alarm, so that a regression fails the test instead of exhausting the machine.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import torch
from saved_files import read_saved, write_saved

from sk_entmax import EntmaxClassifier, TabNetEntmaxClassifier
from sk_entmax.nn.linear import EntmaxLinearNet
from sk_entmax.nn.tabnet_nets import TabNetClassifierNet
from sk_entmax.persistence import load, save

TOP = 2**31 - 1
#: what a refused file may make load use above the RSS before the call
MAX_EXTRA_MB = 50
#: a generous per-file limit: the refusals take milliseconds
SECONDS = 10.0
#: the child's address space above its size after the imports
CAP_BYTES = 2 * 2**30


def _frame():
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            "a": rng.normal(size=40),
            "b": rng.normal(size=40),
            "c": np.array(["x", "y", "z", "w"])[np.arange(40) % 4],
        }
    )
    frame.loc[::5, "a"] = np.nan  # a missing indicator: missing_idxs is not empty
    return frame


Y = np.arange(40) % 3


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """A tiny saved model of each network, with every list argument non-empty."""
    folder = tmp_path_factory.mktemp("bounds")
    frame = _frame()
    fits = {
        "linear": EntmaxClassifier(hidden_layer_sizes=(3,), learn_alpha=True, max_epochs=2).fit(
            frame[["a", "b"]].fillna(0.0), Y
        ),
        "tabnet": TabNetEntmaxClassifier(
            n_d=4, n_a=4, n_steps=2, entmax_mode="adaptive", max_epochs=1, random_state=0
        ).fit(frame, Y),
    }
    out = {}
    for kind, clf in fits.items():
        path = folder / f"{kind}.safetensors"
        save(clf, path)
        header, tensors = read_saved(path)
        out[kind] = (path, header, tensors)
    return out


def _arguments(header):
    return header["net"]["module_kwargs"]["__dict__"]


def _with_argument(header, key, value):
    header = copy.deepcopy(header)
    pairs = _arguments(header)
    names = [name for name, _ in pairs]
    if key in names:
        pairs[names.index(key)][1] = value
    else:
        pairs.append([key, value])
    return header


def _as_top(value):
    """``value`` (an int or a list or tuple of ints) with its ints at 2**31 - 1."""
    if isinstance(value, int):
        return TOP
    if isinstance(value, dict):  # an encoded tuple
        return {"__tuple__": [TOP] * max(1, len(value["__tuple__"]))}
    return [TOP] * max(1, len(value))


def _integer_arguments(header):
    """The network arguments that are ints or sequences of ints."""

    def is_ints(value):
        if isinstance(value, dict) and "__tuple__" in value:
            value = value["__tuple__"]
        return isinstance(value, list) and value and all(type(v) is int for v in value)

    return [name for name, value in _arguments(header) if type(value) is int or is_ints(value)]


def _minimal(module, estimator, **kwargs):
    """A header with every entry load looks at, and no parameters or fitted attributes."""
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
            "aliases": {},
        },
    }


def _tabnet(**kwargs):
    kwargs = {"n_features": 4, "n_outputs": 3, **kwargs}
    return _minimal("TabNetClassifierNet", "TabNetEntmaxClassifier", **kwargs)


def _empty(*shape):
    return torch.empty(shape)


def _crafted(models):
    """name -> (header, tensors) of each hostile file."""
    files = {
        # the files of the issue
        "n_d=4e6": (_tabnet(n_d=4 * 10**6), {"x": _empty(4 * 10**6, 0)}),
        "n_d=1e7": (_tabnet(n_d=10**7), {"x": _empty(10**7, 0)}),
        "n_steps=2e4": (_tabnet(n_steps=2 * 10**4), {"x": _empty(2 * 10**4, 0)}),
        "n_features=1e7": (_tabnet(n_features=10**7), {"x": _empty(10**7, 0)}),
        # many modules from a short header
        "hidden=[1]*1e5": (
            _minimal(
                "EntmaxLinearNet",
                "EntmaxClassifier",
                n_features=4,
                n_outputs=3,
                hidden_layer_sizes=[1] * 10**5,
            ),
            {"x": _empty(4, 0)},
        ),
        "cat_idxs=5e4": (
            _tabnet(
                n_features=5 * 10**4,
                cat_idxs=list(range(5 * 10**4)),
                cat_dims=[1] * (5 * 10**4),
            ),
            {"x": _empty(5 * 10**4, 0)},
        ),
        # as many steps and layers as empty tensors named for them
        "steps-x-layers": (
            _tabnet(n_steps=2000, n_independent=2000),
            {
                **{f"tabnet.attentive_transformers.{i}.fc.weight": _empty(0) for i in range(2000)},
                **{
                    f"tabnet.feature_transformers.0.layers.{i}.bn.weight": _empty(0)
                    for i in range(2000)
                },
            },
        ),
    }
    # as many steps and GLU layers as tensors that hold values for them: the arguments are
    # within every bound, their product (4e6 layers) is not in the file
    _, header, tensors = models["tabnet"]
    attention, norm = "tabnet.attentive_transformers", "tabnet.feature_transformers.0.layers"
    many = dict(tensors)
    many.update(
        {
            f"{attention}.{i}.fc.weight": tensors[f"{attention}.0.fc.weight"].clone()
            for i in range(2000)
        }
    )
    many.update(
        {f"{norm}.{i}.bn.weight": tensors[f"{norm}.0.bn.weight"].clone() for i in range(2000)}
    )
    edited = _with_argument(_with_argument(header, "n_steps", 2000), "n_independent", 2000)
    files["steps-x-layers-held"] = (edited, many)
    # sizes that one stored tensor holds (6 MB, 16 MB): the network they describe is not the
    # one stored, and its skeleton costs nothing
    wide = {**tensors, "tabnet.final_mapping.weight": torch.zeros(3, 2**19)}
    files["n_d-held"] = (_with_argument(header, "n_d", 2**19), wide)
    wide = {**tensors, "tabnet.initial_bn.weight": torch.zeros(2**22)}
    edited = _with_argument(_with_argument(header, "n_features", 2**22), "missing_fill", None)
    files["n_features-held"] = (edited, wide)
    # every integer argument of every network at 2**31 - 1: alone, with an extra empty tensor
    # that large, and with every stored tensor replaced by an empty one that large
    for kind, (_, header, tensors) in models.items():
        for key in _integer_arguments(header):
            value = dict(_arguments(header))[key]
            edited = _with_argument(header, key, _as_top(value))
            files[f"{kind}-{key}"] = (edited, tensors)
            files[f"{kind}-{key}-extra"] = (edited, {**tensors, "x": _empty(TOP, 0)})
            files[f"{kind}-{key}-hollow"] = (edited, {k: _empty(TOP, TOP, 0) for k in tensors})
    # the JSON itself: parsed, 3.6 MB of empty lists take ~80 MB and 6 MB ~160 MB; refused
    # from the header's length or from the values counted in its text
    _, header, tensors = models["tabnet"]
    for name, history in [
        ("json-lists-1.2e6", [[]] * 1_200_000),
        ("json-floats-1e6", [0.5] * 1_000_000),
        ("json-lists-2e6", [[]] * 2_000_000),
    ]:
        edited = copy.deepcopy(header)
        edited["net"]["history"] = history
        files[name] = (edited, tensors)
    return files


_CHILD = r"""
import json, resource, signal, sys, time

import torch  # noqa: F401
import sk_entmax  # noqa: F401
from sk_entmax.persistence import load

def status(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return 0

class Slow(Exception):
    pass

def alarm(signum, frame):
    raise Slow

paths, warm = json.loads(sys.argv[1]), sys.argv[2]
cap, seconds = int(sys.argv[3]), float(sys.argv[4])
load(warm)
limit = status("VmSize") + cap
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
signal.signal(signal.SIGALRM, alarm)
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
out = {}
for name, path in paths.items():
    try:
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")
        reset = True
    except OSError:
        reset = False
    before = status("VmRSS")
    start = time.perf_counter()
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        load(path)
        outcome = "loaded"
    except Slow:
        outcome = "timed out"
    except MemoryError:
        outcome = "MemoryError"
    except Exception as error:
        outcome = type(error).__name__ + ": " + str(error)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    took = time.perf_counter() - start
    if reset:
        extra = status("VmHWM") - before
    else:  # the peak since the start: an upper bound of this file's
        extra = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - base
    out[name] = {"extra_mb": extra / 2**20, "seconds": took, "outcome": outcome[:300]}
print(json.dumps(out))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_hostile_files_are_refused_in_little_memory_and_time(models, tmp_path):
    paths = {}
    for name, (header, tensors) in _crafted(models).items():
        path = tmp_path / f"{len(paths)}.safetensors"
        paths[name] = str(write_saved(path, header, tensors))
    warm = str(models["tabnet"][0])
    run = subprocess.run(
        [sys.executable, "-c", _CHILD, json.dumps(paths), warm, str(CAP_BYTES), str(SECONDS)],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    results = json.loads(run.stdout.strip().splitlines()[-1])
    # virtual_batch_size and the faithful design's first_mask_warmup size no tensor: at
    # 2**31 - 1 the file is valid
    loadable = {"tabnet-virtual_batch_size", "tabnet-first_mask_warmup"}
    bad = {
        name: row
        for name, row in results.items()
        if not row["outcome"].startswith(
            "loaded" if name in loadable else "ValueError: cannot load"
        )
        or row["extra_mb"] > MAX_EXTRA_MB
        or row["seconds"] > SECONDS
    }
    assert not bad, json.dumps(bad, indent=1)


# --------------------------------------------------------------------------- in process


class _Built(AssertionError):
    pass


@pytest.fixture
def no_network(monkeypatch):
    """Fail if load constructs a network (its skeleton included)."""

    def refuse(self, *args, **kwargs):
        raise _Built("load built a network from a file it could have refused first")

    monkeypatch.setattr(TabNetClassifierNet, "__init__", refuse)
    monkeypatch.setattr(EntmaxLinearNet, "__init__", refuse)


def _write(tmp_path, header, tensors, name="edited.safetensors"):
    return write_saved(tmp_path / name, header, tensors)


_FOREIGN = {
    "unknown": {"x": torch.empty(4 * 10**6, 0)},
    "linear": {"layers.9.weight": torch.empty(4, 4)},
    "tabnet": {"tabnet.embeddings.9.weight": torch.empty(4, 4)},
}


@pytest.mark.parametrize(
    ("kind", "extra"),
    [("linear", "unknown"), ("tabnet", "unknown"), ("linear", "tabnet"), ("tabnet", "linear")],
)
def test_a_tensor_no_such_network_has_is_refused_before_anything_is_built(
    models, tmp_path, no_network, kind, extra
):
    _, header, tensors = models[kind]
    [name] = _FOREIGN[extra]
    with pytest.raises(ValueError, match=rf"cannot load .*{name}"):
        load(_write(tmp_path, header, {**tensors, **_FOREIGN[extra]}))


@pytest.mark.parametrize("kind", ["linear", "tabnet"])
def test_a_tensor_this_network_does_not_have_is_refused_unread(models, tmp_path, kind):
    """A name such a network can have (``layers.9.weight``), but this one does not: refused
    once the skeleton (meta device, no memory) says so."""
    _, header, tensors = models[kind]
    [name] = _FOREIGN[kind]
    with pytest.raises(ValueError, match=rf"cannot load .*does not have .*{name}"):
        load(_write(tmp_path, header, {**tensors, **_FOREIGN[kind]}))


# each sizing argument, one above what the tensor it sizes allows: refused unbuilt, naming it
_ONE_TOO_MANY = [
    ("linear", "n_features", 3),
    ("linear", "n_outputs", 4),
    ("linear", "hidden_layer_sizes", {"__tuple__": [4]}),
    ("linear", "hidden_layer_sizes", {"__tuple__": [3, 3]}),
    ("tabnet", "n_features", 5),  # the post-embedding width is 4
    ("tabnet", "n_outputs", 4),
    ("tabnet", "n_d", 5),
    ("tabnet", "n_a", 5),
    ("tabnet", "n_steps", 3),
    ("tabnet", "n_shared", 3),
    ("tabnet", "n_independent", 5),  # 4 GLU layers per transformer
    ("tabnet", "cat_idxs", [2, 1]),
    ("tabnet", "cat_dims", [6]),
    ("tabnet", "cat_emb_dims", 2),
    ("tabnet", "missing_idxs", [0, 1, 2, 3, 4]),
]


@pytest.mark.parametrize(("kind", "key", "value"), _ONE_TOO_MANY)
def test_each_argument_is_bounded_by_the_tensors_it_sizes(
    models, tmp_path, no_network, kind, key, value
):
    _, header, tensors = models[kind]
    edited = _with_argument(header, key, value)
    with pytest.raises(ValueError, match=rf"cannot load .*network argument {key}"):
        load(_write(tmp_path, edited, tensors))


def test_an_argument_no_network_takes_is_refused_unbuilt(models, tmp_path, no_network):
    _, header, tensors = models["tabnet"]
    edited = _with_argument(header, "n_heads", 4)
    with pytest.raises(ValueError, match="n_heads"):
        load(_write(tmp_path, edited, tensors))


@pytest.mark.parametrize("kind", ["linear", "tabnet"])
def test_the_skeleton_is_built_on_the_meta_device_only(models, monkeypatch, kind):
    """load builds each network twice: its skeleton (shapes only) to check the file against,
    then the real one. Every tensor of the first, buffers included, is on the meta device."""
    path, _, _ = models[kind]
    cls = {"linear": EntmaxLinearNet, "tabnet": TabNetClassifierNet}[kind]
    original = cls.__init__
    devices = []

    def spy(self, *args, **kwargs):
        original(self, *args, **kwargs)
        tensors = [*self.parameters(), *self.buffers()]
        tensors += [v for m in self.modules() for v in vars(m).values() if torch.is_tensor(v)]
        devices.append({t.device.type for t in tensors})

    monkeypatch.setattr(cls, "__init__", spy)
    load(path)
    assert len(devices) == 2
    assert devices[0] == {"meta"}, devices
    assert devices[1] == {"cpu"}


def test_a_header_longer_than_a_model_file_has_is_refused_unread(tmp_path, no_network):
    # the first 8 bytes claim a 1 TB header: refused before safetensors reads it
    path = tmp_path / "long.safetensors"
    path.write_bytes((2**40).to_bytes(8, "little") + b"{}")
    with pytest.raises(ValueError, match=r"cannot load .*header of 1,099,511,627,776 bytes"):
        load(path)


def test_save_refuses_a_model_whose_header_load_would_refuse(models, tmp_path):
    from sk_entmax.persistence._io import _save

    clf = load(models["linear"][0])
    with pytest.raises(ValueError, match=r"cannot save EntmaxClassifier: the header holds"):
        _save(clf, tmp_path / "big.safetensors", max_json_values=10)
    assert not list(tmp_path.iterdir())  # nothing written

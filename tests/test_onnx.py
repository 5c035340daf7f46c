"""ONNX export of fitted classifiers: onnxruntime against ``predict_proba``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import numpy as np
import pytest
import torch

pytest.importorskip("onnx")
pytest.importorskip("onnxscript")
ort = pytest.importorskip("onnxruntime")

from sk_entmax import EntmaxClassifier, SparsemaxClassifier, TabNetEntmaxClassifier  # noqa: E402
from sk_entmax.export import to_onnx  # noqa: E402


def _data(n: int = 90, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = (X[:, 0] + X[:, 1] > 0).astype(int) + (X[:, 2] > 0.8)
    return X, y


def _onnx_proba(estimator, X, tmp_path, dtype):
    kwargs = {} if dtype == "float32" else {"input_dtype": dtype}  # float32 by default
    path = to_onnx(estimator, tmp_path / "model.onnx", **kwargs)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, {"X": X.astype(dtype)})[0]


def _assert_matches(estimator, X, tmp_path, dtype="float64"):
    got = _onnx_proba(estimator, X, tmp_path, dtype)
    want = estimator.predict_proba(X.astype(dtype))  # the same values as the graph gets
    assert got.shape == want.shape and got.dtype == np.float64
    assert np.abs(got - want).max() <= 1e-6
    assert np.array_equal(got == 0, want == 0)  # the same exact zeros, every row


@pytest.mark.parametrize(
    ("estimator", "dtype"),
    [
        (SparsemaxClassifier(max_epochs=3, random_state=0), "float32"),
        # (the bisection graph takes 10 s to export: one input type; a float64 input is
        # exported in test_the_zeros_of_predict_proba_at_the_threshold)
        (EntmaxClassifier(max_epochs=3, random_state=0, alpha=1.33), "float32"),
    ],
    ids=["SparsemaxClassifier", "EntmaxClassifier"],
)
def test_linear_classifiers_match_predict_proba(estimator, tmp_path, dtype):
    X, y = _data()
    estimator.fit(X, y)
    X_new, _ = _data(37, seed=1)  # another number of rows than the export's example
    _assert_matches(estimator, X_new, tmp_path, dtype)
    assert (estimator.predict_proba(X_new) == 0).any()  # zeros to compare


def _boundary_rows(alpha):
    """Rows with entries exactly on the support's boundary: at alpha 1.5, ``[-1, 1, -1, -1,
    -1]`` (tau is exactly the tied -1); for sparsemax ``[0.2, -0.2, -0.5, ...]`` (tau is
    exactly -0.5)."""
    rows = []
    if alpha == 1.5:
        for base in (-3.0, -1.0, 0.0, 0.5, 7.25):
            for top in range(5):
                row = np.full(5, base)
                row[top] = base + 2.0  # the others exactly on the boundary
                rows.append(row)
        rows += [[1.0, -1.0, -1.0, -1.0, 0.25], [2.0, 0.0, 0.0, 1.0, -4.0]]
    else:
        for shift in range(5):
            rows.append(np.roll([0.2, -0.2, -0.5, -2.0, -2.0], shift))
            rows.append(np.roll([-1.5, -0.5, 0.2, -0.2, -3.0], shift))
    return np.vstack([np.array(rows), np.random.default_rng(3).normal(size=(30, 5))])


@pytest.mark.parametrize("alpha", [1.5, 2.0])
def test_the_exact_zeros_of_predict_proba_on_the_support_boundary(tmp_path, alpha):
    """Issue 45, point 7: the sort's threshold alone left 4.9e-32 (1.5-entmax) or 1.1e-16
    (sparsemax) on such rows where predict_proba has an exact 0."""
    X = np.hstack([_data(60)[0], _data(60, seed=1)[0][:, :1]])
    make = EntmaxClassifier if alpha == 1.5 else SparsemaxClassifier
    kwargs = {"alpha": 1.5} if alpha == 1.5 else {}
    clf = make(max_epochs=1, random_state=0, **kwargs).fit(X, np.arange(60) % 5)
    layer = clf.net_.module_.layers[0]
    with torch.no_grad():  # the scores are the features themselves
        layer.weight.copy_(torch.eye(5, dtype=layer.weight.dtype))
        layer.bias.zero_()
    X_new = _boundary_rows(alpha)
    path = to_onnx(clf, tmp_path / "model.onnx")
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    dtype = "float64" if session.get_inputs()[0].type == "tensor(double)" else "float32"
    got = session.run(None, {"X": X_new.astype(dtype)})[0]
    want = clf.predict_proba(X_new.astype(dtype))
    assert (want == 0).sum() >= 2 * 10
    assert np.abs(got - want).max() <= 1e-6
    assert np.array_equal(got == 0, want == 0)  # the same exact zeros, every row


def _rows_at_the_threshold(alpha: float, width: int, n: int = 400) -> np.ndarray:
    """Random rows with one entry moved onto the row's threshold, as computed in float64 by
    the full sort: an entry within a unit of rounding of the support's boundary, where an
    exact 0 and a ``1e-17`` part ways on a single differently rounded operation."""
    rng = np.random.default_rng(width)
    R = rng.normal(size=(n, width)) * rng.choice([0.3, 1.0, 3.0], size=(n, 1))
    Z = R / 2 if alpha == 1.5 else R
    Zs = -np.sort(-Z, axis=1)
    rho = np.arange(1, width + 1)
    if alpha == 1.5:
        mean = np.cumsum(Zs, 1) / rho
        tau_r = mean - np.sqrt(np.clip((1 - (np.cumsum(Zs**2, 1) - rho * mean**2)) / rho, 0, None))
    else:
        tau_r = (np.cumsum(Zs, 1) - 1) / rho
    size = (tau_r <= Zs).sum(1)
    tau = tau_r[np.arange(n), size - 1]
    for i in np.where(size < width)[0]:
        j = np.argsort(-Z[i])[size[i]]  # the largest entry off the support
        R[i, j] = 2 * tau[i] if alpha == 1.5 else tau[i]
    return R


@pytest.mark.parametrize("width", [5, 12])
@pytest.mark.parametrize("alpha", [1.5, 2.0])
def test_the_zeros_of_predict_proba_at_the_threshold(tmp_path, alpha, width):
    """Issue 45, point 7: torch's vectorized CPU ``sqrt`` (an ulp off on 0.6% of values),
    a settling sparsemax row's last step, and the wide rows' sums left 62 to 360 of 20,000
    such float64 rows with a ``1e-17`` on one side and an exact 0 on the other."""
    make = EntmaxClassifier if alpha == 1.5 else SparsemaxClassifier
    kwargs = {"alpha": 1.5} if alpha == 1.5 else {}
    X = np.random.default_rng(0).normal(size=(3 * width, width))
    clf = make(max_epochs=1, random_state=0, **kwargs).fit(X, np.arange(3 * width) % width)
    layer = clf.net_.module_.layers[0]
    with torch.no_grad():  # the scores are the features themselves
        layer.weight.copy_(torch.eye(width, dtype=layer.weight.dtype))
        layer.bias.zero_()
    X_new = _rows_at_the_threshold(alpha, width)
    got = _onnx_proba(clf, X_new, tmp_path, "float64")
    want = clf.predict_proba(X_new)
    assert (want == 0).sum() >= 300
    assert np.array_equal(got, want)  # bit for bit, so the same exact zeros
    # issue 60: the Newton passes are one loop, not written out twelve times (1,536 and
    # 1,748 nodes at 10 classes, for minutes of export); now about 170 and 230
    assert _node_count(tmp_path / "model.onnx") <= 400


def _node_count(path) -> int:
    """The nodes of an ONNX file's graph and of the graphs its nodes hold (loop bodies)."""
    import onnx

    def count(graph) -> int:
        inner = sum(count(a.g) for node in graph.node for a in node.attribute if a.type == 5)
        return len(graph.node) + inner

    return count(onnx.load(str(path)).graph)


def test_tabnet_matches_predict_proba_with_gaps(tmp_path):
    """The default float32 input (a float64 one is the same graph after its first cast,
    which TabNet's input rounding makes a cast to float32 in both cases)."""
    X, y = _data()
    X[::7, 3] = np.nan  # a numeric column with gaps: filled and flagged inside the graph
    clf = TabNetEntmaxClassifier(max_epochs=2, batch_size=32, random_state=0, n_steps=2)
    clf.fit(X, y)
    X_new, _ = _data(25, seed=2)
    X_new[::3, 3] = np.nan
    _assert_matches(clf, X_new, tmp_path, "float32")


def test_a_bad_input_dtype_is_refused_by_name(tmp_path):
    clf = SparsemaxClassifier(max_epochs=1, random_state=0).fit(*_data(30))
    with pytest.raises(ValueError, match="'input_dtype' parameter of to_onnx"):
        to_onnx(clf, tmp_path / "m.onnx", input_dtype="float16")


def test_without_the_extra_the_error_is_one_line_naming_it(tmp_path, monkeypatch):
    clf = SparsemaxClassifier(max_epochs=1, random_state=0).fit(*_data(30))
    monkeypatch.setitem(sys.modules, "onnxscript", None)  # import onnxscript fails
    with pytest.raises(ImportError) as info:
        to_onnx(clf, tmp_path / "m.onnx")
    message = str(info.value)
    assert "\n" not in message and "sk-entmax[onnx]" in message
    assert 'pip install -e ".[onnx]"' in message and "onnxscript is not installed" in message
    assert not (tmp_path / "m.onnx").exists()


def test_the_export_prints_and_warns_nothing(tmp_path):
    """torch's "torchvision is not installed. Skipping torchvision::nms" lines (logged once
    per process, so in a fresh one) and its deprecation warnings are silenced."""
    code = (
        "import warnings; warnings.simplefilter('always')\n"
        "import numpy as np\n"
        "from sk_entmax import SparsemaxClassifier\n"
        "from sk_entmax.export import to_onnx\n"
        "X = np.random.default_rng(0).normal(size=(30, 3)); y = np.arange(30) % 3\n"
        "clf = SparsemaxClassifier(max_epochs=1, random_state=0).fit(X, y)\n"
        f"to_onnx(clf, {str(tmp_path / 'm.onnx')!r})\n"
    )
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "" and result.stderr == ""


def test_categorical_columns_are_refused_by_name(tmp_path):
    pd = pytest.importorskip("pandas")
    X, y = _data(60)
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    frame["colour"] = np.where(X[:, 0] > 0, "red", "blue")
    clf = TabNetEntmaxClassifier(max_epochs=1, batch_size=32, random_state=0).fit(frame, y)
    with pytest.raises(ValueError, match="colour"):
        to_onnx(clf, tmp_path / "model.onnx")


def test_refuses_what_is_not_a_fitted_classifier(tmp_path):
    with pytest.raises(TypeError, match="LinearRegression"):
        from sklearn.linear_model import LinearRegression

        to_onnx(LinearRegression().fit([[0.0], [1.0]], [0.0, 1.0]), tmp_path / "m.onnx")
    with pytest.raises(TypeError, match="path"):
        to_onnx(SparsemaxClassifier(), 3)


# ------------------------------------------------------------------ where the file goes
# (issue 45, point 2: through the reports' writer, whole or not at all, never through a link)


@pytest.fixture(scope="module")
def small():
    return SparsemaxClassifier(max_epochs=1, random_state=0).fit(*_data(30))


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
@pytest.mark.parametrize("kind", ["link", "dangling link", "fifo", "device"])
def test_a_link_or_special_file_at_the_path_is_refused_and_left_as_it_was(small, tmp_path, kind):
    victim = tmp_path / "victim.onnx"
    victim.write_bytes(b"precious")
    path = tmp_path / "model.onnx"
    reader = None
    if kind == "link":
        path.symlink_to(victim)
    elif kind == "dangling link":
        path.symlink_to(tmp_path / "elsewhere.onnx")
    elif kind == "fifo":
        os.mkfifo(path)
        # a reader, so that a writer opening the pipe does not block
        reader = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    else:
        path = "/dev/null"
    try:
        with pytest.raises(OSError, match=r"symbolic link|not a regular file") as info:
            to_onnx(small, path)
        if reader is not None:
            assert os.read(reader, 64) == b""  # nothing was written into the pipe
    finally:
        if reader is not None:
            os.close(reader)
    assert info.value.filename == str(path)
    assert victim.read_bytes() == b"precious"
    assert not (tmp_path / "elsewhere.onnx").exists()
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]


@pytest.mark.skipif(not hasattr(signal, "SIGXFSZ"), reason="no file size limit here")
def test_a_failed_write_leaves_the_old_file_whole(small, tmp_path):
    """A write that fails part way (here a file size limit of 1,000 bytes, as a full disk
    would): the old file stays whole and no temporary file is left."""
    resource = pytest.importorskip("resource")
    path = tmp_path / "model.onnx"
    good = b"an older model file" * 100  # (its content is not read: one export, not two)
    path.write_bytes(good)
    assert len(good) > 1000
    handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of a signal
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (1000, hard))
    try:
        with pytest.raises(OSError):
            to_onnx(small, path)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, handler)
    assert path.read_bytes() == good
    assert os.listdir(tmp_path) == ["model.onnx"]  # no temporary file left behind


def test_a_ctrl_c_during_the_first_export_waits_for_the_export_to_end(
    small, tmp_path, monkeypatch, request
):
    """(issue 58, point 19) A SIGINT in the middle of the process's first export (its
    imports) is held until the export ends, then raised: nothing is left half imported."""
    import sk_entmax.export as export

    exported = export._exported  # told it is the process's first export (else it may not be)
    monkeypatch.setattr(export, "_exported", lambda *args: exported(*args, first=True))
    # Python's own handler, as a user's process has it (a test run before this one may
    # have left another); put back afterwards
    outer = signal.signal(signal.SIGINT, signal.default_int_handler)
    request.addfinalizer(lambda: signal.signal(signal.SIGINT, outer))
    handler = signal.getsignal(signal.SIGINT)
    steps = []

    class Program:  # what the export returns: its model is folded before the signal
        model = None

    def interrupted_export(*args, **kwargs):
        signal.raise_signal(signal.SIGINT)
        steps.append("the export went on")  # its imports would, to their end
        return Program()

    monkeypatch.setattr(torch.onnx, "export", interrupted_export)
    monkeypatch.setattr(export, "_fold", lambda model: steps.append("folded"))
    with pytest.raises(KeyboardInterrupt):
        to_onnx(small, tmp_path / "m.onnx")
    assert steps == ["the export went on", "folded"]
    assert signal.getsignal(signal.SIGINT) is handler
    assert not (tmp_path / "m.onnx").exists()

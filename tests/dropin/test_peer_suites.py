"""The drop-in promise, as the peers' own test-suites state it.

The reference ``entmax`` 1.3 ships its test files inside its wheel. They run here, unchanged,
in a subprocess where ``import entmax`` finds the shim of ``shim/entmax`` (``sk_entmax.entmax``
under the reference's module names) instead of the reference: every one of them must pass.

Ludwig's copy of the package (``ludwig.utils.entmax``) has its own copy of those tests, in
Ludwig's repository rather than in a wheel. Given a checkout of it, the same shim serves
them too::

    python tests/dropin/test_peer_suites.py --ludwig PATH/TO/ludwig
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SHIM = Path(__file__).resolve().parent / "shim"
# The number of tests in entmax 1.3's own suite (test_losses, test_mask, test_root_finding,
# test_topk): a run that passes fewer has skipped or lost some.
REFERENCE_TESTS = 127
# ... and in Ludwig's copy of them (tests/ludwig/utils/entmax).
LUDWIG_TESTS = 111

# Makes the subprocess refuse to run unless ``entmax`` really is the shim.
_CONFTEST = """\
import entmax

assert getattr(entmax, "SHIM", False), f"entmax is not the shim: {entmax.__file__}"

# count the calls the fused CPU kernel serves: the suite must pass through it
from sk_entmax.entmax.kernels import cpu

_calls = [0]
_kernel = cpu.entmax_cpu


def _counted(*args, **kwargs):
    _calls[0] += 1
    return _kernel(*args, **kwargs)


cpu.entmax_cpu = _counted


def pytest_sessionfinish(session):
    with open("kernel_calls.txt", "w") as f:
        f.write(f"{_calls[0]} {cpu.available()}")
"""


def reference_test_files() -> list[Path]:
    """The test files of the installed ``entmax`` wheel, found without importing it."""
    dist = importlib.metadata.distribution("entmax")
    files = [
        Path(dist.locate_file(f))
        for f in dist.files or []
        if f.parts[0] == "entmax" and re.fullmatch(r"test_\w+\.py", f.name)
    ]
    return sorted(files)


def run_suite(files: list[Path], workdir: Path, extra_path: Path = SHIM) -> tuple[dict, str]:
    """Run ``files`` (copied into ``workdir``) with the shim first on the path.

    Returns the counts from pytest's summary line (``{"passed": 127, ...}``) and the output.
    """
    # absolute: the suite runs with ``workdir`` as its current directory, where a relative
    # ``extra_path`` on PYTHONPATH would point elsewhere
    workdir, extra_path = workdir.resolve(), extra_path.resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    for f in files:
        shutil.copy(f, workdir / f.name)
    (workdir / "conftest.py").write_text(_CONFTEST)
    # the caller's PYTHONPATH after the shim, so that the suite runs against the sk_entmax
    # the caller imports (a worktree's, not the one an editable install points to)
    inherited = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(extra_path), str(SHIM), *inherited])}
    env.pop("PYTEST_ADDOPTS", None)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", "."]
        + [f.name for f in files],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    out = proc.stdout + proc.stderr
    summary = out.strip().splitlines()[-1] if out.strip() else ""
    counts = {word: int(n) for n, word in re.findall(r"(\d+) (\w+)", summary)}
    return counts, out


def test_reference_suite_passes_against_our_core(tmp_path):
    files = reference_test_files()
    assert [f.name for f in files] == [
        "test_losses.py",
        "test_mask.py",
        "test_root_finding.py",
        "test_topk.py",
    ], files
    counts, out = run_suite(files, tmp_path / "reference")
    print(out[-3000:])
    assert counts.get("passed") == REFERENCE_TESTS, out[-6000:]
    assert set(counts) == {"passed"}, out[-6000:]
    calls, loaded = (tmp_path / "reference" / "kernel_calls.txt").read_text().split()
    if loaded == "True":  # where numba loads, the fused CPU kernel served the suite
        assert int(calls) > 100, calls


def test_the_guard_refuses_the_reference_itself(tmp_path):
    """Without the shim first on the path the suite must refuse to run, not pass vacuously
    against the reference it would then import."""
    first = reference_test_files()[0]
    workdir = tmp_path / "bare"
    workdir.mkdir()
    (workdir / "conftest.py").write_text(_CONFTEST)
    shutil.copy(first, workdir / first.name)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", first.name],
        cwd=workdir,
        env={**os.environ, "PYTHONPATH": ""},
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode != 0
    assert "not the shim" in proc.stdout + proc.stderr


def _ludwig_tree(root: Path) -> Path:
    """A ``ludwig`` package whose ``utils.entmax`` is the shim, and the one constant the
    tests import from ``ludwig.constants`` (its value in Ludwig)."""
    pkg = root / "ludwig"
    (pkg / "utils").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "constants.py").write_text("IGNORE_INDEX_TOKEN_ID = -100\n")
    (pkg / "utils" / "__init__.py").write_text("")
    shutil.copytree(SHIM / "entmax", pkg / "utils" / "entmax")
    return root


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ludwig", type=Path, help="a checkout of Ludwig's repository")
    parser.add_argument(
        "--workdir",
        type=Path,
        default=None,
        help="where the suites are copied and run (default: a new temporary directory)",
    )
    args = parser.parse_args(argv)
    if args.workdir is None:
        args.workdir = Path(tempfile.mkdtemp(prefix="peer_suite_run_"))
    if args.ludwig is None:
        counts, out = run_suite(reference_test_files(), args.workdir / "reference")
        expected = REFERENCE_TESTS
    else:
        files = sorted((args.ludwig / "tests" / "ludwig" / "utils" / "entmax").glob("test_*.py"))
        if not files:
            parser.error(f"no tests/ludwig/utils/entmax/test_*.py under {args.ludwig}")
        extra = _ludwig_tree(args.workdir / "ludwig_pkg")
        counts, out = run_suite(files, args.workdir / "ludwig", extra_path=extra)
        expected = LUDWIG_TESTS
    print(out)
    print(f"{counts.get('passed', 0)}/{expected} passed")
    return 0 if counts == {"passed": expected} else 1


if __name__ == "__main__":
    sys.exit(main())

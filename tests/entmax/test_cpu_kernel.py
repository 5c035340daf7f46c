"""The fused CPU kernel (:mod:`sk_entmax.entmax.kernels.cpu`) against the traceable torch form.

Skipped where numba does not import (the torch forms then serve, as
:func:`test_without_numba_one_warning_and_the_torch_form` checks). Shapes are tiny; one test
compiles the float64 loops in a process of its own, with a disk cache of its own.
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

import sk_entmax
from sk_entmax.entmax import entmax15, entmax_bisect, sparsemax
from sk_entmax.entmax.kernels import cpu

needs_kernel = pytest.mark.skipif(
    not cpu.available(), reason=f"the fused CPU kernel does not load: {cpu.absent_reason()}"
)

MAPS = {
    2.0: lambda X, training: sparsemax(X, training=training),
    1.5: lambda X, training: entmax15(X, training=training),
    1.33: lambda X, training: entmax_bisect(X, 1.33, training=training),
}
WIDTH = 70  # wide enough for the kernel at 2 and 1.5 (cpu.MIN_WIDTH)


def _rows(dtype: torch.dtype) -> torch.Tensor:
    X = torch.randn(40, WIDTH, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    X = (X * 3).to(dtype)
    X[1, 4:] = float("-inf")  # padding
    X[2] = float("-inf")  # fully masked: zeros
    X[3, :5] = torch.tensor([0.2, -0.2, -0.5, -2.0, -2.0], dtype=dtype)  # tau exactly -0.5
    return X


@needs_kernel
@pytest.mark.parametrize("alpha", list(MAPS))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_the_kernel_serves_training_calls_with_the_traceable_forms_support(alpha, dtype):
    X = _rows(dtype)
    calls = []
    real = cpu.entmax_cpu
    cpu.entmax_cpu = lambda *a, **k: calls.append(1) or real(*a, **k)
    try:
        P = MAPS[alpha](X, True)  # the kernel where the rows are wide enough
    finally:
        cpu.entmax_cpu = real
    R = MAPS[alpha](X, False)  # the traceable torch form
    assert calls == ([1] if WIDTH >= cpu.MIN_WIDTH[cpu.GENERAL if alpha == 1.33 else 0] else [])
    if alpha == 1.33:  # narrower than the kernel takes by default: called directly
        P = cpu.entmax_cpu(X, alpha)
    assert torch.equal(P > 0, R > 0)
    torch.testing.assert_close(P, R, atol=1e-6 if dtype == torch.float32 else 1e-12, rtol=0)
    assert torch.equal(P[2], torch.zeros_like(P[2]))
    padded = cpu.entmax_cpu(X[1:2, :4], alpha)
    assert torch.equal(P[1, :4], padded[0])  # padding changes no bit


@needs_kernel
@pytest.mark.parametrize("alpha", [1.1, 1.25, 1.7, 1.9])
def test_other_alphas_against_the_float64_solution(alpha):
    """Rows of every scale and width, a few candidates or many (the bound on the threshold
    rises over several rounds), against the torch form in float64 (100 steps)."""
    gen = torch.Generator().manual_seed(3)
    scale = torch.tensor([0.05, 1.0, 8.0], dtype=torch.float64).repeat(22)[:64, None]
    for width in (2, 5, 17, 33):
        X = torch.randn(64, width, generator=gen, dtype=torch.float64) * scale
        exact = entmax_bisect(X, alpha, n_iter=100, training=False)
        for dtype, atol in ((torch.float32, 1e-6), (torch.float64, 1e-12)):
            P = cpu.entmax_cpu(X.to(dtype), alpha).double()
            torch.testing.assert_close(P, exact, atol=atol, rtol=0)


@needs_kernel
def test_nan_row_and_dim():
    X = _rows(torch.float32)
    X[5, 3] = float("nan")
    P = sparsemax(X)
    assert torch.isnan(P[5]).all() and not torch.isnan(P[6]).any()
    X[5, 3] = 0.0
    assert torch.equal(entmax15(X.T, dim=0), entmax15(X).T)


@needs_kernel
def test_gradients_float64():
    X = torch.randn(3, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    X.requires_grad_()
    for alpha in (2.0, 1.5, 1.3):
        assert torch.autograd.gradcheck(lambda X, a=alpha: cpu.entmax_cpu(X, a), (X,))
    a = torch.full((3, 1), 1.4, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda X, a: cpu.entmax_cpu(X, a), (X, a))
    assert torch.autograd.gradgradcheck(lambda X: cpu.entmax_cpu(X, 1.5), (X[:1],))


@needs_kernel
def test_the_bits_do_not_depend_on_the_thread_count():
    # more entries than cpu.MIN_PARALLEL, so that two threads run the parallel loop; rows
    # of every scale, so that some have many candidates (their sums vectorized)
    assert 700 * 50 >= cpu.MIN_PARALLEL
    X = torch.randn(700, 50, generator=torch.Generator().manual_seed(2))
    X = X * torch.tensor([0.05, 1.0, 8.0]).repeat(234)[:700, None]
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = [cpu.entmax_cpu(X, a) for a in (2.0, 1.5, 1.3)] + [cpu.entmax_cpu(X.double(), 1.5)]
        torch.set_num_threads(2)
        two = [cpu.entmax_cpu(X, a) for a in (2.0, 1.5, 1.3)] + [cpu.entmax_cpu(X.double(), 1.5)]
    finally:
        torch.set_num_threads(threads)
    assert all(torch.equal(a, b) for a, b in zip(one, two, strict=True))


#: run in a process of its own: float64 rows through the kernel on one thread (forward and
#: backward of sparsemax, 1.5-entmax and alpha 1.33), saved to the file named by argv[1]
#: with the loops' reads from numba's disk cache and compiles ("hits"). The float32 probe
#: is left out, so that a cold cache compiles only the float64 serial loops (the test takes
#: some 25 to 50 s on 2 cores, not twice that).
_BITS_SCRIPT = """
import sys
import numpy as np
import torch
from sk_entmax.entmax.kernels import cpu
cpu._probe = lambda module: None
assert cpu.available(), cpu.absent_reason()
torch.set_num_threads(1)
gen = torch.Generator().manual_seed(2)
X = torch.randn(700, 50, generator=gen)
rows = [(X * torch.tensor([0.05, 1.0, 8.0]).repeat(234)[:700, None]).double()]
rows += [torch.randn(30, width, generator=gen, dtype=torch.float64) for width in (3, 17, 300)]
out = {}
for i, Z in enumerate(rows):
    for alpha in (2.0, 1.5, 1.33):
        Y = Z.clone().requires_grad_()
        P = cpu.entmax_cpu(Y, alpha)
        P.backward(torch.randn(P.shape, generator=gen, dtype=P.dtype))
        out[f"{i} {alpha} p"] = P.detach().numpy()
        out[f"{i} {alpha} grad"] = Y.grad.numpy()
loops = (cpu._module.forward_serial, cpu._module.backward_serial)
counts = [(f._cache_hits, f._cache_misses) for f in loops]
out["hits"] = np.array([[sum(c.values()) for c in pair] for pair in counts])
np.savez(sys.argv[1], **out)
"""


@needs_kernel
def test_the_bits_do_not_depend_on_numbas_disk_cache(tmp_path):
    """A process that compiles the kernel (a cold disk cache, private to the test) and one
    that reads it from that cache give the same bits. (Before loops missing from the cache
    were compiled in a process of their own, ``cpu._prepare``, the first ran the row
    functions' own code, the second their copies optimized again inside the loops: 17 to 18
    of the 700 float64 1.5-entmax rows differed by 1e-17.) One
    thread: two threads run the same row functions
    (:func:`test_the_bits_do_not_depend_on_the_thread_count`)."""
    root = str(Path(sk_entmax.__file__).resolve().parents[1])
    path = os.pathsep.join([root, *filter(None, [os.environ.get("PYTHONPATH")])])
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=path)
    runs = []
    for name in ("cold", "warm"):
        out = tmp_path / f"{name}.npz"
        subprocess.run(
            [sys.executable, "-c", _BITS_SCRIPT, str(out)], env=env, check=True, timeout=600
        )
        runs.append(np.load(out))
    cold, warm = runs
    assert warm["hits"].tolist() == [[1, 0], [1, 0]]  # read from the cache, not compiled
    assert cold.files == warm.files
    differ = [
        k
        for k in cold.files
        if k != "hits" and not np.array_equal(cold[k].view(np.uint64), warm[k].view(np.uint64))
    ]
    assert not differ, f"cold and warm cache differ in {differ}"


def test_without_numba_one_warning_and_the_torch_form(monkeypatch):
    monkeypatch.setitem(sys.modules, "sk_entmax.entmax.kernels._numba_maps", None)
    monkeypatch.setattr(cpu, "_module", None)
    monkeypatch.setattr(cpu, "_reason", None)
    X = _rows(torch.float64)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        P = sparsemax(X)
        sparsemax(X)
    said = [w for w in caught if "fused CPU kernel" in str(w.message)]
    assert len(said) == 1 and "cannot load" in str(said[0].message)
    R = sparsemax(X, training=False)
    assert torch.equal(P > 0, R > 0)
    torch.testing.assert_close(P, R, atol=1e-12, rtol=0)
    assert cpu.absent_reason() is not None

"""Exporting: the core's modules through ``torch.export``, a fitted classifier to ONNX.

:func:`export_module` exports an evaluation-mode module (``Sparsemax``, ``Entmax15``,
``EntmaxBisect``, ``EntmaxMultiheadAttention``, TabNet, ...) with a dynamic batch axis, so
that the program serves any number of rows. :func:`to_onnx` writes a fitted
``SparsemaxClassifier``, ``EntmaxClassifier`` or ``TabNetEntmaxClassifier`` as an ONNX graph
from features (float32 by default, or float64: ``input_dtype``) to the probabilities of
``predict_proba``: the network in float64 and in evaluation mode, as ``predict_proba`` runs
it, then the output mapping: for sparsemax and 1.5-entmax the core's Newton steps and
closed form written out in plain ops, so that rows with entries exactly on the support's
boundary get the same exact zeros too; bisection (the core's plain-op path) otherwise.
``onnx`` and ``onnxscript`` (for the export) are the optional ``sk-entmax[onnx]`` extra
(``pip install -e ".[onnx]"`` in a clone); without them :func:`to_onnx` raises an
``ImportError`` of one line saying so. The exporter's own log lines and warnings
(torchvision operators it skips, deprecations inside torch) are silenced: they are not the
user's business.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import signal
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import torch
from sklearn.utils.validation import check_is_fitted
from torch import nn
from torch.export import Dim, ExportedProgram

from sk_entmax._files import check_target, write_whole
from sk_entmax._inputs.tabular import TabularInputMixin
from sk_entmax.entmax import entmax
from sk_entmax.entmax.activations import pairwise_row_sum
from sk_entmax.entmax.constraints import Options, check

__all__ = ["export_module", "to_onnx"]

#: the name of the ONNX graph's input (features) and output (probabilities)
INPUT_NAME, OUTPUT_NAME = "X", "proba"

#: the element types :func:`to_onnx` can give the graph's input
INPUT_DTYPES = {"float32": torch.float32, "float64": torch.float64}

#: what :func:`to_onnx` writes, as its errors name it
_WHAT = "an ONNX file"

#: the modules the ONNX export needs, beyond torch: the ``onnx`` extra
_ONNX_MODULES = ("onnx", "onnxscript")


def export_module(
    module: nn.Module, args: Sequence[torch.Tensor], *, batch_axis: int = 0
) -> ExportedProgram:
    """``torch.export`` of ``module`` with a dynamic batch axis on every tensor argument.

    Parameters
    ----------
    module : torch.nn.Module
        The module to export, in the mode it is to run in (``module.eval()`` for inference).
    args : sequence of torch.Tensor
        Example arguments; their sizes along ``batch_axis`` become one symbolic size.
    batch_axis : int, default=0
        The axis of every argument that holds the rows (1 for a sequence-first
        ``EntmaxMultiheadAttention``).

    Returns
    -------
    torch.export.ExportedProgram
        Call ``program.module()(*other_args)`` for another batch size.
    """
    if not isinstance(module, nn.Module):
        raise TypeError(f"module must be a torch.nn.Module; got {type(module).__name__}")
    args = tuple(args)
    for i, arg in enumerate(args):
        if not isinstance(arg, torch.Tensor):
            raise TypeError(f"args[{i}] must be a torch.Tensor; got {type(arg).__name__}")
    batch = Dim("batch", min=1)
    dynamic = tuple({batch_axis: batch} for _ in args)
    return torch.export.export(module, args, dynamic_shapes=dynamic)


class _Probabilities(nn.Module):
    """A fitted classifier's network and output mapping: features to ``predict_proba``."""

    def __init__(
        self, network: nn.Module, temperature: float, n_classes: int, float32_input: bool
    ) -> None:
        super().__init__()
        self.network = network
        self.float32_input = bool(float32_input)
        self.temperature = float(temperature)
        self.n_classes = int(n_classes)
        alpha = network.head.alpha
        self.alpha = alpha.detach().clone() if isinstance(alpha, torch.Tensor) else alpha

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        if self.float32_input:  # as the estimator's input validation rounds X
            X = X.to(torch.float32)
        X = X.to(torch.float64)  # the network runs in float64, as predict_proba runs it
        output = self.network(X)
        scores = output[0] if isinstance(output, tuple) else output
        if self.temperature != 1.0:
            scores = scores / self.temperature
        if isinstance(self.alpha, float) and self.alpha == 1.5:
            return _entmax15_graph(scores)[:, : self.n_classes]
        if isinstance(self.alpha, float) and self.alpha == 2.0:
            return _sparsemax_graph(scores)[:, : self.n_classes]
        return entmax(scores, self.alpha, training=False)[:, : self.n_classes]


#: the Newton passes of the graph's 1.5-entmax (the core allows 40; rows settle in 4 to 10,
#: and each pass adds about half a second to the export)
_NEWTON_PASSES = 12


def _repeat(
    step: Callable[..., tuple[torch.Tensor, ...]], times: int, state: tuple[torch.Tensor, ...]
) -> tuple[torch.Tensor, ...]:
    """``state`` after ``times`` calls of ``step(*state)``, as one loop of the graph.

    ``torch.while_loop`` (an ONNX ``Loop``) traces ``step`` once, where a Python loop writes
    its operations out ``times`` times: each traced operation costs the exporter a few
    milliseconds (its shapes are symbolic in the batch), and the Newton passes unrolled made
    most of the graph and of the export time (issue 60). Same operations, same rounding.
    """
    if times <= 0:
        return state

    def more(i: torch.Tensor, *state: torch.Tensor) -> torch.Tensor:
        return i < times

    def once(i: torch.Tensor, *state: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return (i + 1, *step(*state))

    start = torch.zeros((), dtype=torch.int64, device=state[0].device)
    return tuple(torch.while_loop(more, once, (start, *state))[1:])


def _summed_as_the_core(T: torch.Tensor) -> torch.Tensor:
    """The sum along the last axis that the core's Newton passes take in the column layout
    of ``predict_proba`` (:func:`~sk_entmax.entmax.activations.columns_map`): the pairwise
    tree of :func:`~sk_entmax.entmax._sums.row_sum`, the same additions in the same
    order."""
    return pairwise_row_sum(T)


def _sparsemax_graph(Z: torch.Tensor) -> torch.Tensor:
    """Sparsemax along the last axis in plain ops the exporter takes, computed as
    ``predict_proba`` computes it (``_sparsemax_newton`` in
    :mod:`sk_entmax.entmax.activations`), so that the graph has its exact zeros on rows
    with entries tied on the support's boundary too.

    Newton's steps ``tau += (sum [z - tau]_+ - 1) / |S|`` from ``max((sum z - 1) / d,
    -1)``; a row settles at the first pass whose support has the size of the one before,
    takes that pass's step and keeps that pass's support; then ``tau`` in closed form from
    the support with :func:`~sk_entmax.entmax._sums.row_sum`'s tree. Every operation is an
    IEEE sum, product or quotient, so the graph repeats the core's rounding; a row still
    moving after the last pass (only rows wider than the passes) takes the full sort, as
    the core's fallback does.
    """
    Z = Z - Z.max(dim=-1, keepdim=True).values
    width = Z.shape[-1]
    tau = ((_summed_as_the_core(Z) - 1) / width).clamp(min=-1)

    def newton(tau: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        D = (Z - tau).relu()
        indicator = torch.sign(D)
        # both sums in one tree (the rows stacked), as a graph with half the nodes
        mass, size = _summed_as_the_core(torch.stack((D, indicator))).unbind(0)
        size = size.clamp(min=1)
        return indicator, size, (mass - 1) / size

    # the first pass: every row moves
    support, size, step = newton(tau)
    tau = tau + step
    active = torch.ones_like(tau)

    def later_pass(*state: torch.Tensor) -> tuple[torch.Tensor, ...]:
        tau, active, support, size_kept, size = state
        indicator, new_size, step = newton(tau)
        moving = active > 0
        return (
            tau + step * active,
            active * (new_size != size).to(Z.dtype),
            # a row keeps the support of the pass it settles at
            torch.where(moving, indicator, support),
            torch.where(moving, new_size, size_kept),
            new_size,
        )

    # the supports shrink at each pass until one repeats: a row settles within width + 1
    passes = min(_NEWTON_PASSES, width + 2) - 1
    tau, active, support, size_kept, _ = _repeat(
        later_pass,
        passes,
        (tau, active, support, size, size.clone()),  # (a loop's inputs may not alias)
    )
    masked = torch.where(support > 0, Z, 0.0)
    tau = (pairwise_row_sum(masked) - 1) / size_kept
    P = (Z - tau).relu()
    return torch.where(active > 0, _sparsemax_sorted(Z), P)


def _sparsemax_sorted(Z: torch.Tensor) -> torch.Tensor:
    """Sparsemax of rows whose maximum is 0 by a full sort (the core's fallback)."""
    Zs = Z.sort(dim=-1, descending=True).values
    rho = torch.arange(1, Z.shape[-1] + 1, dtype=Z.dtype, device=Z.device)
    csum = Zs.cumsum(-1) - 1
    size = (rho * Zs > csum).sum(-1, keepdim=True).clamp_min(1)
    return (Z - csum.gather(-1, size - 1) / size.to(Z.dtype)).clamp_min(0)


def _entmax15_graph(Z: torch.Tensor) -> torch.Tensor:
    """1.5-entmax along the last axis in plain ops the exporter takes, computed as
    ``predict_proba`` computes it, so that the graph has its exact zeros.

    Where entries tie on the support's boundary (``[-1, 1, -1, -1, -1]``, whose ``tau`` is
    exactly the tied ``-1``), whether they get an exact 0 or a rounding's ``1e-32`` depends
    on how the threshold was found, so the graph finds it as the core does (see
    ``_power_newton`` in :mod:`sk_entmax.entmax._newton`): Newton's steps from
    ``tau = -1``, a row frozen once its steps stop shrinking (a settled row no longer
    moves, so running a fixed number of passes changes nothing for it); the support is
    where ``(z - tau)^2 > 0``, and the result is computed again from it in closed form,
    normalized, with the core's sums (the pairwise tree of
    :func:`~sk_entmax.entmax._sums.row_sum`). A row still moving after the last pass takes
    the full sort, as the core's fallback does. The Newton sums are added in the order of
    ``predict_proba``'s column layout (:func:`_summed_as_the_core`), and its square roots are
    correctly rounded (:func:`~sk_entmax.entmax._sums.ieee_sqrt`), as ONNX Runtime's are:
    on rows built to lie on a boundary (an entry placed at the threshold, 3 to 30 classes,
    float32 and float64 inputs) the graph's probabilities equal ``predict_proba``'s bit for
    bit (``tests/test_onnx.py``).
    """
    Z = (Z - Z.max(dim=-1, keepdim=True).values) / 2
    summed = _summed_as_the_core
    eps, tiny = torch.finfo(Z.dtype).eps, torch.finfo(Z.dtype).tiny
    tol = eps * 4.0  # eps * (2 + 4 / m), m = 2

    def newton(tau: torch.Tensor, active: torch.Tensor) -> tuple[torch.Tensor, ...]:
        D = (Z - tau).relu()
        g_sum, total = summed(torch.stack((D, D * D))).unbind(0)
        norm = total.sqrt()
        step = (norm - 1) * total / (norm * g_sum).clamp(min=tiny)
        size = step.abs()
        return step, size, active * (size > tol).to(Z.dtype)

    # the first pass
    tau = torch.full_like(Z[..., :1], -1.0)
    step, last, active = newton(tau, torch.ones_like(tau))
    tau = tau + step * active

    def later_pass(*state: torch.Tensor) -> tuple[torch.Tensor, ...]:
        tau, active, last = state
        step, size, active = newton(tau, active)
        moved = torch.maximum(last - 2 * size, size - 4 * tol)
        active = active * (moved > 0).to(Z.dtype)
        return tau + step * active, active, size

    tau, active, _ = _repeat(later_pass, _NEWTON_PASSES - 1, (tau, active, last))
    D = (Z - tau).relu()
    support = (D * D > 0).to(Z.dtype)
    count = support.sum(-1, keepdim=True).clamp(min=1)
    masked = torch.where(support > 0, Z, 0.0)
    s1, s2 = pairwise_row_sum(torch.stack((masked, masked * masked))).unbind(0)
    mean = s1 / count
    tau = mean - ((1 - (s2 - s1 * mean)) / count).clamp(min=0).sqrt()
    P = (Z - tau).relu().square()
    total = pairwise_row_sum(P)
    P = P / torch.where(total > 0, total, 1.0)
    # rows still moving: the full sort of the core's fallback
    return torch.where(active > 0, _entmax15_sorted(Z), P)


def _entmax15_sorted(Z: torch.Tensor) -> torch.Tensor:
    """1.5-entmax of halved rows whose maximum is 0 by a full sort: the support is the
    largest ``r`` with ``tau_r <= z_r``, ``tau_r`` the threshold of the ``r`` largest."""
    Zs = Z.sort(dim=-1, descending=True).values
    rho = torch.arange(1, Z.shape[-1] + 1, dtype=Z.dtype, device=Z.device)
    mean = Zs.cumsum(-1) / rho
    mean_sq = (Zs * Zs).cumsum(-1) / rho
    tau = mean - ((1 - rho * (mean_sq - mean * mean)) / rho).clamp_min(0).sqrt()
    size = (tau <= Zs).sum(-1, keepdim=True).clamp_min(1)
    return (Z - tau.gather(-1, size - 1)).clamp_min(0).square()


def _categorical_columns(estimator: Any) -> list[str]:
    """The names (or indices) of the columns the estimator encodes as categories."""
    indices = getattr(estimator, "categorical_features_", None)
    if indices is None or not len(indices):
        return []
    names = getattr(estimator, "feature_names_in_", None)
    return [str(names[i]) if names is not None else str(int(i)) for i in indices]


def _graph_of(estimator: Any) -> _Probabilities:
    """The module that :func:`to_onnx` exports, or a clear refusal."""
    name = type(estimator).__name__
    refusal = TypeError(
        "to_onnx exports a fitted sk_entmax classifier (SparsemaxClassifier, "
        f"EntmaxClassifier, TabNetEntmaxClassifier); got {name}"
    )
    if not hasattr(type(estimator), "predict_proba"):
        raise refusal
    check_is_fitted(estimator)
    network = getattr(getattr(estimator, "net_", None), "module_", None)
    if network is None or not hasattr(network, "head"):
        raise refusal
    categorical = _categorical_columns(estimator)
    if categorical:
        raise ValueError(
            f"to_onnx takes numeric features only: {name} encodes the column(s) "
            f"{', '.join(categorical)} as categories (text to ordinal codes by scikit-learn's "
            "OrdinalEncoder), which the ONNX graph does not hold; fit on numeric columns "
            "(e.g. encode them first in a Pipeline and export the classifier's part)"
        )
    network = copy.deepcopy(network).to(device="cpu", dtype=torch.float64).eval()
    temperature = getattr(estimator, "support_temperature_", 1.0)
    # the tables' input validation (TabNet's) stores the numeric columns in float32
    float32_input = isinstance(estimator, TabularInputMixin)
    return _Probabilities(network, temperature, len(estimator.classes_), float32_input).eval()


def _require_onnx() -> None:
    """An ``ImportError`` of one line naming the ``onnx`` extra when a module of it is
    missing."""
    for name in _ONNX_MODULES:
        try:
            __import__(name)
        except ImportError:
            raise ImportError(
                f"to_onnx needs the sk-entmax[onnx] extra (onnx, onnxscript, onnxruntime); "
                f'{name} is not installed: pip install -e ".[onnx]" in a clone of sk_entmax, '
                f"or pip install {' '.join(_ONNX_MODULES)} onnxruntime"
            ) from None


#: whether an export of this process has finished: its imports (onnx, onnxscript, torch's
#: exporter and its hundreds of modules) are then done, and never again half done
_EXPORTED = False


@contextlib.contextmanager
def _first_export_not_interrupted() -> Iterator[None]:
    """Hold a Ctrl-C (SIGINT) that comes during the process's first export until the export
    ends, then act on it (``KeyboardInterrupt`` by default): interrupted in the middle of
    its imports, it left a half-initialized ``onnxscript`` in ``sys.modules``, and every
    later export of the process failed (``module 'onnxscript' has no attribute
    'onnx_types'``). Later exports, and exports outside the main thread (where no signal
    arrives), are not held."""
    global _EXPORTED
    if _EXPORTED or threading.current_thread() is not threading.main_thread():
        yield
        _EXPORTED = True
        return
    held: list[Any] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: held.append(frame))
    try:
        yield
        _EXPORTED = True
    finally:
        signal.signal(signal.SIGINT, previous)
        if held:
            if callable(previous):
                previous(signal.SIGINT, held[0])  # Python's own: raises KeyboardInterrupt
            elif previous == signal.SIG_DFL:
                signal.raise_signal(signal.SIGINT)


@contextlib.contextmanager
def _quiet_exporter() -> Iterator[None]:
    """Silence what the exporter says that is not the user's business: torch's log lines
    (``torchvision is not installed. Skipping torchvision::nms`` ...) and the warnings
    raised inside torch and onnxscript (deprecations of their own internals)."""
    loggers = [logging.getLogger(name) for name in ("torch.onnx", "torch.export", "onnxscript")]
    levels = [logger.level for logger in loggers]
    try:
        for logger in loggers:
            logger.setLevel(logging.ERROR)
        with warnings.catch_warnings():
            for category in (FutureWarning, DeprecationWarning, UserWarning):
                warnings.filterwarnings("ignore", category=category, module=r"(torch|onnx)")
            warnings.filterwarnings("ignore", category=FutureWarning, module="copyreg")
            yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


def _fold(model: Any) -> None:
    """Fold the exported graph's constants and drop its unused nodes (the ``Constant``,
    ``Cast`` and ``Reshape`` nodes of slice bounds ...), in place.

    The exporter's own ``optimize=True`` runs onnxscript's rewrite rules as well, which
    match patterns against every node: on a linear model's graph (about 1,000 nodes) they
    took 30 % of the export, and 70 % when the graph was larger (issue 60). Their fusions
    are not needed here, and an arithmetic the graph does not spell out could round
    otherwise than ``predict_proba``.
    """
    from onnxscript import optimizer

    optimizer.fold_constants(model)
    optimizer.remove_unused_nodes(model)


def to_onnx(
    estimator: Any,
    path: str | Path,
    *,
    input_dtype: str = "float32",
    opset_version: int | None = None,
) -> Path:
    """Write a fitted classifier as an ONNX graph from features to ``predict_proba``.

    The graph takes one input ``"X"`` of shape ``(n_rows, n_features_in_)``, any number of
    rows, of the element type ``input_dtype`` (float32, what most serving code sends, by
    default), and gives ``"proba"``, float64 of shape ``(n_rows, n_classes)``, columns
    in the order of ``classes_``: within 1e-6 of ``predict_proba`` on the same values
    (measured: about 1e-15 for the linear classifiers, 1e-7 for TabNet, from onnxruntime's
    float64 kernels), with the same exact zeros at alpha 1.5 and 2 (at other alphas a few
    rows may hold a probability below 1e-20 where the graph has 0: 7 of 17,000 rows at
    alpha 1.3 in float32). Inside the graph the input is widened to
    float64, as ``predict_proba`` widens it; a TabNet classifier's graph first rounds ``X``
    to float32, as its input validation does. Missing values (NaN) in the columns where
    TabNet saw gaps at fit are filled and flagged inside the graph, as ``predict_proba``
    does. What
    ``predict_proba`` checks before the network is not in the graph: NaN where the estimator
    does not accept it gives NaN probabilities in that row, not an error, and so do scores
    that overflow.

    Parameters
    ----------
    estimator : SparsemaxClassifier, EntmaxClassifier or TabNetEntmaxClassifier
        Fitted on numeric features. A TabNet classifier with categorical columns is refused
        (a ``ValueError`` naming them): their encoding from text to codes is scikit-learn's
        and is not part of the graph.
    path : str or pathlib.Path
        Where to write the ``.onnx`` file: a new path (missing folders are created) or a
        regular file, which is replaced whole (its permission bits kept). The file is
        written to a new temporary file beside it, then renamed over it, so a failed
        export (a full disk, an interrupt) leaves the old file as it was.
    input_dtype : {"float32", "float64"}, default="float32"
        The element type of the graph's input ``"X"``. An ONNX graph's input has one type:
        export with ``"float64"`` to serve float64 arrays (the float64 values then reach
        the linear classifiers' network unrounded, as in ``predict_proba``).
    opset_version : int or None, default=None
        The ONNX opset; None takes the exporter's default.

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    ImportError
        When the ``sk-entmax[onnx]`` extra (onnx, onnxscript) is not installed: one line
        naming it and the command that installs it.
    OSError
        When ``path`` is a symbolic link (dangling or not: nothing is written through it),
        a folder (``IsADirectoryError``), a named pipe, a socket or a device such as
        ``/dev/null`` (checked before the export, and again just before the rename; the
        path is left as it was), or the file cannot be written. The error names ``path``.

    Examples
    --------
    >>> from sk_entmax.export import to_onnx  # doctest: +SKIP
    >>> to_onnx(fitted_classifier, "model.onnx")  # doctest: +SKIP
    >>> import onnxruntime  # doctest: +SKIP
    >>> session = onnxruntime.InferenceSession("model.onnx")  # doctest: +SKIP
    >>> proba = session.run(None, {"X": X.astype("float32")})[0]  # doctest: +SKIP
    """
    if not isinstance(path, (str, Path)):
        raise TypeError(f"path must be a str or a pathlib.Path; got {type(path).__name__}")
    input_dtype = check("input_dtype", input_dtype, Options(tuple(INPUT_DTYPES)), "to_onnx")
    graph = _graph_of(estimator)
    example = torch.zeros(2, int(estimator.n_features_in_), dtype=INPUT_DTYPES[input_dtype])
    path = Path(path)
    if path.name not in ("", ".", ".."):  # a link, a pipe, ... refused before the export
        check_target(path, str(path), _WHAT)
    with _first_export_not_interrupted():
        _require_onnx()
        with torch.no_grad(), _quiet_exporter():
            program = torch.onnx.export(
                graph,
                (example,),
                dynamo=True,
                input_names=[INPUT_NAME],
                output_names=[OUTPUT_NAME],
                dynamic_shapes=({0: Dim("batch", min=1)},),
                opset_version=opset_version,
                optimize=False,  # _fold, not the exporter's rewrite rules (minutes)
                verbose=False,
            )
            _fold(program.model)
    try:
        data = program.model_proto.SerializeToString()
    except ValueError as error:  # protobuf's 2 GiB limit
        raise ValueError(
            f"cannot write {str(path)!r}: the ONNX graph of {type(estimator).__name__} is "
            f"too large for one ONNX file ({error})"
        ) from None
    write_whole(path, data, _WHAT)
    return path

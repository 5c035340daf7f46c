"""Exporting: the core's modules through ``torch.export``, a fitted classifier to ONNX.

:func:`export_module` exports an evaluation-mode module (``Sparsemax``, ``Entmax15``,
``EntmaxBisect``, ``EntmaxMultiheadAttention``, TabNet, ...) with a dynamic batch axis, so
that the program serves any number of rows. :func:`to_onnx` writes a fitted
``SparsemaxClassifier``, ``EntmaxClassifier`` or ``TabNetEntmaxClassifier`` as an ONNX graph
from features (float32 by default, or float64: ``input_dtype``) to the probabilities of
``predict_proba``: the network in float64 and in evaluation mode, as ``predict_proba`` runs
it, then the output mapping: for sparsemax and 1.5-entmax the core's traceable form
(``sk_entmax/entmax/_traceable.py``), traced from the very function ``predict_proba``
computes (its Newton passes one ONNX ``Loop``), so that rows with entries exactly on the
support's boundary get the same exact zeros, and the same bits; bisection (the core's
plain-op path) otherwise.
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
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import torch
from sklearn.utils.validation import check_is_fitted
from torch import nn
from torch.export import Dim, ExportedProgram

from sk_entmax._files import check_target, write_whole
from sk_entmax._inputs.tabular import TabularInputMixin
from sk_entmax.entmax.activations import TRACEABLE
from sk_entmax.entmax.algorithms import apply_case, case_for
from sk_entmax.entmax.constraints import Options, check
from sk_entmax.entmax.dispatch import implementations

__all__ = ["export_module", "to_onnx"]

#: the name of the ONNX graph's input (features) and output (probabilities)
INPUT_NAME, OUTPUT_NAME = "X", "proba"

#: the element types :func:`to_onnx` can give the graph's input
INPUT_DTYPES = {"float32": torch.float32, "float64": torch.float64}

#: what :func:`to_onnx` writes, as its errors name it
_WHAT = "an ONNX file"

#: the modules the ONNX export needs, beyond torch: the ``onnx`` extra
_ONNX_MODULES = ("onnx", "onnxscript")

#: the core's implementations of :func:`~sk_entmax.entmax.entmax`, which the graph's
#: mapping takes at an alpha other than 1.5 and 2 (plain ops: ``training=False``)
_ENTMAX = implementations("entmax")


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
        self.case = case_for(self.alpha)  # decided once, for every call

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        if self.float32_input:  # as the estimator's input validation rounds X
            X = X.to(torch.float32)
        X = X.to(torch.float64)  # the network runs in float64, as predict_proba runs it
        output = self.network(X)
        scores = output[0] if isinstance(output, tuple) else output
        if self.temperature != 1.0:
            scores = scores / self.temperature
        if self.case in TRACEABLE:
            # the core's traceable form, the function predict_proba computes
            return TRACEABLE[self.case](scores)[:, : self.n_classes]
        P = apply_case(_ENTMAX, scores, self.alpha, n_iter=50, training=False, case=self.case)
        return P[:, : self.n_classes]


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
def _first_export_not_interrupted(first: bool | None = None) -> Iterator[None]:
    """Hold a Ctrl-C (SIGINT) that comes during the process's first export until the export
    ends, then act on it (``KeyboardInterrupt`` by default): interrupted in the middle of
    its imports, it left a half-initialized ``onnxscript`` in ``sys.modules``, and every
    later export of the process failed (``module 'onnxscript' has no attribute
    'onnx_types'``). Later exports, and exports outside the main thread (where no signal
    arrives), are not held. ``first``: whether this is the process's first export (None:
    whether no export of this process has finished yet)."""
    global _EXPORTED
    if first is None:
        first = not _EXPORTED
    if not first or threading.current_thread() is not threading.main_thread():
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


def _exported(
    graph: nn.Module, example: torch.Tensor, opset_version: int | None, first: bool | None = None
) -> Any:
    """The ONNX program of ``graph`` (the exporter's, folded by :func:`_fold`), a Ctrl-C
    held while it is the process's ``first`` export (:func:`_first_export_not_interrupted`)."""
    with _first_export_not_interrupted(first):
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
    return program


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
    program = _exported(graph, example, opset_version)
    try:
        data = program.model_proto.SerializeToString()
    except ValueError as error:  # protobuf's 2 GiB limit
        raise ValueError(
            f"cannot write {str(path)!r}: the ONNX graph of {type(estimator).__name__} is "
            f"too large for one ONNX file ({error})"
        ) from None
    write_whole(path, data, _WHAT)
    return path

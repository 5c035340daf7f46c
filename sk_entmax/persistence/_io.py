"""Save and load: the header written from an estimator, and read back into one, each of its
parts checked by the module whose job it is (see the package docstring)."""

from __future__ import annotations

import errno
import json
import os
from typing import Any

from sklearn.utils.validation import check_is_fitted

from sk_entmax._engine.device import resolve_device
from sk_entmax.persistence._composite import assemble, is_composite, pipeline_entry, read_pipeline
from sk_entmax.persistence._errors import _Invalid, printable
from sk_entmax.persistence._files import _save_target, _write_file
from sk_entmax.persistence._header import (
    _MAX_JSON_VALUES,
    _METADATA_KEY,
    _check_json_size,
    _parse_header,
)
from sk_entmax.persistence._model import build, model_entry, read_model
from sk_entmax.persistence._reader import DIGEST_KEY, OneRead, digest
from sk_entmax.persistence._wrapper import read_pipeline_wrapper, wrapped_pipeline, wrapper_entry


def save(estimator: Any, path: str | os.PathLike) -> None:
    """Write a fitted estimator to ``path`` as one safetensors file; no pickle involved.

    Parameters
    ----------
    estimator : estimator of this package, Pipeline or ColumnTransformer
        A fitted estimator of this package: a classifier, a regressor or a self-supervised
        pretrainer (not a subclass: :func:`load` only builds the classes it knows), with
        the estimators its parameters hold (a pretrainer: frozen, fitted or not,
        stored as a nested entry); or a fitted conformal wrapper around one (its
        parameters and calibration, conformalized or not, are stored with the model); or
        a fitted scikit-learn ``Pipeline`` or
        ``ColumnTransformer`` whose parts are scikit-learn's estimators and, as steps of a
        Pipeline, these (format version 2: the scikit-learn part through skops, see
        :mod:`sk_entmax.persistence`).
    path : str or os.PathLike
        The file to write (conventionally ``*.safetensors``): a new path, or a regular file,
        which is replaced (through a symbolic link: the file the link names, the link
        stays). Nothing else is written to, see Raises.

    Raises
    ------
    TypeError
        If ``estimator`` is not one of the package's estimators (or a conformal wrapper
        around one, or a Pipeline or ColumnTransformer of those and scikit-learn's
        estimators: a class of another package, a function, one of this package's
        estimators inside a ColumnTransformer is refused, named), or a parameter or fitted
        attribute cannot be stored as data (e.g. ``random_state`` holding a
        ``RandomState``, or an attribute set by hand that :func:`load` would refuse); the
        message names it.
    sklearn.exceptions.NotFittedError
        If ``estimator`` is not fitted.
    ValueError
        If the model's header would exceed what :func:`load` reads (4 MiB, 300,000 JSON
        values, 100,000 lists and objects: a categorical column of hundreds of thousands of
        categories), a tensor of the network holds NaN or infinity (named), or a Pipeline
        sets a ``memory`` (a joblib cache folder, which load refuses), so that every file
        ``save`` writes loads.
    IsADirectoryError
        If ``path`` is a directory, or a symbolic link to one.
    OSError
        If ``path`` is neither a regular file nor a new path: a fifo, a character or block
        device (``/dev/null``), a socket, or a symbolic link to one of those. This is
        checked before anything is written, and again just before the file is replaced;
        nothing is written to such a path, and it is left as it was. Also if the file
        cannot be written (a missing or read-only folder, a full disk, ...), safetensors'
        own errors included. Every such error names ``path``, and leaves the file at
        ``path``, if any, as it was.

    Notes
    -----
    The file is written whole or not at all: into a new file in the same folder
    (``.<name>.<random>.tmp``), flushed to disk, then moved over ``path`` in one step
    (:func:`os.replace`), so a reader never sees half a file and a failed save leaves the
    old one; saving needs permission to create files in that folder. A file replaced keeps
    its permission bits; a new one gets those ``open`` would give it (under the umask).
    """
    _save(estimator, path)


def _save(
    estimator: Any, path: str | os.PathLike, *, max_json_values: int = _MAX_JSON_VALUES
) -> None:
    """:func:`save`, refusing a header of more than ``max_json_values`` JSON values (the
    most :func:`load` reads)."""
    target = os.fspath(path)
    around = wrapped_pipeline(estimator)
    if is_composite(estimator):
        check_is_fitted(estimator)
        _save_target(target)  # refuse a fifo, a device, ... before any work
        header, tensors = pipeline_entry(estimator, model_entry)
    elif around is not None:  # a wrapper around a Pipeline: the Pipeline, its entry beside
        key, entry, inner = wrapper_entry(estimator, around[0])
        _save_target(target)
        header, tensors = pipeline_entry(inner, model_entry)
        header[key] = entry
    else:
        header, tensors = model_entry(estimator, target, _save_target)
    _refuse_non_finite(estimator, tensors)
    text = json.dumps(header, allow_nan=False)
    try:
        _check_json_size(text, max_values=max_json_values)
    except _Invalid as error:
        raise ValueError(
            f"cannot save {type(estimator).__name__}: {error} (a categorical column with that "
            "many categories, or that many classes or feature names); use pickle or joblib "
            "where the file's source is trusted"
        ) from None
    _write_file(target, tensors, {_METADATA_KEY: text, DIGEST_KEY: digest(text, tensors)})


def _refuse_non_finite(estimator: Any, tensors: dict[str, Any]) -> None:
    """Refuse, naming it, a tensor holding NaN or infinity: load refuses such a file, and
    every file save writes loads."""
    for key in sorted(tensors):
        tensor = tensors[key]
        if tensor.is_floating_point() and not bool(tensor.isfinite().all()):
            raise ValueError(
                f"cannot save {type(estimator).__name__}: its tensor {key} holds values that "
                "are not finite (NaN or infinity), which load refuses: the network diverged, "
                "or a batch norm's variance overflowed on a column of huge values (rescale "
                "it and fit again)"
            )


def load(path: str | os.PathLike, device: str = "cpu") -> Any:
    """Read an estimator written by :func:`save`; reads data only and runs no code from it.

    Before it builds anything, ``load`` checks the whole file, and refuses it with a
    ``ValueError`` reading ``cannot load <path>: <why>`` when, in this order:

    - its header claims more than 4 MiB (read from its first 8 bytes, before anything
      else), or its JSON document more than 300,000 values or 100,000 lists and objects
      (counted in its text, before it is parsed); its safetensors layout is not one save
      writes (a tensor's byte range that does not hold its shape, ranges that overlap or
      leave gaps);
    - its bytes do not match the SHA-256 digest save stored in it (the JSON document and
      every tensor; a file without one, written before it existed, is not checked so);
    - it is not a safetensors file, or one :func:`save` did not write;
    - (a Pipeline or ColumnTransformer, format version 2) its pipeline entry is not base64
      of a zip archive, unpacks to more than 256 MiB or 100,000 files, names a type skops
      does not trust by default (scikit-learn's estimators, numpy's and scipy's data;
      ``numpy.dtype`` too), checked before skops builds anything; holds a member that is
      not stored or deflated, a schema of more than 4 MiB or of more values and
      containers than the header may hold, a node of a kind that calls a stored type
      (a trusted function is referenced, never called), or one of the scikit-learn
      estimators whose compiled code reads their fitted arrays unchecked (libsvm's, KD and
      ball trees, decision trees); sets a ``memory`` (a cache folder a refit would
      unpickle from); a stored tensor is not
      ``models.<i>.<name>`` of one of its model entries (each checked as below); or its
      model entries and the placeholders in its Pipelines' steps do not match one to one;
    - its header is not JSON, has entries a model file does not have, lacks some, or nests
      deeper than saved values do;
    - its ``format_version`` is not an int from 1 to :data:`FORMAT_VERSION`;
    - it names an estimator or a network this package does not have, or a network the
      estimator does not train;
    - a stored tensor, or a tensor alias, is named as no tensor of that network class can
      be (``x``; ``layers.0.weight`` in a network with no such layers): checked from the
      names alone, first;
    - a network argument is not one that network takes, or not a plain value of its kind
      (an int, a list of ints, a finite number, ...), an int in it exceeds 2**31 - 1, or an
      int that sizes tensors exceeds what the stored tensors hold for it: the extent of an
      axis of the non-empty stored tensors it sizes (``n_d`` is at most the input width of
      the stored ``tabnet.final_mapping.weight``, ``n_features`` the stored input width; an
      empty tensor of shape ``[N, 0]`` holds no size) or the number of stored tensors it
      makes (``n_steps`` is at most the number of stored attention layers
      ``tabnet.attentive_transformers.<i>.fc.weight``; the length of ``cat_idxs`` the
      number of stored embeddings);
    - the network the arguments describe is not the one stored: it is built on PyTorch's
      meta device (shapes only, no memory), and stopped once it has more tensors than the
      file stores and aliases (and a few, to name the missing ones); each of its tensors
      must be stored under its name, with its shape and dtype (nothing is cast: float
      weights are float32 or float64, as the network that estimator builds holds them), and
      no other tensor may be stored (none is read);
    - a parameter is not one of the estimator's ``get_params()`` names (or one is missing),
      or its value is not a plain number, string, list or dict, or not one ``fit`` accepts
      (the message is ``fit``'s, after ``cannot load <path>:``);
    - an array in the parameters or fitted attributes claims a shape numpy cannot hold (an
      empty array of shape ``[0, 2**63]``), or does not fit its dtype;
    - a fitted attribute is not one the estimator documents, a required one is missing, or
      one has the wrong type, dtype or shape (``classes_`` must have one entry per network
      output, ``n_features_in_`` must be the network's input width, ...), an array's dtype
      is not plain or is wider than its values, ``feature_names_in_`` repeats a name, or
      ``feature_importances_`` are not finite, non-negative numbers summing to 1 (within
      float64 rounding);
    - (a parameter that holds an estimator, such as a pretrainer, stored as a
      nested entry ``estimators.<name>``, its tensors under ``estimators.<name>.``) the
      parameter is not one the estimator's class declares as holding an estimator, the
      entry is not a frozen flag and a model, a stored tensor belongs to no such entry,
      the model is not an estimator this package saves, or not one the parameter takes
      (its constraint, as ``fit`` checks it); a fitted one is checked as a file of its own
      (everything in this list), and may hold no wrapper;
    - (a meta-estimator stored around the model: the conformal wrapper) its entry is not
      its parameters but the one that gives the model (exactly those), how that one
      relates to the model (None, the model itself, or an unfitted template) and its
      fitted attributes (only those its class declares), each a plain value; then what
      its class declares it must be, against the model and its maths (for the conformal
      wrapper: its parameters as ``fit`` accepts them; ``classes_``, ``n_features_in_``
      and ``mapping_alpha_`` the model's; the calibration whole, and every count,
      quantile and temperature what ``conformalize`` computes from the stored scores,
      each recomputed; the user guide's page "Persistence and hostile files" lists each);
      an error numpy raises on a case not foreseen is reported as such;
    - then, the stored tensors read: a stored weight is NaN or infinite, a batch norm's
      running variance is negative, or ``alpha_`` or
      ``mask_alpha_`` is not the alpha the stored network computes (its fixed alpha, or a
      learned one computed from its stored tensor), within float32 rounding (a relative
      1e-5: a learned alpha may have been computed on another device).

    So what a file makes ``load`` allocate before it is refused, or before the network is
    built, is the header parsed (the JSON's values as Python objects, the tensors' names and
    shapes), a skeleton with no more modules and (meta) tensors than the file has tensors,
    and, once every check but the last has passed, the stored tensors; the network then
    built holds exactly the stored tensors.

    Parameters
    ----------
    path : str or os.PathLike
        A file written by :func:`save`.
    device : str, default="cpu"
        Where the network goes: "cpu", "cuda", "cuda:N" or "auto" (CUDA when available),
        whatever device the model was trained on. The estimator's ``device`` parameter is
        restored as it was saved; it only matters for a later ``fit``.

    Returns
    -------
    estimator
        The fitted estimator (or Pipeline, or ColumnTransformer), predicting exactly as the
        saved one (the conformal wrapper around it when one was saved: its ``estimator`` is
        None, the model itself with ``prefit=True``, or an unfitted clone of the model; a
        pretrainer parameter as it was saved: frozen, fitted or unfitted).

    Raises
    ------
    ValueError
        If the file is not a valid model file, as listed above; the message says why.
    OSError
        If the file cannot be read (``IsADirectoryError`` for a directory).

    Notes
    -----
    The file is opened once and read through that one descriptor: a save replacing it
    meanwhile is not seen, and the load returns the model that was there when it opened
    the file. A Pipeline's stored ``n_jobs`` above the cores this process may use is
    capped at them, with a warning.

    The skeleton is built on the meta device and draws no random numbers; the network is
    then initialised as ``fit`` initialises one (its initial weights, overwritten by the
    stored ones, leave torch's global generator as ``load`` found it): a load running next to
    fits in other threads changes neither their results nor the caller's seeded random
    numbers.
    """
    device = resolve_device(device)
    name = os.fspath(path)
    if os.path.isdir(name):
        raise IsADirectoryError(errno.EISDIR, "is a directory, not a model file", name)
    try:
        with OneRead(name) as handle:  # everything from one descriptor: never half a save
            handle.check_digest()
            metadata = handle.metadata()
            if _METADATA_KEY not in metadata:
                raise ValueError(f"{name!r} was not written by sk_entmax.persistence.save")
            stored = handle.shapes()
            header = _parse_header(metadata[_METADATA_KEY])
            if "pipeline" in header:  # a Pipeline or ColumnTransformer (format version 2)
                pipeline, entries = read_pipeline(header, stored)
                models = [
                    read_model(handle, entry, part, prefix) for entry, part, prefix in entries
                ]
            else:
                pipeline, models = None, [read_model(handle, header, stored, "")]
    except _Invalid as error:
        raise ValueError(f"cannot load {name!r}: {printable(str(error))}") from None
    except (KeyError, TypeError, AttributeError, IndexError) as error:  # a case not foreseen
        raise ValueError(
            f"cannot load {name!r}: the header is malformed ({type(error).__name__}: "
            f"{printable(str(error))})"
        ) from None
    built = [build(model, name, device) for model in models]
    if pipeline is None:
        return built[0]
    try:
        pipeline = assemble(pipeline, built)
        # a wrapper stored around the Pipeline, checked against the Pipeline as loaded
        wrapped = read_pipeline_wrapper(header, pipeline)
    except _Invalid as error:
        raise ValueError(f"cannot load {name!r}: {printable(str(error))}") from None
    except (KeyError, TypeError, AttributeError, IndexError) as error:  # a case not foreseen
        raise ValueError(
            f"cannot load {name!r}: the header is malformed ({type(error).__name__}: "
            f"{printable(str(error))})"
        ) from None
    return pipeline if wrapped is None else wrapped.around(pipeline)

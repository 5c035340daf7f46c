"""Save and load fitted estimators without running any code on load.

``pickle`` and ``joblib`` work on every estimator here, but unpickling runs whatever code the
file names, so a pickle from an untrusted source is unsafe to open. :func:`save` writes a
single `safetensors <https://huggingface.co/docs/safetensors>`_ file instead: the network's
weights as plain tensors, and in the file's text metadata a JSON document with the
estimator's class name, its parameters and its fitted attributes (``classes_``,
``n_features_in_``, TabNet's categories, ...). :func:`load` reads JSON and raw tensor bytes
only; the only classes it instantiates are the estimators and networks of this package,
looked up by name in a fixed table, so nothing in the file can make it run code.

Why safetensors for this package's estimators: their state is a few arrays, a few scalars
and the torch weights, which skops could only store by pickling them. JSON holds the former
exactly and safetensors, the format PyTorch models are shared in, holds the latter, so a
fixed format with nothing to review leaves nothing to trust. A scikit-learn ``Pipeline`` or
``ColumnTransformer`` (format version 2) stores its scikit-learn part through skops, loaded
with scikit-learn's, numpy's and scipy's types trusted and nothing else, and each of this
package's estimators among its steps as a model entry of the same file
(the module ``_composite`` says why skops there). An attribute that JSON cannot hold (a
``RandomState`` as ``random_state``, a category of an unsupported type) is refused at save
time with an error that names it, never written in a form that needs code to read.

A hostile file cannot make :func:`load` build more than the file holds either: before
anything is built it checks the whole header (see :func:`load` for the list) against the
tensors' names, shapes and dtypes, which safetensors reads without reading the tensors.
Every stored tensor must be named as one of the network's can be, every size in the header
must be held by the stored tensors it sizes, and the network the header describes is first
built as a skeleton on PyTorch's meta device (shapes, no memory), stopped as soon as it has
more tensors than the file, and compared with the stored tensors. Whatever is wrong, the
error is a ``ValueError`` that says why. :func:`save` writes only to a regular file or a new
path, whole or not at all.

The file keeps no device: tensors are stored on the CPU and :func:`load` puts them on the
``device`` it is given, so a model trained on a GPU loads on a CPU-only machine. The
optimizer state is not stored: a loaded estimator predicts, explains and scores exactly as
the saved one; calling ``fit`` on it trains a new network from scratch, as ``fit`` always
does.

Examples
--------
>>> import tempfile, os
>>> from sklearn.datasets import load_iris
>>> from sk_entmax import SparsemaxClassifier
>>> from sk_entmax.persistence import load, save
>>> X, y = load_iris(return_X_y=True)
>>> clf = SparsemaxClassifier(max_epochs=5, random_state=0).fit(X, y)
>>> path = os.path.join(tempfile.mkdtemp(), "model.safetensors")
>>> save(clf, path)
>>> restored = load(path)
>>> bool((restored.predict_proba(X) == clf.predict_proba(X)).all())
True
"""

# The package, one job a module; what each class stores is declared with the class:
#   _header     the file's header: format version, entries, how much of it is read
#   _codec      the JSON codec of the header's values
#   _schema     the vocabulary estimators declare their fitted attributes in
#               (``_fitted_schema``), and the checks of parameters, fitted attributes, history
#   _skeleton   the network checks, from the declaration ``state_spec`` of each network
#               class (sk_entmax.nn._tensor_spec), and the meta-device skeleton
#   _conformal  a SparseConformalClassifier stored around the model
#   _composite  a Pipeline or ColumnTransformer: skops for its scikit-learn part
#   _classes    the fixed table of the classes load builds, by name
#   _files      writing the file whole or not at all
#   _io         save and load
#   _errors     the two errors

from sk_entmax.persistence._header import FORMAT_VERSION
from sk_entmax.persistence._io import load, save

__all__ = ["FORMAT_VERSION", "load", "save"]

save.__module__ = load.__module__ = __name__

"""Save and load fitted estimators without running any code on load.

``pickle`` and ``joblib`` work on every estimator here, but unpickling runs whatever code the
file names, so a pickle from an untrusted source is unsafe to open. :func:`save` writes a
single `safetensors <https://huggingface.co/docs/safetensors>`_ file instead: the network's
weights as plain tensors, and in the file's text metadata a JSON document with the
estimator's class name, its parameters and its fitted attributes (``classes_``,
``n_features_in_``, the categories of the embedded columns, ...). :func:`load` reads JSON
and raw tensor bytes only; the only classes it instantiates are the estimators of this
package that declare their saved state (``sk_entmax._saveable`` lists them), looked up
by name, and the networks they declare, so nothing in the file can make it run code.

Persistence knows no estimator by name: each class states what it stores, next to its code
(its ``_saved_state``, see ``sk_entmax._saved_state``; its fitted attributes, its
``_fitted_schema``; its network's tensors and arguments, the network's ``state_spec``), and
this package interprets the declarations. An estimator that trains a network is stored as
its parameters, fitted attributes and network; a parameter that holds an estimator (a
supervised estimator's pretrainer) as a nested entry of the same file, checked as a file of
its own; a meta-estimator (the conformal wrapper) around the model it holds, with the
checks its class declares.

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

The user guide's page "Persistence and hostile files" has examples.
"""

# The package, one job a module; what each class stores is declared with the class:
#   _header     the file's header: format version, entries, how much of it is read
#   _codec      the JSON codec of the header's values
#   _schema     the checks of parameters, fitted attributes (as each estimator declares
#               them, its ``_fitted_schema``) and history
#   _skeleton   the network checks, from the declaration ``state_spec`` of each network
#               class (sk_entmax.nn._tensor_spec), and the meta-device skeleton
#   _model      one estimator (a ModelState): its entry written, checked, read and built,
#               with its nested estimators
#   _wrapper    a meta-estimator (a WrapperState) stored around its model
#   _composite  a Pipeline or ColumnTransformer: skops for its scikit-learn part
#   _skops_part the checks of that part: its archive, its schema's nodes, what skops built
#   _reader     the file read through one descriptor, and its digest
#   _files      writing the file whole or not at all
#   _io         save and load
#   _errors     the two errors

from sk_entmax.persistence._header import FORMAT_VERSION
from sk_entmax.persistence._io import load, save

__all__ = ["FORMAT_VERSION", "load", "save"]

save.__module__ = load.__module__ = __name__

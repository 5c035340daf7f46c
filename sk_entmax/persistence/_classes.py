"""The fixed table of the classes :func:`~sk_entmax.persistence.load` builds, by name.

A file names its estimator and network; load builds only the classes listed here, so nothing
in a file can make it run other code. What each class stores and how load checks it is the
class's own declaration: an estimator's ``_fitted_schema`` (its fitted attributes, see
:mod:`sk_entmax.persistence._schema`), a network's ``state_spec`` (its tensors' names and its
arguments, see :mod:`sk_entmax.nn._tensor_spec`).
"""

from __future__ import annotations


def _estimator_classes() -> dict[str, tuple[type, str]]:
    """Each estimator class by name, with the name of the network class it trains."""
    from sk_entmax._linear import EntmaxClassifier, SparsemaxClassifier
    from sk_entmax._tabnet.estimator import TabNetEntmaxClassifier
    from sk_entmax._tabnet.regressor import TabNetEntmaxRegressor

    return {
        "EntmaxClassifier": (EntmaxClassifier, "EntmaxLinearNet"),
        "SparsemaxClassifier": (SparsemaxClassifier, "EntmaxLinearNet"),
        "TabNetEntmaxClassifier": (TabNetEntmaxClassifier, "TabNetClassifierNet"),
        "TabNetEntmaxRegressor": (TabNetEntmaxRegressor, "TabNetRegressorNet"),
    }


def _module_classes() -> dict[str, type]:
    from sk_entmax.nn.linear import EntmaxLinearNet
    from sk_entmax.nn.tabnet import TabNetClassifierNet, TabNetRegressorNet

    return {
        cls.__name__: cls for cls in (EntmaxLinearNet, TabNetClassifierNet, TabNetRegressorNet)
    }

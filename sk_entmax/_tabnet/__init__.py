"""The TabNet estimators: the classifier (``estimator``), the regressor (``regressor``), what
they share (``shared``), their masks' explanations and importances (``explain``) and their
batch sizes (``sizing``)."""

from sk_entmax._tabnet.estimator import TabNetEntmaxClassifier
from sk_entmax._tabnet.regressor import TabNetEntmaxRegressor

__all__ = ["TabNetEntmaxClassifier", "TabNetEntmaxRegressor"]

"""TabNetEntmaxClassifier: the estimator (``estimator``), its masks' explanations and
importances (``explain``) and its batch sizes (``sizing``)."""

from sk_entmax._tabnet.estimator import TabNetEntmaxClassifier

__all__ = ["TabNetEntmaxClassifier"]

"""The TabNet estimators: the classifier (``estimator``), the regressor (``regressor``), the
self-supervised pretrainer (``pretrainer``) and a supervised estimator's start from it
(``from_pretrained``), what they share (``shared``), their masks' explanations and importances
(``explain``), their batch sizes (``sizing``) and the check that a fit did not collapse
(``diagnostics``)."""

from sk_entmax._tabnet.estimator import TabNetEntmaxClassifier
from sk_entmax._tabnet.pretrainer import TabNetPretrainer
from sk_entmax._tabnet.regressor import TabNetEntmaxRegressor

__all__ = ["TabNetEntmaxClassifier", "TabNetEntmaxRegressor", "TabNetPretrainer"]

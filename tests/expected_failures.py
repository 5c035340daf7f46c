"""Why some of scikit-learn's estimator checks fail for the entmax classifiers.

Shared by the check runs of the linear estimators and of TabNet, so that each reason is
stated once.
"""

from __future__ import annotations

MULTILABEL_PROBA = "check_classifiers_multilabel_output_format_predict_proba"

#: every entmax classifier
SPARSE_PROBA_FAILURES = {
    MULTILABEL_PROBA: (
        "the check demands probabilities strictly inside (0, 1); exact zeros are the point "
        "of entmax, and multi-label rows are one distribution over labels"
    ),
}

#: estimators trained by mini-batch Adam (TabNet, and the linear ones at solver='adam');
#: the full-batch L-BFGS solver passes these checks
MINIBATCH_FAILURES = {
    "check_sample_weight_equivalence_on_dense_data": (
        "mini-batch training: a weight of 2 and a duplicated row give different batches, so "
        "the fitted weights are not equal"
    ),
}

#: the same, for estimators that accept scipy sparse X (the linear ones)
SPARSE_MINIBATCH_FAILURES = {
    "check_sample_weight_equivalence_on_sparse_data": (
        "mini-batch training, as for dense data: a weight of 2 and a duplicated row give "
        "different batches"
    ),
}

#: TabNet's list (kept under its historical name)
EXPECTED_FAILURES = {**SPARSE_PROBA_FAILURES, **MINIBATCH_FAILURES}

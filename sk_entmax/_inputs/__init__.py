"""What an estimator accepts as data, as mixins of its data hooks.

- ``numeric``: a numeric ``X`` (arrays, scipy sparse matrices, numeric frames), for the
  linear estimators;
- ``tabular``: tables with text, categorical and missing values, for TabNet (and the category
  encoder, which persistence rebuilds through it).

Each also validates a ``partial_fit`` chunk (``_validate_stream_data``); the ``partial_fit``
skeleton itself is the base's (:mod:`sk_entmax._base`), its target part the classifier's.
"""

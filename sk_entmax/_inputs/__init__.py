"""What an estimator accepts as data, as mixins of its data hooks.

- ``numeric``: a numeric ``X`` (arrays, scipy sparse matrices, numeric frames), for the
  linear estimators;
- ``tabular``: tables with text, categorical and missing values, for TabNet (and the category
  encoder, which persistence rebuilds through it);
- ``streaming``: ``partial_fit`` over chunks of a stream.
"""

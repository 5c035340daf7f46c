"""Command line: ``python -m sk_entmax demo`` and ``python -m sk_entmax report``.

``demo`` fits the estimators on data bundled with scikit-learn and writes a feature-mask
report; ``report`` does the same for a CSV file of the user's, for a classification or a
regression target. Errors in what the user gave
(a missing file, a missing column, a file that is not a table, an ``--out`` that cannot be
written) end with one line on standard error and exit status 2, before any fit where they
can be seen then; anything unforeseen ends with one line and exit status 1, an interrupt
with one line and exit status 130. Never a traceback.

What it prints comes partly from the user's files (column names, class labels, paths):
characters that are not printable, such as the escape that starts a terminal's colour
codes, are printed escaped as in a Python string literal (``\\x1b``), so a CSV cannot
drive the terminal; ordinary unicode letters are printed as they are. Column names are
kept exactly as the CSV's header writes them, spaces included.

``report --confidence L`` (L in (0, 1)) adds split-conformal prediction sets: the training
rows are split again, 80% to fit the model and 20% (stratified like the first split) to
calibrate a :class:`~sk_entmax.conformal.SparseConformalClassifier` at confidence level
``L``; on the held-out rows the terminal and the HTML report give the target and the
empirical coverage (the share of rows whose true label is in the set), how many rows have
a set of each size, and the sets of the first few rows with the classes they rule out.
Everything else in the report is then about the model fitted on those 80%.

``report --task {auto,classification,regression}`` says what the target is. ``auto`` (the
default) decides from the target column: a column of numbers (not true/false) is a
regression target, fitted with :class:`~sk_entmax.TabNetEntmaxRegressor`, when at least
one of its values is not a whole number or is infinite (scikit-learn's ``type_of_target``
calls such a column "continuous"), or when it holds too many distinct values to be classes:
more than ``MAX_AUTO_CLASSES`` (20) distinct values *and* more than
``MIN_DISTINCT_SHARE`` (5%) of the rows distinct (a target such as scikit-learn's
diabetes, whole numbers with 214 distinct values in 442 rows). Anything else (text,
true/false, a few distinct whole numbers) holds class labels, fitted with a classifier.
``--task`` overrides the guess either way. When the classes are many and small (more than
10 classes, half of them with fewer than 10 rows) one line says so, with the ``--task`` to
give if the target is a quantity. ``--task classification``
on a continuous column, and ``--task regression`` on a column holding text, are refused
with one line naming ``--task``. A regression report has no probabilities: its terminal
lines and HTML report give R² and RMSE on the held-out rows and a predicted-against-true
figure, with the masks, importances and never-read lists as for a classifier; the options
that only mean something for class labels (``--confidence``, ``--model entmax`` or
``sparsemax``) are refused for a regression target with one line saying why. The split is
then not stratified. The CLI reads one target column: a multi-output regressor is not
offered here (:func:`~sk_entmax.report.feature_mask_report` draws one, one panel per
target).

TabNet's fit, the long one, shows a progress bar with the time left on standard error
(``verbose=1``) in both commands; ``--no-progress`` hides it.

``report`` fits the TabNet with faithful masks (``faithful_masks=True``, the default): each
step reads only the features its mask keeps, so the terminal and the HTML report list, for a
few held-out rows, the features the prediction provably never read, and give the share of
(row, feature) pairs never read over the held-out rows. ``--no-faithful-masks`` fits the
paper's mask design instead, and both then say that a zero mask is no proof that a feature
was not used.

Where each part lives: ``_main`` runs a command and turns every error into one line and
an exit status; ``_arguments`` parses the arguments; ``_out_path`` checks ``--out``;
``demo`` and ``report`` are the two commands; ``_csv`` reads the user's CSV file and
``_task`` decides what its target is (``--task``) and checks it; ``_notes`` says what the
report did to the data; ``_printing`` prints, escaping what comes from the user's files;
``_errors`` holds :class:`UsageError`. ``python -m sk_entmax`` runs :func:`main`.
"""

from sk_entmax.cli._main import main

__all__ = ["main"]

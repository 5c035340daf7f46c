"""The settings of the fused CPU kernels (:mod:`~sk_entmax.entmax.kernels._numba_maps`):
the cases, numba's fast-math flags, and the measured thresholds and tolerances of the
threshold's bounds (:mod:`~sk_entmax.entmax.kernels._numba_candidates`) and of its exact
solves (:mod:`~sk_entmax.entmax.kernels._numba_threshold`). Read by numba when it compiles:
a change here compiles the kernels again only where numba's disk cache is cleared.
"""

#: Newton steps at most for alpha other than 1.5 and 2 (they rise monotonically to the root)
MAX_NEWTON = 100

#: the level (of the row shifted to a maximum of 0 and scaled by alpha - 1) whose entries
#: above give :func:`_prebound`'s subset bound (of -0.2 to -0.4 the best on randn rows of
#: 128 to 20000 entries, alpha 1.1 to 1.9, and on uniform ones within 15 %)
_PRE_LEVEL = -0.35

#: rows this wide or wider start from :func:`_prebound` (alpha other than 1.5 and 2)
_PRE_FROM = 256

#: a count above the bound this small stops the passes over the row (the exact solve on so
#: few candidates costs less than a pass)
_SMALL_COUNT = 16

#: this many candidates or more first raise their bound (:func:`_raise`); fewer go
#: straight to the exact solve (measured faster at 4096 x 32)
_RAISE_FROM = 32

#: the entries per iteration of LLVM's vectorized power loops (two vectors of eight
#: float64 with AVX-512, read off the assembly): :func:`_pad` pads to a multiple of it
_CHUNK = 16

#: a Newton step this small (relative to 1 + |tau|) is the last one (alpha other than 1.5, 2)
_LAST_STEP = 1e-9

#: a Halley step this small (relative to 1 + |tau|) may be the last one, where the bound on
#: the error it leaves (about K h^3, :func:`_tau_general`) is at most :data:`_CUBIC`
_LAST_HALLEY = 1e-5
_CUBIC = 1e-17

#: how far below a subset's bound the candidates' bound is set (rows are shifted to a
#: maximum of 0 and tau lies in [-1, 0]): a margin for rounding, so that no entry of the
#: support is ever left out; the exact solve on the candidates decides the support
_MARGIN = 1e-9

# reassociation lets LLVM vectorize the row's sums (deterministic for a build; each row is
# summed the same way on any thread); no "nnan"/"ninf": -inf masks entries, NaN must spread
_FAST = {"nsz", "arcp", "contract", "reassoc"}

SPARSEMAX, ENTMAX15, GENERAL = 0, 1, 2

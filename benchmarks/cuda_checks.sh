#!/usr/bin/env bash
# One command for a machine with a GPU: every CUDA test, the issue 43 tables (the core against
# entmax 1.3 and softmax, the Triton kernels against the torch path, attention against SDPA and
# AdaSplash), and a linear fit and two TabNet epochs at 200,000 rows on CPU beside CUDA, all
# within a time budget (default 345 s, under 6 minutes), with one summary file.
#
#   bash benchmarks/cuda_checks.sh [OUTDIR]     # summary: OUTDIR/cuda_checks_summary.txt
#   bash benchmarks/cuda_checks.sh --list-tests # the CUDA tests it selects, then exits
#
# OUTDIR defaults to $CUDA_CHECKS_OUT, else $OUT, else the current folder; the raw log of each
# step goes to OUTDIR/cuda_checks_logs/. Without CUDA (torch.cuda.is_available() is False, or
# no torch and no GPU) it prints one line and exits 0 before any other work. With CUDA it
# exits 0 when every step exits 0, else 1.
#
# Offline: it installs nothing and reaches no network. It says which package is absent: a
# required one (sk_entmax, pytest, ...) fails the steps that need it; an optional one
# (adasplash, triton, entmax) only drops its columns from the tables.
#
# Environment: PYTHON (the interpreter, default python3), CUDA_CHECKS_BUDGET_S (total seconds,
# default 345; every step runs under `timeout`, capped by its own limit and by what is left),
# CUDA_CHECKS_DEVICE (the device of the benchmarks and fits, default cuda; cuda:N for another
# GPU). Compile time (Triton's first call per kernel configuration) is reported apart from
# run time, in the "first call" column of table 2.

set -u -o pipefail

CALLER_PWD=$PWD
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 1
PY=${PYTHON:-$(command -v python3 || command -v python)}
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"

# The CUDA tests: every test function (or method, or module with a module-level pytestmark)
# under tests/ whose source, decorators included, or a module-level name it uses mentions
# "cuda" -- a wider net than `pytest -k cuda`, which misses e.g.
# test_saved_on_gpu_loads_on_a_cpu_only_machine and test_auto_device_fits_where_available.
list_cuda_tests() {
    "$PY" - <<'EOF'
import ast
import pathlib
import sys

MINE = "tests/test_cuda_checks.py"  # runs this script: never select it


def mentions(node, source):
    return "cuda" in (ast.get_source_segment(source, node) or "").lower()


for path in sorted(pathlib.Path("tests").rglob("*.py")):
    name = path.as_posix()
    if name == MINE or not (path.name.startswith("test_") or path.name.endswith("_test.py")):
        continue
    source = path.read_text(encoding="utf-8")
    if "cuda" not in source.lower():
        continue
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        print(f"cuda_checks: cannot parse {name}: {exc}", file=sys.stderr)
        continue
    names = set()  # module-level names whose value mentions cuda
    whole_module = False
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and mentions(node, source):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
            whole_module |= "pytestmark" in found
            names |= found

    def selected(fn):
        decorated = "".join(ast.get_source_segment(source, d) or "" for d in fn.decorator_list)
        used = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)}
        return "cuda" in decorated.lower() or mentions(fn, source) or bool(used & names)

    if whole_module:
        print(name)
        continue
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if node.name.startswith("test") and selected(node):
                print(f"{name}::{node.name}")
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            if "cuda" in "".join(ast.get_source_segment(source, d) or "" for d in
                                 node.decorator_list).lower():
                print(f"{name}::{node.name}")
                continue
            for item in node.body:
                is_fn = isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
                if is_fn and item.name.startswith("test") and selected(item):
                    print(f"{name}::{node.name}::{item.name}")
EOF
}

if [ -z "$PY" ]; then
    echo "cuda_checks: no python3 here; nothing to check, exiting 0"
    exit 0
fi
case "${1:-}" in
    -h | --help)
        sed -n '2,24p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
        exit 0
        ;;
    --list-tests)
        list_cuda_tests
        exit $?
        ;;
esac

# ---------------------------------------------------------------- CUDA or not, at once
has_gpu() { command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q GPU; }
# No GPU driver at all (no nvidia-smi, no device node of NVIDIA, Jetson, WSL or ROCm): CUDA
# cannot be available, and importing torch to hear it say so would take seconds.
if ! command -v nvidia-smi >/dev/null 2>&1 &&
    ! compgen -G '/dev/nvidia*' >/dev/null && ! compgen -G '/dev/nvhost*' >/dev/null &&
    [ ! -e /dev/dxg ] && [ ! -e /dev/kfd ] && [ ! -e /proc/driver/nvidia ]; then
    echo "cuda_checks: CUDA is not available here (no GPU driver: no nvidia-smi, /dev/nvidia*," \
        "/dev/dxg or /dev/kfd); nothing to check, exiting 0"
    exit 0
fi
cuda_state() {
    timeout -k 5 60 "$PY" -c \
        'import torch; print("yes" if torch.cuda.is_available() else "no", torch.__version__)' \
        2>/dev/null
}
state=$(cuda_state)
case "$state" in
    yes*) ;;
    no*)
        extra=""
        has_gpu && extra=" although nvidia-smi lists a GPU (a CPU build of torch?)"
        echo "cuda_checks: CUDA is not available here (torch ${state#no } reports" \
            "torch.cuda.is_available() False${extra}); nothing to check, exiting 0"
        exit 0
        ;;
    *)
        if ! has_gpu; then
            echo "cuda_checks: CUDA is not available here (torch is not importable and" \
                "nvidia-smi lists no GPU); nothing to check, exiting 0"
            exit 0
        fi
        ;;
esac

# ---------------------------------------------------------------- from here on: a GPU
OUTDIR=${1:-${CUDA_CHECKS_OUT:-${OUT:-.}}}
case "$OUTDIR" in /*) ;; *) OUTDIR="$CALLER_PWD/$OUTDIR" ;; esac
LOGS="$OUTDIR/cuda_checks_logs"
SUMMARY="$OUTDIR/cuda_checks_summary.txt"
mkdir -p "$LOGS" || exit 1
BUDGET=${CUDA_CHECKS_BUDGET_S:-345}
GPU=${CUDA_CHECKS_DEVICE:-cuda}
export CUDA_CHECKS_DEVICE=$GPU
START=$SECONDS
FAILED=0
STEPS=0

now() { date +%s.%N; }
say() { echo "$*" | tee -a "$SUMMARY"; }

{
    echo "cuda_checks summary, $(date -u '+%Y-%m-%d %H:%M:%S UTC'), $(hostname)"
    echo "repository: $ROOT ($(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?'))"
    echo "python: $PY; device: $GPU; budget ${BUDGET} s; logs in $LOGS"
    echo "each step: exit code (124: timed out), wall seconds, its limit, then key figures"
} >"$SUMMARY"
cat "$SUMMARY"

# run_step NAME CAP_S EXTRACT CMD...: CMD under `timeout`, limited to CAP_S and to what is
# left of the budget; its output in $LOGS/NAME.log; EXTRACT names how to pick key figures.
run_step() {
    local name=$1 cap=$2 extract=$3
    shift 3
    local log="$LOGS/$name.log" left=$((BUDGET - (SECONDS - START) - 5))
    STEPS=$((STEPS + 1))
    if ((left < 10)); then
        say "== $name: SKIPPED, budget spent ($((SECONDS - START)) s of ${BUDGET} s)"
        FAILED=$((FAILED + 1))
        return 1
    fi
    local limit=$((cap < left ? cap : left))
    echo "-- $name (limit ${limit} s) ..."
    local t0 rc t1
    t0=$(now)
    timeout -k 10 "$limit" "$@" >"$log" 2>&1
    rc=$?
    t1=$(now)
    local wall
    wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
    local note=""
    ((rc == 124 || rc == 137)) && note=" (TIMED OUT)"
    ((rc != 0)) && FAILED=$((FAILED + 1))
    say "== $name: exit $rc$note, ${wall} s (limit ${limit} s), log cuda_checks_logs/$name.log"
    {
        case "$extract" in
            all) cat "$log" ;;
            tail) tail -n 3 "$log" ;;
            pytest)
                grep -E '^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) ' "$log"
                tail -n 1 "$log"
                ;;
            tables) grep -E '^(\||## |note:|torch )' "$log" ;;
            key) grep '^KEY ' "$log" | sed 's/^KEY //' ;;
        esac
        if ((rc != 0)) && [ "$extract" != tail ] && [ "$extract" != all ]; then
            echo "(last lines of the log)"
            grep -v '^KEY ' "$log" | tail -n 5
        fi
    } | sed 's/^/   /' | tee -a "$SUMMARY"
    return "$rc"
}

# ---------------------------------------------------------------- what is there (installs nothing)
if [ -z "$state" ]; then
    say "== stopping: torch is not importable here, and this script installs nothing"
    exit 1
fi
# one interpreter for every import test: each prints "required NAME" or "optional NAME"
while read -r kind module; do
    case "$kind:$module" in
        required:*)
            say "== required package absent: $module (install the project's test extra" \
                "first); the steps that need it will fail"
            ;;
        optional:triton) say "== optional package absent: triton (the core runs its torch" \
            "path on CUDA: table 2 compares the torch path with itself)" ;;
        optional:entmax) say "== optional package absent: entmax (no entmax 1.3 columns)" ;;
        optional:*) say "== optional package absent: $module (no $module columns)" ;;
    esac
done < <("$PY" - 2>/dev/null <<'EOF'
import importlib

for kind, names in (
    ("required", ("sk_entmax", "skorch", "sklearn", "pandas", "pytest", "hypothesis")),
    ("optional", ("triton", "entmax", "adasplash")),
):
    for name in names:
        try:
            importlib.import_module(name)
        except Exception:
            print(kind, name)
EOF
)

run_step environment 15 all "$PY" - <<'EOF'
import os, platform, subprocess

import torch

GPU = os.environ["CUDA_CHECKS_DEVICE"]
query = ["nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"]
try:
    print(subprocess.run(query, capture_output=True, text=True, check=False).stdout.strip())
except OSError as exc:
    print("nvidia-smi:", exc)
print(f"python {platform.python_version()}, torch {torch.__version__}, CUDA {torch.version.cuda}, "
      f"{torch.get_num_threads()} CPU threads, checks on {GPU}")
if GPU.startswith("cuda"):
    print(torch.cuda.get_device_name(GPU), "capability", torch.cuda.get_device_capability(GPU))
x = torch.randn(1024, 1024, device=GPU)
print(f"a matmul on {GPU} is finite:", bool(torch.isfinite(x @ x).all()))
for name in ("sk_entmax", "entmax", "skorch", "sklearn", "adasplash", "triton"):
    try:
        print(name, getattr(__import__(name), "__version__", "?"))
    except Exception as exc:
        print(name, "not importable:", type(exc).__name__)
EOF

# ---------------------------------------------------------------- 1. every CUDA test
mapfile -t CUDA_TESTS < <(list_cuda_tests)
printf '%s\n' "${CUDA_TESTS[@]}" >"$LOGS/cuda_tests_selected.txt"
say "selected ${#CUDA_TESTS[@]} CUDA test functions (list: cuda_checks_logs/cuda_tests_selected.txt)"
if ((${#CUDA_TESTS[@]} == 0)); then
    say "== tests: FAILED, no CUDA test found"
    FAILED=$((FAILED + 1))
else
    run_step tests 70 pytest "$PY" -m pytest -p no:cacheprovider -q -rA \
        --junitxml="$LOGS/tests.xml" "${CUDA_TESTS[@]}"
fi

# ---------------------------------------------------------------- 2. issue 43's tables
# each part stops adding rows before its own budget (--budget-s: the step's limit, as run_step
# will compute it, less 15 s for start-up and printing), so it ends inside its limit
plan_s() {
    local left=$((BUDGET - (SECONDS - START) - 5))
    local limit=$(($1 < left ? $1 : left))
    echo $((limit > 30 ? limit - 15 : 15))
}
run_step core_gpu 80 tables "$PY" benchmarks/bench_core_gpu.py --part core --device "$GPU" \
    --repeats 5 --budget-s "$(plan_s 80)"
run_step attention_gpu 55 tables "$PY" benchmarks/bench_core_gpu.py --part attention \
    --device "$GPU" --repeats 3 --budget-s "$(plan_s 55)"

# ---------------------------------------------------------------- 3. fits: CPU beside CUDA
run_step linear_200k 45 key "$PY" - <<'EOF'
# EntmaxClassifier() and SparsemaxClassifier() at 200,000 rows (bench_linear_scale.py's data:
# 20 features, 10 informative, 5 classes, 25% held out), CPU beside CUDA, alternating, 3 rounds;
# the ratios are medians of per-round ratios.
import os, statistics, time, warnings

import numpy as np
import torch
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from sk_entmax import EntmaxClassifier, SparsemaxClassifier

DEVICES = {"cpu": "cpu", "cuda": os.environ["CUDA_CHECKS_DEVICE"]}
X, y = make_classification(
    n_samples=200_000, n_features=20, n_informative=10, n_classes=5, random_state=0
)
X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.25, random_state=0)
scaler = StandardScaler().fit(X_tr)
X_tr, X_te = scaler.transform(X_tr), scaler.transform(X_te)


def sync():
    if DEVICES["cuda"].startswith("cuda"):
        torch.cuda.synchronize()


def fit(model):
    sync()
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X_tr, y_tr)
    sync()
    return time.perf_counter() - start, model


for device in DEVICES.values():  # first fits pay imports and the CUDA context: not timed
    fit(EntmaxClassifier(device=device, max_iter=5))
lr = statistics.median(fit(LogisticRegression())[0] for _ in range(3))
print(f"KEY LogisticRegression (CPU): {lr:.2f} s", flush=True)
for name, cls in (("EntmaxClassifier()", EntmaxClassifier), ("SparsemaxClassifier()", SparsemaxClassifier)):
    times, ratios, fitted = {"cpu": [], "cuda": []}, [], {}
    for r in range(3):
        t = {}
        for label in ("cpu", "cuda") if r % 2 == 0 else ("cuda", "cpu"):
            t[label], fitted[label] = fit(cls(device=DEVICES[label]))
            times[label].append(t[label])
        ratios.append(t["cuda"] / t["cpu"])
    cpu, cuda = fitted["cpu"], fitted["cuda"]
    gap = np.abs(cpu.predict_proba(X_te) - cuda.predict_proba(X_te)).max()
    print(
        f"KEY {name}: cpu {statistics.median(times['cpu']):.2f} s, "
        f"cuda {statistics.median(times['cuda']):.2f} s, cuda/cpu {statistics.median(ratios):.2f}, "
        f"cpu/LR {statistics.median(times['cpu']) / lr:.2f}, "
        f"cuda/LR {statistics.median(times['cuda']) / lr:.2f}; "
        f"n_iter_ {cpu.n_iter_}/{cuda.n_iter_}; "
        f"test acc {cpu.score(X_te, y_te):.4f}/{cuda.score(X_te, y_te):.4f}; "
        f"max |p_cpu - p_cuda| {gap:.1e}",
        flush=True,
    )
EOF

# TabNet at its defaults, 200,000 rows, 2 epochs: the GPU's epoch (batch sizes chosen for the
# device), the CPU's beside it, and pytorch-tabnet's on both at its defaults and on the GPU at
# the same sizes (when it is importable: carry its wheel); one KEY line per fit as it ends
run_step tabnet_200k 75 key "$PY" benchmarks/bench_tabnet_device.py --device "$GPU"

say "== total: $STEPS steps, $FAILED failed or skipped, $((SECONDS - START)) s of ${BUDGET} s"
((FAILED == 0))

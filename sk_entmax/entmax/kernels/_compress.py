"""A vector compress for the fused CPU kernel's gathers: eight entries at a time, no branch.

The kernel keeps the candidates of a row (the entries above a bound) in order in a scratch
row. Written as a loop without a branch, that store moves by one entry at a time (about five
cycles an entry, measured); behind a branch, a loop where 4 % of 1000 entries were kept ran
at 1.4 ns an entry on the machine of ``doc/benchmarks/bench_core.md``. :func:`compress8`
(from a row) and :func:`compact8` (in place among the candidates) do eight entries in a few
instructions through LLVM's ``llvm.experimental.vector.compress``: AVX-512's
``vcompresspd`` and ``vpcompressq`` on registers, then a plain store of eight lanes (the
form of the instruction that stores to memory ran 10 times slower on AMD Zen 4).

:data:`AVAILABLE` says whether the host has AVX-512 and llvmlite's LLVM the compress
(version 19 on; where not, the kernel keeps its loop). Numba's disk cache is keyed on the
host CPU and its features, so that a cached kernel never runs on a machine it was not
compiled for.
"""

from __future__ import annotations

import llvmlite.binding as llvm
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["AVAILABLE", "WIDTH", "WIDTH16", "compact8", "compress8", "compress16"]

#: entries per call of :func:`compress8`
WIDTH = 8


def _available() -> bool:
    """Whether LLVM has the compress (from LLVM 19) and the host CPU AVX-512."""
    try:
        return llvm.llvm_version_info >= (19,) and bool(
            llvm.get_host_cpu_features().get("avx512f", False)
        )
    except Exception:  # a platform whose features LLVM cannot read: the loop serves
        return False


#: whether the host CPU has AVX-512 and LLVM the compress (then :func:`compress8` is a few
#: instructions; else the kernel keeps its loop)
AVAILABLE = _available()

_F64 = ir.DoubleType()
_I64 = ir.IntType(64)
_I32 = ir.IntType(32)


def _splat(builder: ir.IRBuilder, value: ir.Value) -> ir.Value:
    """``value`` in every lane of a vector of :data:`WIDTH`."""
    kind = ir.VectorType(value.type, WIDTH)
    one = builder.insert_element(ir.Constant(kind, ir.Undefined), value, ir.Constant(_I32, 0))
    zeros = ir.Constant(ir.VectorType(_I32, WIDTH), [0] * WIDTH)
    return builder.shuffle_vector(one, ir.Constant(kind, ir.Undefined), zeros)


def _compress(builder: ir.IRBuilder, vector: ir.Value, mask: ir.Value) -> ir.Value:
    """The lanes of ``vector`` where ``mask`` is set, first, in order (others undefined)."""
    kind = vector.type
    name = f"llvm.experimental.vector.compress.v{WIDTH}{'f64' if kind.element == _F64 else 'i64'}"
    fnty = ir.FunctionType(kind, [kind, mask.type, kind])
    fn = cgutils.get_or_insert_function(builder.module, fnty, name)
    return builder.call(fn, [vector, mask, ir.Constant(kind, ir.Undefined)])


def _vector_at(builder: ir.IRBuilder, pointer: ir.Value, first: ir.Value) -> ir.Value:
    """The :data:`WIDTH` entries from ``pointer[first]`` on, as a vector."""
    kind = ir.VectorType(pointer.type.pointee, WIDTH)
    return builder.load(builder.bitcast(builder.gep(pointer, [first]), kind.as_pointer()), align=4)


def _store_at(builder: ir.IRBuilder, vector: ir.Value, pointer: ir.Value, k: ir.Value) -> None:
    """Store every lane of ``vector`` from ``pointer[k]`` on."""
    target = builder.bitcast(builder.gep(pointer, [k]), vector.type.as_pointer())
    builder.store(vector, target, align=8)


def _count(builder: ir.IRBuilder, mask: ir.Value) -> ir.Value:
    """The number of lanes set in ``mask``, as an int64."""
    bits = ir.IntType(WIDTH)
    fnty = ir.FunctionType(bits, [bits])
    popcount = cgutils.get_or_insert_function(builder.module, fnty, f"llvm.ctpop.i{WIDTH}")
    return builder.zext(builder.call(popcount, [builder.bitcast(mask, bits)]), _I64)


def _is_array(kind: types.Type, dtypes: tuple[types.Type, ...]) -> bool:
    return isinstance(kind, types.Array) and kind.dtype in dtypes


@intrinsic
def compress8(typingctx, x, start, m, scale, low, y, idx, k):
    """Of ``v = (x[start + j] - m) scale`` (in float64) for ``j < 8``, those above ``low``
    into ``y[k:]`` and their indices ``start + j`` into ``idx[k:]``, in order; returns
    ``k`` plus their number. Eight lanes are stored from ``k`` on: ``k <= start`` and
    ``start + 8 <= len(y)`` keep them inside the rows."""
    if not (
        _is_array(x, (types.float32, types.float64))
        and _is_array(y, (types.float64,))
        and _is_array(idx, (types.int64,))
    ):
        return None
    f64, i64 = types.float64, types.int64
    sig = i64(x, i64, f64, f64, f64, y, idx, i64)

    def codegen(context, builder, signature, args):
        xt, _, _, _, _, yt, it, _ = signature.args
        xa, first, mv, sv, lv, ya, ia, kv = args
        loaded = _vector_at(builder, context.make_array(xt)(context, builder, xa).data, first)
        if loaded.type.element != _F64:
            loaded = builder.fpext(loaded, ir.VectorType(_F64, WIDTH))
        values = builder.fmul(builder.fsub(loaded, _splat(builder, mv)), _splat(builder, sv))
        mask = builder.fcmp_ordered(">", values, _splat(builder, lv))
        lanes = ir.Constant(ir.VectorType(_I64, WIDTH), list(range(WIDTH)))
        where = builder.add(lanes, _splat(builder, first))
        y_data = context.make_array(yt)(context, builder, ya).data
        idx_data = context.make_array(it)(context, builder, ia).data
        _store_at(builder, _compress(builder, values, mask), y_data, kv)
        _store_at(builder, _compress(builder, where, mask), idx_data, kv)
        return builder.add(kv, _count(builder, mask))

    return sig, codegen


@intrinsic
def compact8(typingctx, y, idx, start, tau, k):
    """Of ``y[start + j]`` for ``j < 8``, those above ``tau`` moved to ``y[k:]`` with their
    ``idx``, in order (in place: ``k <= start``); returns ``k`` plus their number."""
    if not (_is_array(y, (types.float64,)) and _is_array(idx, (types.int64,))):
        return None
    sig = types.int64(y, idx, types.int64, types.float64, types.int64)

    def codegen(context, builder, signature, args):
        yt, it, _, _, _ = signature.args
        ya, ia, first, tv, kv = args
        y_data = context.make_array(yt)(context, builder, ya).data
        idx_data = context.make_array(it)(context, builder, ia).data
        values = _vector_at(builder, y_data, first)
        where = _vector_at(builder, idx_data, first)
        mask = builder.fcmp_ordered(">", values, _splat(builder, tv))
        _store_at(builder, _compress(builder, values, mask), y_data, kv)
        _store_at(builder, _compress(builder, where, mask), idx_data, kv)
        return builder.add(kv, _count(builder, mask))

    return sig, codegen


#: entries per call of :func:`compress16`
WIDTH16 = 16


@intrinsic
def compress16(typingctx, x, start, level, v, idx, k):
    """Of ``x[start + j]`` for ``j < 16`` (float32), those above ``level`` (float32) into
    ``v[k:]`` and their indices ``start + j`` (int32) into ``idx[k:]``, in order; returns
    ``k`` plus their number: four bytes stored an entry each, where :func:`compress8`
    stores eight (float64 values and int64 indices). Sixteen lanes are stored from ``k``
    on: ``k <= start`` and ``start + 16 <= len(v)`` keep them inside the rows."""
    if not (
        _is_array(x, (types.float32,))
        and _is_array(v, (types.float32,))
        and _is_array(idx, (types.int32,))
    ):
        return None
    i64 = types.int64
    sig = i64(x, i64, types.float32, v, idx, i64)

    def codegen(context, builder, signature, args):
        xt, _, _, vt, it, _ = signature.args
        xa, first, lv, va, ia, kv = args
        f32, i32 = ir.FloatType(), _I32
        data = context.make_array(xt)(context, builder, xa).data
        vector = ir.VectorType(f32, WIDTH16)
        loaded = builder.load(
            builder.bitcast(builder.gep(data, [first]), vector.as_pointer()), align=4
        )
        splat = builder.insert_element(ir.Constant(vector, ir.Undefined), lv, ir.Constant(i32, 0))
        zeros = ir.Constant(ir.VectorType(i32, WIDTH16), [0] * WIDTH16)
        splat = builder.shuffle_vector(splat, ir.Constant(vector, ir.Undefined), zeros)
        mask = builder.fcmp_ordered(">", loaded, splat)
        lanes = ir.Constant(ir.VectorType(i32, WIDTH16), list(range(WIDTH16)))
        first32 = builder.trunc(first, i32)
        f_one = builder.insert_element(
            ir.Constant(ir.VectorType(i32, WIDTH16), ir.Undefined), first32, ir.Constant(i32, 0)
        )
        f_all = builder.shuffle_vector(
            f_one, ir.Constant(ir.VectorType(i32, WIDTH16), ir.Undefined), zeros
        )
        where = builder.add(lanes, f_all)

        def compress(vec):
            kind = vec.type
            tag = "f32" if kind.element == f32 else "i32"
            name = f"llvm.experimental.vector.compress.v{WIDTH16}{tag}"
            fnty = ir.FunctionType(kind, [kind, mask.type, kind])
            fn = cgutils.get_or_insert_function(builder.module, fnty, name)
            return builder.call(fn, [vec, mask, ir.Constant(kind, ir.Undefined)])

        v_data = context.make_array(vt)(context, builder, va).data
        i_data = context.make_array(it)(context, builder, ia).data
        for vec, pointer in ((compress(loaded), v_data), (compress(where), i_data)):
            target = builder.bitcast(builder.gep(pointer, [kv]), vec.type.as_pointer())
            builder.store(vec, target, align=4)
        bits = ir.IntType(WIDTH16)
        fnty = ir.FunctionType(bits, [bits])
        popcount = cgutils.get_or_insert_function(builder.module, fnty, f"llvm.ctpop.i{WIDTH16}")
        count = builder.zext(builder.call(popcount, [builder.bitcast(mask, bits)]), _I64)
        return builder.add(kv, count)

    return sig, codegen

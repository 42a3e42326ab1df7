# SPDX-License-Identifier: Apache-2.0
"""kernelkit's functions on CUDA arrays (torch, CuPy, JAX, any producer of
__cuda_array_interface__ and __dlpack_device__). Each function checks its arguments, allocates its output (and workspace) with the
caller's framework unless ``out=`` is given, launches on the caller's current stream (or
``stream=``) and returns an array of the caller's type. Nothing is copied: a non-contiguous
input is a ValueError. Errors: TypeError for a CPU array or an unsupported dtype, ValueError
for shapes, devices and overlap, RuntimeError for a CUDA error (cudaGetErrorString's text).

The checks here (with those of _arrays) are the package's only argument checks: kernelkit._C
takes device addresses and sizes, checks nothing, and turns kernelkit's own answer
(cudaErrorInvalidValue, a CUDA error) into ValueError / RuntimeError.

__all__ is the package's list of functions: kernelkit exports it, torch.ops.kernelkit
registers it (_torch_ops), the tests check every name of it.
"""

from . import _C
from ._arrays import (FLOAT_DTYPES, ITEMSIZE, current_stream, describe, dtype_name, empty, numel,
                      require_dtype, require_float, require_ndim, require_no_overlap,
                      require_same_device, require_shape, stream_handle, workspace)

__all__ = [
    "softmax", "log_softmax", "row_sum", "row_max", "row_min", "sum", "max", "min", "transpose",
    "gemv", "sgemm", "matmul", "add", "mul", "relu", "gelu", "sigmoid", "cast",
]


# ---- the launch ------------------------------------------------------------------------

def _stream(a, stream, op):
    return current_stream(a) if stream is None else stream_handle(stream, op)


def _out(out, a, op):
    """Describes a caller's out=; JAX arrays are immutable, so they cannot be one."""
    o = describe(out, op, "out")
    if o.fw == "jax":
        raise TypeError(f"kernelkit.{op}: JAX arrays are immutable: out= is not supported for them")
    return o


def _launch(op, arrs, s, fn, *args):
    """fn(*args, device, s) after the device check, on the arrays' device; JAX arrays are made
    ready first and the stream synchronized after (JAX orders its own work on its own
    streams). arrs: every array the call touches (a workspace that is None is left out)."""
    arrs = [a for a in arrs if a is not None]
    require_same_device(arrs, op)
    device = arrs[0].device
    jax = [a.obj for a in arrs if a.fw == "jax"]
    for j in jax:
        j.block_until_ready()
    fn(*args, device, s)
    if jax:
        _C.synchronize(device, s)


def _ws(ws):
    """(address, bytes) of a workspace; (0, 0) for none."""
    return (0, 0) if ws is None else (ws.ptr, ws.nbytes)


def _rows_cols(shape):
    """shape as rows x cols: cols = the last dimension (1 for a 0-d array), rows = the
    product of the others (so that cols == 0 keeps its rows)."""
    return numel(shape[:-1]), (shape[-1] if len(shape) else 1)


def _output(op, out, like, shape, dtype, inputs, in_place=False):
    """The call's output: a new array of shape and dtype on like's device, or the caller's
    out= checked for dtype, shape and overlap with each (array, name) of inputs (in_place:
    out may be exactly one of them)."""
    if out is None:
        return empty(like, shape, dtype, op)
    o = _out(out, like, op)
    require_dtype(o, dtype, op, "out")
    require_shape(o, shape, op, "out")
    for a, name in inputs:
        require_no_overlap(o, a, op, "out", name, allow_exact=in_place)
    return o


# ---- softmax ---------------------------------------------------------------------------

def _softmax(op, log, x, out, stream):
    a = describe(x, op, "x")
    require_float(a, op, "x")
    s = _stream(a, stream, op)
    o = _output(op, out, a, a.shape, a.dtype, [(a, "x")], in_place=True)
    _launch(op, (a, o), s, _C.softmax, a.dtype, log, a.ptr, o.ptr, *_rows_cols(a.shape))
    return o.obj


def softmax(x, *, out=None, stream=None):
    """Softmax over the last dimension of x (any rank; float32, float16, bfloat16; computed in
    float). out= may be x itself (in place)."""
    return _softmax("softmax", False, x, out, stream)


def log_softmax(x, *, out=None, stream=None):
    """Log-softmax over the last dimension of x; as softmax."""
    return _softmax("log_softmax", True, x, out, stream)


# ---- reductions ------------------------------------------------------------------------

def _row_reduce(op, which, x, out, stream):
    a = describe(x, op, "x")
    require_float(a, op, "x")
    s = _stream(a, stream, op)
    o = _output(op, out, a, a.shape[:-1], "float32", [(a, "x")])
    rows, cols = _rows_cols(a.shape)
    ws = workspace(a, _C.row_reduce_workspace_bytes(a.dtype, rows, cols), op)
    _launch(op, (a, o, ws), s, _C.row_reduce, a.dtype, which, a.ptr, rows, cols, o.ptr, *_ws(ws))
    return o.obj


def row_sum(x, *, out=None, stream=None):
    """Sum over the last dimension of x (float32, float16, bfloat16), accumulated in and
    returned as float32, shape x.shape[:-1]."""
    return _row_reduce("row_sum", _C.REDUCE_SUM, x, out, stream)


def row_max(x, *, out=None, stream=None):
    """Max over the last dimension of x, as float32 (NaN if the row holds one; -inf for an
    empty row)."""
    return _row_reduce("row_max", _C.REDUCE_MAX, x, out, stream)


def row_min(x, *, out=None, stream=None):
    """Min over the last dimension of x, as float32 (NaN if the row holds one; +inf for an
    empty row)."""
    return _row_reduce("row_min", _C.REDUCE_MIN, x, out, stream)


def _reduce(op, which, x, out, stream):
    a = describe(x, op, "x")
    require_float(a, op, "x")
    s = _stream(a, stream, op)
    if out is None:
        o = empty(a, (), "float32", op)
    else:
        o = _out(out, a, op)
        require_dtype(o, "float32", op, "out")
        if o.nbytes != 4:
            raise ValueError(f"kernelkit.{op}: out has shape {tuple(o.shape)}, expected one element")
        require_no_overlap(o, a, op, "out", "x")
    n = numel(a.shape)
    ws = workspace(a, _C.reduce_workspace_bytes(a.dtype, n), op)
    _launch(op, (a, o, ws), s, _C.reduce, a.dtype, which, a.ptr, n, o.ptr, *_ws(ws))
    return o.obj


def sum(x, *, out=None, stream=None):  # noqa: A001 (kernelkit.sum, like numpy.sum)
    """Sum of all elements of x (float32, float16, bfloat16), accumulated in float32,
    returned as a 0-d float32 array. Deterministic (same input, same bits)."""
    return _reduce("sum", _C.REDUCE_SUM, x, out, stream)


def max(x, *, out=None, stream=None):  # noqa: A001
    """Max of all elements of x as a 0-d float32 array (NaN wins; -inf when x is empty)."""
    return _reduce("max", _C.REDUCE_MAX, x, out, stream)


def min(x, *, out=None, stream=None):  # noqa: A001
    """Min of all elements of x as a 0-d float32 array (NaN wins; +inf when x is empty)."""
    return _reduce("min", _C.REDUCE_MIN, x, out, stream)


# ---- transpose, BLAS -------------------------------------------------------------------

def transpose(x, *, out=None, stream=None):
    """out (cols x rows) = x (rows x cols) transposed, materialized (not a view). Any dtype of
    1, 2, 4 or 8 bytes; bits are copied unchanged."""
    op = "transpose"
    a = describe(x, op, "x")
    require_ndim(a, 2, op, "x")
    if a.dtype not in ITEMSIZE:
        raise TypeError(f"kernelkit.{op}: x has unsupported dtype {a.dtype}")
    s = _stream(a, stream, op)
    rows, cols = a.shape
    o = _output(op, out, a, (cols, rows), a.dtype, [(a, "x")])
    _launch(op, (a, o), s, _C.transpose, ITEMSIZE[a.dtype], a.ptr, o.ptr, rows, cols)
    return o.obj


def _scalars(op, alpha, beta):
    try:
        return float(alpha), float(beta)
    except (TypeError, ValueError):
        raise TypeError(f"kernelkit.{op}: alpha and beta must be real numbers, got "
                        f"{alpha!r} and {beta!r}") from None


def gemv(A, x, *, trans=False, alpha=1.0, beta=0.0, out=None, stream=None):
    """y = alpha * op(A) @ x + beta * y, float32. A is m x n (row-major, contiguous); op(A) is
    A, or A.T with trans=True. y is out= (read when beta != 0, so beta != 0 needs out=)."""
    op = "gemv"
    a = describe(A, op, "A")
    v = describe(x, op, "x")
    require_dtype(a, "float32", op, "A")
    require_dtype(v, "float32", op, "x")
    require_ndim(a, 2, op, "A")
    m, n = a.shape
    trans = bool(trans)
    x_len, y_len = (m, n) if trans else (n, m)
    require_shape(v, (x_len,), op, "x")
    alpha, beta = _scalars(op, alpha, beta)
    s = _stream(a, stream, op)
    if out is None and beta != 0.0:
        raise ValueError(f"kernelkit.{op}: beta={beta} reads y: pass it as out=")
    o = _output(op, out, a, (y_len,), "float32", [(a, "A"), (v, "x")])
    ws = workspace(a, _C.gemv_workspace_bytes(trans, m, n), op)
    _launch(op, (a, v, o, ws), s, _C.gemv, trans, m, n, alpha, a.ptr, n or 1, v.ptr,
            beta, o.ptr, *_ws(ws))
    return o.obj


def sgemm(A, B, *, trans_a=False, trans_b=False, alpha=1.0, beta=0.0, out=None, stream=None):
    """C = alpha * op(A) @ op(B) + beta * C, float32, row-major contiguous. op(A) is m x k
    (A, or A.T with trans_a=True), op(B) is k x n. C is out= (read when beta != 0)."""
    op = "sgemm"
    a = describe(A, op, "A")
    b = describe(B, op, "B")
    require_dtype(a, "float32", op, "A")
    require_dtype(b, "float32", op, "B")
    require_ndim(a, 2, op, "A")
    require_ndim(b, 2, op, "B")
    trans_a, trans_b = bool(trans_a), bool(trans_b)
    m, k = (a.shape[1], a.shape[0]) if trans_a else a.shape
    kb, n = (b.shape[1], b.shape[0]) if trans_b else b.shape
    if kb != k:
        raise ValueError(f"kernelkit.{op}: inner dimensions differ: op(A) is {m} x {k}, "
                         f"op(B) is {kb} x {n} (A {tuple(a.shape)}, B {tuple(b.shape)})")
    alpha, beta = _scalars(op, alpha, beta)
    s = _stream(a, stream, op)
    if out is None and beta != 0.0:
        raise ValueError(f"kernelkit.{op}: beta={beta} reads C: pass it as out=")
    o = _output(op, out, a, (m, n), "float32", [(a, "A"), (b, "B")])
    ws = workspace(a, _C.sgemm_workspace_bytes(trans_a, trans_b, m, n, k), op)
    # row-major and contiguous: each leading dimension is the row length (1 for an empty row)
    _launch(op, (a, b, o, ws), s, _C.sgemm, trans_a, trans_b, m, n, k, alpha, a.ptr,
            a.shape[1] or 1, b.ptr, b.shape[1] or 1, beta, o.ptr, n or 1, *_ws(ws))
    return o.obj


def matmul(a, b, *, out=None, stream=None):
    """a @ b for 2-D float32 arrays (sgemm)."""
    return sgemm(a, b, out=out, stream=stream)


# ---- elementwise -----------------------------------------------------------------------

def _unary(op, which, x, out, stream):
    a = describe(x, op, "x")
    require_float(a, op, "x")
    s = _stream(a, stream, op)
    o = _output(op, out, a, a.shape, a.dtype, [(a, "x")], in_place=True)
    _launch(op, (a, o), s, _C.unary, which, a.dtype, numel(a.shape), o.ptr, a.ptr)
    return o.obj


def relu(x, *, out=None, stream=None):
    """max(x, 0) elementwise (NaN stays NaN); float32, float16, bfloat16; out= may be x."""
    return _unary("relu", _C.UNARY_RELU, x, out, stream)


def gelu(x, *, approximate="none", out=None, stream=None):
    """gelu elementwise: x * Phi(x) (approximate="none", PyTorch's default) or the tanh form
    (approximate="tanh"); float32, float16, bfloat16; out= may be x."""
    if approximate not in ("none", "tanh"):
        raise ValueError(f"kernelkit.gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    which = _C.UNARY_GELU if approximate == "none" else _C.UNARY_GELU_TANH
    return _unary("gelu", which, x, out, stream)


def sigmoid(x, *, out=None, stream=None):
    """1 / (1 + exp(-x)) elementwise; float32, float16, bfloat16; out= may be x."""
    return _unary("sigmoid", _C.UNARY_SIGMOID, x, out, stream)


def _binary(op, which, x, y, out, stream):
    a = describe(x, op, "a")
    b = describe(y, op, "b")
    require_float(a, op, "a")
    require_dtype(b, a.dtype, op, "b")
    if tuple(b.shape) != tuple(a.shape):
        raise ValueError(f"kernelkit.{op}: shapes differ: a {tuple(a.shape)}, b {tuple(b.shape)} "
                         "(no broadcasting)")
    s = _stream(a, stream, op)
    o = _output(op, out, a, a.shape, a.dtype, [(a, "a"), (b, "b")], in_place=True)
    _launch(op, (a, b, o), s, _C.binary, which, a.dtype, numel(a.shape), o.ptr, a.ptr, b.ptr)
    return o.obj


def add(a, b, *, out=None, stream=None):
    """a + b elementwise (same shape and dtype: float32, float16, bfloat16); out= may be a or b."""
    return _binary("add", _C.BINARY_ADD, a, b, out, stream)


def mul(a, b, *, out=None, stream=None):
    """a * b elementwise (same shape and dtype: float32, float16, bfloat16); out= may be a or b."""
    return _binary("mul", _C.BINARY_MUL, a, b, out, stream)


def cast(x, dtype, *, out=None, stream=None):
    """x converted to dtype (float32, float16, bfloat16 in both directions; round to nearest
    even, overflow to +-inf). dtype: a name ("bfloat16"), torch / numpy / JAX dtype."""
    op = "cast"
    a = describe(x, op, "x")
    require_float(a, op, "x")
    to = dtype_name(dtype, op)
    if to not in FLOAT_DTYPES:
        raise TypeError(f"kernelkit.{op}: unsupported target dtype {to} (float32, float16, bfloat16)")
    s = _stream(a, stream, op)
    same_size = (to == "float32") == (a.dtype == "float32")
    o = _output(op, out, a, a.shape, to, [(a, "x")], in_place=same_size)
    _launch(op, (a, o), s, _C.cast, a.dtype, to, numel(a.shape), o.ptr, a.ptr)
    return o.obj


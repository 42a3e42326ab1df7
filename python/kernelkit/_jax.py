# SPDX-License-Identifier: Apache-2.0
"""kernelkit's functions on JAX arrays through XLA's FFI: each op is a ``jax.ffi.ffi_call`` of a
handler of kernelkit._ffi (python/src/ffi_module.cc), so it runs under ``jax.jit`` on XLA's own
stream, in XLA's buffers, with no synchronization; outside jit every call is a cached
``jax.jit`` of the same function (asynchronous, as any JAX op).

_ops._route sends here every call whose first array is a JAX array or a jit tracer, and calls
what ``route`` returns as it calls a torch custom op (torch.ops.kernelkit.<op>'s arguments;
the norms return their result in the custom op's tuple, with None for the saved statistics).

Arguments are checked once, by _ops's own functions run with ``fake=True`` at trace time:
_arrays.describe describes a JAX array or tracer by its shape and dtype (device -1), and the
outputs _ops would allocate come back as jax.ShapeDtypeStruct, the result types of the FFI
call. So JAX raises exactly the TypeError / ValueError / IndexError that torch and CuPy
calls raise, before anything is traced into XLA.

Autodiff: each op is a jax.custom_vjp with kernelkit's forward, jitted once per static
arguments (_differentiable). softmax / log_softmax and the norms differentiate with
kernelkit's fused backward kernels (softmax_backward from the saved output; the norms'
backward from the statistics their forward target always writes; cross_entropy_backward from
the per-row lse its forward target always writes); the other ops with the vjp of a jnp
reference of the op, in float32.

Layouts: JAX arrays are row-major and contiguous; a handler sees the rank it reads (the
reshapes here cost XLA nothing). softmax over another axis than the last reads x in place as
(outer, n, inner) (softmax_inner, and softmax_inner_backward for its gradient); reductions
over axes that are not consecutive move the axes last with jnp (XLA fuses that copy with its
neighbours).

Without kernelkit._ffi (the package was built without jax importable, as in CI): concrete
JAX arrays go the old way (kernelkit._C, with the arrays made ready first and the stream
synchronized after); a tracer is a TypeError saying how to build the FFI module.
"""

import functools
import sys

from . import _ops
from ._arrays import describe, numel, permutation

_state = {}  # "ffi": kernelkit._ffi once its targets are registered with JAX, or None


def _ffi():
    if "ffi" not in _state:
        try:
            from . import _ffi as mod
        except ImportError:
            mod = None
        if mod is not None:
            jax = sys.modules["jax"]
            for name, capsule in mod.targets.items():
                jax.ffi.register_ffi_target(name, capsule, platform="CUDA")
        _state["ffi"] = mod
    return _state["ffi"]


def route(op, x, out, stream):
    """The callable _ops._route hands a JAX call to (the custom op's calling convention), or
    None: x is a concrete array and kernelkit._ffi was not built (the synchronizing path)."""
    if out is not None:
        raise TypeError(f"kernelkit.{op}: JAX arrays are immutable: out= is not supported for them")
    if stream is not None:
        raise TypeError(f"kernelkit.{op}: stream= is not supported for JAX arrays: kernelkit runs "
                        "on XLA's stream (under jax.jit or not)")
    jax = sys.modules["jax"]
    traced = isinstance(x, jax.core.Tracer)
    if not traced:  # a concrete array: one GPU (describe's TypeError for a CPU array)
        describe(x, op, "x", fake=True)
    if _ffi() is None:
        if traced:
            raise TypeError(f"kernelkit.{op}: kernelkit was built without its XLA FFI module "
                            "(kernelkit._ffi), so it cannot run under jax.jit: rebuild it with jax "
                            "importable (pip install --no-build-isolation .)")
        return None
    return _ROUTES[op]


# ---- the FFI call --------------------------------------------------------------------------

def _np():
    return sys.modules["jax"].numpy  # (jax.numpy: imported with jax)


def _sds(shape, dtype):
    return sys.modules["jax"].ShapeDtypeStruct(tuple(shape), dtype)


def _call(target, result, *args, vmap="sequential", **attrs):
    """jax.ffi.ffi_call of kernelkit_<target>; ints and bools become int64 attributes, floats
    float32 ones (what the handlers decode). vmap: "broadcast_all" where the handler reads
    any leading dimensions as more rows (a batch is more rows), else "sequential"."""
    import numpy as np

    jax = sys.modules["jax"]
    enc = {k: (np.float32(v) if isinstance(v, float) else np.int64(v)) for k, v in attrs.items()}
    return jax.ffi.ffi_call("kernelkit_" + target, result, vmap_method=vmap)(*args, **enc)


def _lazy(make):
    """The jitted function `make` builds, built at its first call (jax is imported by then)."""
    cell = []

    @functools.wraps(make)
    def call(*args, **kwargs):
        if not cell:
            cell.append(sys.modules["jax"].jit(make, static_argnames=_STATIC[make.__name__]))
        return cell[0](*args, **kwargs)

    return call


_STATIC = {
    "_softmax": ("op", "log", "dim", "dtype"),
    "_reduce": ("op", "dim", "keepdim", "dtype"),
    "_transpose": (),
    "_gemv": ("trans", "alpha"),
    "_sgemm": ("op", "trans_a", "trans_b", "alpha"),
    "_unary": ("op", "approximate"),
    "_binary": ("op",),
    "_cast": ("dtype",),
    "_cross_entropy": ("ignore_index", "reduction", "label_smoothing"),
    "_cross_entropy_bwd": ("ignore_index", "reduction", "label_smoothing"),
    "_softmax_bwd": ("op", "log", "dim"),
    "_rms_norm_save": ("normalized_shape", "eps"),
    "_layer_norm_save": ("normalized_shape", "eps"),
    "_add_rms_norm_save": ("eps",),
    "_rms_norm_bwd": ("normalized_shape",),
    "_layer_norm_bwd": ("normalized_shape",),
    "_add_rms_norm_bwd": (),
}


def _cast_to(x, dtype):
    return _call("cast", _sds(x.shape, dtype), x, vmap="broadcast_all")


def _tuple(v):
    """A list argument (the custom ops' int[]) as a hashable static argument."""
    return tuple(v) if isinstance(v, list) else v


# ---- the ops -------------------------------------------------------------------------------

def _inner_shape(shape, d):
    """(outer, n, inner) of the axis d of shape: the prod of the axes before, shape[d], the
    prod of the axes after."""
    return numel(shape[:d]), shape[d], numel(shape[d + 1:])


@_lazy
def _softmax(x, *, op, log, dim, dtype):
    spec = _ops._softmax(op, log, x, dim, dtype, None, None, fake=True)
    if spec.dtype != x.dtype:  # dtype=: x converted first, as the eager path does
        x = _cast_to(x, spec.dtype)
    dims = _ops._dims(dim, x.ndim, op)
    if len(dims) == 1 and dims[0] != x.ndim - 1:  # another axis: softmax_inner, in place
        shape3 = _inner_shape(x.shape, dims[0])
        y = _call("softmax_inner", _sds(shape3, spec.dtype), x.reshape(shape3), log=log)
        return y.reshape(spec.shape)
    return _call("softmax", spec, x, vmap="broadcast_all", log=log)


@_lazy
def _softmax_bwd(y, g, *, op, log, dim):
    """dx of softmax (log_softmax when log) from its output y and y's cotangent g, along dim
    (kernelkit's fused softmax_backward / log_softmax_backward, softmax_inner_backward /
    log_softmax_inner_backward for another axis than the last), in y's dtype."""
    spec = _ops._softmax_backward(log, y, g, dim, fake=True)
    dims = _ops._dims(dim, y.ndim, op)
    if len(dims) == 1 and dims[0] != y.ndim - 1:  # another axis: softmax_inner_backward
        shape3 = _inner_shape(y.shape, dims[0])
        dx = _call("softmax_inner_backward", _sds(shape3, spec.dtype), y.reshape(shape3),
                   g.reshape(shape3), log=log)
        return dx.reshape(spec.shape)
    return _call("softmax_backward", spec, y, g, vmap="broadcast_all", log=log)


@_lazy
def _reduce(x, *, op, dim, keepdim, dtype):
    which = _ops._REDUCE[op.replace("row_", "")]
    spec = _ops._reduce(op, which, x, dim, keepdim, dtype, None, None, fake=True)
    f32 = _np().float32
    nd = x.ndim
    dims = None if dim is None else _ops._dims(dim, nd, op)
    if dims == () and nd > 0:
        dims = None
    if dims is None:  # every element: the device-wide reduction
        acc = _call("reduce", _sds((), f32), x.reshape(-1), op=which)
    else:
        k = len(dims)
        shape = x.shape
        if dims != tuple(range(nd - k, nd)) and dims == tuple(range(dims[0], dims[-1] + 1)):
            # consecutive axes before the last: col_reduce over (outer, n, inner)
            outer, inner = numel(shape[:dims[0]]), numel(shape[dims[-1] + 1:])
            n = numel(shape[dims[0]:dims[-1] + 1])
            acc = _call("col_reduce", _sds((outer, inner), f32), x.reshape(outer, n, inner),
                        op=which)
        else:
            if dims != tuple(range(nd - k, nd)):  # axes not consecutive: moved last (XLA copies)
                x = _np().transpose(x, permutation(nd, dims))
            outer, n = numel(x.shape[:nd - k]), numel(x.shape[nd - k:])
            acc = _call("row_reduce", _sds((outer,), f32), x.reshape(outer, n),
                        vmap="broadcast_all", op=which)
    acc = acc.reshape(spec.shape)
    return acc if spec.dtype == f32 else _cast_to(acc, spec.dtype)


@_lazy
def _transpose(x):
    spec = _ops._transpose(x, None, None, fake=True)
    return _call("transpose", spec, x)


@_lazy
def _gemv(A, x, *, trans, alpha):
    spec = _ops._gemv(A, x, trans, alpha, 0.0, None, None, fake=True)
    return _call("gemv", spec, A, x, trans=trans, alpha=float(alpha))


@_lazy
def _sgemm(A, B, *, op, trans_a, trans_b, alpha):
    spec = _ops._sgemm(A, B, trans_a, trans_b, alpha, 0.0, None, None, fake=True, op=op)
    return _call("sgemm", spec, A, B, trans_a=trans_a, trans_b=trans_b, alpha=float(alpha))


_UNARY = {"relu": "UNARY_RELU", "sigmoid": "UNARY_SIGMOID"}


@_lazy
def _unary(x, *, op, approximate):
    if op == "gelu":
        which = _ops._gelu_which(approximate)
    else:
        which = getattr(_ops._C, _UNARY[op])
    spec = _ops._unary(op, which, x, None, None, fake=True)
    return _call("unary", spec, x, vmap="broadcast_all", op=which)


_BINARY = {"add": "BINARY_ADD", "mul": "BINARY_MUL"}


@_lazy
def _binary(a, b, *, op):
    which = getattr(_ops._C, _BINARY[op])
    spec = _ops._binary(op, which, a, b, None, None, fake=True)
    return _call("binary", spec, a, b, vmap="broadcast_all", op=which)


@_lazy
def _cast(x, *, dtype):
    spec = _ops._cast(x, dtype, None, None, fake=True)
    return _call("cast", spec, x, vmap="broadcast_all")


def _norm_args(x, params, rows, cols):
    """x as rows x cols (the handler normalizes its last dimension) and the present
    parameters, flattened (their shape is the normalized dims, already checked)."""
    return [x.reshape(rows, cols)] + [p.reshape(cols) for p in params if p is not None]


# The norms' forward: y (and add_rms_norm's sum) with the statistics the backward reads (rows
# float32: rstd, layer_norm's mean too), one target per norm that always writes them; the
# plain functions (_rms_norm, ...) discard them, a custom_vjp's forward saves them.

@_lazy
def _rms_norm_save(x, weight, *, normalized_shape, eps):
    op = "rms_norm"
    spec, r = _ops._rms_norm(x, normalized_shape, weight, eps, None, None, fake=True, save=True)
    _, _, _, _, rows, cols, e = _ops._norm_inputs(op, x, normalized_shape, weight, None, eps, True)
    y, rstd = _call("rms_norm", (_sds((rows, cols), spec.dtype), r),
                    *_norm_args(x, (weight,), rows, cols), has_weight=weight is not None,
                    eps=float(e))
    return y.reshape(spec.shape), rstd


@_lazy
def _layer_norm_save(x, weight, bias, *, normalized_shape, eps):
    op = "layer_norm"
    spec, m, r = _ops._layer_norm(x, normalized_shape, weight, bias, eps, None, None, fake=True,
                                  save=True)
    _, _, _, _, rows, cols, e = _ops._norm_inputs(op, x, normalized_shape, weight, bias, eps, True)
    y, mean, rstd = _call("layer_norm", (_sds((rows, cols), spec.dtype), m, r),
                          *_norm_args(x, (weight, bias), rows, cols),
                          has_weight=weight is not None, has_bias=bias is not None, eps=float(e))
    return y.reshape(spec.shape), mean, rstd


@_lazy
def _add_rms_norm_save(x, residual, weight, *, eps):
    op = "add_rms_norm"
    y_spec, s_spec, r = _ops._add_rms_norm(x, residual, weight, eps, None, None, fake=True,
                                           save=True)
    _, _, _, _, rows, cols, e = _ops._norm_inputs(op, x, None, weight, None, eps, True)
    args = _norm_args(x, (weight,), rows, cols)
    args.insert(1, residual.reshape(rows, cols))
    flat = _sds((rows, cols), y_spec.dtype)
    y, s, rstd = _call("add_rms_norm", (flat, flat, r), *args, has_weight=weight is not None,
                       eps=float(e))
    return y.reshape(y_spec.shape), s.reshape(s_spec.shape), rstd


def _rms_norm(x, weight, *, normalized_shape, eps):
    return _rms_norm_save(x, weight, normalized_shape=normalized_shape, eps=eps)[0]


def _layer_norm(x, weight, bias, *, normalized_shape, eps):
    return _layer_norm_save(x, weight, bias, normalized_shape=normalized_shape, eps=eps)[0]


def _add_rms_norm(x, residual, weight, *, eps):
    y, s, _ = _add_rms_norm_save(x, residual, weight, eps=eps)
    return y, s


def _grad_spec(p, cols, like):
    """The result type of a parameter's gradient: p's dtype over cols, or an empty result
    when there is no parameter (XLA's FFI has no optional result)."""
    return _sds((cols,), p.dtype) if p is not None else _sds((0,), like.dtype)


@_lazy
def _rms_norm_bwd(x, weight, rstd, g, *, normalized_shape):
    op = "rms_norm_backward"
    _, _, _, _, rows, cols, _ = _ops._norm_inputs(op, x, normalized_shape, weight, None, None, True)
    dx_spec, _ = _ops._rms_norm_backward(g, x, weight, rstd, cols, False, fake=True)
    args = [x.reshape(rows, cols), g.reshape(rows, cols), rstd]
    args += [weight.reshape(cols)] if weight is not None else []
    dx, dw = _call("rms_norm_backward", (_sds((rows, cols), dx_spec.dtype),
                                         _grad_spec(weight, cols, x)), *args,
                   has_weight=weight is not None, has_dweight=weight is not None)
    return dx.reshape(x.shape), None if weight is None else dw.reshape(weight.shape)


@_lazy
def _layer_norm_bwd(x, weight, bias, mean, rstd, g, *, normalized_shape):
    op = "layer_norm_backward"
    _, _, _, _, rows, cols, _ = _ops._norm_inputs(op, x, normalized_shape, weight, bias, 1e-5, True)
    dx_spec, _, _ = _ops._layer_norm_backward(g, x, weight, bias, mean, rstd, cols, False, False,
                                              fake=True)
    args = [x.reshape(rows, cols), g.reshape(rows, cols), mean, rstd]
    args += [weight.reshape(cols)] if weight is not None else []
    dx, dw, db = _call("layer_norm_backward", (_sds((rows, cols), dx_spec.dtype),
                                               _grad_spec(weight, cols, x),
                                               _grad_spec(bias, cols, x)), *args,
                       has_weight=weight is not None, has_dweight=weight is not None,
                       has_dbias=bias is not None)
    return (dx.reshape(x.shape), None if weight is None else dw.reshape(weight.shape),
            None if bias is None else db.reshape(bias.shape))


@_lazy
def _add_rms_norm_bwd(s, weight, rstd, gy, gs):
    op = "add_rms_norm_backward"
    _, _, _, _, rows, cols, _ = _ops._norm_inputs(op, s, None, weight, None, None, True)
    dx_spec, _ = _ops._add_rms_norm_backward(gy, s, gs, weight, rstd, cols, False, fake=True)
    args = [s.reshape(rows, cols), gy.reshape(rows, cols), rstd, gs.reshape(rows, cols)]
    args += [weight.reshape(cols)] if weight is not None else []
    dx, dw = _call("add_rms_norm_backward", (_sds((rows, cols), dx_spec.dtype),
                                             _grad_spec(weight, cols, s)), *args, has_dsum=True,
                   has_weight=weight is not None, has_dweight=weight is not None)
    return dx.reshape(s.shape), None if weight is None else dw.reshape(weight.shape)


# ---- cross-entropy ---------------------------------------------------------------------------
# One target writes the loss and the per-row lse (N float32) always: the plain call discards
# the lse, the custom_vjp's forward saves it for kernelkit's cross_entropy_backward.

@_lazy
def _cross_entropy(x, target, *, ignore_index, reduction, label_smoothing):
    spec, lse = _ops._cross_entropy(x, target, ignore_index, reduction, label_smoothing, None,
                                    None, fake=True, save=True)
    code = _ops._LOSS_REDUCTION[reduction]
    return _call("cross_entropy", (spec, lse), x, target, ignore_index=ignore_index,
                 reduction=code, label_smoothing=float(label_smoothing))


@_lazy
def _cross_entropy_bwd(x, target, lse, g, *, ignore_index, reduction, label_smoothing):
    spec = _ops._cross_entropy_backward(x, target, lse, g, ignore_index, reduction,
                                        label_smoothing, fake=True)
    code = _ops._LOSS_REDUCTION[reduction]
    return _call("cross_entropy_backward", spec, x, target, lse, g.astype(_np().float32),
                 ignore_index=ignore_index, reduction=code,
                 label_smoothing=float(label_smoothing))


def _cross_entropy_loss(x, target, **kw):
    return _cross_entropy(x, target, **kw)[0]


def _vjp_cross_entropy(kw):
    """The lse is saved; the target (integers) has no cotangent (None: a symbolic zero)."""
    def fwd(x, target):
        loss, lse = _cross_entropy(x, target, **kw)
        return loss, (x, target, lse)

    def bwd(res, g):
        x, target, lse = res
        return _cross_entropy_bwd(x, target, lse, g, **kw), None

    return fwd, bwd


# ---- autodiff ------------------------------------------------------------------------------
# Each op is a jax.custom_vjp whose forward is kernelkit's FFI call. softmax / log_softmax and
# the norms: _VJP's forward and backward passes, kernelkit's fused backward kernels. The other
# ops: the vjp of a jnp reference of the same op (computed in float32, the result in the op's
# dtype), evaluated at the saved inputs.

def _f32(x):
    return x.astype(_np().float32)


def _out_dtype(dtype, like, op):
    from ._arrays import dtype_name

    return like.dtype if dtype is None else getattr(_np(), dtype_name(dtype, op))


def _ref_reduce(x, *, op, dim, keepdim, dtype):
    fn = getattr(_np(), op.replace("row_", ""))
    axis = None if dim is None or (dim == () and x.ndim) else dim
    y = fn(_f32(x), axis=axis, keepdims=keepdim)
    return y if dtype is None else y.astype(_out_dtype(dtype, x, op))


def _dot(a, b):
    jax = sys.modules["jax"]
    return _np().matmul(a, b, precision=jax.lax.Precision.HIGHEST)


def _ref_gemv(A, x, *, trans, alpha):
    return alpha * _dot(A.T if trans else A, x)


def _ref_sgemm(A, B, *, op, trans_a, trans_b, alpha):
    return alpha * _dot(A.T if trans_a else A, B.T if trans_b else B)


def _ref_unary(x, *, op, approximate):
    nn = sys.modules["jax"].nn
    f = {"relu": nn.relu, "sigmoid": nn.sigmoid,
         "gelu": lambda v: nn.gelu(v, approximate=approximate == "tanh")}[op]
    return f(_f32(x)).astype(x.dtype)


def _ref_binary(a, b, *, op):
    return (_f32(a) + _f32(b) if op == "add" else _f32(a) * _f32(b)).astype(a.dtype)


def _ref_cast(x, *, dtype):
    return x.astype(_out_dtype(dtype, x, "cast"))


def _vjp_softmax(kw):
    """softmax / log_softmax: the output is saved (and x's dtype, as an empty array); dx is
    kernelkit's softmax_backward of it, converted to x's dtype when dtype= differed."""
    def fwd(x):
        y = _softmax(x, **kw)
        return y, (y, _np().zeros((0,), x.dtype))

    def bwd(res, g):
        y, proto = res
        dx = _softmax_bwd(y, g, op=kw["op"], log=kw["log"], dim=kw["dim"])
        return (dx if dx.dtype == proto.dtype else _cast_to(dx, proto.dtype),)

    return fwd, bwd


def _vjp_rms_norm(kw):
    def fwd(x, weight):
        y, rstd = _rms_norm_save(x, weight, **kw)
        return y, (x, weight, rstd)

    def bwd(res, g):
        x, weight, rstd = res
        return _rms_norm_bwd(x, weight, rstd, g, normalized_shape=kw["normalized_shape"])

    return fwd, bwd


def _vjp_layer_norm(kw):
    def fwd(x, weight, bias):
        y, mean, rstd = _layer_norm_save(x, weight, bias, **kw)
        return y, (x, weight, bias, mean, rstd)

    def bwd(res, g):
        return _layer_norm_bwd(*res, g, normalized_shape=kw["normalized_shape"])

    return fwd, bwd


def _vjp_add_rms_norm(kw):
    """dx is the cotangent of x and of residual both (the rms_norm gradient of the sum plus
    the sum's own cotangent, in one kernel)."""
    def fwd(x, residual, weight):
        y, s, rstd = _add_rms_norm_save(x, residual, weight, **kw)
        return (y, s), (s, weight, rstd)

    def bwd(res, g):
        s, weight, rstd = res
        gy, gs = g
        dx, dw = _add_rms_norm_bwd(s, weight, rstd, gy, gs)
        return dx, dx, dw

    return fwd, bwd


_IMPL = {"softmax": (_softmax, _vjp_softmax), "reduce": (_reduce, _ref_reduce),
         "transpose": (_transpose, lambda x: x.T), "gemv": (_gemv, _ref_gemv),
         "sgemm": (_sgemm, _ref_sgemm), "unary": (_unary, _ref_unary),
         "binary": (_binary, _ref_binary), "cast": (_cast, _ref_cast),
         "rms_norm": (_rms_norm, _vjp_rms_norm), "layer_norm": (_layer_norm, _vjp_layer_norm),
         "add_rms_norm": (_add_rms_norm, _vjp_add_rms_norm),
         "cross_entropy": (_cross_entropy_loss, _vjp_cross_entropy)}
_KERNEL_VJP = (_vjp_softmax, _vjp_rms_norm, _vjp_layer_norm, _vjp_add_rms_norm,
               _vjp_cross_entropy)


@functools.lru_cache(maxsize=None)
def _differentiable(name, static):
    """jax.jit of the op `name` with these static arguments (a sorted tuple of (name, value)),
    as a jax.custom_vjp: kernelkit forward; the backward kernelkit's (a _vjp_* pair) or the
    reference's vjp. Cached: an eager call is one jitted dispatch."""
    jax = sys.modules["jax"]
    kw = dict(static)
    impl, back = _IMPL[name]

    @jax.custom_vjp
    def f(*arrays):
        return impl(*arrays, **kw)

    if back in _KERNEL_VJP:
        fwd, bwd = back(kw)
    else:
        def fwd(*arrays):
            return impl(*arrays, **kw), arrays

        def bwd(arrays, g):
            return jax.vjp(lambda *a: back(*a, **kw), *arrays)[1](g)

    f.defvjp(fwd, bwd)
    return jax.jit(f)


def _op(name, *arrays, **static):
    return _differentiable(name, tuple(sorted(static.items())))(*arrays)


# ---- the custom ops' calling convention (what _ops passes to the callable route returns) ----

def _routes():
    r = {
        "softmax": lambda x, dim, dtype: _op("softmax", x, op="softmax", log=False,
                                             dim=_tuple(dim), dtype=dtype),
        "log_softmax": lambda x, dim, dtype: _op("softmax", x, op="log_softmax", log=True,
                                                 dim=_tuple(dim), dtype=dtype),
        "transpose": lambda x: _op("transpose", x),
        "gemv": lambda A, x, trans, alpha: _op("gemv", A, x, trans=bool(trans),
                                               alpha=float(alpha)),
        "sgemm": lambda A, B, ta, tb, alpha: _op("sgemm", A, B, op="sgemm", trans_a=bool(ta),
                                                 trans_b=bool(tb), alpha=float(alpha)),
        "matmul": lambda a, b: _op("sgemm", a, b, op="matmul", trans_a=False, trans_b=False,
                                   alpha=1.0),
        "relu": lambda x: _op("unary", x, op="relu", approximate=None),
        "sigmoid": lambda x: _op("unary", x, op="sigmoid", approximate=None),
        "gelu": lambda x, approximate="none": _op("unary", x, op="gelu",
                                                  approximate=approximate),
        "add": lambda a, b: _op("binary", a, b, op="add"),
        "mul": lambda a, b: _op("binary", a, b, op="mul"),
        "cast": lambda x, dtype: _op("cast", x, dtype=dtype),
        "rms_norm": lambda x, ns, weight, eps: (
            _op("rms_norm", x, weight, normalized_shape=_tuple(ns), eps=eps), None),
        "layer_norm": lambda x, ns, weight, bias, eps: (
            _op("layer_norm", x, weight, bias, normalized_shape=_tuple(ns), eps=eps), None,
            None),
        "add_rms_norm": lambda x, residual, weight, eps: (
            *_op("add_rms_norm", x, residual, weight, eps=eps), None),
        "cross_entropy": lambda x, target, ignore_index, reduction, label_smoothing: (
            _op("cross_entropy", x, target, ignore_index=int(ignore_index), reduction=reduction,
                label_smoothing=float(label_smoothing)), None),
    }
    for op in ("row_sum", "row_max", "row_min", "sum", "max", "min"):
        r[op] = functools.partial(_reduce_route, op)
    return r


def _reduce_route(op, x, dim, keepdim, dtype):
    return _op("reduce", x, op=op, dim=_tuple(dim), keepdim=bool(keepdim), dtype=dtype)


_ROUTES = _routes()

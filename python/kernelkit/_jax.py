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

Autodiff: each op is a jax.custom_vjp (kernelkit's forward; the backward is the vjp of a jnp
reference of the op, in float32), jitted once per static arguments (_differentiable).

Layouts: JAX arrays are row-major and contiguous; a handler sees the rank it reads (the
reshapes here cost XLA nothing). softmax over another axis and reductions over axes that are
not consecutive move the axes last with jnp (XLA fuses that copy with its neighbours).

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
    "_rms_norm": ("normalized_shape", "eps"),
    "_layer_norm": ("normalized_shape", "eps"),
    "_add_rms_norm": ("eps",),
}


def _cast_to(x, dtype):
    return _call("cast", _sds(x.shape, dtype), x, vmap="broadcast_all")


def _tuple(v):
    """A list argument (the custom ops' int[]) as a hashable static argument."""
    return tuple(v) if isinstance(v, list) else v


# ---- the ops -------------------------------------------------------------------------------

@_lazy
def _softmax(x, *, op, log, dim, dtype):
    nd = x.ndim
    dims = _ops._dims(dim, nd, op)
    if len(dims) == 1 and dims[0] != nd - 1:  # another axis: moved last and back (XLA copies)
        jnp = _np()
        y = _softmax(jnp.moveaxis(x, dims[0], -1), op=op, log=log, dim=-1, dtype=dtype)
        return jnp.moveaxis(y, -1, dims[0])
    spec = _ops._softmax(op, log, x, dim, dtype, None, None, fake=True)
    if spec.dtype != x.dtype:  # dtype=: x converted first, as the eager path does
        x = _cast_to(x, spec.dtype)
    return _call("softmax", spec, x, vmap="broadcast_all", log=log)


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


@_lazy
def _rms_norm(x, weight, *, normalized_shape, eps):
    op = "rms_norm"
    spec = _ops._rms_norm(x, normalized_shape, weight, eps, None, None, fake=True)
    _, _, _, _, rows, cols, e = _ops._norm_inputs(op, x, normalized_shape, weight, None, eps, True)
    y = _call("rms_norm", _sds((rows, cols), spec.dtype), *_norm_args(x, (weight,), rows, cols),
              has_weight=weight is not None, eps=float(e))
    return y.reshape(spec.shape)


@_lazy
def _layer_norm(x, weight, bias, *, normalized_shape, eps):
    op = "layer_norm"
    spec = _ops._layer_norm(x, normalized_shape, weight, bias, eps, None, None, fake=True)
    _, _, _, _, rows, cols, e = _ops._norm_inputs(op, x, normalized_shape, weight, bias, eps, True)
    y = _call("layer_norm", _sds((rows, cols), spec.dtype),
              *_norm_args(x, (weight, bias), rows, cols), has_weight=weight is not None,
              has_bias=bias is not None, eps=float(e))
    return y.reshape(spec.shape)


@_lazy
def _add_rms_norm(x, residual, weight, *, eps):
    op = "add_rms_norm"
    y_spec, s_spec = _ops._add_rms_norm(x, residual, weight, eps, None, None, fake=True)
    _, _, _, _, rows, cols, e = _ops._norm_inputs(op, x, None, weight, None, eps, True)
    args = _norm_args(x, (weight,), rows, cols)
    args.insert(1, residual.reshape(rows, cols))
    flat = _sds((rows, cols), y_spec.dtype)
    y, s = _call("add_rms_norm", (flat, flat), *args, has_weight=weight is not None, eps=float(e))
    return y.reshape(y_spec.shape), s.reshape(s_spec.shape)


# ---- autodiff ------------------------------------------------------------------------------
# Each op is a jax.custom_vjp: the forward is kernelkit's FFI call; the backward is the vjp of a
# jnp reference of the same op (computed in float32, the result in the op's dtype), evaluated at
# the saved inputs. kernelkit's backward kernels (softmax_backward, rms_norm_backward) through
# the FFI would save the reference's recomputation: a follow-up.

def _f32(x):
    return x.astype(_np().float32)


def _out_dtype(dtype, like, op):
    from ._arrays import dtype_name

    return like.dtype if dtype is None else getattr(_np(), dtype_name(dtype, op))


def _ref_softmax(x, *, op, log, dim, dtype):
    nn = sys.modules["jax"].nn
    y = (nn.log_softmax if log else nn.softmax)(_f32(x), axis=dim)
    return y.astype(_out_dtype(dtype, x, op))


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


def _norm_axes(x, normalized_shape, param):
    if normalized_shape is None:
        k = 1 if param is None else param.ndim
    else:
        k = 1 if isinstance(normalized_shape, int) else len(normalized_shape)
    return tuple(range(x.ndim - k, x.ndim))


def _eps_of(x, eps):
    return _ops._FINFO_EPS[x.dtype.name] if eps is None else float(eps)


def _ref_rms(xf, weight, axes, eps):
    jax = sys.modules["jax"]
    y = xf * jax.lax.rsqrt((xf * xf).mean(axes, keepdims=True) + eps)
    return y if weight is None else y * _f32(weight)


def _ref_rms_norm(x, weight, *, normalized_shape, eps):
    axes = _norm_axes(x, normalized_shape, weight)
    return _ref_rms(_f32(x), weight, axes, _eps_of(x, eps)).astype(x.dtype)


def _ref_layer_norm(x, weight, bias, *, normalized_shape, eps):
    jax = sys.modules["jax"]
    axes = _norm_axes(x, normalized_shape, weight if weight is not None else bias)
    xf = _f32(x)
    c = xf - xf.mean(axes, keepdims=True)
    y = c * jax.lax.rsqrt((c * c).mean(axes, keepdims=True) + float(eps))
    if weight is not None:
        y = y * _f32(weight)
    if bias is not None:
        y = y + _f32(bias)
    return y.astype(x.dtype)


def _ref_add_rms_norm(x, residual, weight, *, eps):
    s = (_f32(x) + _f32(residual)).astype(x.dtype)
    y = _ref_rms(_f32(s), weight, (x.ndim - 1,), _eps_of(x, eps)).astype(x.dtype)
    return y, s


_IMPL = {"softmax": (_softmax, _ref_softmax), "reduce": (_reduce, _ref_reduce),
         "transpose": (_transpose, lambda x: x.T), "gemv": (_gemv, _ref_gemv),
         "sgemm": (_sgemm, _ref_sgemm), "unary": (_unary, _ref_unary),
         "binary": (_binary, _ref_binary), "cast": (_cast, _ref_cast),
         "rms_norm": (_rms_norm, _ref_rms_norm), "layer_norm": (_layer_norm, _ref_layer_norm),
         "add_rms_norm": (_add_rms_norm, _ref_add_rms_norm)}


@functools.lru_cache(maxsize=None)
def _differentiable(name, static):
    """jax.jit of the op `name` with these static arguments (a sorted tuple of (name, value)),
    as a jax.custom_vjp: kernelkit forward, the reference's vjp backward. Cached: an eager
    call is one jitted dispatch."""
    jax = sys.modules["jax"]
    kw = dict(static)
    impl, ref = _IMPL[name]

    @jax.custom_vjp
    def f(*arrays):
        return impl(*arrays, **kw)

    def fwd(*arrays):
        return impl(*arrays, **kw), arrays

    def bwd(arrays, g):
        return jax.vjp(lambda *a: ref(*a, **kw), *arrays)[1](g)

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
    }
    for op in ("row_sum", "row_max", "row_min", "sum", "max", "min"):
        r[op] = functools.partial(_reduce_route, op)
    return r


def _reduce_route(op, x, dim, keepdim, dtype):
    return _op("reduce", x, op=op, dim=_tuple(dim), keepdim=bool(keepdim), dtype=dtype)


_ROUTES = _routes()

# SPDX-License-Identifier: Apache-2.0
"""kernelkit's functions as torch custom ops, torch.ops.kernelkit.<name>, so that they trace
under torch.compile, run inside CUDA graphs and differentiate (eager, compiled, graphed).

Imported by kernelkit._ops.torch_ops() at the first use of torch (never by
``import kernelkit`` alone). For every op:
- the real implementation is the plain function's body (_ops._<op>): torch's current
  stream, outputs from torch's caching allocator;
- the fake implementation is that same body with fake=True: the same describe and
  require_* checks (dtype, shape, contiguity, device, inner dimensions, ...), the same
  output allocation on the fake tensors, nothing read and nothing launched, so a fake
  accepts and refuses exactly what the real op does;
- the backward (register_autograd) uses kernelkit's ops where they exist (transpose, gemv,
  sgemm / matmul, mul, cast, rms_norm_backward) and torch's otherwise (softmax_backward and
  layer_norm_backward below are the places to swap in kernelkit's backward kernels once the
  bindings have them).
Functional: no out=, no stream=; every op returns a new tensor.
"""

import torch

from . import _ops

_LIB = "kernelkit"
_DEFAULT = {}  # name -> torch.ops.kernelkit.<name>.default (what _ops._route calls)

grad_enabled = torch.is_grad_enabled
is_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", None) or (lambda: False)


def op(name):
    """torch.ops.kernelkit.<name>.default."""
    return _DEFAULT[name]


def _define(name, schema, real, fake, backward, setup_context):
    o = torch.library.custom_op(f"{_LIB}::{name}", real, mutates_args=(), schema=schema)
    o.register_fake(fake)
    o.register_autograd(backward, setup_context=setup_context)
    _DEFAULT[name] = getattr(getattr(torch.ops, _LIB), name).default
    return o


def _kk(name):
    return _DEFAULT[name]


def _c(t):
    return t.contiguous()


# ---- softmax ---------------------------------------------------------------------------

def softmax_backward(y, g, dim, log):
    """dx of softmax (log=False) or log_softmax (log=True) from its output y and the output's
    gradient g, along dim, computed and returned in float32 (float64 stays float64).
    TODO(issue 33): kernelkit.softmax_backward / log_softmax_backward (the C++ fused kernels,
    one read of y and g, one write) once python/src binds them: this function only changes."""
    t = torch.promote_types(torch.promote_types(y.dtype, g.dtype), torch.float32)
    yf, gf = y.to(t), g.to(t)
    if log:
        return gf - yf.exp() * gf.sum(dim, keepdim=True)
    return yf * (gf - (gf * yf).sum(dim, keepdim=True))


def _softmax_op(name, log):
    def real(x, dim=-1, dtype=None):
        return _ops._softmax(name, log, x, dim, dtype, None, None)

    def fake(x, dim=-1, dtype=None):
        return _ops._softmax(name, log, x, dim, dtype, None, None, fake=True)

    def setup(ctx, inputs, output):
        x, dim, _ = inputs
        ctx.dim = dim if x.dim() else -1
        ctx.x_dtype = x.dtype
        ctx.save_for_backward(output)

    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return softmax_backward(y, g, ctx.dim, log).to(ctx.x_dtype), None, None

    return _define(name, "(Tensor x, int dim=-1, ScalarType? dtype=None) -> Tensor", real, fake,
                   backward, setup)


softmax = _softmax_op("softmax", False)
log_softmax = _softmax_op("log_softmax", True)


# ---- reductions ------------------------------------------------------------------------

def _reduced_dims(x, dim, default):
    """The axes a reduction op reduced (the _ops._reduce rule), None for all of them."""
    if dim is None:
        dim = default
    if dim is None:
        return None
    dims = _ops._dims(dim, x.dim(), "backward")
    return None if (dims == () and x.dim() > 0) else dims


def _expand(g, shape, dims, keepdim):
    """g (a reduction's gradient) broadcast back to the input's shape."""
    if not keepdim:
        if dims is None:
            g = g.reshape((1,) * len(shape))
        else:
            for d in dims:
                g = g.unsqueeze(d)
    return g.expand(shape)


def _reduce_op(name, kind, default_dim):
    which = _ops._REDUCE[kind]

    def real(x, dim=None, keepdim=False, dtype=None):
        return _ops._reduce(name, which, x, default_dim if dim is None else dim, keepdim, dtype,
                            None, None)

    def fake(x, dim=None, keepdim=False, dtype=None):
        return _ops._reduce(name, which, x, default_dim if dim is None else dim, keepdim, dtype,
                            None, None, fake=True)

    def setup(ctx, inputs, output):
        x, dim, keepdim, _ = inputs
        ctx.dims = _reduced_dims(x, dim, default_dim)
        ctx.keepdim = keepdim
        ctx.shape = x.shape
        ctx.x_dtype = x.dtype
        if kind != "sum":
            ctx.save_for_backward(x, output)

    def backward(ctx, g):
        ge = _expand(g, ctx.shape, ctx.dims, ctx.keepdim)
        if kind == "sum":
            return ge.to(ctx.x_dtype), None, None, None
        # max / min: the gradient goes to the extrema, shared evenly between ties (torch.amax)
        x, y = ctx.saved_tensors
        hit = x == _expand(y, ctx.shape, ctx.dims, ctx.keepdim)
        if ctx.dims is None or ctx.dims == ():
            count = hit.sum()
        else:
            count = hit.sum(ctx.dims, keepdim=True)
        dx = torch.where(hit, ge / count, torch.zeros((), dtype=ge.dtype, device=ge.device))
        return dx.to(ctx.x_dtype), None, None, None

    schema = "(Tensor x, int[]? dim=None, bool keepdim=False, ScalarType? dtype=None) -> Tensor"
    return _define(name, schema, real, fake, backward, setup)


row_sum = _reduce_op("row_sum", "sum", [-1])
row_max = _reduce_op("row_max", "max", [-1])
row_min = _reduce_op("row_min", "min", [-1])
sum = _reduce_op("sum", "sum", None)  # noqa: A001
max = _reduce_op("max", "max", None)  # noqa: A001
min = _reduce_op("min", "min", None)  # noqa: A001


# ---- transpose, BLAS -------------------------------------------------------------------

def _no_setup(ctx, inputs, output):
    pass


transpose = _define(
    "transpose", "(Tensor x) -> Tensor",
    lambda x: _ops._transpose(x, None, None),
    lambda x: _ops._transpose(x, None, None, fake=True),
    lambda ctx, g: _kk("transpose")(_c(g)),
    _no_setup)


def _gemv_setup(ctx, inputs, output):
    A, x, trans, alpha = inputs
    ctx.trans, ctx.alpha = trans, alpha
    ctx.save_for_backward(A, x)


def _gemv_backward(ctx, g):
    """y = alpha op(A) x: dx = alpha op(A)^T g (a gemv), dA = alpha (g x^T or x g^T) (an
    outer product: an sgemm with k = 1)."""
    A, x = ctx.saved_tensors
    g = _c(g)
    dA = dx = None
    m, n = A.shape
    if ctx.needs_input_grad[1]:
        dx = _kk("gemv")(A, g, not ctx.trans, ctx.alpha)
    if ctx.needs_input_grad[0]:
        col, row = (x, g) if ctx.trans else (g, x)
        dA = _kk("sgemm")(col.reshape(m, 1), row.reshape(1, n), False, False, ctx.alpha)
    return dA, dx, None, None


gemv = _define(
    "gemv", "(Tensor A, Tensor x, bool trans=False, float alpha=1.) -> Tensor",
    lambda A, x, trans=False, alpha=1.0: _ops._gemv(A, x, trans, alpha, 0.0, None, None),
    lambda A, x, trans=False, alpha=1.0: _ops._gemv(A, x, trans, alpha, 0.0, None, None, fake=True),
    _gemv_backward, _gemv_setup)


def _sgemm_grads(ctx, A, B, g, ta, tb, alpha):
    """C = alpha op(A) op(B): each gradient is one kernelkit sgemm with the right flags."""
    g = _c(g)
    sg = _kk("sgemm")
    dA = dB = None
    if ctx.needs_input_grad[0]:
        dA = sg(B, g, tb, True, alpha) if ta else sg(g, B, False, not tb, alpha)
    if ctx.needs_input_grad[1]:
        dB = sg(g, A, True, ta, alpha) if tb else sg(A, g, not ta, False, alpha)
    return dA, dB


def _sgemm_setup(ctx, inputs, output):
    A, B, ta, tb, alpha = inputs
    ctx.ta, ctx.tb, ctx.alpha = ta, tb, alpha
    ctx.save_for_backward(A, B)


def _sgemm_backward(ctx, g):
    A, B = ctx.saved_tensors
    return (*_sgemm_grads(ctx, A, B, g, ctx.ta, ctx.tb, ctx.alpha), None, None, None)


sgemm = _define(
    "sgemm", "(Tensor A, Tensor B, bool trans_a=False, bool trans_b=False, float alpha=1.) -> Tensor",
    lambda A, B, trans_a=False, trans_b=False, alpha=1.0:
        _ops._sgemm(A, B, trans_a, trans_b, alpha, 0.0, None, None),
    lambda A, B, trans_a=False, trans_b=False, alpha=1.0:
        _ops._sgemm(A, B, trans_a, trans_b, alpha, 0.0, None, None, fake=True),
    _sgemm_backward, _sgemm_setup)


def _save_inputs(ctx, inputs, output):
    ctx.save_for_backward(*inputs)


def _matmul_backward(ctx, g):
    a, b = ctx.saved_tensors
    return _sgemm_grads(ctx, a, b, g, False, False, 1.0)


matmul = _define(
    "matmul", "(Tensor a, Tensor b) -> Tensor",
    lambda a, b: _ops._sgemm(a, b, False, False, 1.0, 0.0, None, None, op="matmul"),
    lambda a, b: _ops._sgemm(a, b, False, False, 1.0, 0.0, None, None, fake=True, op="matmul"),
    _matmul_backward, _save_inputs)


# ---- elementwise -----------------------------------------------------------------------

def _binary_op(name, backward, setup):
    which = {"add": _ops._C.BINARY_ADD, "mul": _ops._C.BINARY_MUL}[name]
    return _define(name, "(Tensor a, Tensor b) -> Tensor",
                   lambda a, b: _ops._binary(name, which, a, b, None, None),
                   lambda a, b: _ops._binary(name, which, a, b, None, None, fake=True),
                   backward, setup)


def _mul_backward(ctx, g):
    a, b = ctx.saved_tensors
    g = _c(g)
    da = _kk("mul")(g, b) if ctx.needs_input_grad[0] else None
    db = _kk("mul")(g, a) if ctx.needs_input_grad[1] else None
    return da, db


add = _binary_op("add", lambda ctx, g: (g, g), _no_setup)
mul = _binary_op("mul", _mul_backward, _save_inputs)


def _unary_op(name, which, backward, save):
    def setup(ctx, inputs, output):
        ctx.save_for_backward(inputs[0] if save == "x" else output)

    return _define(name, "(Tensor x) -> Tensor",
                   lambda x: _ops._unary(name, which, x, None, None),
                   lambda x: _ops._unary(name, which, x, None, None, fake=True),
                   backward, setup)


relu = _unary_op("relu", _ops._C.UNARY_RELU,
                 lambda ctx, g: torch.ops.aten.threshold_backward(g, ctx.saved_tensors[0], 0), "y")
sigmoid = _unary_op("sigmoid", _ops._C.UNARY_SIGMOID,
                    lambda ctx, g: torch.ops.aten.sigmoid_backward(g, ctx.saved_tensors[0]), "y")


def _gelu_setup(ctx, inputs, output):
    x, approximate = inputs
    ctx.approximate = approximate
    ctx.save_for_backward(x)


gelu = _define(
    "gelu", '(Tensor x, str approximate="none") -> Tensor',
    lambda x, approximate="none": _ops._unary("gelu", _ops._gelu_which(approximate), x, None, None),
    lambda x, approximate="none":
        _ops._unary("gelu", _ops._gelu_which(approximate), x, None, None, fake=True),
    lambda ctx, g: (torch.ops.aten.gelu_backward(g, ctx.saved_tensors[0],
                                                 approximate=ctx.approximate), None),
    _gelu_setup)


def _cast_setup(ctx, inputs, output):
    ctx.x_dtype = inputs[0].dtype


cast = _define(
    "cast", "(Tensor x, ScalarType dtype) -> Tensor",
    lambda x, dtype: _ops._cast(x, dtype, None, None),
    lambda x, dtype: _ops._cast(x, dtype, None, None, fake=True),
    lambda ctx, g: (_kk("cast")(_c(g), ctx.x_dtype), None),
    _cast_setup)


# ---- norms -----------------------------------------------------------------------------
# The custom ops return the forward's saved statistics too (rms_norm: (y, rstd); layer_norm:
# (y, mean, rstd); add_rms_norm: (y, sum, rstd); float32, one per row), as torch's
# native_layer_norm does; the plain functions return y (add_rms_norm: (y, sum)).

def _cols(x, normalized_shape, p):
    """The normalized row length of a norm call (the _ops._norm_shape rule)."""
    if normalized_shape is not None:
        n = 1
        for d in normalized_shape:
            n *= d
        return n
    return p.numel() if p is not None else x.shape[-1]


def _rms_norm_backward_real(dy, x, weight, rstd, cols, dweight):
    dx, dw = _ops._rms_norm_backward(dy, x, weight, rstd, cols, dweight)
    return dx, dw if dw is not None else x.new_empty(0)


def _rms_norm_backward_fake(dy, x, weight, rstd, cols, dweight):
    dx, dw = _ops._rms_norm_backward(dy, x, weight, rstd, cols, dweight, fake=True)
    return dx, dw if dw is not None else x.new_empty(0)


# kernelkit's rms_norm_backward (no autograd of its own: no double backward); dweight is an
# empty tensor unless asked for with a weight.
rms_norm_backward_op = torch.library.custom_op(
    f"{_LIB}::rms_norm_backward", _rms_norm_backward_real, mutates_args=(),
    schema="(Tensor dy, Tensor x, Tensor? weight, Tensor rstd, SymInt cols, bool dweight) -> "
           "(Tensor, Tensor)")
rms_norm_backward_op.register_fake(_rms_norm_backward_fake)
_DEFAULT["rms_norm_backward"] = torch.ops.kernelkit.rms_norm_backward.default


def _needs(ctx, i):
    """ctx.needs_input_grad[i]; the tuple is cut after the last argument passed (trailing
    defaults, such as weight=None, are left out of it)."""
    n = ctx.needs_input_grad
    return i < len(n) and bool(n[i])


def _rms_grads(g, x, weight, rstd, cols, want_dweight):
    """(dx, dweight or None) of y = rms_norm(x, weight) for y's gradient g."""
    dx, dw = _kk("rms_norm_backward")(_c(g), x, weight, rstd, cols,
                                      bool(want_dweight and weight is not None))
    return dx, (dw if want_dweight and weight is not None else None)


def _rms_norm_setup(ctx, inputs, output):
    x, normalized_shape, weight, _ = inputs
    ctx.cols = _cols(x, normalized_shape, weight)
    ctx.save_for_backward(x, weight, output[1])


def _rms_norm_backward(ctx, g, _g_rstd):
    x, weight, rstd = ctx.saved_tensors
    dx, dw = _rms_grads(g, x, weight, rstd, ctx.cols, _needs(ctx, 2))
    return dx, None, dw, None


rms_norm = _define(
    "rms_norm", "(Tensor x, int[]? normalized_shape=None, Tensor? weight=None, float? eps=None) "
    "-> (Tensor, Tensor)",
    lambda x, normalized_shape=None, weight=None, eps=None:
        _ops._rms_norm(x, normalized_shape, weight, eps, None, None, save=True),
    lambda x, normalized_shape=None, weight=None, eps=None:
        _ops._rms_norm(x, normalized_shape, weight, eps, None, None, fake=True, save=True),
    _rms_norm_backward, _rms_norm_setup)


def layer_norm_backward(dy, x, weight, bias, mean, rstd, cols, needs):
    """(dx, dweight, dbias) of y = layer_norm(x, weight, bias) from the saved mean and rstd,
    in float32 (float64 stays float64): dx = rstd * (g - mean(g) - xhat * mean(g * xhat)),
    g = dy * weight, xhat = (x - mean) * rstd; dweight = sum over rows of dy * xhat, dbias =
    sum of dy. TODO: kernelkit's layer_norm_backward (the C++ fused kernel being written, one
    read of dy and x, deterministic column sums as rms_norm_backward's) once python/src binds
    it: this function only changes."""
    t = torch.promote_types(x.dtype, torch.float32)
    xf = x.reshape(-1, cols).to(t)
    gf = dy.reshape(-1, cols).to(t)
    xhat = (xf - mean.reshape(-1, 1).to(t)) * rstd.reshape(-1, 1).to(t)
    gw = gf * weight.reshape(1, -1).to(t) if weight is not None else gf
    dx = dw = db = None
    if needs[0]:
        dx = rstd.reshape(-1, 1).to(t) * (gw - gw.mean(1, keepdim=True) -
                                          xhat * (gw * xhat).mean(1, keepdim=True))
        dx = dx.reshape(x.shape).to(x.dtype)
    if needs[2] and weight is not None:
        dw = (gf * xhat).sum(0).reshape(weight.shape).to(weight.dtype)
    if needs[3] and bias is not None:
        db = gf.sum(0).reshape(bias.shape).to(bias.dtype)
    return dx, dw, db


def _layer_norm_setup(ctx, inputs, output):
    x, normalized_shape, weight, bias, _ = inputs
    ctx.cols = _cols(x, normalized_shape, weight if weight is not None else bias)
    ctx.save_for_backward(x, weight, bias, output[1], output[2])


def _layer_norm_backward(ctx, g, _g_mean, _g_rstd):
    x, weight, bias, mean, rstd = ctx.saved_tensors
    dx, dw, db = layer_norm_backward(g, x, weight, bias, mean, rstd, ctx.cols,
                                     [_needs(ctx, i) for i in range(4)])
    return dx, None, dw, db, None


layer_norm = _define(
    "layer_norm", "(Tensor x, int[]? normalized_shape=None, Tensor? weight=None, "
    "Tensor? bias=None, float eps=1e-05) -> (Tensor, Tensor, Tensor)",
    lambda x, normalized_shape=None, weight=None, bias=None, eps=1e-5:
        _ops._layer_norm(x, normalized_shape, weight, bias, eps, None, None, save=True),
    lambda x, normalized_shape=None, weight=None, bias=None, eps=1e-5:
        _ops._layer_norm(x, normalized_shape, weight, bias, eps, None, None, fake=True, save=True),
    _layer_norm_backward, _layer_norm_setup)


def _add_rms_norm_setup(ctx, inputs, output):
    x, _, weight, _ = inputs
    ctx.cols = _cols(x, None, weight)
    ctx.save_for_backward(output[1], weight, output[2])


def _add_rms_norm_backward(ctx, gy, gs, _g_rstd):
    """s = x + residual, y = rms_norm(s): ds = the rms_norm gradient through y (kernelkit's
    rms_norm_backward) + gs, to both x and residual. TODO: the C++ add_rms_norm backward
    being written (the + gs fused into the row kernel) replaces this body."""
    s, weight, rstd = ctx.saved_tensors
    dw = None
    if gy is None:
        ds = gs
    else:
        ds, dw = _rms_grads(gy, s, weight, rstd, ctx.cols, _needs(ctx, 2))
        if gs is not None:
            ds = ds + gs
    return ds, ds, dw, None


add_rms_norm = _define(
    "add_rms_norm", "(Tensor x, Tensor residual, Tensor? weight=None, float? eps=None) -> "
    "(Tensor, Tensor, Tensor)",
    lambda x, residual, weight=None, eps=None:
        _ops._add_rms_norm(x, residual, weight, eps, None, None, save=True),
    lambda x, residual, weight=None, eps=None:
        _ops._add_rms_norm(x, residual, weight, eps, None, None, fake=True, save=True),
    _add_rms_norm_backward, _add_rms_norm_setup)


OPS = {name: getattr(torch.ops.kernelkit, name) for name in _ops.__all__}

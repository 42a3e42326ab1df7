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
  sgemm / matmul, mul, cast, and the fused backward kernels softmax_backward /
  log_softmax_backward (softmax_inner_backward over a non-last axis), rms_norm_backward,
  layer_norm_backward, add_rms_norm_backward, cross_entropy_backward, registered here as
  custom ops of their own with the same fake rule) and torch's otherwise (the reductions'
  broadcasts, relu / gelu / sigmoid's aten backward ops, the double backward of softmax).
Functional: no out=, no stream=; every op returns a new tensor.
"""

import builtins

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

def _f32(t):
    return t.to(torch.promote_types(t.dtype, torch.float32))


def _softmax_backward_setup(ctx, inputs, output):
    y, dy, dim, log = inputs
    ctx.dim, ctx.log = dim, log
    ctx.save_for_backward(y, dy)


def _softmax_backward_backward(ctx, h):
    """The double backward of dx = softmax_backward(y, dy) (log_softmax_backward when log),
    for h = dx's gradient: softmax: d dy = softmax_backward(y, h) (kernelkit's kernel again),
    d y = h (dy - sum(y dy)) - dy sum(h y); log_softmax (p = exp(y)): d dy = h - sum(h p),
    d y = -h p sum(dy). Computed by torch in float32 (double backward is rare: no fused kernel
    of its own)."""
    y, dy = ctx.saved_tensors
    d = ctx.dim
    yf, gf, hf = _f32(y), _f32(dy), _f32(h)
    dy_grad = y_grad = None
    if ctx.log:
        p = yf.exp()
        if ctx.needs_input_grad[1]:
            dy_grad = (hf - (hf * p).sum(d, keepdim=True)).to(dy.dtype)
        if ctx.needs_input_grad[0]:
            y_grad = (-hf * p * gf.sum(d, keepdim=True)).to(y.dtype)
    else:
        if ctx.needs_input_grad[1]:
            dy_grad = _kk("softmax_backward")(y, h, d, False)
        if ctx.needs_input_grad[0]:
            y_grad = (hf * (gf - (yf * gf).sum(d, keepdim=True)) -
                      gf * (hf * yf).sum(d, keepdim=True)).to(y.dtype)
    return y_grad, dy_grad, None, None


# kernelkit's softmax_backward / log_softmax_backward (log=True): dx from the forward's output
# y and y's gradient dy along dim, in y's dtype; differentiable (the double backward above).
softmax_backward_op = _define(
    "softmax_backward", "(Tensor y, Tensor dy, int dim, bool log) -> Tensor",
    lambda y, dy, dim, log: _ops._softmax_backward(log, y, dy, dim),
    lambda y, dy, dim, log: _ops._softmax_backward(log, y, dy, dim, fake=True),
    _softmax_backward_backward, _softmax_backward_setup)


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
        if ctx.dim % builtins.max(y.dim(), 1) != builtins.max(y.dim(), 1) - 1:
            g = _c(g)  # a non-last axis: softmax_inner_backward reads C-contiguous y and g
        dx = _kk("softmax_backward")(y, g, ctx.dim, log)
        if dx.dtype != ctx.x_dtype:  # dtype=: the gradient of x's conversion
            dx = _kk("cast")(dx, ctx.x_dtype)
        return dx, None, None

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


def _empty_if_none(t, like):
    """A custom op returns tensors: a gradient not computed is an empty one."""
    return t if t is not None else like.new_empty(0)


def _rms_norm_backward_real(dy, x, weight, rstd, cols, dweight):
    dx, dw = _ops._rms_norm_backward(dy, x, weight, rstd, cols, dweight)
    return dx, _empty_if_none(dw, x)


def _rms_norm_backward_fake(dy, x, weight, rstd, cols, dweight):
    dx, dw = _ops._rms_norm_backward(dy, x, weight, rstd, cols, dweight, fake=True)
    return dx, _empty_if_none(dw, x)


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


def _layer_norm_backward_impl(fake):
    def impl(dy, x, weight, bias, mean, rstd, cols, dweight, dbias):
        dx, dw, db = _ops._layer_norm_backward(dy, x, weight, bias, mean, rstd, cols, dweight,
                                               dbias, fake=fake)
        return dx, _empty_if_none(dw, x), _empty_if_none(db, x)

    return impl


# kernelkit's layer_norm_backward (no autograd of its own: no double backward); dweight /
# dbias are empty tensors unless asked for with a weight / a bias (the bias is read for its
# dtype and shape only).
layer_norm_backward_op = torch.library.custom_op(
    f"{_LIB}::layer_norm_backward", _layer_norm_backward_impl(False), mutates_args=(),
    schema="(Tensor dy, Tensor x, Tensor? weight, Tensor? bias, Tensor mean, Tensor rstd, "
           "SymInt cols, bool dweight, bool dbias) -> (Tensor, Tensor, Tensor)")
layer_norm_backward_op.register_fake(_layer_norm_backward_impl(True))
_DEFAULT["layer_norm_backward"] = torch.ops.kernelkit.layer_norm_backward.default


def _layer_norm_setup(ctx, inputs, output):
    x, normalized_shape, weight, bias, _ = inputs
    ctx.cols = _cols(x, normalized_shape, weight if weight is not None else bias)
    ctx.save_for_backward(x, weight, bias, output[1], output[2])


def _layer_norm_backward(ctx, g, _g_mean, _g_rstd):
    x, weight, bias, mean, rstd = ctx.saved_tensors
    want_dw = _needs(ctx, 2) and weight is not None
    want_db = _needs(ctx, 3) and bias is not None
    dx, dw, db = _kk("layer_norm_backward")(_c(g), x, weight, bias, mean, rstd, ctx.cols, want_dw,
                                            want_db)
    return dx, None, dw if want_dw else None, db if want_db else None, None


layer_norm = _define(
    "layer_norm", "(Tensor x, int[]? normalized_shape=None, Tensor? weight=None, "
    "Tensor? bias=None, float eps=1e-05) -> (Tensor, Tensor, Tensor)",
    lambda x, normalized_shape=None, weight=None, bias=None, eps=1e-5:
        _ops._layer_norm(x, normalized_shape, weight, bias, eps, None, None, save=True),
    lambda x, normalized_shape=None, weight=None, bias=None, eps=1e-5:
        _ops._layer_norm(x, normalized_shape, weight, bias, eps, None, None, fake=True, save=True),
    _layer_norm_backward, _layer_norm_setup)


def _add_rms_norm_backward_impl(fake):
    def impl(dy, sum, dsum, weight, rstd, cols, dweight):  # noqa: A002
        dx, dw = _ops._add_rms_norm_backward(dy, sum, dsum, weight, rstd, cols, dweight,
                                             fake=fake)
        return dx, _empty_if_none(dw, sum)

    return impl


# kernelkit's add_rms_norm_backward (no autograd of its own): dx of x and residual both, the
# sum's gradient dsum (optional) added in the kernel; dweight empty unless asked for.
add_rms_norm_backward_op = torch.library.custom_op(
    f"{_LIB}::add_rms_norm_backward", _add_rms_norm_backward_impl(False), mutates_args=(),
    schema="(Tensor dy, Tensor sum, Tensor? dsum, Tensor? weight, Tensor rstd, SymInt cols, "
           "bool dweight) -> (Tensor, Tensor)")
add_rms_norm_backward_op.register_fake(_add_rms_norm_backward_impl(True))
_DEFAULT["add_rms_norm_backward"] = torch.ops.kernelkit.add_rms_norm_backward.default


def _add_rms_norm_setup(ctx, inputs, output):
    x, _, weight, _ = inputs
    ctx.cols = _cols(x, None, weight)
    ctx.save_for_backward(output[1], weight, output[2])


def _add_rms_norm_backward(ctx, gy, gs, _g_rstd):
    """s = x + residual, y = rms_norm(s): ds = the rms_norm gradient through y + gs, to both
    x and residual (kernelkit's add_rms_norm_backward: the + gs in the row kernel)."""
    s, weight, rstd = ctx.saved_tensors
    if gy is None:
        return gs, gs, None, None
    want_dw = _needs(ctx, 2) and weight is not None
    ds, dw = _kk("add_rms_norm_backward")(_c(gy), s, None if gs is None else _c(gs), weight, rstd,
                                          ctx.cols, want_dw)
    return ds, ds, dw if want_dw else None, None


add_rms_norm = _define(
    "add_rms_norm", "(Tensor x, Tensor residual, Tensor? weight=None, float? eps=None) -> "
    "(Tensor, Tensor, Tensor)",
    lambda x, residual, weight=None, eps=None:
        _ops._add_rms_norm(x, residual, weight, eps, None, None, save=True),
    lambda x, residual, weight=None, eps=None:
        _ops._add_rms_norm(x, residual, weight, eps, None, None, fake=True, save=True),
    _add_rms_norm_backward, _add_rms_norm_setup)


# ---- cross-entropy -----------------------------------------------------------------------
# The custom op returns (loss, lse): lse, the per-row log-sum-exp (N float32), is what
# kernelkit's cross_entropy_backward reads; the plain function returns the loss.

def _cross_entropy_backward_impl(fake):
    def impl(input, target, lse, dloss, ignore_index, reduction, label_smoothing):
        return _ops._cross_entropy_backward(input, target, lse, dloss, ignore_index, reduction,
                                            label_smoothing, fake=fake)

    return impl


# kernelkit's cross_entropy_backward (no autograd of its own: no double backward).
cross_entropy_backward_op = torch.library.custom_op(
    f"{_LIB}::cross_entropy_backward", _cross_entropy_backward_impl(False), mutates_args=(),
    schema="(Tensor input, Tensor target, Tensor lse, Tensor dloss, int ignore_index, "
           "str reduction, float label_smoothing) -> Tensor")
cross_entropy_backward_op.register_fake(_cross_entropy_backward_impl(True))
_DEFAULT["cross_entropy_backward"] = torch.ops.kernelkit.cross_entropy_backward.default


def _cross_entropy_setup(ctx, inputs, output):
    input, target, ignore_index, reduction, label_smoothing = inputs
    ctx.args = (ignore_index, reduction, label_smoothing)
    ctx.save_for_backward(input, target, output[1])


def _cross_entropy_backward(ctx, g, _g_lse):
    input, target, lse = ctx.saved_tensors
    if g.dtype != torch.float32:
        g = g.float()
    dx = _kk("cross_entropy_backward")(input, target, lse, _c(g), *ctx.args)
    return dx, None, None, None, None


cross_entropy = _define(
    "cross_entropy", "(Tensor input, Tensor target, int ignore_index=-100, "
    'str reduction="mean", float label_smoothing=0.0) -> (Tensor, Tensor)',
    lambda input, target, ignore_index=-100, reduction="mean", label_smoothing=0.0:
        _ops._cross_entropy(input, target, ignore_index, reduction, label_smoothing, None, None,
                            save=True),
    lambda input, target, ignore_index=-100, reduction="mean", label_smoothing=0.0:
        _ops._cross_entropy(input, target, ignore_index, reduction, label_smoothing, None, None,
                            fake=True, save=True),
    _cross_entropy_backward, _cross_entropy_setup)


OPS = {name: getattr(torch.ops.kernelkit, name) for name in _ops.__all__}

# SPDX-License-Identifier: Apache-2.0
"""kernelkit's functions on CUDA arrays (torch, CuPy, JAX, any producer of
__cuda_array_interface__ and __dlpack_device__). Each function checks its arguments, allocates
its output (and workspace) with the caller's framework unless ``out=`` is given, launches on
the caller's current stream (or ``stream=``) and returns an array of the caller's type.
Errors: TypeError for a CPU array or an unsupported dtype, ValueError for shapes, strides,
devices and overlap, RuntimeError for a CUDA error (cudaGetErrorString's text).

Layouts: the ops that read an operand as one flat range (elementwise, transpose, BLAS) refuse
a non-contiguous one (ValueError naming its strides; nothing is copied). The row ops
(softmax, log_softmax, the reductions with ``dim=``) take any axis: what they read in place
and what the framework copies first is decided in one function, ``_row_layout``, and said in
each function's docstring.

The checks here (with those of _arrays) are the package's only argument checks:
kernelkit._C takes device addresses and sizes, checks nothing, and turns kernelkit's own
answer (cudaErrorInvalidValue, a CUDA error) into ValueError / RuntimeError. The torch custom
ops (_torch_ops) run these same functions for their real implementation and, with
``fake=True`` (no address read, nothing launched), for their fake one: a fake accepts and
refuses exactly what the real op does.

torch tensors that need autograd (an input requires grad, grad mode on) or that are traced
by torch.compile go through the custom ops torch.ops.kernelkit.* (registered at first use),
which carry the backward (register_autograd): the plain functions keep the graph.

__all__ is the package's list of functions: kernelkit exports it, torch.ops.kernelkit
registers it (_torch_ops), the tests check every name of it.
"""

import builtins
import os
import sys

from . import _C
from ._arrays import (FLOAT_DTYPES, Arr, ITEMSIZE, current_stream, describe, dtype_name, empty,
                      moved_back, moved_copy, numel, permutation, require_contiguous, require_dtype,
                      require_float, require_ndim, require_no_overlap, require_same_device,
                      require_shape, stream_handle, workspace)

__all__ = [
    "softmax", "log_softmax", "row_sum", "row_max", "row_min", "sum", "max", "min", "transpose",
    "gemv", "sgemm", "matmul", "add", "mul", "relu", "gelu", "sigmoid", "cast", "rms_norm",
    "layer_norm", "add_rms_norm", "cross_entropy",
]


# ---- torch: custom ops, autograd, torch.compile ----------------------------------------

_torch = None  # kernelkit._torch_ops once registered; False when KERNELKIT_NO_TORCH=1
# torch.Tensor once the custom ops are registered (None before, and with KERNELKIT_NO_TORCH=1):
# what _route tests against instead of sys.modules, which torch.compile cannot trace (dynamo
# iterates sys.modules while imports may add to it: "dictionary changed size during
# iteration"). The ops are registered before anything compiles (at import when torch is
# already imported, else at the first call with a torch tensor).
_Tensor = None


def torch_ops():
    """Registers kernelkit's functions as torch custom ops (torch.ops.kernelkit.*, with fakes
    and autograd) and returns the module that holds them; None when KERNELKIT_NO_TORCH=1.
    Imports torch: called at the first call with a torch tensor, at ``import kernelkit`` when
    torch is already imported, or by kernelkit.register_torch_ops()."""
    global _torch, _Tensor
    if _torch is None:
        if os.environ.get("KERNELKIT_NO_TORCH", "") == "1":
            _torch = False
        else:
            from . import _torch_ops

            _Tensor = _torch_ops.torch.Tensor
            _torch = _torch_ops
            _fast_setup(_torch_ops.torch)
    return _torch or None


# ---- the fast path ---------------------------------------------------------------------
# A plain call on torch tensors -- each array exactly a torch.Tensor (or an nn.Parameter) on a
# CUDA device, C-contiguous, of a dtype the op takes, on x's device; none requiring grad while
# grad mode is on; the op's default layout arguments; no out= / stream=; outside
# torch.compile -- goes straight to _C with the arguments the full path passes for it, without
# describing its arrays: most of the Python layer's host time (bench/NOTES.md, "Host time per
# call"). It raises nothing: every call it does not take, including each one the full path
# refuses, goes the full path, the one argument check. Off (_fast_names empty) until the
# custom ops are registered, and with KERNELKIT_NO_TORCH=1. Outputs are torch.empty_like(x)
# without memory_format= (x is dense and row-major, so its strides are the standard ones but
# for size-1 axes; the keyword costs ~0.1-0.3 us of torch's argument parsing).

_fast_names = {}  # torch dtype -> its name, for every dtype kernelkit knows
_fast_types = (None, None)  # (torch.Tensor, torch.nn.Parameter)
_fast_grad = _fast_compiling = _fast_stream = _fast_empty_like = None
_fast_f32 = None


def _fast_setup(torch):
    global _fast_names, _fast_types, _fast_grad, _fast_compiling, _fast_stream
    global _fast_empty_like, _fast_f32
    from ._arrays import _find_torch_stream

    _fast_types = (torch.Tensor, torch.nn.Parameter)
    _fast_grad = torch.is_grad_enabled
    _fast_compiling = _torch.is_compiling
    _fast_stream = _find_torch_stream()
    _fast_empty_like, _fast_f32 = torch.empty_like, torch.float32
    _fast_names = {getattr(torch, n): n for n in ITEMSIZE if hasattr(torch, n)}


# (the checks inline, not in a helper of their own: a call level costs ~0.2 us there)
def _fast(x, floats=True):
    """x's dtype name when x may take the fast path (a float dtype unless floats=False), else
    None."""
    t = type(x)
    if ((t is _fast_types[0] or t is _fast_types[1]) and x.is_cuda and x.is_contiguous()
            and (not x.requires_grad or not _fast_grad()) and not _fast_compiling()):
        name = _fast_names.get(x.dtype)
        if not floats or name in FLOAT_DTYPES:
            return name
    return None


def _fast_with(y, x):
    """y (an array beside the fast path's x) may take the fast path: on x's device."""
    t = type(y)
    return ((t is _fast_types[0] or t is _fast_types[1]) and y.is_contiguous()
            and (not y.requires_grad or not _fast_grad()) and y.get_device() == x.get_device())


def _fast_launch(x, fn, *args):
    """fn(*args, x's device, torch's current stream there), as _launch calls it."""
    d = x.get_device()
    fn(*args, d, _fast_stream(d))


def _fast_workspace(x, name, nbytes):
    """The full path's workspace (None for none) for a fast call on x."""
    if not nbytes:
        return None
    d = x.get_device()
    return workspace(Arr(x, "torch", x.shape, name, x.data_ptr(), 0, d), nbytes, "", _fast_stream(d))


def _route(op, x, others=(), out=None, stream=None):
    """The custom op torch.ops.kernelkit.<op> when this call must go through it, else None
    (the direct path: no torch dispatch, the least host time). It must when x, or one of
    `others`, is a torch tensor that requires grad under grad mode (autograd: then out= and
    stream= are a RuntimeError, as torch's out= is), or when torch.compile traces the call
    without out= / stream= (with them the call stays a graph break).

    Traced by torch.compile: once the ops are registered, no sys.modules lookup on this path
    (module globals and _torch_ops' attributes only)."""
    if _Tensor is not None:  # registered: torch is imported
        if not isinstance(x, _Tensor):
            return _jax_route(op, x, out, stream) if "jax" in sys.modules else None
        t = _torch
        grad_enabled = t.grad_enabled
    else:  # not registered yet (cheap when torch is not imported), or KERNELKIT_NO_TORCH=1
        torch = sys.modules.get("torch")
        if torch is None or not isinstance(x, torch.Tensor):
            return _jax_route(op, x, out, stream) if "jax" in sys.modules else None
        t = torch_ops()  # registers at the first torch tensor
        grad_enabled = torch.is_grad_enabled
    rg = x.requires_grad
    if not rg:
        for o in others:  # (a loop: a generator costs ~0.4 us a call)
            if getattr(o, "requires_grad", False):
                rg = True
                break
    if rg and grad_enabled():
        if not t:
            raise RuntimeError(f"kernelkit.{op}: an input requires grad, but kernelkit's torch "
                               "ops (autograd) are off: KERNELKIT_NO_TORCH=1")
        if out is not None or stream is not None:
            raise RuntimeError(f"kernelkit.{op}: out= and stream= do not support autograd (an "
                               "input requires grad): drop them (use torch.cuda.stream(s) for a "
                               "stream), or call under torch.no_grad()")
        return t.op(op)
    if t and out is None and stream is None and t.is_compiling():
        return t.op(op)
    return None


def _jax_route(op, x, out, stream):
    """kernelkit._jax's op for a JAX array or jit tracer x (XLA FFI: under jax.jit, on XLA's
    stream, no synchronization; called as the torch custom op is), else None."""
    if not isinstance(x, sys.modules["jax"].Array):
        return None
    from . import _jax

    return _jax.route(op, x, out, stream)


def _torch_dtype(dtype, op):
    """dtype (any spelling dtype_name takes) as the torch.dtype a custom op's schema takes."""
    if dtype is None or not _torch:  # (not _torch: a JAX call, kernelkit._jax takes any dtype)
        return dtype
    torch = _torch.torch  # (not sys.modules: torch.compile traces this without a graph break)
    if isinstance(dtype, torch.dtype):
        return dtype
    return getattr(torch, dtype_name(dtype, op))


# ---- the launch ------------------------------------------------------------------------

def _stream(a, stream, op):
    return current_stream(a) if stream is None else stream_handle(stream, op)


def _out(out, a, op):
    """Describes a caller's out=; JAX arrays are immutable, so they cannot be one."""
    o = describe(out, op, "out")
    if o.fw == "jax":
        raise TypeError(f"kernelkit.{op}: JAX arrays are immutable: out= is not supported for them")
    require_contiguous(o, op, "out")
    return o


def _launch(op, arrs, s, fn, *args, fake=False):
    """fn(*args, device, s) after the device check, on the arrays' device; JAX arrays are made
    ready first and the stream synchronized after (JAX orders its own work on its own
    streams). arrs: every array the call touches (a workspace that is None is left out).
    fake: the checks only (a torch fake implementation), nothing launched."""
    # one pass: the device check (require_same_device's) and the JAX arrays (no lists, no
    # calls: this runs once or twice for every call of every op)
    device = None
    jax = False
    for a in arrs:
        if a is None:
            continue
        if device is None:
            device = a.device
        elif a.device != device:
            require_same_device([x for x in arrs if x is not None], op)  # raises
        if a.fw == "jax":
            jax = True
    if fake:
        return
    if jax:
        for a in arrs:
            if a is not None and a.fw == "jax":
                a.obj.block_until_ready()
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


def _float_dtype(dtype, op):
    """dtype= as a float dtype name kernelkit computes in, or TypeError."""
    to = dtype_name(dtype, op)
    if to not in FLOAT_DTYPES:
        raise TypeError(f"kernelkit.{op}: unsupported dtype= {to} (float32, float16, bfloat16)")
    return to


# ---- axes and the row layout -------------------------------------------------------------

def _dims(dim, ndim, op):
    """dim (an int or a sequence of ints, negative counting from the end, torch's meaning) as
    a sorted tuple of distinct axes in [0, ndim). A 0-d array has the axes 0 and -1 (one
    element), given as ()."""
    if dim == -1 and type(dim) is int:  # the default: no loop (host time)
        return (ndim - 1,) if ndim else ()
    if isinstance(dim, int) and not isinstance(dim, bool):
        dims = (dim,)
    else:
        try:
            dims = tuple(dim)
        except TypeError:
            raise TypeError(f"kernelkit.{op}: dim must be an int or a sequence of ints, got "
                            f"{dim!r}") from None
        if not builtins.all(isinstance(d, int) and not isinstance(d, bool) for d in dims):
            raise TypeError(f"kernelkit.{op}: dim must be an int or a sequence of ints, got {dim!r}")
    lim = builtins.max(ndim, 1)
    out = []
    for d in dims:
        if not -lim <= d < lim:
            raise IndexError(f"kernelkit.{op}: dim {d} is out of range for a {ndim}-D array "
                             f"(expected in [{-lim}, {lim - 1}])")
        d %= lim
        if d in out:
            raise ValueError(f"kernelkit.{op}: dim {d} appears twice in dim={dim!r}")
        out.append(d)
    return () if ndim == 0 else tuple(sorted(out))


def _row_layout(a, dims, op, fake, strided=True, middle=True):
    """THE dispatch of the row ops (softmax, log_softmax and their backward, the reductions
    with dim=): how the kernel reads x when the op runs over the axes `dims` (sorted,
    distinct). Returns (src, outer, n, inner, ld, perm):

    - inner == 1: a row kernel reads src as `outer` rows of n elements, row r at src + r * ld
      (ld == n: contiguous rows);
    - inner > 1: col_reduce reads src as a contiguous (outer, n, inner) array and reduces n;
    - perm is None when src is x itself (read in place), else the axis order of src, a
      C-contiguous copy made by x's framework (_arrays.moved_copy) with `dims` moved last
      (then inner == 1 and ld == n).

    What is read in place:
    - `dims` the last axes of a C-contiguous x: rows (every op);
    - strided=True: `dims` the last axes, jointly unit-stride, the other axes collapsing to
      one row stride ld >= n (x[:, -1, :], x[::2], x[..., :k]): the `ld` overloads of
      row_reduce, softmax, log_softmax and their backward passes (softmax passes
      strided=False only where dtype= converts x first: the cast reads x as one range);
    - middle=True: `dims` consecutive axes, not the last, of a C-contiguous x (x.sum(0), the
      middle axis of (B, T, C), channel softmax over NCHW): an (outer, n, inner) array of
      (prod of the axes before, prod of `dims`, prod of the axes after), read by col_reduce
      (the reductions) or softmax_inner / log_softmax_inner and their backward (softmax,
      one axis);
    anything else (a transposed view, non-consecutive axes, a strided non-last axis) is the
    framework's copy, said in each public function's docstring (never a silent copy); a
    generic array (no framework to copy with) is a ValueError naming its strides.
    """
    shape = a.shape
    nd = len(shape)
    k = len(dims)
    if k == 1 and a.strides is None and dims[0] == nd - 1:  # the default: contiguous rows
        cols = shape[-1]
        return a, numel(shape[:-1]), cols, 1, cols, None
    last = dims[0] == nd - 1 if k == 1 else dims == tuple(range(nd - k, nd))
    if a.strides is None or not numel(a.shape):
        if last:
            cols = numel(a.shape[nd - k:]) if nd else 1
            return a, numel(a.shape[:nd - k]), cols, 1, cols, None
        if middle and dims == tuple(range(dims[0], dims[-1] + 1)):
            n = numel(a.shape[dims[0]:dims[-1] + 1])
            return (a, numel(a.shape[:dims[0]]), n, numel(a.shape[dims[-1] + 1:]), n, None)
    elif strided and last:
        ld = _row_stride(a, k)
        if ld is not None:
            cols = numel(a.shape[nd - k:])
            return a, numel(a.shape[:nd - k]), cols, 1, ld, None
    src = moved_copy(a, dims, op, "x", fake)
    rows, cols = numel(src.shape[:nd - k]), numel(src.shape[nd - k:])
    return src, rows, cols, 1, cols, permutation(nd, dims)


def _row_stride(a, k):
    """The row stride ld (elements) when the last k axes of the strided array a are jointly
    unit-stride (n = their product elements in a row) and the other axes collapse to rows at
    one stride ld >= n; None otherwise. Axes of size 1 take any stride (torch's, DLPack's
    rule)."""
    shape, st = a.shape, a.strides
    if a.fw != "torch":  # bytes
        size = ITEMSIZE.get(a.dtype, 0)
        if not size or builtins.any(v % size for v in st):
            return None
        st = [v // size for v in st]
    nd = len(shape)
    expect = 1
    for i in range(nd - 1, nd - k - 1, -1):
        if shape[i] != 1 and st[i] != expect:
            return None
        expect *= shape[i]
    ld = None
    for i in range(nd - k - 1, -1, -1):
        if shape[i] == 1:
            continue
        if ld is None:
            ld = st[i]
        elif st[i] != nxt:
            return None
        nxt = st[i] * shape[i]
    if ld is None:  # one row (or none)
        return expect
    return ld if ld >= expect else None


def _span(a, outer, n, ld):
    """a as the byte range rows at stride ld read (the kernels' overlap checks' range)."""
    if ld == n or not outer or not n:
        return a
    return Arr(a.obj, a.fw, a.shape, a.dtype, a.ptr, ((outer - 1) * ld + n) * ITEMSIZE[a.dtype],
               a.device, a.strides)


# ---- softmax ---------------------------------------------------------------------------

def _softmax(op, log, x, dim, dtype, out, stream, fake=False):
    a = describe(x, op, "x", fake)
    require_float(a, op, "x")
    to = a.dtype if dtype is None else _float_dtype(dtype, op)
    dims = _dims(dim, len(a.shape), op)
    if len(dims) > 1:
        raise TypeError(f"kernelkit.{op}: dim must be one axis, got {dim!r}")
    s = 0 if fake else _stream(a, stream, op)
    # rows at a stride are read in place, unless dtype= converts x first (one flat cast); a
    # non-last axis of a C-contiguous x is read in place as (outer, n, inner)
    src, rows, cols, inner, ld, perm = _row_layout(a, dims, op, fake, strided=to == a.dtype)
    read = _span(a, rows, cols, ld) if src is a else a
    o = _output(op, out, a, a.shape, to, [(read, "x")], in_place=True)
    dst = o if perm is None else empty(src, src.shape, to, op)
    if to != src.dtype:  # torch's dtype=: x is converted first, then normalized
        _launch(op, (src, dst), s, _C.cast, src.dtype, to, rows * cols * inner, dst.ptr, src.ptr,
                fake=fake)
        src, ld = dst, cols
    if inner > 1:  # softmax_inner (in place on dst after a cast: allowed)
        ws = None if fake else _inner_workspace(src, to, rows, cols, inner, op, s)
        _launch(op, (src, dst, ws), s, _C.softmax_inner, to, log, src.ptr, dst.ptr, rows, cols,
                inner, *_ws(ws), fake=fake)
    else:
        _launch(op, (src, dst), s, _C.softmax, to, log, src.ptr, ld, dst.ptr, rows, cols,
                fake=fake)
    if perm is None:
        return o.obj
    return moved_back(dst, perm, None if out is None else o.obj)


def _fast_softmax(x, log):
    """softmax / log_softmax over x's last axis on the fast path, else None."""
    name = _fast(x)
    n = 0 if name is None else x.numel()
    shape = x.shape if n else None
    if not shape:
        return None
    cols = shape[-1]
    y = _fast_empty_like(x)
    d = x.get_device()
    _C.softmax(name, log, x.data_ptr(), cols, y.data_ptr(), n // cols, cols, d, _fast_stream(d))
    return y


def _inner_workspace(like, dtype, outer, n, inner, op, s):
    """softmax_inner's workspace (tall columns split over blocks), None when it needs none."""
    nbytes = _C.softmax_inner_workspace_bytes(dtype, outer, n, inner)
    return workspace(like, nbytes, op, s) if nbytes else None


def _softmax_backward(log, y, dy, dim, fake=False):
    """dx of softmax (log=False) or log_softmax (log=True) along dim, from the op's output y
    and y's gradient dy (kernelkit's fused softmax_backward / log_softmax_backward, or
    softmax_inner_backward / log_softmax_inner_backward over a non-last axis: one read of y
    and dy, one write of dx, in y's dtype). The custom ops' backward only. y and dy are laid
    out by _row_layout as the forward's x is: rows at a stride read in place, a non-last axis
    of C-contiguous y and dy read in place as (outer, n, inner); when dy's layout differs from
    y's (an expanded or transposed dy) both are moved by a copy (the axis last); dx is a new
    C-contiguous array of y's shape."""
    op = "log_softmax_backward" if log else "softmax_backward"
    a = describe(y, op, "y", fake)
    g = describe(dy, op, "dy", fake)
    require_float(a, op, "y")
    require_dtype(g, a.dtype, op, "dy")
    require_shape(g, a.shape, op, "dy")
    dims = _dims(dim, len(a.shape), op)
    if len(dims) > 1:
        raise TypeError(f"kernelkit.{op}: dim must be one axis, got {dim!r}")
    s = 0 if fake else _stream(a, None, op)
    ys, rows, cols, inner, ld_y, perm = _row_layout(a, dims, op, fake)
    if inner > 1:
        if g.strides is None:  # y and dy C-contiguous: softmax_inner_backward reads both
            dx = empty(ys, ys.shape, a.dtype, op)
            ws = None if fake else _inner_workspace(ys, a.dtype, rows, cols, inner, op, s)
            _launch(op, (ys, g, dx, ws), s, _C.softmax_inner_backward, a.dtype, log, ys.ptr,
                    g.ptr, dx.ptr, rows, cols, inner, *_ws(ws), fake=fake)
            return dx.obj
        ys, rows, cols, _, ld_y, perm = _row_layout(a, dims, op, fake, middle=False)
    gs, _, _, _, ld_g, _ = _row_layout(g, dims, op, fake, middle=False)
    dx = empty(ys, ys.shape, a.dtype, op)
    _launch(op, (ys, gs, dx), s, _C.softmax_backward, a.dtype, log, ys.ptr, ld_y, gs.ptr, ld_g,
            dx.ptr, rows, cols, fake=fake)
    return dx.obj if perm is None else moved_back(dx, perm)


def softmax(x, dim=-1, dtype=None, *, out=None, stream=None):
    """Softmax of x along one axis, computed in float32: exp(x - max) / sum(exp(x - max)).

    torch.softmax's arguments and meaning; with torch tensors that require grad it is
    differentiable (it runs torch.ops.kernelkit.softmax, whose backward is kernelkit's fused
    softmax_backward, reading y and its gradient in the layout x was read in).

    Parameters
    ----------
    x : CUDA array (torch, CuPy, JAX, ...) of float32, float16 or bfloat16, any rank.
    dim : int, default -1
        The axis normalized; negative counts from the end. Read in place: the last axis
        when it is unit-stride and the other axes collapse to one row stride (a C-contiguous
        x, or strided rows such as logits[:, -1, :] or x[::2]: kernelkit's leading-dimension
        softmax), and any other axis of a C-contiguous x (channel softmax over NCHW: x as
        (outer, n, inner), kernelkit's softmax_inner; its backward softmax_inner_backward).
        Any other layout (a transposed view, a non-last axis of a strided view) is served by
        a copy that x's framework makes first (the axis moved last, made contiguous) and a
        copy back; a generic CUDA array (no framework to copy with) is refused instead, a
        ValueError naming its strides. With dtype= converting x, strided rows are copied
        first too.
    dtype : dtype, optional
        float32, float16 or bfloat16 (a name, torch / numpy / JAX dtype): x is converted to
        it first (one more kernel) and the result has it. Default: x's dtype.
    out : CUDA array, optional
        The result's array (x.shape, the result dtype, C-contiguous); may be x itself.
    stream : stream, optional
        An int handle, a torch / CuPy stream or a __cuda_stream__ object; default: the
        caller's framework's current stream on x's device.

    Returns
    -------
    An array of x's framework (out when given), x.shape, C-contiguous.

    Raises
    ------
    TypeError
        x is not a CUDA array or not float32 / float16 / bfloat16; dtype= is not one of
        them; dim is not an int.
    IndexError
        dim is out of range.
    ValueError
        out has the wrong shape, overlaps x (the rows it spans, when strided) without being
        x, or is on another device; a generic array whose layout needs a copy (strides
        named).
    RuntimeError
        A CUDA error; or out= / stream= given while an input requires grad.

    Example
    -------
    >>> x = torch.randn(8, 50257, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    >>> y = kernelkit.softmax(x, dim=-1)
    >>> y[:, 0].sum().backward()           # x.grad: softmax's gradient
    """
    if type(dim) is int and dim == -1 and dtype is None and out is None and stream is None:
        y = _fast_softmax(x, False)
        if y is not None:
            return y
    t = _route("softmax", x, (), out, stream)
    if t is not None:
        return t(x, dim, _torch_dtype(dtype, "softmax"))
    return _softmax("softmax", False, x, dim, dtype, out, stream)


def log_softmax(x, dim=-1, dtype=None, *, out=None, stream=None):
    """Log-softmax of x along one axis, computed in float32: x - max - log(sum(exp(x - max))).

    torch.log_softmax's arguments and meaning; differentiable as softmax is.

    Parameters
    ----------
    x : CUDA array of float32, float16 or bfloat16, any rank.
    dim : int, default -1
        As softmax: the last axis is read in place (contiguous rows, or rows at one stride),
        so is any axis of a C-contiguous x (log_softmax_inner); anything else goes through a
        copy by x's framework first.
    dtype : dtype, optional
        x is converted to it first; the result has it. Default: x's dtype.
    out : CUDA array, optional
        The result's array; may be x itself.
    stream : stream, optional
        As softmax.

    Returns
    -------
    An array of x's framework, x.shape.

    Raises
    ------
    TypeError, IndexError, ValueError, RuntimeError
        As softmax.

    Example
    -------
    >>> logp = kernelkit.log_softmax(logits, dim=-1)
    >>> loss = -logp.gather(-1, target[:, None]).mean()
    """
    if type(dim) is int and dim == -1 and dtype is None and out is None and stream is None:
        y = _fast_softmax(x, True)
        if y is not None:
            return y
    t = _route("log_softmax", x, (), out, stream)
    if t is not None:
        return t(x, dim, _torch_dtype(dtype, "log_softmax"))
    return _softmax("log_softmax", True, x, dim, dtype, out, stream)


# ---- reductions ------------------------------------------------------------------------

_REDUCE = {"sum": _C.REDUCE_SUM, "max": _C.REDUCE_MAX, "min": _C.REDUCE_MIN}


def _reduce(op, which, x, dim, keepdim, dtype, out, stream, fake=False):
    """Every reduction: dim None (or ()) reduces all of x with the device-wide kernel, any
    other dim the axes it names with row_reduce (rows, at a stride or not) or col_reduce (a
    middle axis), as _row_layout decides. The kernels accumulate in and write float32;
    another dtype= is one cast more."""
    a = describe(x, op, "x", fake)
    require_float(a, op, "x")
    to = "float32" if dtype is None else _float_dtype(dtype, op)
    nd = len(a.shape)
    dims = None if dim is None else _dims(dim, nd, op)
    if dims == () and nd > 0:
        dims = None  # torch: an empty dim list reduces everything
    keepdim = bool(keepdim)
    if dims is None:
        shape = (1,) * nd if keepdim else ()
    elif not keepdim and nd and dims == (nd - 1,):  # the default: x.shape[:-1]
        shape = tuple(a.shape[:-1])
    elif keepdim:
        shape = tuple(1 if i in dims else d for i, d in enumerate(a.shape))
    else:
        shape = tuple(d for i, d in enumerate(a.shape) if i not in dims)
    s = 0 if fake else _stream(a, stream, op)
    if dims is None:
        src = a if a.strides is None else moved_copy(a, (), op, "x", fake)
        read = a
    else:
        src, outer, n, inner, ld, _ = _row_layout(a, dims, op, fake)
        read = _span(a, outer, n, ld) if src is a else a
    if out is None or dims is not None or keepdim:
        o = _output(op, out, a, shape, to, [(read, "x")])
    else:  # a whole reduction without keepdim writes any one-element out=
        o = _out(out, a, op)
        require_dtype(o, to, op, "out")
        if numel(o.shape) != 1:
            raise ValueError(f"kernelkit.{op}: out has shape {tuple(o.shape)}, expected one element")
        require_no_overlap(o, a, op, "out", "x")
    acc = o if to == "float32" else empty(a, shape, "float32", op)
    if dims is None:
        n = numel(src.shape)
        ws = None if fake else workspace(src, _C.reduce_workspace_bytes(src.dtype, n), op, s)
        _launch(op, (src, acc, ws), s, _C.reduce, src.dtype, which, src.ptr, n, acc.ptr, *_ws(ws),
                fake=fake)
    elif inner == 1:
        ws = None if fake else workspace(src, _C.row_reduce_workspace_bytes(src.dtype, outer, n), op,
                                           s)
        _launch(op, (src, acc, ws), s, _C.row_reduce, src.dtype, which, src.ptr, outer, n, ld,
                acc.ptr, *_ws(ws), fake=fake)
    else:
        ws = None if fake else workspace(
            src, _C.col_reduce_workspace_bytes(src.dtype, outer, n, inner), op, s)
        _launch(op, (src, acc, ws), s, _C.col_reduce, src.dtype, which, src.ptr, outer, n, inner,
                acc.ptr, *_ws(ws), fake=fake)
    if acc is not o:
        _launch(op, (acc, o), s, _C.cast, "float32", to, numel(shape), o.ptr, acc.ptr, fake=fake)
    return o.obj


def _fast_reduce(which, x, rows):
    """A reduction of x's last axis (rows=True) or of all of x on the fast path (float32
    out), else None."""
    name = _fast(x)
    n = 0 if name is None else x.numel()
    if not n or not x.dim():
        return None
    if rows:
        cols = x.shape[-1]
        shape = x.shape[:-1]
        o = x.new_empty(*shape, dtype=_fast_f32) if shape else x.new_empty((), dtype=_fast_f32)
        ws = _fast_workspace(x, name, _C.row_reduce_workspace_bytes(name, n // cols, cols))
        _fast_launch(x, _C.row_reduce, name, which, x.data_ptr(), n // cols, cols, cols,
                     o.data_ptr(), *_ws(ws))
    else:
        o = x.new_empty((), dtype=_fast_f32)
        ws = _fast_workspace(x, name, _C.reduce_workspace_bytes(name, n))
        _fast_launch(x, _C.reduce, name, which, x.data_ptr(), n, o.data_ptr(), *_ws(ws))
    return o


def _reduce_public(op, kind, x, dim, keepdim, dtype, out, stream):
    rows = type(dim) is int and dim == -1
    if (rows or dim is None) and keepdim is False and dtype is None and out is None \
            and stream is None:
        o = _fast_reduce(_REDUCE[kind], x, rows)
        if o is not None:
            return o
    t = _route(op, x, (), out, stream)
    if t is not None:
        if dim is not None:  # the schema's int[]?
            dim = [dim] if isinstance(dim, int) else list(dim)
        return t(x, dim, keepdim, _torch_dtype(dtype, op))
    return _reduce(op, _REDUCE[kind], x, dim, keepdim, dtype, out, stream)


_REDUCE_DOC = """{title}

    {torch}; differentiable with torch tensors that require grad{grad}.

    Parameters
    ----------
    x : CUDA array (torch, CuPy, JAX, ...) of float32, float16 or bfloat16, any rank.
    dim : int or sequence of ints, {dim_default}
        The axes reduced (negative counts from the end){dim_none}. Read in place: the
        last axes of a C-contiguous x; the last axes of rows at a stride (unit-stride
        within a row, the other axes one row stride: x[:, -1, :], x[::2], x[..., :k]);
        consecutive axes that are not the last of a C-contiguous x (x.sum(0), the middle
        axis of (B, T, C): kernelkit's col_reduce). Any other layout (a transposed view,
        axes that are not consecutive{all_copy}) is a copy that x's framework makes first,
        with those axes moved last.
    keepdim : bool, default False
        Keep the reduced axes, with size 1.
    dtype : dtype, optional
        The result's dtype (float32, float16, bfloat16). Default float32: the kernel
        accumulates in and writes float32 whatever x's dtype (unlike torch, which returns
        x's dtype); another dtype is one cast of the result more.
    out : CUDA array, optional
        The result's array (the result shape and dtype, C-contiguous).
    stream : stream, optional
        An int handle, a torch / CuPy stream or a __cuda_stream__ object; default: the
        caller's framework's current stream on x's device.

    Returns
    -------
    An array of x's framework: x.shape without the reduced axes (with size-1 axes when
    keepdim).{ret}

    Raises
    ------
    TypeError
        x is not a CUDA array or not float32 / float16 / bfloat16; dim is not an int or
        a sequence of ints; dtype= is not a float dtype.
    IndexError
        An axis of dim is out of range.
    ValueError
        An axis appears twice; out has the wrong shape, overlaps x or is on another device.
    RuntimeError
        A CUDA error; or out= / stream= given while x requires grad.

    Example
    -------
    >>> {example}
    """


def _doc(fn, **kw):
    fn.__doc__ = _REDUCE_DOC.format(**kw)
    return fn


_ROW = dict(dim_default="default -1", dim_none="", ret="", all_copy="")
_ALL = dict(dim_default="optional", dim_none="; None (default): every axis, with the device-wide "
            "kernel", ret=" Deterministic: the same input gives the same bits.",
            all_copy=", every axis of a non-contiguous x")


def row_sum(x, dim=-1, keepdim=False, *, dtype=None, out=None, stream=None):
    return _reduce_public("row_sum", "sum", x, dim, keepdim, dtype, out, stream)


def row_max(x, dim=-1, keepdim=False, *, dtype=None, out=None, stream=None):
    return _reduce_public("row_max", "max", x, dim, keepdim, dtype, out, stream)


def row_min(x, dim=-1, keepdim=False, *, dtype=None, out=None, stream=None):
    return _reduce_public("row_min", "min", x, dim, keepdim, dtype, out, stream)


def sum(x, dim=None, keepdim=False, *, dtype=None, out=None, stream=None):  # noqa: A001
    return _reduce_public("sum", "sum", x, dim, keepdim, dtype, out, stream)


def max(x, dim=None, keepdim=False, *, dtype=None, out=None, stream=None):  # noqa: A001
    return _reduce_public("max", "max", x, dim, keepdim, dtype, out, stream)


def min(x, dim=None, keepdim=False, *, dtype=None, out=None, stream=None):  # noqa: A001
    return _reduce_public("min", "min", x, dim, keepdim, dtype, out, stream)


_MAXMIN_GRAD = " (the gradient goes to the maxima, shared evenly between ties, as torch.amax's)"
_doc(row_sum, title="Sum of x over the last axis (or the axes dim names), accumulated in float32.",
     torch="torch.sum's dim / keepdim / dtype", grad="", example="kernelkit.row_sum(x, dim=0)  "
     "# the bias gradient of a (tokens, features) activation", **_ROW)
_doc(row_max, title="Max of x over the last axis (or dim); NaN if a reduced slice holds one, "
     "-inf for an empty one.", torch="torch.amax's dim / keepdim (values only, no indices)",
     grad=_MAXMIN_GRAD, example="m = kernelkit.row_max(x, keepdim=True)",
     **_ROW)
_doc(row_min, title="Min of x over the last axis (or dim); NaN if a reduced slice holds one, "
     "+inf for an empty one.", torch="torch.amin's dim / keepdim (values only, no indices)",
     grad=_MAXMIN_GRAD.replace("maxima", "minima").replace("amax", "amin"),
     example="m = kernelkit.row_min(x, dim=1)", **_ROW)
_doc(sum, title="Sum of all elements of x (or over dim), accumulated in float32.",
     torch="torch.sum's dim / keepdim / dtype", grad="",
     example="kernelkit.sum(x)  # a 0-d float32 array", **_ALL)
_doc(max, title="Max of all elements of x (or over dim); NaN wins; -inf when empty.",
     torch="torch.amax's meaning (values only, no indices)", grad=_MAXMIN_GRAD,
     example="kernelkit.max(x, dim=(0, 1))", **_ALL)
_doc(min, title="Min of all elements of x (or over dim); NaN wins; +inf when empty.",
     torch="torch.amin's meaning (values only, no indices)",
     grad=_MAXMIN_GRAD.replace("maxima", "minima").replace("amax", "amin"),
     example="kernelkit.min(x)", **_ALL)


# ---- transpose, BLAS -------------------------------------------------------------------

def _transpose(x, out, stream, fake=False):
    op = "transpose"
    a = describe(x, op, "x", fake)
    require_contiguous(a, op, "x")
    require_ndim(a, 2, op, "x")
    if a.dtype not in ITEMSIZE:
        raise TypeError(f"kernelkit.{op}: x has unsupported dtype {a.dtype}")
    s = 0 if fake else _stream(a, stream, op)
    rows, cols = a.shape
    o = _output(op, out, a, (cols, rows), a.dtype, [(a, "x")])
    _launch(op, (a, o), s, _C.transpose, ITEMSIZE[a.dtype], a.ptr, o.ptr, rows, cols, fake=fake)
    return o.obj


def transpose(x, *, out=None, stream=None):
    """x (rows x cols) transposed into a new cols x rows array (materialized, not a view).

    Differentiable with torch tensors that require grad (its backward is a transpose).

    Parameters
    ----------
    x : 2-D C-contiguous CUDA array of any dtype of 1, 2, 4 or 8 bytes (bits are copied
        unchanged).
    out : CUDA array, optional
        cols x rows, x's dtype, C-contiguous, not overlapping x.
    stream : stream, optional
        As softmax.

    Returns
    -------
    An array of x's framework, shape (cols, rows).

    Raises
    ------
    TypeError
        Not a CUDA array; an unknown dtype.
    ValueError
        x is not 2-D or not contiguous (its strides are named; nothing is copied); out has
        the wrong shape, overlaps x or is on another device.
    RuntimeError
        A CUDA error; or out= / stream= given while x requires grad.

    Example
    -------
    >>> kernelkit.transpose(torch.arange(6.0, device="cuda").view(2, 3)).shape
    torch.Size([3, 2])
    """
    if out is None and stream is None:
        name = _fast(x, floats=False)
        if name is not None and x.dim() == 2 and x.numel():
            rows, cols = x.shape
            o = x.new_empty(cols, rows)
            _fast_launch(x, _C.transpose, ITEMSIZE[name], x.data_ptr(), o.data_ptr(), rows, cols)
            return o
    t = _route("transpose", x, (), out, stream)
    if t is not None:
        return t(x)
    return _transpose(x, out, stream)


def _scalars(op, alpha, beta):
    try:
        return float(alpha), float(beta)
    except (TypeError, ValueError):
        raise TypeError(f"kernelkit.{op}: alpha and beta must be real numbers, got "
                        f"{alpha!r} and {beta!r}") from None


def _fast_gemv(A, x, trans, alpha, beta):
    """gemv on the fast path (beta 0, float scales, a bool trans), else None."""
    if type(alpha) is not float or type(beta) is not float or beta != 0.0 or \
            (trans is not False and trans is not True) or _fast(A) != "float32":
        return None
    if not _fast_with(x, A) or x.dtype is not A.dtype or A.dim() != 2 or x.dim() != 1:
        return None
    m, n = A.shape
    y_len = n if trans else m
    if not m or not n or x.shape[0] != (m if trans else n):
        return None
    o = A.new_empty(y_len)
    ws = _fast_workspace(A, "float32", _C.gemv_workspace_bytes(trans, m, n))
    _fast_launch(A, _C.gemv, trans, m, n, alpha, A.data_ptr(), n, x.data_ptr(), 0.0,
                 o.data_ptr(), *_ws(ws))
    return o


def _fast_sgemm(A, B, trans_a, trans_b, alpha):
    """sgemm (beta 0) on the fast path (bool trans flags, a float alpha), else None."""
    if type(alpha) is not float or (trans_a is not False and trans_a is not True) or \
            (trans_b is not False and trans_b is not True) or _fast(A) != "float32":
        return None
    if not _fast_with(B, A) or B.dtype is not A.dtype or A.dim() != 2 or B.dim() != 2:
        return None
    m, k = (A.shape[1], A.shape[0]) if trans_a else A.shape
    kb, n = (B.shape[1], B.shape[0]) if trans_b else B.shape
    if kb != k or not m or not n or not k:
        return None
    o = A.new_empty(m, n)
    ws = _fast_workspace(A, "float32", _C.sgemm_workspace_bytes(trans_a, trans_b, m, n, k))
    _fast_launch(A, _C.sgemm, trans_a, trans_b, m, n, k, alpha, A.data_ptr(), A.shape[1],
                 B.data_ptr(), B.shape[1], 0.0, o.data_ptr(), n, *_ws(ws))
    return o


def _gemv(A, x, trans, alpha, beta, out, stream, fake=False):
    op = "gemv"
    a = describe(A, op, "A", fake)
    v = describe(x, op, "x", fake)
    require_dtype(a, "float32", op, "A")
    require_dtype(v, "float32", op, "x")
    require_ndim(a, 2, op, "A")
    require_contiguous(a, op, "A")
    require_contiguous(v, op, "x")
    m, n = a.shape
    trans = bool(trans)
    x_len, y_len = (m, n) if trans else (n, m)
    require_shape(v, (x_len,), op, "x")
    alpha, beta = _scalars(op, alpha, beta)
    s = 0 if fake else _stream(a, stream, op)
    if out is None and beta != 0.0:
        raise ValueError(f"kernelkit.{op}: beta={beta} reads y: pass it as out=")
    o = _output(op, out, a, (y_len,), "float32", [(a, "A"), (v, "x")])
    ws = None if fake else workspace(a, _C.gemv_workspace_bytes(trans, m, n), op, s)
    _launch(op, (a, v, o, ws), s, _C.gemv, trans, m, n, alpha, a.ptr, n or 1, v.ptr,
            beta, o.ptr, *_ws(ws), fake=fake)
    return o.obj


def gemv(A, x, *, trans=False, alpha=1.0, beta=0.0, out=None, stream=None):
    """y = alpha * op(A) @ x + beta * y in float32, op(A) = A or A.T.

    Differentiable with torch tensors that require grad (beta = 0 only: out= takes no
    autograd); the backward is kernelkit's own gemv and sgemm.

    Parameters
    ----------
    A : 2-D C-contiguous float32 CUDA array, m x n (row-major).
    x : 1-D C-contiguous float32 CUDA array: n long (m with trans=True).
    trans : bool, default False
        op(A) = A.T.
    alpha, beta : float
        The scales; beta != 0 reads y, so it needs out=.
    out : CUDA array, optional
        y: float32, m long (n with trans=True).
    stream : stream, optional
        As softmax.

    Returns
    -------
    y, an array of A's framework.

    Raises
    ------
    TypeError
        Not CUDA arrays, not float32, alpha / beta not numbers.
    ValueError
        Shapes that do not match, non-contiguous operands (strides named), beta != 0
        without out=, overlap of out with A or x, different devices.
    RuntimeError
        A CUDA error; or out= / stream= given while an input requires grad.

    Example
    -------
    >>> y = kernelkit.gemv(W, v)                 # W @ v
    >>> z = kernelkit.gemv(W, u, trans=True)     # W.T @ u
    """
    if out is None and stream is None:
        y = _fast_gemv(A, x, trans, alpha, beta)
        if y is not None:
            return y
    t = _route("gemv", A, (x,), out, stream)
    if t is not None:
        alpha, beta = _scalars("gemv", alpha, beta)
        if beta != 0.0:
            raise ValueError(f"kernelkit.gemv: beta={beta} reads y: pass it as out=")
        return t(A, x, bool(trans), alpha)
    return _gemv(A, x, trans, alpha, beta, out, stream)


def _sgemm(A, B, trans_a, trans_b, alpha, beta, out, stream, fake=False, op="sgemm"):
    a = describe(A, op, "A", fake)
    b = describe(B, op, "B", fake)
    require_dtype(a, "float32", op, "A")
    require_dtype(b, "float32", op, "B")
    require_ndim(a, 2, op, "A")
    require_ndim(b, 2, op, "B")
    require_contiguous(a, op, "A")
    require_contiguous(b, op, "B")
    trans_a, trans_b = bool(trans_a), bool(trans_b)
    m, k = (a.shape[1], a.shape[0]) if trans_a else a.shape
    kb, n = (b.shape[1], b.shape[0]) if trans_b else b.shape
    if kb != k:
        raise ValueError(f"kernelkit.{op}: inner dimensions differ: op(A) is {m} x {k}, "
                         f"op(B) is {kb} x {n} (A {tuple(a.shape)}, B {tuple(b.shape)})")
    alpha, beta = _scalars(op, alpha, beta)
    s = 0 if fake else _stream(a, stream, op)
    if out is None and beta != 0.0:
        raise ValueError(f"kernelkit.{op}: beta={beta} reads C: pass it as out=")
    o = _output(op, out, a, (m, n), "float32", [(a, "A"), (b, "B")])
    ws = None if fake else workspace(a, _C.sgemm_workspace_bytes(trans_a, trans_b, m, n, k), op, s)
    # row-major and contiguous: each leading dimension is the row length (1 for an empty row)
    _launch(op, (a, b, o, ws), s, _C.sgemm, trans_a, trans_b, m, n, k, alpha, a.ptr,
            a.shape[1] or 1, b.ptr, b.shape[1] or 1, beta, o.ptr, n or 1, *_ws(ws), fake=fake)
    return o.obj


def sgemm(A, B, *, trans_a=False, trans_b=False, alpha=1.0, beta=0.0, out=None, stream=None):
    """C = alpha * op(A) @ op(B) + beta * C in float32 (IEEE, no tensor cores), row-major.

    Differentiable with torch tensors that require grad (beta = 0 only); the backward is
    two more kernelkit sgemm calls.

    Parameters
    ----------
    A : 2-D C-contiguous float32 CUDA array; op(A) = A (m x k) or A.T with trans_a=True.
    B : 2-D C-contiguous float32 CUDA array; op(B) = B (k x n) or B.T with trans_b=True.
    trans_a, trans_b : bool, default False
    alpha, beta : float
        The scales; beta != 0 reads C, so it needs out=.
    out : CUDA array, optional
        C: float32, m x n, C-contiguous.
    stream : stream, optional
        As softmax.

    Returns
    -------
    C, an array of A's framework.

    Raises
    ------
    TypeError
        Not CUDA arrays, not float32 (bfloat16 / float16 are refused: no half GEMM yet),
        alpha / beta not numbers.
    ValueError
        Not 2-D, inner dimensions that differ, non-contiguous operands (strides named),
        beta != 0 without out=, overlap of out with A or B, different devices.
    RuntimeError
        A CUDA error; or out= / stream= given while an input requires grad.

    Example
    -------
    >>> C = kernelkit.sgemm(A, B, trans_b=True, alpha=0.5)   # 0.5 * A @ B.T
    """
    if out is None and stream is None and type(beta) is float and beta == 0.0:
        C = _fast_sgemm(A, B, trans_a, trans_b, alpha)
        if C is not None:
            return C
    t = _route("sgemm", A, (B,), out, stream)
    if t is not None:
        alpha, beta = _scalars("sgemm", alpha, beta)
        if beta != 0.0:
            raise ValueError(f"kernelkit.sgemm: beta={beta} reads C: pass it as out=")
        return t(A, B, bool(trans_a), bool(trans_b), alpha)
    return _sgemm(A, B, trans_a, trans_b, alpha, beta, out, stream)


def matmul(a, b, *, out=None, stream=None):
    """a @ b for 2-D float32 arrays (kernelkit's sgemm).

    Differentiable with torch tensors that require grad; the backward is kernelkit's sgemm.

    Parameters
    ----------
    a : 2-D C-contiguous float32 CUDA array, m x k.
    b : 2-D C-contiguous float32 CUDA array, k x n.
    out : CUDA array, optional
        float32, m x n.
    stream : stream, optional
        As softmax.

    Returns
    -------
    An m x n float32 array of a's framework.

    Raises
    ------
    TypeError, ValueError, RuntimeError
        As sgemm (bfloat16 operands and mismatched inner dimensions included).

    Example
    -------
    >>> h = kernelkit.matmul(x, w)   # x: (tokens, d_in), w: (d_in, d_out)
    """
    if out is None and stream is None:
        c = _fast_sgemm(a, b, False, False, 1.0)
        if c is not None:
            return c
    t = _route("matmul", a, (b,), out, stream)
    if t is not None:
        return t(a, b)
    return _sgemm(a, b, False, False, 1.0, 0.0, out, stream, op="matmul")


# ---- elementwise -----------------------------------------------------------------------

def _unary(op, which, x, out, stream, fake=False):
    a = describe(x, op, "x", fake)
    require_float(a, op, "x")
    require_contiguous(a, op, "x")
    s = 0 if fake else _stream(a, stream, op)
    o = _output(op, out, a, a.shape, a.dtype, [(a, "x")], in_place=True)
    _launch(op, (a, o), s, _C.unary, which, a.dtype, numel(a.shape), o.ptr, a.ptr, fake=fake)
    return o.obj


_UNARY_DOC = """{title}

    Differentiable with torch tensors that require grad{grad}.

    Parameters
    ----------
    x : C-contiguous CUDA array of float32, float16 or bfloat16 (computed in float32).{extra}
    out : CUDA array, optional
        x's shape and dtype, C-contiguous; may be x itself (in place).
    stream : stream, optional
        As softmax.

    Returns
    -------
    An array of x's framework, x's shape and dtype.

    Raises
    ------
    TypeError
        Not a CUDA array, an unsupported dtype.
    ValueError
        x not contiguous (strides named, nothing copied){raises}; out of the wrong shape,
        overlapping x without being x, or on another device.
    RuntimeError
        A CUDA error; or out= / stream= given while x requires grad.

    Example
    -------
    >>> {example}
    """


def _unary_public(op, which, x, out, stream, *extra):
    if out is None and stream is None:
        name = _fast(x)
        if name is not None:
            y = _fast_empty_like(x)
            d = x.get_device()
            _C.unary(which, name, x.numel(), y.data_ptr(), x.data_ptr(), d, _fast_stream(d))
            return y
    t = _route(op, x, (), out, stream)
    if t is not None:
        return t(x, *extra)
    return _unary(op, which, x, out, stream)


def relu(x, *, out=None, stream=None):
    return _unary_public("relu", _C.UNARY_RELU, x, out, stream)


def _gelu_which(approximate):
    if approximate not in ("none", "tanh"):
        raise ValueError(f"kernelkit.gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return _C.UNARY_GELU if approximate == "none" else _C.UNARY_GELU_TANH


def gelu(x, *, approximate="none", out=None, stream=None):
    return _unary_public("gelu", _gelu_which(approximate), x, out, stream, approximate)


def sigmoid(x, *, out=None, stream=None):
    return _unary_public("sigmoid", _C.UNARY_SIGMOID, x, out, stream)


relu.__doc__ = _UNARY_DOC.format(
    title="max(x, 0) elementwise (NaN stays NaN).", grad=" (gradient: g where the result > 0)",
    extra="", raises="", example="h = kernelkit.relu(h, out=h)   # in place")
gelu.__doc__ = _UNARY_DOC.format(
    title="gelu elementwise: x * Phi(x), or its tanh approximation.",
    grad=" (torch's gelu gradient, of the same approximation)",
    extra="\n    approximate : {'none', 'tanh'}, default 'none'\n        torch's meaning: the "
          "exact erf form or the tanh form.",
    raises="; approximate not 'none' / 'tanh'",
    example='kernelkit.gelu(x, approximate="tanh")')
sigmoid.__doc__ = _UNARY_DOC.format(
    title="1 / (1 + exp(-x)) elementwise.", grad=" (gradient: g * y * (1 - y))", extra="",
    raises="", example="p = kernelkit.sigmoid(logits)")


def _binary(op, which, x, y, out, stream, fake=False):
    a = describe(x, op, "a", fake)
    b = describe(y, op, "b", fake)
    require_float(a, op, "a")
    require_dtype(b, a.dtype, op, "b")
    if tuple(b.shape) != tuple(a.shape):
        raise ValueError(f"kernelkit.{op}: shapes differ: a {tuple(a.shape)}, b {tuple(b.shape)} "
                         "(no broadcasting)")
    require_contiguous(a, op, "a")
    require_contiguous(b, op, "b")
    s = 0 if fake else _stream(a, stream, op)
    o = _output(op, out, a, a.shape, a.dtype, [(a, "a"), (b, "b")], in_place=True)
    _launch(op, (a, b, o), s, _C.binary, which, a.dtype, numel(a.shape), o.ptr, a.ptr, b.ptr,
            fake=fake)
    return o.obj


_BINARY_DOC = """{title}

    Differentiable with torch tensors that require grad{grad}.

    Parameters
    ----------
    a, b : C-contiguous CUDA arrays of one shape (no broadcasting) and one dtype: float32,
        float16 or bfloat16 (computed in float32).
    out : CUDA array, optional
        The shape and dtype of a; may be a or b itself (in place).
    stream : stream, optional
        As softmax.

    Returns
    -------
    An array of a's framework.

    Raises
    ------
    TypeError
        Not CUDA arrays, unsupported or differing dtypes.
    ValueError
        Shapes that differ, non-contiguous operands (strides named), out of the wrong
        shape or overlapping an input without being it, different devices.
    RuntimeError
        A CUDA error; or out= / stream= given while an input requires grad.

    Example
    -------
    >>> {example}
    """


def _binary_public(op, which, a, b, out, stream):
    if out is None and stream is None:
        name = _fast(a)
        if name is not None and _fast_with(b, a) and b.dtype is a.dtype and b.shape == a.shape:
            y = _fast_empty_like(a)
            d = a.get_device()
            _C.binary(which, name, a.numel(), y.data_ptr(), a.data_ptr(), b.data_ptr(), d,
                      _fast_stream(d))
            return y
    t = _route(op, a, (b,), out, stream)
    if t is not None:
        return t(a, b)
    return _binary(op, which, a, b, out, stream)


def add(a, b, *, out=None, stream=None):
    return _binary_public("add", _C.BINARY_ADD, a, b, out, stream)


def mul(a, b, *, out=None, stream=None):
    return _binary_public("mul", _C.BINARY_MUL, a, b, out, stream)


add.__doc__ = _BINARY_DOC.format(title="a + b elementwise.", grad=" (g to both)",
                                 example="h = kernelkit.add(h, residual)")
mul.__doc__ = _BINARY_DOC.format(title="a * b elementwise.",
                                 grad=" (g * b to a and g * a to b, with kernelkit.mul)",
                                 example="y = kernelkit.mul(x, gate)")


def _cast(x, dtype, out, stream, fake=False):
    op = "cast"
    a = describe(x, op, "x", fake)
    require_float(a, op, "x")
    require_contiguous(a, op, "x")
    to = dtype_name(dtype, op)
    if to not in FLOAT_DTYPES:
        raise TypeError(f"kernelkit.{op}: unsupported target dtype {to} (float32, float16, bfloat16)")
    s = 0 if fake else _stream(a, stream, op)
    same_size = (to == "float32") == (a.dtype == "float32")
    o = _output(op, out, a, a.shape, to, [(a, "x")], in_place=same_size)
    _launch(op, (a, o), s, _C.cast, a.dtype, to, numel(a.shape), o.ptr, a.ptr, fake=fake)
    return o.obj


def cast(x, dtype, *, out=None, stream=None):
    """x converted to dtype (float32, float16, bfloat16, either way): round to nearest even,
    overflow to +-inf.

    Differentiable with torch tensors that require grad (the gradient is cast back).

    Parameters
    ----------
    x : C-contiguous CUDA array of float32, float16 or bfloat16.
    dtype : dtype
        The target: a name ("bfloat16", "f16", ...), a torch / numpy / JAX dtype.
    out : CUDA array, optional
        x's shape, dtype `dtype`; may be x itself when the sizes match.
    stream : stream, optional
        As softmax.

    Returns
    -------
    An array of x's framework, x's shape, dtype `dtype`.

    Raises
    ------
    TypeError
        Not a CUDA array, an unsupported source or target dtype.
    ValueError
        x not contiguous (strides named); out of the wrong shape, overlapping x without
        being it, or on another device.
    RuntimeError
        A CUDA error; or out= / stream= given while x requires grad.

    Example
    -------
    >>> xb = kernelkit.cast(x, torch.bfloat16)
    """
    if out is None and stream is None and type(dtype) is type(_fast_f32):
        name = _fast(x)
        to = None if name is None else _fast_names.get(dtype)
        if to in FLOAT_DTYPES:
            y = _fast_empty_like(x, dtype=dtype)
            _fast_launch(x, _C.cast, name, to, x.numel(), y.data_ptr(), x.data_ptr())
            return y
    t = _route("cast", x, (), out, stream)
    if t is not None:
        return t(x, _torch_dtype(dtype, "cast"))
    return _cast(x, dtype, out, stream)


# ---- norms -----------------------------------------------------------------------------

# torch.finfo(dtype).eps: torch's default eps of rms_norm (eps=None)
_FINFO_EPS = {"float32": 1.1920928955078125e-07, "float16": 0.0009765625, "bfloat16": 0.0078125}


def _norm_shape(a, normalized_shape, weight, op):
    """The normalized dims (a tuple): normalized_shape (an int or a sequence of ints) when
    given, else the weight's (layer_norm: or the bias's) shape, else x's last axis. They
    must be x's trailing dims: the kernels normalize rows x cols, cols = their product."""
    if normalized_shape is None:
        ns = tuple(weight.shape) if weight is not None else tuple(a.shape[-1:])
    elif isinstance(normalized_shape, int) and not isinstance(normalized_shape, bool):
        ns = (normalized_shape,)
    else:
        _not_an_array(normalized_shape, op)
        try:
            ns = tuple(normalized_shape)
        except TypeError:
            raise TypeError(f"kernelkit.{op}: normalized_shape must be an int or a sequence of "
                            f"ints, got {normalized_shape!r}") from None
        if not builtins.all(isinstance(d, int) and not isinstance(d, bool) for d in ns):
            raise TypeError(f"kernelkit.{op}: normalized_shape must be an int or a sequence of "
                            f"ints, got {normalized_shape!r}")
    k = len(ns)
    if not k or k > len(a.shape) or a.shape[len(a.shape) - k:] != ns:  # (tuple equality)
        raise ValueError(f"kernelkit.{op}: normalized_shape {ns} must be the trailing dims of x's "
                         f"shape {tuple(a.shape)} (kernelkit normalizes over the last axes)")
    return ns


def _not_an_array(normalized_shape, op):
    """kernelkit.rms_norm(x, w) passes w as normalized_shape (torch's order): say so."""
    if hasattr(normalized_shape, "__dlpack__") or hasattr(normalized_shape,
                                                          "__cuda_array_interface__"):
        raise TypeError(f"kernelkit.{op}: normalized_shape is an array: pass the weight by "
                        f"keyword (kernelkit.{op}(x, weight=w); torch's argument order is "
                        "(x, normalized_shape, weight, ...))")


def _eps(eps, a, op):
    if eps is None:
        return _FINFO_EPS[a.dtype]
    try:
        e = float(eps)
    except (TypeError, ValueError):
        raise TypeError(f"kernelkit.{op}: eps must be a real number, got {eps!r}") from None
    if not e >= 0.0:
        raise ValueError(f"kernelkit.{op}: eps must be >= 0, got {eps!r}")
    return e


def _param(p, a, ns, op, name, wdt, fake):
    """Describes weight / bias: x's dtype or float32 (one dtype for both), shape ns,
    C-contiguous. Returns (Arr or None, the dtype name of the parameters so far)."""
    if p is None:
        return None, wdt
    w = describe(p, op, name, fake)
    if w.dtype not in (a.dtype, "float32"):
        raise TypeError(f"kernelkit.{op}: {name} has dtype {w.dtype}, expected x's ({a.dtype}) "
                        "or float32")
    if wdt is not None and w.dtype != wdt:
        raise TypeError(f"kernelkit.{op}: {name} has dtype {w.dtype}, expected the weight's ({wdt})")
    require_shape(w, ns, op, name)
    require_contiguous(w, op, name)
    return w, w.dtype


def _norm_inputs(op, x, normalized_shape, weight, bias, eps, fake):
    """The checks every norm op shares: x (float, C-contiguous), the normalized dims, weight
    and bias, eps. Returns (a, w, b, wdt, rows, cols, eps)."""
    a = describe(x, op, "x", fake)
    require_float(a, op, "x")
    if not len(a.shape):
        raise ValueError(f"kernelkit.{op}: x must have at least one dimension, got a 0-d array")
    require_contiguous(a, op, "x")
    ns = _norm_shape(a, normalized_shape, weight if weight is not None else bias, op)
    w, wdt = _param(weight, a, ns, op, "weight", None, fake)
    b, wdt = _param(bias, a, ns, op, "bias", wdt, fake)
    rows = numel(a.shape[:len(a.shape) - len(ns)])
    return a, w, b, wdt or a.dtype, rows, numel(ns), _eps(eps, a, op)


def _norm_no_overlap(given, o, params, op, out_name):
    """A caller's out (given) against the other arrays of the call (a new one overlaps none)."""
    if given is None:
        return
    for p, name in params:
        if p is not None:
            require_no_overlap(o, p, op, out_name, name)


def _fast_norm(x, normalized_shape, weight, bias, eps, out, stream):
    """(dtype, parameters' dtype, rows, cols, eps, the parameters' addresses (0: none)) of a
    norm over x's last axis on the fast path (1-D parameters, eps None or a float, no out= /
    stream=), else None."""
    if out is not None or stream is not None:
        return None
    name = _fast(x)
    if name is None or not x.dim():
        return None
    cols = x.shape[-1]
    n = x.numel()
    if not n or not (normalized_shape is None or
                     (type(normalized_shape) is int and normalized_shape == cols)):
        return None
    wdt = None
    for p in (weight, bias):
        if p is not None:
            if not _fast_with(p, x) or p.dim() != 1 or p.shape[0] != cols:
                return None
            pn = _fast_names.get(p.dtype)
            if (pn != name and pn != "float32") or (wdt is not None and pn != wdt):
                return None
            wdt = pn
    if eps is None:
        eps = _FINFO_EPS[name]
    elif type(eps) is not float or not eps >= 0.0:
        return None
    return (name, wdt or name, n // cols, cols, eps, 0 if weight is None else weight.data_ptr(),
            0 if bias is None else bias.data_ptr())


def _stats(a, rows, want, op):
    """rows float32 (mean / rstd) from x's framework when wanted (autograd saves them)."""
    return empty(a, (rows,), "float32", op) if want else None


def _ptr(arr):
    return 0 if arr is None else arr.ptr


def _rms_norm(x, normalized_shape, weight, eps, out, stream, fake=False, save=False):
    """rms_norm; save=True (the custom op, for autograd) also returns rstd (rows float32)."""
    op = "rms_norm"
    a, w, _, wdt, rows, cols, e = _norm_inputs(op, x, normalized_shape, weight, None, eps, fake)
    s = 0 if fake else _stream(a, stream, op)
    o = _output(op, out, a, a.shape, a.dtype, [(a, "x")], in_place=True)
    _norm_no_overlap(out, o, [(w, "weight")], op, "out")
    rstd = _stats(a, rows, save, op)
    _launch(op, (a, w, o, rstd), s, _C.rms_norm, a.dtype, wdt, a.ptr, 0 if w is None else w.ptr,
            o.ptr, 0 if rstd is None else rstd.ptr, rows, cols, e, fake=fake)
    return (o.obj, rstd.obj) if save else o.obj


def _layer_norm(x, normalized_shape, weight, bias, eps, out, stream, fake=False, save=False):
    """layer_norm; save=True also returns mean and rstd (rows float32 each)."""
    op = "layer_norm"
    a, w, b, wdt, rows, cols, e = _norm_inputs(op, x, normalized_shape, weight, bias, eps, fake)
    s = 0 if fake else _stream(a, stream, op)
    o = _output(op, out, a, a.shape, a.dtype, [(a, "x")], in_place=True)
    _norm_no_overlap(out, o, [(w, "weight"), (b, "bias")], op, "out")
    mean, rstd = _stats(a, rows, save, op), _stats(a, rows, save, op)
    _launch(op, (a, w, b, o, mean, rstd), s, _C.layer_norm, a.dtype, wdt, a.ptr,
            0 if w is None else w.ptr, 0 if b is None else b.ptr, o.ptr,
            0 if mean is None else mean.ptr, 0 if rstd is None else rstd.ptr, rows, cols, e,
            fake=fake)
    return (o.obj, mean.obj, rstd.obj) if save else o.obj


def _add_rms_norm(x, residual, weight, eps, out, stream, fake=False, save=False):
    """add_rms_norm: (y, x + residual); save=True also returns rstd."""
    op = "add_rms_norm"
    a, w, _, wdt, rows, cols, e = _norm_inputs(op, x, None, weight, None, eps, fake)
    r = describe(residual, op, "residual", fake)
    require_dtype(r, a.dtype, op, "residual")
    require_shape(r, a.shape, op, "residual")
    require_contiguous(r, op, "residual")
    s = 0 if fake else _stream(a, stream, op)
    if out is None:
        y_out = sum_out = None
    else:
        try:
            y_out, sum_out = out
        except (TypeError, ValueError):
            raise TypeError(f"kernelkit.{op}: out must be a pair of arrays (y, sum), got "
                            f"{type(out).__name__}") from None
    # y may be exactly x, the sum exactly x or exactly residual; nothing else overlaps
    o = _output(op, y_out, a, a.shape, a.dtype, [(a, "x")], in_place=True)
    _norm_no_overlap(y_out, o, [(r, "residual"), (w, "weight")], op, "out[0]")
    so = _output(op, sum_out, a, a.shape, a.dtype, [(a, "x"), (r, "residual")], in_place=True)
    _norm_no_overlap(sum_out, so, [(w, "weight"), (o if y_out is not None else None, "out[0]")],
                     op, "out[1]")
    rstd = _stats(a, rows, save, op)
    _launch(op, (a, r, w, o, so, rstd), s, _C.add_rms_norm, a.dtype, wdt, a.ptr, r.ptr,
            0 if w is None else w.ptr, o.ptr, so.ptr, 0 if rstd is None else rstd.ptr, rows, cols,
            e, fake=fake)
    return (o.obj, so.obj, rstd.obj) if save else (o.obj, so.obj)


def _rms_norm_backward(dy, x, weight, rstd, cols, want_dweight, fake=False):
    """(dx, dweight) of rms_norm from the rstd it saved (kernelkit's rms_norm_backward;
    dweight None unless a weight is given and want_dweight). The custom ops' backward only:
    dy, x, rstd are C-contiguous arrays of the forward's framework."""
    op = "rms_norm_backward"
    a = describe(x, op, "x", fake)
    g = describe(dy, op, "dy", fake)
    r = describe(rstd, op, "rstd", fake)
    w = None if weight is None else describe(weight, op, "weight", fake)
    for arr, name in ((g, "dy"), (r, "rstd"), (w, "weight")):
        if arr is not None:
            require_contiguous(arr, op, name)
    rows = numel(r.shape)  # x is rows x cols (cols: the forward's normalized dims)
    require_shape(g, a.shape, op, "dy")
    require_dtype(g, a.dtype, op, "dy")
    s = 0 if fake else _stream(a, None, op)
    dx = empty(a, a.shape, a.dtype, op)
    dw = empty(w, w.shape, w.dtype, op) if w is not None and want_dweight else None
    ws = None if fake or dw is None else workspace(
        a, _C.rms_norm_backward_workspace_bytes(rows, cols), op, s)
    _launch(op, (g, a, w, r, dx, dw, ws), s, _C.rms_norm_backward, a.dtype,
            a.dtype if w is None else w.dtype, g.ptr, a.ptr, _ptr(w), r.ptr, dx.ptr, _ptr(dw),
            rows, cols, *_ws(ws), fake=fake)
    return dx.obj, None if dw is None else dw.obj


def _norm_backward_inputs(op, dy, x, rstd, params, fake):
    """Describes the arrays a norm backward reads (dy, x, rstd and the present (array, name)
    params: C-contiguous, dy of x's shape and dtype). Returns (g, a, r, rows, descs)."""
    a = describe(x, op, "x", fake)
    g = describe(dy, op, "dy", fake)
    r = describe(rstd, op, "rstd", fake)
    descs = [None if p is None else describe(p, op, name, fake) for p, name in params]
    for arr, name in ((a, "x"), (g, "dy"), (r, "rstd"), *zip(descs, [n for _, n in params])):
        if arr is not None:
            require_contiguous(arr, op, name)
    require_shape(g, a.shape, op, "dy")
    require_dtype(g, a.dtype, op, "dy")
    return g, a, r, numel(r.shape), descs


def _layer_norm_backward(dy, x, weight, bias, mean, rstd, cols, want_dweight, want_dbias,
                         fake=False):
    """(dx, dweight, dbias) of layer_norm from the mean and rstd it saved (kernelkit's
    layer_norm_backward; dweight None unless a weight is given and wanted, dbias None unless
    a bias is given and wanted: the bias is only read for its dtype and shape). The custom
    ops' backward only."""
    op = "layer_norm_backward"
    g, a, r, rows, (w, b, m) = _norm_backward_inputs(
        op, dy, x, rstd, ((weight, "weight"), (bias, "bias"), (mean, "mean")), fake)
    s = 0 if fake else _stream(a, None, op)
    dx = empty(a, a.shape, a.dtype, op)
    dw = empty(w, w.shape, w.dtype, op) if w is not None and want_dweight else None
    db = empty(b, b.shape, b.dtype, op) if b is not None and want_dbias else None
    ws = None if fake or (dw is None and db is None) else workspace(
        a, _C.layer_norm_backward_workspace_bytes(rows, cols), op, s)
    wdt = w.dtype if w is not None else b.dtype if b is not None else a.dtype
    _launch(op, (g, a, w, m, r, dx, dw, db, ws), s, _C.layer_norm_backward, a.dtype, wdt, g.ptr,
            a.ptr, _ptr(w), m.ptr, r.ptr, dx.ptr, _ptr(dw), _ptr(db), rows, cols, *_ws(ws),
            fake=fake)
    return dx.obj, None if dw is None else dw.obj, None if db is None else db.obj


def _add_rms_norm_backward(dy, sum_, dsum, weight, rstd, cols, want_dweight, fake=False):
    """(dx, dweight) of add_rms_norm from the sum and rstd it saved: dx = the rms_norm
    gradient of the sum through y plus dsum (None: no gradient reached the sum), the
    gradient of x and of residual both (kernelkit's add_rms_norm_backward, one kernel). The
    custom ops' backward only."""
    op = "add_rms_norm_backward"
    g, a, r, rows, (d, w) = _norm_backward_inputs(op, dy, sum_, rstd,
                                                  ((dsum, "dsum"), (weight, "weight")), fake)
    if d is not None:
        require_shape(d, a.shape, op, "dsum")
        require_dtype(d, a.dtype, op, "dsum")
    s = 0 if fake else _stream(a, None, op)
    dx = empty(a, a.shape, a.dtype, op)
    dw = empty(w, w.shape, w.dtype, op) if w is not None and want_dweight else None
    ws = None if fake or dw is None else workspace(
        a, _C.add_rms_norm_backward_workspace_bytes(rows, cols), op, s)
    _launch(op, (g, a, d, w, r, dx, dw, ws), s, _C.add_rms_norm_backward, a.dtype,
            a.dtype if w is None else w.dtype, g.ptr, a.ptr, _ptr(d), _ptr(w), r.ptr, dx.ptr,
            _ptr(dw), rows, cols, *_ws(ws), fake=fake)
    return dx.obj, None if dw is None else dw.obj


def _norm_shape_arg(normalized_shape, op):
    """normalized_shape as the custom ops' int[]? (None stays None)."""
    if normalized_shape is None:
        return None
    if isinstance(normalized_shape, int):
        return [normalized_shape]
    _not_an_array(normalized_shape, op)
    return list(normalized_shape)


def rms_norm(x, normalized_shape=None, weight=None, eps=None, *, out=None, stream=None):
    """RMSNorm over x's trailing dims: y = x / sqrt(mean(x^2) + eps) * weight, computed in
    float32 (kernelkit's fused row kernel: one read of x, one write of y).

    torch.nn.functional.rms_norm's arguments and meaning (normalized_shape may be left out:
    then the weight's shape, else x's last axis). Differentiable with torch tensors that
    require grad: the backward is kernelkit's rms_norm_backward (dx and dweight, the same
    bits run after run).

    Parameters
    ----------
    x : C-contiguous CUDA array of float32, float16 or bfloat16, at least 1-D.
    normalized_shape : int or sequence of ints, optional
        The normalized dims: they must be x's trailing dims (kernelkit normalizes rows x
        cols, cols = their product). Default: weight's shape, else x.shape[-1:].
    weight : CUDA array, optional
        normalized_shape, x's dtype or float32, C-contiguous; None: no scale.
    eps : float, optional
        Added to the mean square (>= 0). Default (torch's): the machine epsilon of x's
        dtype (1.19e-07 for float32, 9.8e-04 for float16, 7.8e-03 for bfloat16); pass your
        model's (1e-6, 1e-5) explicitly.
    out : CUDA array, optional
        x's shape and dtype, C-contiguous; may be x itself (in place).
    stream : stream, optional
        As softmax.

    Returns
    -------
    y, an array of x's framework, x's shape and dtype.

    Raises
    ------
    TypeError
        Not CUDA arrays; x not float32 / float16 / bfloat16; weight of another dtype than
        x's or float32; normalized_shape not ints; eps not a number.
    ValueError
        x 0-d or not contiguous (strides named, nothing copied); normalized_shape not x's
        trailing dims; weight of another shape; eps < 0 or NaN; out of the wrong shape or
        overlapping x (other than exactly x) or weight; different devices.
    RuntimeError
        A CUDA error; or out= / stream= given while an input requires grad.

    Example
    -------
    >>> h = kernelkit.rms_norm(h, weight=w, eps=1e-6)       # (tokens, hidden), w: (hidden,)
    """
    f = _fast_norm(x, normalized_shape, weight, None, eps, out, stream)
    if f is not None:
        name, wdt, rows, cols, e, w, _ = f
        y = _fast_empty_like(x)
        _fast_launch(x, _C.rms_norm, name, wdt, x.data_ptr(), w, y.data_ptr(), 0, rows, cols, e)
        return y
    t = _route("rms_norm", x, (weight,), out, stream)
    if t is not None:
        return t(x, _norm_shape_arg(normalized_shape, "rms_norm"), weight, eps)[0]
    return _rms_norm(x, normalized_shape, weight, eps, out, stream)


def layer_norm(x, normalized_shape=None, weight=None, bias=None, eps=1e-5, *, out=None,
               stream=None):
    """LayerNorm over x's trailing dims: y = (x - mean) / sqrt(var + eps) * weight + bias
    (biased variance, as the mean of squared deviations), computed in float32 (kernelkit's
    fused row kernel).

    torch.nn.functional.layer_norm's arguments and meaning (normalized_shape may be left
    out: then the weight's (or bias's) shape, else x's last axis). Differentiable with torch
    tensors that require grad (dx, dweight, dbias: kernelkit's layer_norm_backward from the
    saved mean and rstd, the column sums the same bits run after run).

    Parameters
    ----------
    x : C-contiguous CUDA array of float32, float16 or bfloat16, at least 1-D.
    normalized_shape : int or sequence of ints, optional
        The normalized dims: they must be x's trailing dims. Default: weight's (bias's)
        shape, else x.shape[-1:].
    weight, bias : CUDA arrays, optional
        normalized_shape, both of one dtype: x's or float32; C-contiguous. None: no scale /
        no shift.
    eps : float, default 1e-5
        Added to the variance (>= 0).
    out : CUDA array, optional
        x's shape and dtype; may be x itself (in place).
    stream : stream, optional
        As softmax.

    Returns
    -------
    y, an array of x's framework, x's shape and dtype.

    Raises
    ------
    TypeError, ValueError, RuntimeError
        As rms_norm; also weight and bias of different dtypes.

    Example
    -------
    >>> y = kernelkit.layer_norm(x, (768,), ln.weight, ln.bias)
    """
    f = _fast_norm(x, normalized_shape, weight, bias, eps, out, stream)
    if f is not None:
        name, wdt, rows, cols, e, w, b = f
        y = _fast_empty_like(x)
        _fast_launch(x, _C.layer_norm, name, wdt, x.data_ptr(), w, b, y.data_ptr(), 0, 0, rows,
                     cols, e)
        return y
    t = _route("layer_norm", x, (weight, bias), out, stream)
    if t is not None:
        return t(x, _norm_shape_arg(normalized_shape, "layer_norm"), weight, bias, eps)[0]
    return _layer_norm(x, normalized_shape, weight, bias, eps, out, stream)


def add_rms_norm(x, residual, weight=None, eps=None, *, out=None, stream=None):
    """The residual add and RMSNorm of a transformer block in one kernel: s = x + residual
    (rounded to x's dtype), y = rms_norm(s, weight, eps); returns (y, s), what a separate
    add then rms_norm gives (one read of x and residual, one write of y and s).

    Differentiable with torch tensors that require grad (dx = dresidual = the rms_norm
    gradient through y plus the gradient of s, in one kernel: kernelkit's
    add_rms_norm_backward).

    Parameters
    ----------
    x, residual : C-contiguous CUDA arrays of one shape and dtype (float32, float16,
        bfloat16), at least 1-D.
    weight : CUDA array, optional
        The normalized dims (x's trailing dims; default x.shape[-1:]), x's dtype or
        float32; None: no scale.
    eps : float, optional
        As rms_norm (default: the machine epsilon of x's dtype, torch's rms_norm default).
    out : pair of CUDA arrays, optional
        (y, s): x's shape and dtype each; y may be x itself, s may be x or residual itself
        (in place: the usual residual stream update), y and s must not overlap.
    stream : stream, optional
        As softmax.

    Returns
    -------
    (y, s), arrays of x's framework.

    Raises
    ------
    TypeError, ValueError, RuntimeError
        As rms_norm; also residual of another shape or dtype, out not a pair, y and s
        overlapping.

    Example
    -------
    >>> h, resid = kernelkit.add_rms_norm(attn_out, resid, w, 1e-6, out=(attn_out, resid))
    """
    f = _fast_norm(x, None, weight, None, eps, out, stream)
    if f is not None and _fast_with(residual, x) and residual.dtype is x.dtype and \
            residual.shape == x.shape:
        name, wdt, rows, cols, e, w, _ = f
        y = _fast_empty_like(x)
        s = _fast_empty_like(x)
        _fast_launch(x, _C.add_rms_norm, name, wdt, x.data_ptr(), residual.data_ptr(), w,
                     y.data_ptr(), s.data_ptr(), 0, rows, cols, e)
        return y, s
    t = _route("add_rms_norm", x, (residual, weight), out, stream)
    if t is not None:
        y, s, _ = t(x, residual, weight, eps)
        return y, s
    return _add_rms_norm(x, residual, weight, eps, out, stream)


# ---- cross-entropy ---------------------------------------------------------------------

# reduction= as ops.h's code (kernelkit::LossReduction's order: kNone, kSum, kMean)
_LOSS_REDUCTION = {"none": 0, "sum": 1, "mean": 2}


def _loss_scalars(ignore_index, reduction, label_smoothing, op):
    """(ignore_index, the reduction's code, label_smoothing) checked as torch does."""
    if not isinstance(ignore_index, int) or isinstance(ignore_index, bool):
        raise TypeError(f"kernelkit.{op}: ignore_index must be an int, got {ignore_index!r}")
    if not -2**63 <= ignore_index < 2**63:
        raise ValueError(f"kernelkit.{op}: ignore_index {ignore_index} is outside int64")
    code = _LOSS_REDUCTION.get(reduction) if isinstance(reduction, str) else None
    if code is None:
        raise ValueError(f"kernelkit.{op}: reduction must be 'none', 'mean' or 'sum', got "
                         f"{reduction!r}")
    try:
        eps = float(label_smoothing)
    except (TypeError, ValueError):
        raise TypeError(f"kernelkit.{op}: label_smoothing must be a real number, got "
                        f"{label_smoothing!r}") from None
    if not 0.0 <= eps <= 1.0:
        raise ValueError(f"kernelkit.{op}: label_smoothing must be in [0, 1], got "
                         f"{label_smoothing!r}")
    return ignore_index, code, eps


def _loss_inputs(op, input, target, fake):
    """The logits (float, (N, C), rows unit-stride at one stride ld >= C) and the targets
    (int32 / int64, (N,), C-contiguous). Returns (a, t, rows, vocab, ld)."""
    a = describe(input, op, "input", fake)
    require_float(a, op, "input")
    t = describe(target, op, "target", fake)
    if t.dtype not in ("int64", "int32"):
        raise TypeError(f"kernelkit.{op}: target has dtype {t.dtype}, expected int64 or int32 "
                        "class indices (class probabilities are not supported)")
    if len(a.shape) != 2:
        raise ValueError(f"kernelkit.{op}: input must be 2-D logits (N, C), got shape "
                         f"{tuple(a.shape)} (reshape to (-1, C), classes last)")
    rows, vocab = a.shape
    require_shape(t, (rows,), op, "target")
    require_contiguous(t, op, "target")
    if rows and not vocab:
        raise ValueError(f"kernelkit.{op}: input has {rows} rows of 0 classes")
    ld = vocab if a.strides is None else _row_stride(a, 1)
    if ld is None:  # rows not unit-stride: the ValueError naming the strides
        require_contiguous(a, op, "input")
    return a, t, rows, vocab, ld


def _fast_cross_entropy(x, target, ignore_index, reduction, label_smoothing):
    """cross_entropy on the fast path (an int ignore_index, a float label_smoothing), else
    None."""
    code = _LOSS_REDUCTION.get(reduction) if type(reduction) is str else None
    if code is None or type(ignore_index) is not int or not -2**63 <= ignore_index < 2**63 or \
            type(label_smoothing) is not float or not 0.0 <= label_smoothing <= 1.0:
        return None
    name = _fast(x)
    if name is None or x.dim() != 2 or not _fast_with(target, x) or target.dim() != 1:
        return None
    rows, vocab = x.shape
    tname = _fast_names.get(target.dtype)
    if not rows or not vocab or target.shape[0] != rows or tname not in ("int64", "int32"):
        return None
    o = x.new_empty(rows, dtype=_fast_f32) if code == 0 else x.new_empty((), dtype=_fast_f32)
    ws = _fast_workspace(x, name, _C.cross_entropy_workspace_bytes(rows, vocab))
    _fast_launch(x, _C.cross_entropy, name, tname, x.data_ptr(), vocab, target.data_ptr(), rows,
                 vocab, ignore_index, label_smoothing, code, o.data_ptr(), 0, *_ws(ws))
    return o


def _cross_entropy(input, target, ignore_index, reduction, label_smoothing, out, stream,
                   fake=False, save=False):
    """cross_entropy; save=True (the custom op, for autograd) also returns the per-row lse
    (N float32) that cross_entropy_backward reads."""
    op = "cross_entropy"
    a, t, rows, vocab, ld = _loss_inputs(op, input, target, fake)
    ii, code, eps = _loss_scalars(ignore_index, reduction, label_smoothing, op)
    s = 0 if fake else _stream(a, stream, op)
    shape = (rows,) if code == 0 else ()
    o = _output(op, out, a, shape, "float32", [(_span(a, rows, vocab, ld), "input"),
                                               (t, "target")])
    lse = empty(a, (rows,), "float32", op) if save else None
    nbytes = 0 if fake else _C.cross_entropy_workspace_bytes(rows, vocab)
    ws = workspace(a, nbytes, op, s) if nbytes else None
    _launch(op, (a, t, o, lse, ws), s, _C.cross_entropy, a.dtype, t.dtype, a.ptr, ld, t.ptr, rows,
            vocab, ii, eps, code, o.ptr, _ptr(lse), *_ws(ws), fake=fake)
    return (o.obj, lse.obj) if save else o.obj


def _cross_entropy_backward(input, target, lse, dloss, ignore_index, reduction, label_smoothing,
                            fake=False):
    """dlogits of cross_entropy from the per-row lse its forward saved and the loss's gradient
    dloss (float32: (N,) for reduction='none', () otherwise), kernelkit's
    cross_entropy_backward (one read of the logits, one write of dlogits, a new C-contiguous
    array of input's shape and dtype). The custom ops' backward only."""
    op = "cross_entropy_backward"
    a, t, rows, vocab, ld = _loss_inputs(op, input, target, fake)
    ii, code, eps = _loss_scalars(ignore_index, reduction, label_smoothing, op)
    r = describe(lse, op, "lse", fake)
    g = describe(dloss, op, "dloss", fake)
    for arr, name, shape in ((r, "lse", (rows,)), (g, "dloss", (rows,) if code == 0 else ())):
        require_dtype(arr, "float32", op, name)
        require_shape(arr, shape, op, name)
        require_contiguous(arr, op, name)
    s = 0 if fake else _stream(a, None, op)
    dx = empty(a, a.shape, a.dtype, op)
    _launch(op, (a, t, r, g, dx), s, _C.cross_entropy_backward, a.dtype, t.dtype, a.ptr, ld, t.ptr,
            r.ptr, g.ptr, rows, vocab, ii, eps, code, dx.ptr, vocab, fake=fake)
    return dx.obj


def cross_entropy(input, target, weight=None, *, ignore_index=-100, reduction="mean",
                  label_smoothing=0.0, out=None, stream=None):
    """Cross-entropy of (N, C) logits against class indices, computed in float32 in one read
    of the logits (kernelkit's fused cross_entropy: the log-sum-exp, the target's logit and,
    with label smoothing, the row sum in one pass; no (N, C) float32 copy of the logits).

    torch.nn.functional.cross_entropy's argument names and meaning for 2-D logits and class
    indices: per row, loss = logsumexp(x) - (1 - eps) x[target] - eps / C sum(x), 0 for rows
    whose target is ignore_index; 'mean' divides the sum by the rows not ignored (NaN when
    all are). Differentiable with torch tensors that require grad: the backward is kernelkit's
    cross_entropy_backward, from the per-row log-sum-exp the forward saves (N float32).

    Differences from torch: the loss is float32 whatever the logits' dtype (torch returns the
    logits' dtype); class weights are not supported (weight must be None: the kernels have
    none); a target outside [0, C) that is not ignore_index gives a NaN loss for its row (and
    a NaN sum or mean) instead of torch's device-side assert; arguments after weight are
    keyword-only (torch's positional order has size_average there).

    Parameters
    ----------
    input : CUDA array (N, C) of float32, float16 or bfloat16
        The logits, classes last. Rows at one stride are read in place (logits[:, :C'] or
        a row-strided view); rows that are not unit-stride are refused (ValueError naming
        the strides).
    target : CUDA array (N,) of int64 or int32, C-contiguous
        Class indices in [0, C), or ignore_index.
    weight : None
        Must be None (torch's per-class weights are not supported).
    ignore_index : int, default -100
        The target value whose rows count for nothing (loss 0, gradient 0, not counted by
        'mean').
    reduction : {'mean', 'sum', 'none'}, default 'mean'
    label_smoothing : float in [0, 1], default 0.0
    out : CUDA array, optional
        float32, shape () ('mean', 'sum') or (N,) ('none'); must not overlap input or target.
    stream : stream, optional
        As softmax.

    Returns
    -------
    A float32 array of input's framework: shape () for 'mean' and 'sum', (N,) for 'none'.

    Raises
    ------
    NotImplementedError
        weight is not None.
    TypeError
        Not CUDA arrays; input not float32 / float16 / bfloat16; target not int64 / int32;
        ignore_index not an int; label_smoothing not a number.
    ValueError
        input not 2-D, or its rows not unit-stride (strides named); target not of shape
        (N,) or not contiguous; C == 0 with N > 0; reduction not 'mean' / 'sum' / 'none';
        label_smoothing outside [0, 1]; out of the wrong shape or dtype or overlapping;
        different devices.
    RuntimeError
        A CUDA error; or out= / stream= given while an input requires grad.

    Example
    -------
    >>> logits = model(tokens).view(-1, vocab)          # (B*T, V) bfloat16, requires grad
    >>> loss = kernelkit.cross_entropy(logits, labels.view(-1), label_smoothing=0.1)
    >>> loss.backward()
    """
    if weight is not None:
        raise NotImplementedError("kernelkit.cross_entropy: class weights are not supported "
                                  "(weight must be None)")
    if out is None and stream is None:
        loss = _fast_cross_entropy(input, target, ignore_index, reduction, label_smoothing)
        if loss is not None:
            return loss
    t = _route("cross_entropy", input, (), out, stream)
    if t is not None:
        return t(input, target, ignore_index, reduction, label_smoothing)[0]
    return _cross_entropy(input, target, ignore_index, reduction, label_smoothing, out, stream)

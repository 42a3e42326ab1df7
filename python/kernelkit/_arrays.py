# SPDX-License-Identifier: Apache-2.0
"""Framework glue: what an argument is, where it lives, which stream it is used on, and how
to allocate an output or a workspace beside it with the caller's own framework.

Supported arrays: torch.Tensor, cupy.ndarray, jax.Array, and any other object with
``__cuda_array_interface__`` (shape, dtype, pointer, strides) and ``__dlpack_device__`` (which
device holds it): such objects need ``out=``, since kernelkit cannot allocate in their
framework. No framework is imported here: an object can only be a torch tensor if torch is
already imported (``sys.modules``), and so on.

The checks below (``require_*``) and those of ``describe`` are the package's one argument
check: kernelkit._C checks nothing and takes device addresses, so every array reaches it
described here, as CUDA memory, C-contiguous, of a known dtype.
"""

import math
import sys

# DLPack device type of CUDA memory (kDLCUDA).
_DL_CUDA = 2

FLOAT_DTYPES = ("float32", "float16", "bfloat16")

# __cuda_array_interface__ typestr (without the byte order) -> dtype name
_TYPESTR = {
    "f2": "float16", "f4": "float32", "f8": "float64",
    "i1": "int8", "i2": "int16", "i4": "int32", "i8": "int64",
    "u1": "uint8", "u2": "uint16", "u4": "uint32", "u8": "uint64", "b1": "bool",
}
ITEMSIZE = {  # every dtype kernelkit knows, and its size in bytes
    "float16": 2, "bfloat16": 2, "float32": 4, "float64": 8, "int8": 1, "int16": 2,
    "int32": 4, "int64": 8, "uint8": 1, "uint16": 2, "uint32": 4, "uint64": 8, "bool": 1,
}
_DTYPE_ALIASES = {
    "f32": "float32", "float": "float32", "f16": "float16", "half": "float16",
    "bf16": "bfloat16", "f64": "float64", "double": "float64",
}


class Arr:
    """One described array argument: the caller's object, its framework, shape, dtype name,
    device address (``ptr``, what the extension gets; 0 for a torch fake tensor), size in
    bytes, CUDA ordinal, and ``strides``: None when the array is C-contiguous, otherwise its
    strides in the framework's own unit (elements for torch, bytes for the others), kept for
    the error message or the layout dispatch of the op that reads it."""

    __slots__ = ("obj", "fw", "shape", "dtype", "ptr", "nbytes", "device", "strides")

    def __init__(self, obj, fw, shape, dtype, ptr, nbytes, device, strides=None):
        self.obj = obj
        self.fw = fw
        self.shape = shape
        self.dtype = dtype
        self.ptr = ptr
        self.nbytes = nbytes
        self.device = device
        self.strides = strides


def _err(op, msg):
    return f"kernelkit.{op}: {msg}"


def _c_contiguous(shape, strides, itemsize):
    """strides in bytes; dimensions of size 1 may have any stride (as in torch / DLPack)."""
    expect = itemsize
    for n, s in zip(reversed(shape), reversed(strides)):
        if n != 1 and s != expect:
            return False
        expect *= n
    return True


# The product of a shape's sizes (1 for ()): math.prod, in C (a Python loop cost ~0.15 us a
# call on the hot path); torch SymInts multiply through it as well.
numel = math.prod

# torch and torch.Tensor once torch is imported (found in sys.modules by _torch_tensor(), never
# imported here), and torch's current-stream getter (_torch_stream): module globals, so that
# the hot path (describe, empty, current_stream) reads no sys.modules and no torch attribute
# chain per call.
_torch = None
_TorchTensor = None
_torch_stream = None


def _torch_tensor():
    """torch.Tensor when torch is imported, else None (cached once found)."""
    global _torch, _TorchTensor
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    _torch, _TorchTensor = torch, torch.Tensor
    return _TorchTensor


def describe(x, op, name, fake=False):
    """Arr for x, or TypeError (not a CUDA array, CPU memory). A non-contiguous array is
    described (its strides kept), not refused: each op decides what it can read
    (require_contiguous, or the row layout dispatch of _ops).

    fake: x may be a torch fake or meta tensor (the custom ops' fake implementations run
    the same checks as the real ones: a meta tensor stands for any device, ptr is 0), or a
    JAX array or jit tracer (kernelkit._jax: shape and dtype, device -1, ptr 0; a concrete
    array's device is checked; the outputs empty makes beside it are jax.ShapeDtypeStruct,
    the result types of kernelkit._jax's XLA FFI calls)."""
    tensor = _TorchTensor or _torch_tensor()
    if tensor is not None and isinstance(x, tensor):
        # (the cheapest torch attributes: this runs for every array of every call)
        if fake:
            if not (x.is_cuda or x.is_meta):
                raise TypeError(_err(op, f"{name} is a torch tensor on {x.device}; kernelkit needs CUDA tensors"))
            # (x.numel(): a SymInt under dynamic shapes, where x.nbytes raises)
            return Arr(x, "torch", x.shape, torch_dtype_name(x.dtype), 0,
                       x.numel() * x.element_size(), x.get_device(),
                       None if x.is_contiguous() else tuple(x.stride()))
        if not x.is_cuda:
            raise TypeError(_err(op, f"{name} is a torch tensor on {x.device}; kernelkit needs CUDA tensors"))
        dt = x.dtype
        return Arr(x, "torch", x.shape, _TORCH_NAMES.get(dt) or torch_dtype_name(dt), x.data_ptr(),
                   x.nbytes, x.get_device(), None if x.is_contiguous() else tuple(x.stride()))
    cupy = sys.modules.get("cupy")
    if cupy is not None and isinstance(x, cupy.ndarray):
        return Arr(x, "cupy", tuple(x.shape), x.dtype.name, x.data.ptr, x.nbytes, x.device.id,
                   None if x.flags.c_contiguous else tuple(x.strides))
    jax = sys.modules.get("jax")
    if jax is not None and isinstance(x, jax.Array):
        if fake and isinstance(x, jax.core.Tracer):  # kernelkit._jax's checks under jit
            return Arr(x, "jax", tuple(x.shape), x.dtype.name, 0, x.size * x.dtype.itemsize, -1)
        devices = x.devices()
        if len(devices) != 1:
            raise ValueError(_err(op, f"{name} is sharded over {len(devices)} devices; "
                                      "kernelkit needs an array on one GPU"))
        (d,) = devices
        if d.platform not in ("gpu", "cuda"):
            raise TypeError(_err(op, f"{name} is a JAX array on {d.platform} ({d}); kernelkit "
                                     "needs arrays on a CUDA GPU"))
        if fake:  # kernelkit._jax: a concrete array's device checked, no address read
            return Arr(x, "jax", tuple(x.shape), x.dtype.name, 0, x.nbytes, -1)
        hw = getattr(d, "local_hardware_id", None)  # the CUDA ordinal (d.id is global)
        return Arr(x, "jax", tuple(x.shape), x.dtype.name, x.unsafe_buffer_pointer(), x.nbytes,
                   d.id if hw is None else hw)
    return _describe_generic(x, op, name)


def _describe_generic(x, op, name):
    kind = f"{type(x).__module__}.{type(x).__qualname__}"
    dl_device = getattr(x, "__dlpack_device__", None)
    if dl_device is not None:
        dev_type, dev_id = dl_device()
        if int(dev_type) != _DL_CUDA:
            raise TypeError(_err(op, f"{name} ({kind}) is not in CUDA device memory (DLPack device "
                                     f"type {int(dev_type)}); kernelkit needs CUDA arrays"))
    cai = getattr(x, "__cuda_array_interface__", None)
    if cai is None or dl_device is None:
        raise TypeError(_err(op, f"{name} must be a CUDA array (torch.Tensor, cupy.ndarray, "
                                 "jax.Array, or an object with __cuda_array_interface__ and "
                                 f"__dlpack_device__), got {kind}"))
    shape = tuple(int(d) for d in cai["shape"])
    dtype = _TYPESTR.get(cai["typestr"][1:], cai["typestr"])
    itemsize = int(cai["typestr"][2:]) if cai["typestr"][2:].isdigit() else 0
    strides = cai.get("strides")
    if strides is not None and _c_contiguous(shape, strides, itemsize):
        strides = None
    return Arr(x, "generic", shape, dtype, int(cai["data"][0]), numel(shape) * itemsize,
               int(dev_id), None if strides is None else tuple(int(v) for v in strides))


_TORCH_NAMES = {}


def torch_dtype_name(dtype):
    """"float32" for torch.float32 (cached: str() of a torch dtype is slow)."""
    name = _TORCH_NAMES.get(dtype)
    if name is None:
        name = _TORCH_NAMES[dtype] = str(dtype)[6:]  # "torch.float32" -> "float32"
    return name


def dtype_name(dtype, op):
    """The canonical name ("float32", ...) of a dtype given as a string, torch.dtype,
    numpy / cupy dtype, JAX or ml_dtypes scalar type."""
    if isinstance(dtype, str):
        name = _DTYPE_ALIASES.get(dtype, dtype)
    else:
        t = type(dtype)  # (not sys.modules: torch.compile traces this, from _ops._torch_dtype)
        if t.__name__ == "dtype" and t.__module__ == "torch":
            name = torch_dtype_name(dtype)
        else:
            name = getattr(dtype, "name", None)  # numpy.dtype
            if not isinstance(name, str):
                name = getattr(getattr(dtype, "dtype", None), "name", None)  # jnp.float32
            if not isinstance(name, str):
                name = getattr(dtype, "__name__", None)  # numpy.float32, ml_dtypes.bfloat16
    if name not in ITEMSIZE:
        raise TypeError(_err(op, f"unknown dtype {dtype!r}"))
    return name


# ---- checks ---------------------------------------------------------------------------

def require_contiguous(a, op, name):
    """ValueError naming the strides unless a is C-contiguous: an op that reads its operand
    as one flat range (elementwise, transpose, BLAS, device-wide reductions) never copies."""
    if a.strides is None:
        return
    if a.fw == "torch":
        raise ValueError(_err(op, f"{name} is not contiguous (shape {tuple(a.shape)}, strides "
                                  f"{a.strides}); pass {name}.contiguous()"))
    hint = f"; pass cupy.ascontiguousarray({name})" if a.fw == "cupy" else ""
    raise ValueError(_err(op, f"{name} is not C-contiguous (shape {tuple(a.shape)}, strides "
                              f"{a.strides}){hint}"))


def require_float(a, op, name):
    if a.dtype not in FLOAT_DTYPES:
        raise TypeError(_err(op, f"{name} has unsupported dtype {a.dtype} (float32, float16, bfloat16)"))


def require_dtype(a, dtype, op, name):
    if a.dtype != dtype:
        raise TypeError(_err(op, f"{name} has dtype {a.dtype}, expected {dtype}"))


def require_shape(a, shape, op, name):
    if tuple(a.shape) != tuple(shape):
        raise ValueError(_err(op, f"{name} has shape {tuple(a.shape)}, expected {tuple(shape)}"))


def require_ndim(a, ndim, op, name):
    if len(a.shape) != ndim:
        raise ValueError(_err(op, f"{name} must be {ndim}-D, got shape {tuple(a.shape)}"))


def require_same_device(arrs, op):
    dev = arrs[0].device
    for a in arrs[1:]:
        if a.device != dev:
            raise ValueError(_err(op, f"arrays on different devices (cuda:{dev} and cuda:{a.device})"))


def require_no_overlap(out, a, op, out_name, in_name, allow_exact=False):
    if allow_exact and out.ptr == a.ptr and out.nbytes == a.nbytes:
        return
    if out.nbytes and a.nbytes and out.ptr < a.ptr + a.nbytes and a.ptr < out.ptr + out.nbytes:
        extra = " (only exact in-place is allowed)" if allow_exact else ""
        raise ValueError(_err(op, f"{out_name} overlaps {in_name}{extra}"))


# ---- allocation, streams --------------------------------------------------------------



def workspace(like, nbytes, op, stream=None):
    """The one place workspaces are made: nbytes uninitialized bytes from the caller's
    framework on like's device, for a launch on `stream` (a handle; every op passes its
    own), or None when the op needs none (nbytes == 0). kernelkit allocates nothing itself, and every op is correct
    whatever its workspace holds, so no fill is paid for (it cost row_sum 22-33 % at mid
    sizes).

    torch: a block of torch's caching allocator taken for `stream` itself (raw_alloc, ~1 us
    less host time than a uint8 tensor) and handed back when the returned Arr is dropped,
    after the op's launches are enqueued: the allocator reuses it in that stream's order,
    also when stream= is not torch's current stream (a tensor would be tied to the current
    one). A uint8 tensor instead when like's device is not the current one (raw_alloc takes
    the current device), torch has no raw allocator, or no stream is given."""
    if not nbytes:
        return None
    if like.fw == "torch" and like.ptr and stream is not None:
        raw = _torch_raw if _torch_raw is not None else _find_torch_raw()
        if raw and like.device == raw[2]():
            nbytes = int(nbytes)
            b = _RawBlock(raw[0](nbytes, stream), raw[1])
            return Arr(b, "torch", (nbytes,), "uint8", b.ptr, nbytes, like.device)
    return empty(like, (int(nbytes),), "uint8", op, "a workspace")


class _RawBlock:
    """A block of torch's caching allocator, handed back (raw_delete) when dropped."""

    __slots__ = ("ptr", "_delete")

    def __init__(self, ptr, delete):
        self.ptr, self._delete = ptr, delete

    def __del__(self):
        try:
            self._delete(self.ptr)
        except Exception:  # noqa: BLE001 (interpreter shutdown: torch already gone)
            pass


# (raw_alloc(nbytes, stream), raw_delete(ptr), current device()); () where torch has none
# (workspaces are uint8 tensors then); None until looked up
_torch_raw = None


def _find_torch_raw():
    global _torch_raw
    c = sys.modules["torch"]._C
    fns = tuple(getattr(c, n, None) for n in ("_cuda_cudaCachingAllocator_raw_alloc",
                                              "_cuda_cudaCachingAllocator_raw_delete",
                                              "_cuda_getDevice"))
    _torch_raw = fns if all(fns) else ()
    return _torch_raw


def empty(like, shape, dtype, op, what="an output"):
    """An uninitialized C-contiguous array of the caller's framework on like's device (what:
    its name in the error for a framework kernelkit cannot allocate with)."""
    fw = like.fw
    if fw == "torch":
        torch = _torch or sys.modules["torch"]
        x = like.obj
        # (torch's argument parsing is most of the host time here, CPU figures: new_empty of a
        # tuple 1.07-1.25 us, of a torch.Size 1.6, of the sizes as arguments 0.76-0.86;
        # empty_like(x, memory_format=) 0.79, with dtype= too 0.82)
        if shape is like.shape and like.strides is None:
            # x's own shape (softmax, elementwise, norms: the caller passes a.shape itself);
            # contiguous_format: the standard strides even where x's size-1 axes have others
            cf = torch.contiguous_format
            if dtype == like.dtype:
                t = torch.empty_like(x, memory_format=cf)
            else:
                t = torch.empty_like(x, dtype=getattr(torch, dtype), memory_format=cf)
            if like.ptr:  # a real tensor (the hot path)
                return Arr(t, "torch", shape, dtype, t.data_ptr(), t.nbytes, like.device)
        elif len(shape):
            t = x.new_empty(*shape, dtype=getattr(torch, dtype))
        else:
            t = x.new_empty((), dtype=getattr(torch, dtype))
        if like.ptr:
            return Arr(t, "torch", t.shape, dtype, t.data_ptr(), t.nbytes, like.device)
        # a fake or meta tensor (a custom op's fake implementation) has no address to read;
        # (numel() * element_size(): SymInts under dynamic shapes, where nbytes raises)
        ptr = 0 if (t.is_meta or _is_fake(t)) else t.data_ptr()
        return Arr(t, "torch", t.shape, dtype, ptr, t.numel() * t.element_size(), like.device)
    shape = tuple(shape)
    if fw == "cupy":
        cupy = sys.modules["cupy"]
        with cupy.cuda.Device(like.device):
            c = cupy.empty(shape, dtype=dtype)
        return Arr(c, "cupy", shape, dtype, c.data.ptr, c.nbytes, like.device)
    if fw == "jax":
        jnp = sys.modules["jax"].numpy
        if like.device == -1:  # kernelkit._jax's checks: the result's shape and dtype only
            sds = sys.modules["jax"].ShapeDtypeStruct(shape, getattr(jnp, dtype))
            return Arr(sds, "jax", shape, dtype, 0, numel(shape) * ITEMSIZE[dtype], -1)
        (d,) = like.obj.devices()
        j = jnp.zeros(shape, dtype=getattr(jnp, dtype), device=d)  # JAX has no uninitialized arrays
        return Arr(j, "jax", shape, dtype, j.unsafe_buffer_pointer(), j.nbytes, like.device)
    kind = f"{type(like.obj).__module__}.{type(like.obj).__qualname__}"
    hint = "pass out=" if what == "an output" else "use torch, CuPy or JAX arrays"
    raise TypeError(_err(op, f"cannot allocate {what} beside a {kind}: {hint}"))


def _is_fake(t):
    """t is a torch FakeTensor (torch.compile's tracing tensors)."""
    from torch._subclasses.fake_tensor import FakeTensor

    return isinstance(t, FakeTensor)


def stream_handle(stream, op):
    """The integer handle of an explicit stream: an int, an object with __cuda_stream__
    (the CUDA stream protocol), a torch.cuda.Stream (.cuda_stream) or a cupy Stream (.ptr)."""
    if isinstance(stream, int) and not isinstance(stream, bool):
        return stream
    proto = getattr(stream, "__cuda_stream__", None)
    if proto is not None:
        value = proto() if callable(proto) else proto
        return int(value[1])
    for attr in ("cuda_stream", "ptr"):
        handle = getattr(stream, attr, None)
        if isinstance(handle, int):
            return handle
    raise TypeError(_err(op, f"stream must be an int handle or a stream object (__cuda_stream__, "
                             f"torch.cuda.Stream, cupy Stream), got {type(stream).__name__}"))


def current_stream(a):
    """The stream a's framework would use now on a's device (JAX: the legacy default
    stream, with the arrays made ready first and the stream synchronized after)."""
    fw = a.fw
    if fw == "torch":
        return (_torch_stream or _find_torch_stream())(a.device)
    if fw == "cupy":
        cuda = sys.modules["cupy"].cuda
        try:
            return cuda.get_current_stream(a.device).ptr
        except TypeError:  # older CuPy: the current device's stream
            with cuda.Device(a.device):
                return cuda.get_current_stream().ptr
    return 0


def _find_torch_stream():
    """torch's getter of the current stream's handle on a device (its raw C getter, else the
    public torch.cuda.current_stream(d).cuda_stream), cached."""
    global _torch_stream
    torch = sys.modules["torch"]
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    _torch_stream = raw if raw is not None else (lambda d: torch.cuda.current_stream(d).cuda_stream)
    return _torch_stream


# ---- layout copies (the framework's, explicit) -----------------------------------------

def permutation(ndim, dims):
    """The axis order that moves `dims` (distinct, non-negative) last, the others first in
    their order."""
    return [d for d in range(ndim) if d not in dims] + list(dims)


def moved_copy(a, dims, op, name, fake=False):
    """Arr of a C-contiguous copy of a, made by a's own framework, with the axes `dims` moved
    last (in that order): how a row kernel serves a layout it cannot read in place today
    (see _ops._row_layout, the one place that decides). A generic array (no framework to
    copy with) is a ValueError naming its strides."""
    perm = permutation(len(a.shape), dims)
    fw = a.fw
    if fw == "torch":
        c = a.obj.permute(perm).contiguous()
    elif fw == "cupy":
        cupy = sys.modules["cupy"]
        with cupy.cuda.Device(a.device):
            c = cupy.ascontiguousarray(a.obj.transpose(perm))
    elif fw == "jax":
        c = sys.modules["jax"].numpy.transpose(a.obj, perm)  # a new row-major array
    else:
        require_contiguous(a, op, name)
        raise ValueError(_err(op, f"{name}: reducing axes {tuple(dims)} of a generic array needs "
                                  f"a copy (shape {tuple(a.shape)}); pass the axes last"))
    return describe(c, op, name, fake)


def moved_back(y, perm, out=None):
    """y (an array in the moved layout of `permutation`) back in the original axis order:
    written into out when given (out's framework object), else as a new C-contiguous array
    of y's framework."""
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    fw = y.fw
    if fw == "torch":
        v = y.obj.permute(inv)
        return out.copy_(v) if out is not None else v.contiguous()
    if fw == "cupy":
        cupy = sys.modules["cupy"]
        with cupy.cuda.Device(y.device):
            if out is not None:
                out[...] = y.obj.transpose(inv)
                return out
            return cupy.ascontiguousarray(y.obj.transpose(inv))
    return sys.modules["jax"].numpy.transpose(y.obj, inv)

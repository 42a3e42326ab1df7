# SPDX-License-Identifier: Apache-2.0
"""Shared test helpers.

FakeCudaArray: a CUDA array that is only a description (shape, dtype, a made-up device
address). It speaks __cuda_array_interface__ (what kernelkit's Python checks read) and
__dlpack__ (a real DLPack capsule built with ctypes, device kDLCUDA, that the extension
accepts), so the argument checks of both layers run without a GPU. Nothing may ever launch
on one: on a machine with a GPU the tests that would reach a launch with it are skipped.
"""

import ctypes
import importlib.util
import os

import pytest

# JAX would otherwise take 75% of the GPU's memory at its first use, beside torch.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import kernelkit  # noqa: E402
from kernelkit import _C  # noqa: E402

HAS_TORCH = importlib.util.find_spec("torch") is not None
HAS_CUPY = importlib.util.find_spec("cupy") is not None
HAS_JAX = importlib.util.find_spec("jax") is not None
HAS_GPU = _C.device_count() > 0

needs_gpu = pytest.mark.skipif(not HAS_GPU, reason="needs a CUDA GPU (none visible)")
needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="needs torch (not installed)")
needs_torch_gpu = pytest.mark.skipif(not (HAS_TORCH and HAS_GPU),
                                     reason="needs torch and a CUDA GPU")
no_gpu_only = pytest.mark.skipif(
    HAS_GPU, reason="runs a call past every check on a fake device address: only without a GPU")


# ---- a DLPack producer in ctypes ------------------------------------------------------

class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensor(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(_DLManagedTensor))
_DLManagedTensor._fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p),
                             ("deleter", _DELETER)]

_LIVE = {}  # address of a managed tensor -> the ctypes objects it points into


@_DELETER
def _delete(p):
    _LIVE.pop(ctypes.addressof(p.contents), None)


_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_CAPSULE_NAME = ctypes.c_char_p(b"dltensor")

# dtype name -> (DLPack code, bits, __cuda_array_interface__ typestr)
_DL = {
    "float32": (2, 32, "<f4"), "float16": (2, 16, "<f2"), "bfloat16": (4, 16, "<V2"),
    "float64": (2, 64, "<f8"), "int8": (0, 8, "|i1"), "int32": (0, 32, "<i4"),
    "int64": (0, 64, "<i8"), "uint8": (1, 8, "|u1"),
}


class FakeCudaArray:
    """A CUDA array description at a made-up address (never dereferenced)."""

    def __init__(self, shape, dtype="float32", ptr=0x7F0000000000, device=0, strides=None):
        self.shape = tuple(shape)
        self.dtype = dtype
        self.ptr = ptr
        self.device = device
        self.strides = strides  # in bytes, or None (C-contiguous)
        self.dlpack_calls = 0

    @property
    def itemsize(self):
        return _DL[self.dtype][1] // 8

    @property
    def nbytes(self):
        n = self.itemsize
        for d in self.shape:
            n *= d
        return n

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.shape, "typestr": _DL[self.dtype][2], "data": (self.ptr, False),
                "strides": self.strides, "version": 3}

    def __dlpack_device__(self):
        return (2, self.device)

    def __dlpack__(self, stream=None, max_version=None, **kwargs):
        self.dlpack_calls += 1
        code, bits, _ = _DL[self.dtype]
        mt = _DLManagedTensor()
        nd = len(self.shape)
        shape = (ctypes.c_int64 * max(nd, 1))(*self.shape)
        strides = None
        if self.strides is not None:
            strides = (ctypes.c_int64 * max(nd, 1))(*[s // self.itemsize for s in self.strides])
        t = mt.dl_tensor
        t.data = self.ptr
        t.device = _DLDevice(2, self.device)
        t.ndim = nd
        t.dtype = _DLDataType(code, bits, 1)
        t.shape = shape
        t.strides = strides if strides is not None else ctypes.POINTER(ctypes.c_int64)()
        t.byte_offset = 0
        mt.deleter = _delete
        _LIVE[ctypes.addressof(mt)] = (mt, shape, strides)
        return _capsule_new(ctypes.addressof(mt), _CAPSULE_NAME, None)


def fake(shape, dtype="float32", **kw):
    return FakeCudaArray(shape, dtype, **kw)


LAUNCHERS = ("softmax", "row_reduce", "reduce", "transpose", "gemv", "sgemm", "unary", "binary",
             "cast", "synchronize")


@pytest.fixture
def calls(monkeypatch):
    """Replaces every launching function of the extension with a recorder: a test can see
    what would have been launched, and the checks' tests prove nothing was."""
    log = []
    for name in LAUNCHERS:
        monkeypatch.setattr(_C, name, lambda *a, _n=name: log.append((_n, a)))
    return log


def pytest_report_header(config):
    fw = [n for n, ok in (("torch", HAS_TORCH), ("cupy", HAS_CUPY), ("jax", HAS_JAX)) if ok]
    return (f"kernelkit {kernelkit.__version__}: {_C.device_count()} CUDA device(s); "
            f"frameworks: {', '.join(fw) or 'none'}")

# SPDX-License-Identifier: Apache-2.0
"""Shared test helpers.

FakeCudaArray: a CUDA array that is only a description (shape, dtype, a made-up device
address). It speaks __cuda_array_interface__ and __dlpack_device__, what kernelkit's Python
layer reads, so the package's argument checks run without a GPU, and the `calls` fixture
records the device addresses and sizes that would reach the extension. Nothing may ever
launch on one: on a machine with a GPU the tests that would reach a launch with it are
skipped.
"""

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

# dtype name -> __cuda_array_interface__ typestr (bfloat16 has none: a generic producer
# cannot offer it, "<V2" stands for it)
_TYPESTR = {
    "float32": "<f4", "float16": "<f2", "bfloat16": "<V2", "float64": "<f8", "int8": "|i1",
    "int32": "<i4", "int64": "<i8", "uint8": "|u1",
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
        return int(_TYPESTR[self.dtype][2:])

    @property
    def nbytes(self):
        n = self.itemsize
        for d in self.shape:
            n *= d
        return n

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.shape, "typestr": _TYPESTR[self.dtype], "data": (self.ptr, False),
                "strides": self.strides, "version": 3}

    def __dlpack_device__(self):
        return (2, self.device)

    def __dlpack__(self, stream=None, max_version=None, **kwargs):
        """Counted, never served: kernelkit reads an array's description and never exports
        (or copies) it."""
        self.dlpack_calls += 1
        raise BufferError("a FakeCudaArray has no memory to export")


def fake(shape, dtype="float32", **kw):
    return FakeCudaArray(shape, dtype, **kw)


# The extension's functions that launch nothing: every other one is replaced by the
# recorder of `calls` (so a new op's launcher is recorded without being listed here).
QUERIES = ("device_count", "_raise_for")


def launchers():
    return [name for name, f in vars(_C).items()
            if callable(f) and not name.startswith("__") and name not in QUERIES
            and not name.endswith("_workspace_bytes")]


@pytest.fixture
def calls(monkeypatch):
    """Replaces every launching function of the extension with a recorder: a test can see
    what would have been launched, and the checks' tests prove nothing was."""
    log = []
    for name in launchers():
        monkeypatch.setattr(_C, name, lambda *a, _n=name: log.append((_n, a)))
    return log


def pytest_report_header(config):
    fw = [n for n, ok in (("torch", HAS_TORCH), ("cupy", HAS_CUPY), ("jax", HAS_JAX)) if ok]
    return (f"kernelkit {kernelkit.__version__}: {_C.device_count()} CUDA device(s); "
            f"frameworks: {', '.join(fw) or 'none'}")

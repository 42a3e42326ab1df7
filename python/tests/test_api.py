# SPDX-License-Identifier: Apache-2.0
"""Tests that need no GPU: the import, the signatures, every argument error the package
raises before any launch (on FakeCudaArray descriptions, numpy arrays, CPU torch tensors and
plain objects), what each function hands the extension, and the extension's translation of
kernelkit's own errors."""

import inspect
import pathlib
import re

import numpy as np
import pytest

import kernelkit
from kernelkit import _C
from conftest import fake, needs_torch, no_gpu_only

# The functions of one float array x (float32, float16, bfloat16 only).
FLOAT_X = ["softmax", "log_softmax", "row_sum", "row_max", "row_min", "sum", "max", "min", "relu",
           "gelu", "sigmoid", "rms_norm", "layer_norm"]


def _x(make):
    return (make((4, 8), "float32"),)


# Valid positional arguments of every function of the package, arrays made by
# make(shape, dtype); test_import_exports_every_function checks that these are exactly the
# package's functions (a new op needs its line here).
ARGS = {
    **{name: _x for name in FLOAT_X},
    "transpose": _x,
    "gemv": lambda make: (make((4, 8), "float32"), make((8,), "float32")),
    "sgemm": lambda make: (make((4, 8), "float32"), make((8, 3), "float32")),
    "matmul": lambda make: (make((4, 8), "float32"), make((8, 3), "float32")),
    "add": lambda make: (make((4, 8), "float32"), make((4, 8), "float32")),
    "mul": lambda make: (make((4, 8), "float32"), make((4, 8), "float32")),
    "cast": lambda make: (make((4, 8), "float32"), "bfloat16"),
    "rms_norm": _x,
    "layer_norm": _x,
    "add_rms_norm": lambda make: (make((4, 8), "float32"), make((4, 8), "float32")),
    "cross_entropy": lambda make: (make((4, 8), "float32"), make((4,), "int64")),
}
FUNCS = list(ARGS)


def args_for(name, make):
    """Valid positional arguments for `name`, arrays made by make(shape, dtype)."""
    return ARGS[name](make)


# ---- the module -----------------------------------------------------------------------

def test_import_exports_every_function():
    assert sorted(kernelkit.__all__) == sorted(FUNCS + ["device_count", "register_torch_ops"])
    for name in FUNCS:
        assert callable(getattr(kernelkit, name)), name


def test_version_is_the_headers():
    """kernelkit.__version__ is KERNELKIT_VERSION_STRING of the headers it was built from."""
    header = pathlib.Path(__file__).resolve().parents[2] / "include/kernelkit/version.cuh"
    found = re.search(r'^#define KERNELKIT_VERSION_STRING "([^"]+)"$', header.read_text(), re.M)
    assert found, header
    assert kernelkit.__version__ == _C.__version__ == found.group(1)


def test_device_count_without_raising():
    n = kernelkit.device_count()
    assert isinstance(n, int) and n >= 0


@pytest.mark.parametrize("name", FUNCS)
def test_signature_out_and_stream_are_keyword_only(name):
    params = inspect.signature(getattr(kernelkit, name)).parameters
    for kw in ("out", "stream"):
        assert kw in params, f"{name} has no {kw}="
        assert params[kw].kind is inspect.Parameter.KEYWORD_ONLY
        assert params[kw].default is None
    assert getattr(kernelkit, name).__doc__


def test_signatures_of_options():
    sig = inspect.signature
    assert list(sig(kernelkit.gemv).parameters) == ["A", "x", "trans", "alpha", "beta", "out", "stream"]
    assert list(sig(kernelkit.sgemm).parameters) == [
        "A", "B", "trans_a", "trans_b", "alpha", "beta", "out", "stream"]
    assert sig(kernelkit.gelu).parameters["approximate"].default == "none"
    assert list(sig(kernelkit.cast).parameters)[:2] == ["x", "dtype"]


def test_cuda_errors_map_to_python_exceptions():
    # cudaErrorInvalidValue (kernelkit's "bad argument") -> ValueError, the rest -> RuntimeError
    with pytest.raises(ValueError, match="cudaErrorInvalidValue: invalid argument"):
        _C._raise_for(1, "softmax")
    with pytest.raises(RuntimeError, match="kernelkit.sum: cudaErrorMemoryAllocation: out of memory"):
        _C._raise_for(2, "sum")
    with pytest.raises(RuntimeError, match="no kernel image is available"):
        _C._raise_for(209, "softmax")  # cudaErrorNoKernelImageForDevice
    _C._raise_for(0, "softmax")  # cudaSuccess raises nothing


def test_workspace_bytes_of_every_op():
    for rows, cols in [(0, 0), (1, 1 << 24), (1 << 20, 7), (4, 1 << 22)]:
        for dt in ("float32", "float16", "bfloat16"):
            assert _C.row_reduce_workspace_bytes(dt, rows, cols) >= 0
    for trans in (False, True):
        assert _C.gemv_workspace_bytes(trans, 8, 1 << 22) >= 0
    for trans_a in (False, True):
        for trans_b in (False, True):
            assert _C.sgemm_workspace_bytes(trans_a, trans_b, 64, 64, 1 << 20) >= 0
    # only op(B) = B^T may pack B into the workspace
    assert _C.sgemm_workspace_bytes(False, True, 2048, 2048, 2048) > \
        _C.sgemm_workspace_bytes(False, False, 2048, 2048, 2048)
    # kernelkit's figure, unchanged: none for a shape with nothing to split or a dtype no op
    # takes (the package checks x's dtype before it asks: test_unsupported_dtype)
    assert _C.row_reduce_workspace_bytes("float32", 4, 1 << 22) > 0
    assert _C.row_reduce_workspace_bytes("int8", 4, 1 << 22) == 0
    assert _C.row_reduce_workspace_bytes("float32", -1, 1 << 22) == 0
    # col_reduce: partials for a split of n (x.sum(0) of a tall matrix), none for many short
    # columns; inner == 1 is row_reduce's figure
    assert _C.col_reduce_workspace_bytes("float32", 1, 1 << 20, 64) > 0
    assert _C.col_reduce_workspace_bytes("bfloat16", 1, 1 << 20, 64) > 0
    assert _C.col_reduce_workspace_bytes("int8", 1, 1 << 20, 64) == 0
    assert _C.col_reduce_workspace_bytes("float32", 1, 1 << 22, 1) == \
        _C.row_reduce_workspace_bytes("float32", 1, 1 << 22)
    # softmax_inner: partials for a split of tall columns, none for inner == 1 (the row
    # softmax) or a dtype no op takes
    assert _C.softmax_inner_workspace_bytes("float32", 1, 100000, 4) > 0
    assert _C.softmax_inner_workspace_bytes("bfloat16", 1, 1 << 20, 64) > 0
    assert _C.softmax_inner_workspace_bytes("float32", 1, 100000, 1) == 0
    assert _C.softmax_inner_workspace_bytes("int8", 1, 100000, 4) == 0
    # cross_entropy: per-chunk statistics; none without rows
    assert _C.cross_entropy_workspace_bytes(3, 128256) > 0
    assert _C.cross_entropy_workspace_bytes(0, 128256) == 0


def test_workspace_helper():
    from kernelkit._arrays import describe, workspace

    like = describe(fake((4,)), "sum", "x")
    assert workspace(like, 0, "row_sum") is None  # no workspace, no allocation
    with pytest.raises(TypeError, match="cannot allocate a workspace beside"):
        workspace(like, 64, "row_sum")


def test_reduce_workspace_bytes():
    assert _C.reduce_workspace_bytes("float32", 0) == 0
    assert _C.reduce_workspace_bytes("float32", 1000) == 0  # one tile: one block, no workspace
    small = _C.reduce_workspace_bytes("float32", 100000)
    big = _C.reduce_workspace_bytes("float32", 1 << 28)
    assert 0 < small <= big
    assert _C.reduce_workspace_bytes("bfloat16", 1 << 20) > 0
    assert _C.reduce_workspace_bytes("float64", 1 << 20) == 0  # no op takes float64
    assert _C.reduce_workspace_bytes("float32", -1) == 0
    # rms_norm_backward's dweight partials: one row of floats per part
    assert _C.rms_norm_backward_workspace_bytes(4, 8) >= 4 * 8 * 4
    assert _C.rms_norm_backward_workspace_bytes(1 << 20, 4096) > 0
    assert _C.rms_norm_backward_workspace_bytes(0, 8) == 0
    assert _C.rms_norm_backward_workspace_bytes(-1, 8) == 0


# ---- arrays that are not CUDA arrays: TypeError ----------------------------------------

@pytest.mark.parametrize("name", FUNCS)
def test_cpu_numpy_array_is_a_type_error(name, calls):
    args = args_for(name, lambda shape, dtype: np.zeros(shape, dtype))
    with pytest.raises(TypeError, match="not in CUDA device memory"):
        getattr(kernelkit, name)(*args)
    assert calls == []


@needs_torch
@pytest.mark.parametrize("name", FUNCS)
def test_cpu_torch_tensor_is_a_type_error(name, calls):
    import torch

    args = args_for(name, lambda shape, dtype: torch.zeros(shape, dtype=getattr(torch, dtype)))
    with pytest.raises(TypeError, match="torch tensor on cpu"):
        getattr(kernelkit, name)(*args)
    assert calls == []


@pytest.mark.parametrize("obj", [[1.0, 2.0], 3.0, "x", None, object()])
def test_non_arrays_are_type_errors(obj, calls):
    with pytest.raises(TypeError, match="must be a CUDA array"):
        kernelkit.softmax(obj)
    assert calls == []


# ---- dtypes: TypeError -----------------------------------------------------------------

@pytest.mark.parametrize("name", FLOAT_X)
@pytest.mark.parametrize("dtype", ["float64", "int32", "int8", "bfloat16"])
def test_unsupported_dtype(name, dtype, calls):
    # bfloat16 has no __cuda_array_interface__ typestr: a generic producer cannot offer it
    with pytest.raises(TypeError, match="unsupported dtype"):
        getattr(kernelkit, name)(fake((4, 8), dtype), out=fake((4, 8), dtype, ptr=1 << 44))
    assert calls == []


def test_blas_dtypes(calls):
    with pytest.raises(TypeError, match="A has dtype float16, expected float32"):
        kernelkit.gemv(fake((4, 8), "float16"), fake((8,)), out=fake((4,), ptr=1 << 44))
    with pytest.raises(TypeError, match="B has dtype float64, expected float32"):
        kernelkit.sgemm(fake((4, 8)), fake((8, 3), "float64"), out=fake((4, 3), ptr=1 << 44))
    with pytest.raises(TypeError, match="out has dtype float16, expected float32"):
        kernelkit.matmul(fake((4, 8)), fake((8, 3), ptr=1 << 43), out=fake((4, 3), "float16", ptr=1 << 44))
    assert calls == []


def test_elementwise_dtypes(calls):
    with pytest.raises(TypeError, match="b has dtype float16, expected float32"):
        kernelkit.add(fake((4,)), fake((4,), "float16", ptr=1 << 43), out=fake((4,), ptr=1 << 44))
    with pytest.raises(TypeError, match="out has dtype float32, expected float16"):
        kernelkit.relu(fake((4,), "float16"), out=fake((4,), ptr=1 << 44))
    with pytest.raises(TypeError, match="unknown dtype 'float12'"):
        kernelkit.cast(fake((4,)), "float12", out=fake((4,), ptr=1 << 44))
    with pytest.raises(TypeError, match="unsupported target dtype float64"):
        kernelkit.cast(fake((4,)), np.float64, out=fake((4,), "float64", ptr=1 << 44))
    with pytest.raises(TypeError, match="out has dtype float32, expected float16"):
        kernelkit.cast(fake((4,)), "f16", out=fake((4,), ptr=1 << 44))
    with pytest.raises(TypeError, match="out has dtype float16, expected float32"):
        kernelkit.row_sum(fake((4, 8), "float16"), out=fake((4,), "float16", ptr=1 << 44))
    assert calls == []


@pytest.mark.parametrize("name", FUNCS)
def test_out_dtype(name, calls):
    addresses = iter(range(1 << 40, 1 << 41, 1 << 30))
    args = args_for(name, lambda shape, dtype: fake(shape, dtype, ptr=next(addresses)))
    want = "bfloat16" if name == "cast" else "float32"
    out = fake((4, 8), "int32", ptr=1 << 44)
    if name == "add_rms_norm":  # out=(y, sum)
        out = (out, fake((4, 8), "int32", ptr=1 << 45))
    with pytest.raises(TypeError, match=f"out has dtype int32, expected {want}"):
        getattr(kernelkit, name)(*args, out=out)
    assert calls == []


# ---- contiguity, shapes, devices, overlap: ValueError ----------------------------------

def test_non_contiguous_is_a_value_error_not_a_copy(calls):
    x = fake((4, 8), strides=(4, 16))  # a transposed view
    for f in (kernelkit.softmax, kernelkit.row_sum, kernelkit.transpose, kernelkit.relu):
        with pytest.raises(ValueError, match=r"not C-contiguous \(shape \(4, 8\), strides \(4, 16\)\)"):
            f(x, out=fake((8, 4), ptr=1 << 44))
    assert x.dlpack_calls == 0 and calls == []


def test_size_one_dimensions_may_have_any_stride(calls):
    x = fake((4, 1), strides=(4, 999))
    kernelkit.softmax(x, out=fake((4, 1), ptr=1 << 44), stream=0)
    assert [c[0] for c in calls] == ["softmax"]


@pytest.mark.parametrize("name,out_shape,msg", [
    ("softmax", (4, 9), r"out has shape \(4, 9\), expected \(4, 8\)"),
    ("log_softmax", (8, 4), r"out has shape \(8, 4\), expected \(4, 8\)"),
    ("row_sum", (8,), r"out has shape \(8,\), expected \(4,\)"),
    ("row_max", (4, 1), r"out has shape \(4, 1\), expected \(4,\)"),
    ("transpose", (4, 8), r"out has shape \(4, 8\), expected \(8, 4\)"),
    ("relu", (32,), r"out has shape \(32,\), expected \(4, 8\)"),
    ("sum", (2,), r"out has shape \(2,\), expected one element"),
])
def test_out_shape(name, out_shape, msg, calls):
    with pytest.raises(ValueError, match=msg):
        getattr(kernelkit, name)(fake((4, 8)), out=fake(out_shape, ptr=1 << 44))
    assert calls == []


def test_blas_shapes(calls):
    A = fake((4, 8))
    with pytest.raises(ValueError, match=r"x has shape \(4,\), expected \(8,\)"):
        kernelkit.gemv(A, fake((4,), ptr=1 << 43))
    with pytest.raises(ValueError, match=r"out has shape \(8,\), expected \(4,\)"):
        kernelkit.gemv(A, fake((8,), ptr=1 << 43), out=fake((8,), ptr=1 << 44))
    with pytest.raises(ValueError, match="A must be 2-D"):
        kernelkit.gemv(fake((32,)), fake((8,), ptr=1 << 43))
    with pytest.raises(ValueError, match=r"inner dimensions differ: op\(A\) is 4 x 8, op\(B\) is 3 x 8"):
        kernelkit.sgemm(A, fake((3, 8), ptr=1 << 43))
    with pytest.raises(ValueError, match=r"out has shape \(4, 4\), expected \(8, 3\)"):
        kernelkit.sgemm(A, fake((4, 3), ptr=1 << 43), trans_a=True, out=fake((4, 4), ptr=1 << 44))
    with pytest.raises(ValueError, match="B must be 2-D"):
        kernelkit.matmul(A, fake((8,), ptr=1 << 43))
    with pytest.raises(ValueError, match="x must be 2-D"):
        kernelkit.transpose(fake((2, 3, 4)))
    with pytest.raises(ValueError, match=r"shapes differ: a \(4, 8\), b \(8, 4\)"):
        kernelkit.mul(A, fake((8, 4), ptr=1 << 43))
    assert calls == []


def test_beta_needs_out_and_scalars_are_numbers(calls):
    with pytest.raises(ValueError, match="beta=0.5 reads y: pass it as out="):
        kernelkit.gemv(fake((4, 8)), fake((8,), ptr=1 << 43), beta=0.5)
    with pytest.raises(ValueError, match="beta=1.0 reads C"):
        kernelkit.sgemm(fake((4, 8)), fake((8, 3), ptr=1 << 43), beta=1)
    with pytest.raises(TypeError, match="alpha and beta must be real numbers"):
        kernelkit.gemv(fake((4, 8)), fake((8,), ptr=1 << 43), alpha="two")
    with pytest.raises(ValueError, match="approximate must be 'none' or 'tanh', got 'erf'"):
        kernelkit.gelu(fake((4,)), approximate="erf")
    assert calls == []


def test_devices_must_match(calls):
    with pytest.raises(ValueError, match=r"different devices \(cuda:0 and cuda:1\)"):
        kernelkit.softmax(fake((4, 8)), out=fake((4, 8), ptr=1 << 44, device=1))
    with pytest.raises(ValueError, match="different devices"):
        kernelkit.add(fake((4,)), fake((4,), device=1, ptr=1 << 43), out=fake((4,), ptr=1 << 44))
    assert calls == []


def test_overlap(calls):
    base = 1 << 44
    x = fake((4, 8), ptr=base)
    # out starting one row into x
    with pytest.raises(ValueError, match=r"out overlaps x \(only exact in-place is allowed\)"):
        kernelkit.softmax(x, out=fake((4, 8), ptr=base + 32))
    with pytest.raises(ValueError, match="out overlaps x"):
        kernelkit.row_sum(x, out=fake((4,), ptr=base + 4))
    with pytest.raises(ValueError, match="out overlaps x"):
        kernelkit.transpose(x, out=fake((8, 4), ptr=base))  # no in-place transpose
    with pytest.raises(ValueError, match="out overlaps b"):
        kernelkit.add(x, fake((4, 8), ptr=base + 1024), out=fake((4, 8), ptr=base + 1040))
    with pytest.raises(ValueError, match="out overlaps A"):
        kernelkit.gemv(x, fake((8,), ptr=1 << 40), out=fake((4,), ptr=base + 16))
    with pytest.raises(ValueError, match="out overlaps B"):
        kernelkit.sgemm(x, fake((8, 3), ptr=1 << 40), out=fake((4, 3), ptr=(1 << 40) + 8))
    with pytest.raises(ValueError, match="out overlaps x"):
        kernelkit.cast(x, "float16", out=fake((4, 8), "float16", ptr=base))  # sizes differ
    assert calls == []
    # exact in-place is fine where the op allows it
    kernelkit.softmax(x, out=x, stream=0)
    kernelkit.relu(x, out=x, stream=0)
    kernelkit.add(x, fake((4, 8), ptr=1 << 40), out=x, stream=0)
    kernelkit.cast(x, "float32", out=x, stream=0)
    assert [c[0] for c in calls] == ["softmax", "unary", "binary", "cast"]


def test_generic_arrays_need_out(calls):
    with pytest.raises(TypeError, match="cannot allocate an output beside a conftest.FakeCudaArray"):
        kernelkit.softmax(fake((4, 8)))
    assert calls == []


# ---- streams ---------------------------------------------------------------------------

class _ProtocolStream:
    def __cuda_stream__(self):
        return (0, 0xABC)


class _TorchLikeStream:
    cuda_stream = 0xDEF


class _CupyLikeStream:
    ptr = 0x123


@pytest.mark.parametrize("stream,handle", [(None, 0), (0, 0), (77, 77), (_ProtocolStream(), 0xABC),
                                           (_TorchLikeStream(), 0xDEF), (_CupyLikeStream(), 0x123)])
def test_stream_handles(stream, handle, calls):
    x = fake((4, 8))
    out = fake((4, 8), ptr=1 << 44)
    kernelkit.softmax(x, out=out, stream=stream)
    ((name, args),) = calls
    assert name == "softmax" and args[:-1] == ("float32", False, x.ptr, 8, out.ptr, 4, 8, 0)
    assert args[-1] == handle


@pytest.mark.parametrize("stream", ["0", 1.5, True, object()])
def test_bad_stream_is_a_type_error(stream, calls):
    with pytest.raises(TypeError, match="stream must be"):
        kernelkit.softmax(fake((4, 8)), out=fake((4, 8), ptr=1 << 44), stream=stream)
    assert calls == []


def test_what_each_function_launches(calls, monkeypatch):
    """Everything each function hands the extension: kernelkit's arguments (dtype, device
    addresses, sizes, options, workspace), the device and the stream. A wrong mapping fails
    here."""
    for f in ("row_reduce", "col_reduce", "reduce", "gemv", "sgemm", "softmax_inner",
              "cross_entropy"):  # fake arrays get no workspace: ask for none
        monkeypatch.setattr(_C, f"{f}_workspace_bytes", lambda *a: 0)
    X, Y, O = 1 << 40, 1 << 41, 1 << 44  # noqa: N806 (x's, a second input's and out's addresses)
    o = lambda shape, dt="float32": fake(shape, dt, ptr=O)  # noqa: E731
    x = fake((2, 3, 8), ptr=X)
    kernelkit.log_softmax(x, out=o((2, 3, 8)))
    kernelkit.row_min(x, out=o((2, 3)))
    kernelkit.sum(x, out=o(()))
    kernelkit.gelu(fake((5,), ptr=X), approximate="tanh", out=o((5,)))
    kernelkit.sigmoid(fake((5,), "float16", ptr=X), out=o((5,), "float16"))
    kernelkit.mul(fake((5,), ptr=X), fake((5,), ptr=Y), out=o((5,)))
    kernelkit.gemv(fake((4, 8), ptr=X), fake((4,), ptr=Y), trans=True, alpha=2, beta=3, out=o((8,)))
    kernelkit.sgemm(fake((8, 4), ptr=X), fake((3, 8), ptr=Y), trans_a=True, trans_b=True,
                    alpha=0.5, out=o((4, 3)))
    kernelkit.matmul(fake((4, 0), ptr=X), fake((0, 3), ptr=Y), out=o((4, 3)))
    kernelkit.cast(fake((5,), ptr=X), "float16", out=o((5,), "float16"))
    kernelkit.transpose(fake((5, 3), "int8", ptr=X), out=o((3, 5), "int8"))
    kernelkit.softmax(fake((7,), ptr=X, device=2), out=fake((7,), ptr=O, device=2), stream=9)
    # a non-last axis of a C-contiguous x: softmax_inner over (outer, n, inner), in place
    kernelkit.log_softmax(x, 1, out=o((2, 3, 8)))
    kernelkit.softmax(fake((5, 4, 1), ptr=X), 1, out=o((5, 4, 1)))  # inner 1: rows
    # cross_entropy: logits at a row stride (ld 16), int32 targets
    kernelkit.cross_entropy(fake((4, 10), ptr=X, strides=(64, 4)), fake((4,), "int32", ptr=Y),
                            ignore_index=3, reduction="none", label_smoothing=0.25, out=o((4,)))
    kernelkit.cross_entropy(fake((4, 10), "float16", ptr=X), fake((4,), "int64", ptr=Y),
                            reduction="sum", out=o(()))
    assert calls == [
        ("softmax", ("float32", True, X, 8, O, 6, 8, 0, 0)),
        ("row_reduce", ("float32", _C.REDUCE_MIN, X, 6, 8, 8, O, 0, 0, 0, 0)),
        ("reduce", ("float32", _C.REDUCE_SUM, X, 48, O, 0, 0, 0, 0)),
        ("unary", (_C.UNARY_GELU_TANH, "float32", 5, O, X, 0, 0)),
        ("unary", (_C.UNARY_SIGMOID, "float16", 5, O, X, 0, 0)),
        ("binary", (_C.BINARY_MUL, "float32", 5, O, X, Y, 0, 0)),
        # m, n, alpha, A, lda, x, beta, y
        ("gemv", (True, 4, 8, 2.0, X, 8, Y, 3.0, O, 0, 0, 0, 0)),
        # m, n, k, alpha, A, lda, B, ldb, beta, C, ldc
        ("sgemm", (True, True, 4, 3, 8, 0.5, X, 4, Y, 8, 0.0, O, 3, 0, 0, 0, 0)),
        ("sgemm", (False, False, 4, 3, 0, 1.0, X, 1, Y, 3, 0.0, O, 3, 0, 0, 0, 0)),
        ("cast", ("float32", "float16", 5, O, X, 0, 0)),
        ("transpose", (1, X, O, 5, 3, 0, 0)),
        ("softmax", ("float32", False, X, 7, O, 1, 7, 2, 9)),
        ("softmax_inner", ("float32", True, X, O, 2, 3, 8, 0, 0, 0, 0)),
        ("softmax", ("float32", False, X, 4, O, 5, 4, 0, 0)),
        # dtype, target dtype, logits, ld, target, rows, vocab, ignore_index, eps, reduction,
        # loss, lse, workspace
        ("cross_entropy", ("float32", "int32", X, 16, Y, 4, 10, 3, 0.25, 0, O, 0, 0, 0, 0, 0)),
        ("cross_entropy", ("float16", "int64", X, 10, Y, 4, 10, -100, 0.0, 1, O, 0, 0, 0, 0, 0)),
    ]


def test_cross_entropy_arguments(calls):
    """torch's meaning, checked before anything launches; weight is refused (no class
    weights in the kernels)."""
    x, t, o = fake((4, 8)), fake((4,), "int64", ptr=1 << 42), fake((), ptr=1 << 44)
    ce = kernelkit.cross_entropy
    with pytest.raises(NotImplementedError, match="class weights are not supported"):
        ce(x, t, fake((8,), ptr=1 << 43), out=o)
    for kw, exc, msg in [
        ({"reduction": "batchmean"}, ValueError, "reduction must be 'none', 'mean' or 'sum'"),
        ({"reduction": None}, ValueError, "reduction must be"),
        ({"label_smoothing": -0.1}, ValueError, r"label_smoothing must be in \[0, 1\]"),
        ({"label_smoothing": float("nan")}, ValueError, "label_smoothing must be in"),
        ({"label_smoothing": "x"}, TypeError, "label_smoothing must be a real number"),
        ({"ignore_index": 1.0}, TypeError, "ignore_index must be an int"),
        ({"ignore_index": True}, TypeError, "ignore_index must be an int"),
    ]:
        with pytest.raises(exc, match=msg):
            ce(x, t, out=o, **kw)
    with pytest.raises(TypeError, match="target has dtype float32, expected int64 or int32"):
        ce(x, fake((4,), ptr=1 << 42), out=o)
    with pytest.raises(TypeError, match="unsupported dtype float64"):
        ce(fake((4, 8), "float64"), t, out=o)
    with pytest.raises(ValueError, match=r"input must be 2-D logits \(N, C\), got shape \(8,\)"):
        ce(fake((8,)), t, out=o)
    with pytest.raises(ValueError, match=r"target has shape \(3,\), expected \(4,\)"):
        ce(x, fake((3,), "int64", ptr=1 << 42), out=o)
    with pytest.raises(ValueError, match=r"input is not C-contiguous \(shape \(4, 8\), strides"):
        ce(fake((4, 8), strides=(4, 16)), t, out=o)  # rows not unit-stride
    with pytest.raises(ValueError, match="target is not C-contiguous"):
        ce(x, fake((4,), "int64", ptr=1 << 42, strides=(16,)), out=o)
    with pytest.raises(ValueError, match=r"out has shape \(4,\), expected \(\)"):
        ce(x, t, out=fake((4,), ptr=1 << 44))
    with pytest.raises(ValueError, match=r"out has shape \(\), expected \(4,\)"):
        ce(x, t, reduction="none", out=o)
    with pytest.raises(ValueError, match="overlap"):
        ce(x, t, out=fake((), ptr=x.ptr + 4))
    with pytest.raises(ValueError, match="input has 4 rows of 0 classes"):
        ce(fake((4, 0)), t, out=o)
    assert calls == []
    ce(fake((0, 8)), fake((0,), "int64", ptr=1 << 42), out=o)  # no rows: the mean of nothing
    assert [c[0] for c in calls] == ["cross_entropy"]


def test_generic_arrays_get_no_workspace(calls):
    # the device-wide reductions need a workspace from the caller's framework
    with pytest.raises(TypeError, match="cannot allocate a workspace beside a conftest.FakeCudaArray"):
        kernelkit.sum(fake((1000, 1000)), out=fake((), ptr=1 << 44))
    assert calls == []


# ---- the extension: kernelkit's own answer, translated -----------------------------------

def test_extension_takes_addresses_not_arrays():
    # nothing is imported, converted or copied: an array object is not an argument
    cpu = np.zeros((4, 8), np.float32)
    with pytest.raises(TypeError, match="incompatible function arguments"):
        _C.softmax("float32", False, cpu, 8, cpu, 4, 8, 0, 0)


def test_extension_turns_kernelkit_argument_errors_into_value_errors():
    """Arguments that kernelkit itself refuses (its cudaErrorInvalidValue, before it touches
    the device, so with or without a GPU): the extension adds no check of its own, it raises
    what kernelkit answers, named after the op."""
    X, O, W = 1 << 40, 1 << 44, 1 << 45  # noqa: N806
    invalid = "cudaErrorInvalidValue: invalid argument"
    with pytest.raises(ValueError, match=f"kernelkit.softmax: {invalid}"):
        _C.softmax("float32", False, X, 8, X + 4, 4, 8, 0, 0)  # out partly overlaps x
    with pytest.raises(ValueError, match=f"kernelkit.log_softmax: {invalid}"):
        _C.softmax("float32", True, X, 8, O, -1, 8, 0, 0)
    with pytest.raises(ValueError, match=f"kernelkit.softmax: {invalid}"):
        _C.softmax("float64", False, X, 8, O, 4, 8, 0, 0)  # a dtype no op takes
    with pytest.raises(ValueError, match=f"kernelkit.row_sum: {invalid}"):
        _C.row_reduce("float32", _C.REDUCE_SUM, X, 4, 8, 8, X + 4, 0, 0, 0, 0)  # out inside x
    with pytest.raises(ValueError, match=f"kernelkit.row_reduce: {invalid}"):
        _C.row_reduce("float32", 7, X, 4, 8, 8, O, 0, 0, 0, 0)  # no such reduction
    with pytest.raises(ValueError, match=f"kernelkit.row_max: {invalid}"):
        _C.row_reduce("float32", _C.REDUCE_MAX, X, 4, 8, 7, O, 0, 0, 0, 0)  # ld < cols
    with pytest.raises(ValueError, match=f"kernelkit.row_min: {invalid}"):
        _C.row_reduce("float32", _C.REDUCE_MIN, X, 4, 8, 16, X + 4 * 40, 0, 0, 0, 0)  # out in a gap
    with pytest.raises(ValueError, match=f"kernelkit.col_reduce: {invalid}"):
        _C.col_reduce("float32", 7, X, 2, 3, 8, O, 0, 0, 0, 0)  # no such reduction
    with pytest.raises(ValueError, match=f"kernelkit.row_sum: {invalid}"):
        _C.col_reduce("float32", _C.REDUCE_SUM, X, 2, -3, 8, O, 0, 0, 0, 0)
    with pytest.raises(ValueError, match=f"kernelkit.sum: {invalid}"):
        _C.reduce("float32", _C.REDUCE_SUM, X, 1 << 20, O, W, 1, 0, 0)  # workspace too small
    with pytest.raises(ValueError, match=f"kernelkit.transpose: {invalid}"):
        _C.transpose(3, X, O, 4, 8, 0, 0)  # no 3-byte element
    with pytest.raises(ValueError, match=f"kernelkit.gemv: {invalid}"):
        _C.gemv(False, 4, 8, 1.0, X, 7, O, 0.0, W, 0, 0, 0, 0)  # lda < n
    with pytest.raises(ValueError, match=f"kernelkit.sgemm: {invalid}"):
        _C.sgemm(False, False, -4, 3, 8, 1.0, X, 8, O, 3, 0.0, W, 3, 0, 0, 0, 0)
    with pytest.raises(ValueError, match=f"kernelkit.add: {invalid}"):
        _C.binary(_C.BINARY_ADD, "float32", 8, X + 4, X, O, 0, 0)  # out partly overlaps a
    with pytest.raises(ValueError, match=f"kernelkit.cast: {invalid}"):
        _C.cast("float32", "int8", 8, O, X, 0, 0)
    with pytest.raises(ValueError, match=f"kernelkit.rms_norm: {invalid}"):
        _C.rms_norm("float32", "float32", X, W, O, 0, 4, 8, -1.0, 0, 0)  # eps < 0
    with pytest.raises(ValueError, match=f"kernelkit.rms_norm: {invalid}"):
        _C.rms_norm("float32", "float16", X, W, O, 0, 4, 8, 1e-6, 0, 0)  # no (f32, f16) pair
    with pytest.raises(ValueError, match=f"kernelkit.layer_norm: {invalid}"):
        _C.layer_norm("bfloat16", "bfloat16", X, W, W, X + 2, 0, 0, 4, 8, 1e-5, 0, 0)  # y = x + 1
    with pytest.raises(ValueError, match=f"kernelkit.add_rms_norm: {invalid}"):
        _C.add_rms_norm("float16", "float32", X, W, 0, O, O, 0, 4, 8, 1e-5, 0, 0)  # y is sum
    with pytest.raises(ValueError, match=f"kernelkit.rms_norm_backward: {invalid}"):
        _C.rms_norm_backward("float32", "float32", X, W, W + 64, O, O + 256, O + 512, 4, 8, 0, 0, 0,
                             0)  # dweight without a workspace
    with pytest.raises(ValueError, match=f"kernelkit.softmax: {invalid}"):
        _C.softmax("float32", False, X, 7, O, 4, 8, 0, 0)  # ld < cols
    with pytest.raises(ValueError, match=f"kernelkit.log_softmax: {invalid}"):
        _C.softmax("float32", True, X, 16, X + 4 * 40, 4, 8, 0, 0)  # out in the rows' gaps
    with pytest.raises(ValueError, match=f"kernelkit.softmax_backward: {invalid}"):
        _C.softmax_backward("float32", False, X, 8, O, 8, X, 4, 8, 0, 0)  # dx over y
    with pytest.raises(ValueError, match=f"kernelkit.log_softmax_backward: {invalid}"):
        _C.softmax_backward("bfloat16", True, X, 8, O, 7, W, 4, 8, 0, 0)  # ld_dy < cols
    with pytest.raises(ValueError, match=f"kernelkit.softmax_backward: {invalid}"):
        _C.softmax_backward("float64", False, X, 8, O, 8, W, 4, 8, 0, 0)  # a dtype no op takes
    # softmax_inner over (outer, n, inner) and its backward
    with pytest.raises(ValueError, match=f"kernelkit.softmax: {invalid}"):
        _C.softmax_inner("float32", False, X, X + 4, 2, 3, 8, 0, 0, 0, 0)  # out partly over x
    with pytest.raises(ValueError, match=f"kernelkit.log_softmax: {invalid}"):
        _C.softmax_inner("float16", True, X, O, 2, 3, 8, O + 16, 64, 0, 0)  # workspace over out
    with pytest.raises(ValueError, match=f"kernelkit.softmax: {invalid}"):
        _C.softmax_inner("int8", False, X, O, 2, 3, 8, 0, 0, 0, 0)  # a dtype no op takes
    with pytest.raises(ValueError, match=f"kernelkit.log_softmax_backward: {invalid}"):
        _C.softmax_inner_backward("float32", True, X, O, X, 2, 3, 8, 0, 0, 0, 0)  # dx is y
    with pytest.raises(ValueError, match=f"kernelkit.softmax_backward: {invalid}"):
        _C.softmax_inner_backward("bfloat16", False, X, O, W, 2, -3, 8, 0, 0, 0, 0)
    # cross_entropy: dtype, target dtype, logits, ld, target, rows, vocab, ignore_index, eps,
    # reduction, loss, lse, workspace, bytes
    ws = _C.cross_entropy_workspace_bytes(4, 8)
    with pytest.raises(ValueError, match=f"kernelkit.cross_entropy: {invalid}"):
        _C.cross_entropy("float32", "int64", X, 8, O, 4, 8, -100, 1.5, 2, W, 0, W + 256, ws, 0, 0)
    with pytest.raises(ValueError, match=f"kernelkit.cross_entropy: {invalid}"):
        _C.cross_entropy("float32", "float32", X, 8, O, 4, 8, -100, 0.0, 2, W, 0, W + 256, ws, 0,
                         0)  # float targets
    with pytest.raises(ValueError, match=f"kernelkit.cross_entropy: {invalid}"):
        _C.cross_entropy("bfloat16", "int32", X, 8, O, 4, 8, -100, 0.0, 3, W, 0, W + 256, ws, 0,
                         0)  # no such reduction
    with pytest.raises(ValueError, match=f"kernelkit.cross_entropy: {invalid}"):
        _C.cross_entropy("float16", "int32", X, 7, O, 4, 8, -100, 0.0, 0, W, 0, W + 256, ws, 0,
                         0)  # ld < vocab
    with pytest.raises(ValueError, match=f"kernelkit.cross_entropy: {invalid}"):
        _C.cross_entropy("float32", "int64", X, 8, O, 4, 8, -100, 0.0, 1, W, 0, W + 256, ws - 16,
                         0, 0)  # workspace too small
    with pytest.raises(ValueError, match=f"kernelkit.cross_entropy: {invalid}"):
        _C.cross_entropy("float32", "int64", X, 8, O, 4, 8, -100, 0.0, 0, X + 8, 0, W, ws, 0,
                         0)  # loss inside the logits
    with pytest.raises(ValueError, match=f"kernelkit.cross_entropy_backward: {invalid}"):
        # dtype, target dtype, logits, ld, target, lse, dloss, rows, vocab, ignore_index, eps,
        # reduction, dlogits, ld_dlogits: dlogits partly over the logits
        _C.cross_entropy_backward("float32", "int64", X, 8, O, W, W + 64, 4, 8, -100, 0.0, 2,
                                  X + 4, 8, 0, 0)
    with pytest.raises(ValueError, match=f"kernelkit.cross_entropy_backward: {invalid}"):
        _C.cross_entropy_backward("bfloat16", "int64", X, 8, O, W, 0, 4, 8, -100, 0.0, 2,
                                  W + 256, 8, 0, 0)  # no dloss
    with pytest.raises(ValueError, match=f"kernelkit.layer_norm_backward: {invalid}"):
        _C.layer_norm_backward("float32", "float32", X, W, W + 64, O, O + 64, O + 256, O + 512,
                               O + 1024, 4, 8, 0, 0, 0, 0)  # dweight, dbias without a workspace
    with pytest.raises(ValueError, match=f"kernelkit.layer_norm_backward: {invalid}"):
        _C.layer_norm_backward("float16", "float16", X, W, 0, 0, O, O + 256, 0, 0, 4, 8, 0, 0, 0,
                               0)  # no mean
    with pytest.raises(ValueError, match=f"kernelkit.add_rms_norm_backward: {invalid}"):
        _C.add_rms_norm_backward("float32", "float32", X, W, 0, 0, O, X + 4, 0, 4, 8, 0, 0, 0,
                                 0)  # dx partly overlaps dy
    with pytest.raises(ValueError, match=f"kernelkit.add_rms_norm_backward: {invalid}"):
        _C.add_rms_norm_backward("bfloat16", "float16", X, W, 0, O, O + 64, O + 256, 0, 4, 8, 0,
                                 0, 0, 0)  # no (bf16, f16) pair


@no_gpu_only
def test_extension_reports_a_cuda_error_as_runtime_error():
    # kernelkit takes the arguments; without a GPU the CUDA runtime's own error comes back
    with pytest.raises(RuntimeError, match=r"kernelkit.softmax: cuda\w+: "):
        _C.softmax("float32", False, 1 << 40, 8, 1 << 44, 4, 8, 0, 0)


@no_gpu_only
def test_empty_inputs_launch_nothing():
    # kernelkit returns before touching the device for rows == 0 (no CUDA call, no error)
    _C.softmax("float32", False, 1 << 40, 8, 1 << 44, 0, 8, 0, 0)
    _C.transpose(4, 1 << 40, 1 << 44, 0, 8, 0, 0)


# ---- import cost: no framework until one is used ---------------------------------------------

def _fresh(code):
    """Runs code in a fresh interpreter (this one has imported whatever the tests needed)."""
    import subprocess
    import sys

    env = {k: v for k, v in __import__("os").environ.items() if k != "KERNELKIT_NO_TORCH"}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       cwd=pathlib.Path(kernelkit.__file__).parents[1], timeout=300)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_import_imports_no_framework():
    out = _fresh("import sys, kernelkit\n"
                 "print(sorted(m for m in ('torch', 'jax', 'cupy', 'numpy') if m in sys.modules))\n"
                 "print(kernelkit.torch_ops_registered)")
    assert out.split("\n")[:2] == ["[]", "False"]


@needs_torch
def test_torch_ops_are_registered_at_first_torch_use():
    out = _fresh(
        "import sys, kernelkit, torch\n"
        "assert not kernelkit.torch_ops_registered and not hasattr(torch.ops.kernelkit, 'softmax')\n"
        "try:\n"
        "    kernelkit.softmax(torch.zeros(2, 3))  # a CPU tensor: refused, but torch is in use\n"
        "except TypeError:\n"
        "    pass\n"
        "print(kernelkit.torch_ops_registered, torch.ops.kernelkit.softmax.default)")
    assert out.strip() == "True kernelkit.softmax.default"
    # torch imported first: registered at import; KERNELKIT_NO_TORCH=1: never
    assert _fresh("import torch, kernelkit; print(kernelkit.torch_ops_registered)").strip() == "True"
    assert _fresh("import os; os.environ['KERNELKIT_NO_TORCH'] = '1'\n"
                  "import torch, kernelkit\n"
                  "print(kernelkit.torch_ops_registered, kernelkit.register_torch_ops())").strip() == \
        "False False"


# ---- dim, keepdim, dtype -----------------------------------------------------------------

def test_dim_errors(calls):
    x = fake((4, 8))
    o = fake((4,), ptr=1 << 44)
    with pytest.raises(IndexError, match=r"dim 2 is out of range for a 2-D array \(expected in \[-2, 1\]\)"):
        kernelkit.row_sum(x, dim=2, out=o)
    with pytest.raises(IndexError, match="dim -3 is out of range"):
        kernelkit.softmax(x, dim=-3, out=fake((4, 8), ptr=1 << 44))
    with pytest.raises(ValueError, match="dim 1 appears twice"):
        kernelkit.row_max(x, dim=(1, -1), out=o)
    with pytest.raises(TypeError, match="dim must be an int or a sequence of ints"):
        kernelkit.sum(x, dim=1.0, out=o)
    with pytest.raises(TypeError, match="dim must be an int or a sequence of ints"):
        kernelkit.sum(x, dim=(True,), out=o)
    with pytest.raises(TypeError, match="dim must be one axis"):
        kernelkit.log_softmax(x, dim=(0, 1), out=fake((4, 8), ptr=1 << 44))
    with pytest.raises(TypeError, match="unsupported dtype= int32"):
        kernelkit.row_sum(x, dtype="int32", out=o)
    assert calls == []


def test_dims_in_place_and_keepdim(calls, monkeypatch):
    """The last axes of a contiguous array are read in place, whatever the spelling of dim;
    keepdim only changes the output's shape."""
    monkeypatch.setattr(_C, "row_reduce_workspace_bytes", lambda *a: 0)
    monkeypatch.setattr(_C, "col_reduce_workspace_bytes", lambda *a: 0)
    X, O = 1 << 40, 1 << 44  # noqa: N806
    x = fake((2, 3, 8), ptr=X)
    kernelkit.row_sum(x, dim=2, out=fake((2, 3), ptr=O))
    kernelkit.row_sum(x, dim=(-1, 1), out=fake((2,), ptr=O))
    kernelkit.sum(x, dim=[1, 2], keepdim=True, out=fake((2, 1, 1), ptr=O))
    kernelkit.max(x, dim=(0, 1, 2), out=fake((), ptr=O))
    kernelkit.softmax(x, dim=2, out=fake((2, 3, 8), ptr=O))
    kernelkit.log_softmax(x, -1, out=fake((2, 3, 8), ptr=O))
    assert calls == [
        ("row_reduce", ("float32", _C.REDUCE_SUM, X, 6, 8, 8, O, 0, 0, 0, 0)),
        ("row_reduce", ("float32", _C.REDUCE_SUM, X, 2, 24, 24, O, 0, 0, 0, 0)),
        ("row_reduce", ("float32", _C.REDUCE_SUM, X, 2, 24, 24, O, 0, 0, 0, 0)),
        ("row_reduce", ("float32", _C.REDUCE_MAX, X, 1, 48, 48, O, 0, 0, 0, 0)),
        ("softmax", ("float32", False, X, 8, O, 6, 8, 0, 0)),
        ("softmax", ("float32", True, X, 8, O, 6, 8, 0, 0)),
    ]
    with pytest.raises(ValueError, match=r"out has shape \(2, 3\), expected \(2, 3, 1\)"):
        kernelkit.row_min(x, keepdim=True, out=fake((2, 3), ptr=O))
    with pytest.raises(ValueError, match=r"out has shape \(\), expected \(1, 1, 1\)"):
        kernelkit.sum(x, keepdim=True, out=fake((), ptr=O))


def test_a_layout_the_kernels_cannot_read_needs_a_framework(calls):
    """A layout no kernel reads in place (softmax over a non-last axis, reductions over axes
    that are not consecutive, a transposed or broadcast view) is a copy by the array's
    framework first: a generic array has none, so it is a ValueError naming the strides or
    the axes, never a launch."""
    with pytest.raises(ValueError, match=r"reducing axes \(0, 2\) of a generic array needs a copy"):
        kernelkit.row_sum(fake((4, 8, 3)), dim=(0, 2), out=fake((8,), ptr=1 << 44))
    # softmax over a non-last axis of a C-contiguous array is read in place (softmax_inner,
    # test_softmax_reads_a_middle_axis_in_place); of a strided one it needs a copy
    with pytest.raises(ValueError, match=r"x is not C-contiguous \(shape \(4, 8, 3\), strides "):
        kernelkit.softmax(fake((4, 8, 3), strides=(192, 12, 4)), dim=1,
                          out=fake((4, 8, 3), ptr=1 << 44))
    with pytest.raises(ValueError, match=r"x is not C-contiguous \(shape \(4, 8\), strides \(0, 4\)\)"):
        kernelkit.log_softmax(fake((4, 8), strides=(0, 4)), out=fake((4, 8), ptr=1 << 44))
    with pytest.raises(ValueError, match=r"x is not C-contiguous \(shape \(4, 8\), strides \(4, 16\)\)"):
        kernelkit.softmax(fake((4, 8), strides=(4, 16)), dim=0, out=fake((4, 8), ptr=1 << 44))
    with pytest.raises(ValueError, match=r"not C-contiguous"):
        kernelkit.sum(fake((4, 8), strides=(64, 4)), out=fake((), ptr=1 << 44))
    assert calls == []


def test_softmax_reads_a_middle_axis_in_place(calls, monkeypatch):
    """softmax / log_softmax over a non-last axis of a C-contiguous array: softmax_inner over
    (outer, n, inner), x read in place (a generic array has no framework to copy with), the
    workspace kernelkit asks for (none here: fake arrays get none); dtype= casts x first and
    normalizes the converted array in place; an axis followed by size-1 axes only is rows."""
    monkeypatch.setattr(_C, "softmax_inner_workspace_bytes", lambda *a: 0)
    X, O = 1 << 40, 1 << 44  # noqa: N806
    kernelkit.softmax(fake((2, 5, 3, 4), "float16", ptr=X), 1,
                      out=fake((2, 5, 3, 4), "float16", ptr=O))
    kernelkit.log_softmax(fake((6, 7), ptr=X), 0, out=fake((6, 7), ptr=O))
    kernelkit.softmax(fake((6, 7), "float16", ptr=X), -2, dtype="float32", out=fake((6, 7), ptr=O))
    kernelkit.softmax(fake((3, 4, 1, 1), ptr=X), 1, out=fake((3, 4, 1, 1), ptr=O))
    assert calls == [
        ("softmax_inner", ("float16", False, X, O, 2, 5, 12, 0, 0, 0, 0)),
        ("softmax_inner", ("float32", True, X, O, 1, 6, 7, 0, 0, 0, 0)),
        ("cast", ("float16", "float32", 42, O, X, 0, 0)),
        ("softmax_inner", ("float32", False, O, O, 1, 6, 7, 0, 0, 0, 0)),
        ("softmax", ("float32", False, X, 4, O, 3, 4, 0, 0)),
    ]
    calls.clear()
    with pytest.raises(ValueError, match="overlap"):  # out partly over x
        kernelkit.softmax(fake((6, 7), ptr=X), 0, out=fake((6, 7), ptr=X + 4))
    kernelkit.softmax(fake((6, 7), ptr=X), 0, out=fake((6, 7), ptr=X))  # in place
    assert [c[0] for c in calls] == ["softmax_inner"]


def test_reductions_read_strided_rows_and_middle_axes_in_place(calls, monkeypatch):
    """_row_layout: rows at a stride (unit-stride within a row, the other axes collapsing to
    one stride ld >= cols) go to row_reduce with ld; consecutive axes that are not the last
    of a contiguous array go to col_reduce as (outer, n, inner); no copy (a generic array has
    no framework to copy with, so a copy would be a ValueError)."""
    monkeypatch.setattr(_C, "row_reduce_workspace_bytes", lambda *a: 0)
    monkeypatch.setattr(_C, "col_reduce_workspace_bytes", lambda *a: 0)
    X, O = 1 << 40, 1 << 44  # noqa: N806
    o = lambda shape: fake(shape, ptr=O)  # noqa: E731
    kernelkit.row_sum(fake((4, 8), strides=(64, 4), ptr=X), out=o((4,)))  # x[:, :8] of (4, 16)
    kernelkit.row_max(fake((2, 8), strides=(160, 4), ptr=X), out=o((2,)))  # logits[:, -1, :]
    kernelkit.row_min(fake((2, 3, 8), strides=(192, 64, 4), ptr=X), out=o((2, 3)))  # 3-D rows
    kernelkit.sum(fake((2, 3, 4), "float16", strides=(48, 8, 2), ptr=X), dim=(1, 2),
                  keepdim=True, out=o((2, 1, 1)))  # 3 x 4 at row stride 24 elements
    kernelkit.row_sum(fake((1, 8), strides=(4, 4), ptr=X), out=o((1,)))  # one row: any stride
    kernelkit.row_sum(fake((4, 1, 8), strides=(64, 4, 4), ptr=X), out=o((4, 1)))  # size-1 axis
    x = fake((2, 3, 8), ptr=X)
    kernelkit.row_sum(x, dim=1, out=o((2, 8)))
    kernelkit.max(x, dim=0, keepdim=True, out=o((1, 3, 8)))
    kernelkit.min(x, dim=(0, 1), out=o((8,)))
    kernelkit.row_sum(fake((4, 8, 1), "float16", ptr=X), dim=1, out=o((4, 1)))  # inner == 1
    kernelkit.sum(fake((0, 3, 8), ptr=X), dim=1, out=o((0, 8)))
    assert calls == [
        ("row_reduce", ("float32", _C.REDUCE_SUM, X, 4, 8, 16, O, 0, 0, 0, 0)),
        ("row_reduce", ("float32", _C.REDUCE_MAX, X, 2, 8, 40, O, 0, 0, 0, 0)),
        ("row_reduce", ("float32", _C.REDUCE_MIN, X, 6, 8, 16, O, 0, 0, 0, 0)),
        ("row_reduce", ("float16", _C.REDUCE_SUM, X, 2, 12, 24, O, 0, 0, 0, 0)),
        ("row_reduce", ("float32", _C.REDUCE_SUM, X, 1, 8, 8, O, 0, 0, 0, 0)),
        ("row_reduce", ("float32", _C.REDUCE_SUM, X, 4, 8, 16, O, 0, 0, 0, 0)),
        ("col_reduce", ("float32", _C.REDUCE_SUM, X, 2, 3, 8, O, 0, 0, 0, 0)),
        ("col_reduce", ("float32", _C.REDUCE_MAX, X, 1, 2, 24, O, 0, 0, 0, 0)),
        ("col_reduce", ("float32", _C.REDUCE_MIN, X, 1, 6, 8, O, 0, 0, 0, 0)),
        ("row_reduce", ("float16", _C.REDUCE_SUM, X, 4, 8, 8, O, 0, 0, 0, 0)),
        ("col_reduce", ("float32", _C.REDUCE_SUM, X, 0, 3, 8, O, 0, 0, 0, 0)),
    ]
    # layouts no reduction kernel reads: the framework's copy (none for a generic array)
    for strides in ((4, 16), (0, 4), (66, 4), (28, 4), (-64, 4)):  # transposed, broadcast,
        # a stride that is no whole element, overlapping rows, reversed rows
        with pytest.raises(ValueError, match=r"x is not C-contiguous"):
            kernelkit.row_sum(fake((4, 8), strides=strides, ptr=X), out=o((4,)))
    with pytest.raises(ValueError, match=r"x is not C-contiguous"):  # rows at two strides
        kernelkit.row_sum(fake((2, 3, 8), strides=(800, 64, 4), ptr=X), out=o((2, 3)))
    with pytest.raises(ValueError, match=r"x is not C-contiguous"):  # a strided middle axis
        kernelkit.row_sum(fake((4, 8), strides=(64, 4), ptr=X), dim=0, out=o((8,)))
    assert len(calls) == 11
    # out is checked against the byte range the strided rows span, gaps included (what
    # kernelkit checks): past x's first nbytes but inside its span is an overlap
    with pytest.raises(ValueError, match="out overlaps x"):
        kernelkit.row_sum(fake((4, 8), strides=(64, 4), ptr=X), out=fake((4,), ptr=X + 168))
    kernelkit.row_sum(fake((4, 8), strides=(64, 4), ptr=X), out=fake((4,), ptr=X + 224))
    assert calls[-1][1][6] == X + 224


def test_softmax_reads_strided_rows_in_place(calls):
    """softmax / log_softmax of rows at a stride (unit-stride within a row, the other axes
    collapsing to one stride ld >= cols: logits[:, -1, :], x[::2], x[..., :k]) read x in place
    with ld (kernelkit's leading-dimension softmax) and write a contiguous out; any other
    layout is the framework's copy (a ValueError naming the strides for a generic array)."""
    X, O = 1 << 40, 1 << 44  # noqa: N806
    o = lambda shape, dt="float32": fake(shape, dt, ptr=O)  # noqa: E731
    kernelkit.softmax(fake((2, 8), strides=(160, 4), ptr=X), out=o((2, 8)))  # logits[:, -1, :]
    kernelkit.log_softmax(fake((2, 3, 8), strides=(192, 64, 4), ptr=X), out=o((2, 3, 8)))
    kernelkit.softmax(fake((4, 8), "float16", strides=(64, 2), ptr=X), -1, out=o((4, 8), "float16"))
    kernelkit.softmax(fake((1, 8), strides=(4, 4), ptr=X), out=o((1, 8)))  # one row: any stride
    kernelkit.log_softmax(fake((4, 1, 8), strides=(64, 4, 4), ptr=X), out=o((4, 1, 8)))
    assert calls == [
        ("softmax", ("float32", False, X, 40, O, 2, 8, 0, 0)),
        ("softmax", ("float32", True, X, 16, O, 6, 8, 0, 0)),
        ("softmax", ("float16", False, X, 32, O, 4, 8, 0, 0)),
        ("softmax", ("float32", False, X, 8, O, 1, 8, 0, 0)),
        ("softmax", ("float32", True, X, 16, O, 4, 8, 0, 0)),
    ]
    for strides in ((4, 16), (0, 4), (66, 4), (28, 4), (-64, 4)):  # transposed, broadcast,
        # a stride that is no whole element, overlapping rows, reversed rows
        with pytest.raises(ValueError, match=r"x is not C-contiguous \(shape \(4, 8\), strides"):
            kernelkit.softmax(fake((4, 8), strides=strides, ptr=X), out=o((4, 8)))
    with pytest.raises(ValueError, match=r"x is not C-contiguous"):  # rows at two strides
        kernelkit.log_softmax(fake((2, 3, 8), strides=(800, 64, 4), ptr=X), out=o((2, 3, 8)))
    with pytest.raises(ValueError, match=r"x is not C-contiguous"):  # dtype= casts x as one range
        kernelkit.softmax(fake((4, 8), strides=(64, 4), ptr=X), dtype="float16",
                          out=o((4, 8), "float16"))
    # out is checked against the byte range the strided rows span, gaps included (what
    # kernelkit checks): inside the span is an overlap, past it is not
    with pytest.raises(ValueError, match="out overlaps x"):
        kernelkit.softmax(fake((4, 8), strides=(64, 4), ptr=X), out=fake((4, 8), ptr=X + 168))
    with pytest.raises(ValueError, match="out overlaps x"):
        kernelkit.softmax(fake((4, 8), strides=(64, 4), ptr=X), out=fake((4, 8), ptr=X))
    kernelkit.softmax(fake((4, 8), strides=(64, 4), ptr=X), out=fake((4, 8), ptr=X + 224))
    assert len(calls) == 6 and calls[-1][1][4] == X + 224


def test_dtype_of_a_reduction_is_its_output(calls):
    # the kernels write float32: another dtype= needs a float32 temporary from the framework
    with pytest.raises(TypeError, match="cannot allocate an output beside a conftest.FakeCudaArray"):
        kernelkit.row_sum(fake((4, 8)), dtype="float16", out=fake((4,), "float16", ptr=1 << 44))
    with pytest.raises(TypeError, match="out has dtype float32, expected float16"):
        kernelkit.sum(fake((4, 8)), dtype="f16", out=fake((), ptr=1 << 44))
    assert calls == []


# ---- norms ---------------------------------------------------------------------------------

def test_what_the_norms_launch(calls):
    """rows x cols over the normalized trailing dims; the weight's dtype (x's when none);
    eps (torch's default for rms_norm: x's machine epsilon); statistics not saved (0) on the
    plain path; in place as allowed."""
    X, R, W, B, O = 1 << 40, 1 << 41, 1 << 42, 1 << 43, 1 << 44  # noqa: N806
    x = fake((4, 8), ptr=X)
    kernelkit.rms_norm(x, weight=fake((8,), ptr=W), eps=1e-6, out=fake((4, 8), ptr=O))
    kernelkit.rms_norm(fake((4, 8), "float16", ptr=X), out=fake((4, 8), "float16", ptr=X))
    kernelkit.rms_norm(fake((2, 3, 8), "float16", ptr=X), (3, 8), fake((3, 8), ptr=W),
                       out=fake((2, 3, 8), "float16", ptr=O), stream=5)
    kernelkit.layer_norm(fake((2, 3, 8), ptr=X), [3, 8], fake((3, 8), ptr=W), fake((3, 8), ptr=B),
                         out=fake((2, 3, 8), ptr=O))
    kernelkit.layer_norm(fake((5, 8), "float16", ptr=X), None, None, fake((8,), "float16", ptr=B),
                         0.5, out=fake((5, 8), "float16", ptr=O))
    kernelkit.add_rms_norm(x, fake((4, 8), ptr=R), fake((8,), ptr=W), 1e-5, out=(x, fake((4, 8), ptr=R)))
    kernelkit.add_rms_norm(fake((0, 8), ptr=X), fake((0, 8), ptr=R),
                           out=(fake((0, 8), ptr=O), fake((0, 8), ptr=O + 64)))
    assert calls == [
        ("rms_norm", ("float32", "float32", X, W, O, 0, 4, 8, 1e-6, 0, 0)),
        ("rms_norm", ("float16", "float16", X, 0, X, 0, 4, 8, 2.0 ** -10, 0, 0)),
        ("rms_norm", ("float16", "float32", X, W, O, 0, 2, 24, 2.0 ** -10, 0, 5)),
        ("layer_norm", ("float32", "float32", X, W, B, O, 0, 0, 2, 24, 1e-5, 0, 0)),
        ("layer_norm", ("float16", "float16", X, 0, B, O, 0, 0, 5, 8, 0.5, 0, 0)),
        ("add_rms_norm", ("float32", "float32", X, R, W, X, R, 0, 4, 8, 1e-5, 0, 0)),
        ("add_rms_norm", ("float32", "float32", X, R, 0, O, O + 64, 0, 0, 8, 2.0 ** -23, 0, 0)),
    ]


def test_norm_argument_errors(calls):
    X, O = 1 << 40, 1 << 44  # noqa: N806
    x = fake((4, 8), ptr=X)
    o = fake((4, 8), ptr=O)
    with pytest.raises(ValueError, match=r"normalized_shape \(4,\) must be the trailing dims of "
                                         r"x's shape \(4, 8\) \(kernelkit normalizes over the last axes\)"):
        kernelkit.rms_norm(x, 4, out=o)
    with pytest.raises(ValueError, match=r"normalized_shape \(7,\) must be the trailing dims"):
        kernelkit.layer_norm(x, weight=fake((7,), ptr=1 << 42), out=o)  # from the weight
    with pytest.raises(ValueError, match=r"normalized_shape \(\) must be the trailing dims"):
        kernelkit.layer_norm(x, [], out=o)
    with pytest.raises(ValueError, match=r"weight has shape \(7,\), expected \(8,\)"):
        kernelkit.rms_norm(x, (8,), fake((7,), ptr=1 << 42), out=o)
    with pytest.raises(TypeError, match=r"normalized_shape must be an int or a sequence of ints"):
        kernelkit.rms_norm(x, 8.0, out=o)
    with pytest.raises(TypeError, match=r"normalized_shape is an array: pass the weight by keyword"):
        kernelkit.rms_norm(x, fake((8,), ptr=1 << 42), out=o)  # rms_norm(x, w): torch's order
    with pytest.raises(TypeError, match=r"weight has dtype float16, expected x's \(float32\) or float32"):
        kernelkit.rms_norm(x, weight=fake((8,), "float16", ptr=1 << 42), out=o)
    with pytest.raises(TypeError, match=r"bias has dtype float32, expected the weight's \(float16\)"):
        kernelkit.layer_norm(fake((4, 8), "float16"), 8, fake((8,), "float16", ptr=1 << 42),
                             fake((8,), ptr=1 << 43), out=fake((4, 8), "float16", ptr=O))
    for eps, exc in ((-1e-6, ValueError), (float("nan"), ValueError), ("small", TypeError)):
        with pytest.raises(exc, match="eps must be"):
            kernelkit.rms_norm(x, eps=eps, out=o)
    with pytest.raises(ValueError, match="x must have at least one dimension"):
        kernelkit.layer_norm(fake(()), out=fake((), ptr=O))
    with pytest.raises(ValueError, match=r"x is not C-contiguous"):
        kernelkit.rms_norm(fake((4, 8), strides=(64, 4)), out=o)  # strided rows: no ld kernel
    with pytest.raises(ValueError, match=r"weight is not C-contiguous"):
        kernelkit.rms_norm(x, weight=fake((8,), strides=(8,), ptr=1 << 42), out=o)
    with pytest.raises(ValueError, match="out overlaps weight"):
        kernelkit.rms_norm(x, weight=fake((8,), ptr=O + 32), out=o)
    with pytest.raises(ValueError, match=r"out overlaps x \(only exact in-place"):
        kernelkit.layer_norm(x, out=fake((4, 8), ptr=X + 4))
    r = fake((4, 8), ptr=1 << 41)
    with pytest.raises(ValueError, match=r"residual has shape \(4, 9\), expected \(4, 8\)"):
        kernelkit.add_rms_norm(x, fake((4, 9), ptr=1 << 41), out=(o, r))
    with pytest.raises(TypeError, match="residual has dtype float16, expected float32"):
        kernelkit.add_rms_norm(x, fake((4, 8), "float16", ptr=1 << 41), out=(o, r))
    with pytest.raises(TypeError, match=r"out must be a pair of arrays \(y, sum\)"):
        kernelkit.add_rms_norm(x, r, out=o)
    with pytest.raises(ValueError, match=r"out\[1\] overlaps out\[0\]"):
        kernelkit.add_rms_norm(x, r, out=(o, fake((4, 8), ptr=O)))
    with pytest.raises(ValueError, match=r"out\[0\] overlaps residual"):
        kernelkit.add_rms_norm(x, r, out=(r, o))
    with pytest.raises(ValueError, match=r"out overlaps x"):  # the sum may be x, not y's rows
        kernelkit.add_rms_norm(x, r, out=(o, fake((4, 8), ptr=X + 32)))
    assert calls == []


def test_norm_plain_path_needs_no_framework_for_the_statistics(calls):
    # the plain functions save no mean / rstd (only the torch custom ops do, for backward)
    kernelkit.layer_norm(fake((3, 5)), out=fake((3, 5), ptr=1 << 44))
    assert calls[0][1][6:8] == (0, 0)


# ---- docstrings, stubs -------------------------------------------------------------------

@pytest.mark.parametrize("name", FUNCS + ["device_count", "register_torch_ops"])
def test_docstrings_have_every_section(name):
    doc = getattr(kernelkit, name).__doc__
    for section in ("Returns", "Example") + (("Parameters", "Raises") if name in FUNCS else ()):
        assert f"\n    {section}\n    ---" in doc, f"{name}: no {section} section"


def _stub_functions(name):
    import ast

    path = pathlib.Path(kernelkit.__file__).with_name(name)
    tree = ast.parse(path.read_text())
    return {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}


def _stub_params(fn):
    """(name, kind, default source) of each parameter of a stub's def."""
    import ast

    a = fn.args
    pos = a.posonlyargs + a.args
    defaults = [None] * (len(pos) - len(a.defaults)) + [ast.unparse(d) for d in a.defaults]
    out = [(p.arg, "POSITIONAL_OR_KEYWORD", d) for p, d in zip(pos, defaults)]
    out += [(p.arg, "KEYWORD_ONLY", None if d is None else ast.unparse(d))
            for p, d in zip(a.kwonlyargs, a.kw_defaults)]
    return out


def test_stubs_match_the_functions():
    """__init__.pyi declares every public function with its exact parameters (names, kinds,
    defaults); py.typed ships beside it (PEP 561)."""
    here = pathlib.Path(kernelkit.__file__).parent
    assert (here / "py.typed").is_file()
    stubs = _stub_functions("__init__.pyi")
    assert sorted(stubs) == sorted(kernelkit.__all__)
    for name, fn in stubs.items():
        sig = inspect.signature(getattr(kernelkit, name))
        want = [(p.name, p.kind.name, None if p.default is p.empty else repr(p.default))
                for p in sig.parameters.values()]
        got = [(n, k, None if d is None else repr(eval(d))) for n, k, d in _stub_params(fn)]
        assert got == want, name


def test_extension_stub_names_every_function():
    stubs = _stub_functions("_C.pyi")
    names = {n for n, f in vars(_C).items() if callable(f) and not n.startswith("__")}
    assert sorted(stubs) == sorted(names)

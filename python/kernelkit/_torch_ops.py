# SPDX-License-Identifier: Apache-2.0
"""kernelkit's functions as torch custom ops, torch.ops.kernelkit.<name>, with fake (meta)
implementations, so that they trace under torch.compile and run inside CUDA graphs. The real
implementations call the plain functions (torch's current stream, outputs from torch's
caching allocator). Functional: no out=; every op returns a new tensor.
"""

import torch

from . import _ops

_LIB = "kernelkit"


def _op(name, fake):
    """Registers the function below as kernelkit::name with fake implementation `fake`."""

    def register(fn):
        op = torch.library.custom_op(f"{_LIB}::{name}", mutates_args=())(fn)
        op.register_fake(fake)
        return op

    return register


def _same(x, *args, **kwargs):
    return x.new_empty(x.shape)


def _rows(x):
    return x.new_empty(x.shape[:-1], dtype=torch.float32)


def _scalar(x):
    return x.new_empty((), dtype=torch.float32)


def _transpose_fake(x):
    if x.dim() != 2:
        raise ValueError(f"kernelkit.transpose: x must be 2-D, got shape {tuple(x.shape)}")
    return x.new_empty((x.shape[1], x.shape[0]))


def _of_x(name, fake):
    """kernelkit::name(Tensor x) -> Tensor: the plain function of that name."""

    def fn(x: torch.Tensor) -> torch.Tensor:
        return getattr(_ops, name)(x)

    return _op(name, fake)(fn)


def _of_ab(name, fake):
    """kernelkit::name(Tensor a, Tensor b) -> Tensor: the plain function of that name."""

    def fn(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return getattr(_ops, name)(a, b)

    return _op(name, fake)(fn)


softmax = _of_x("softmax", _same)
log_softmax = _of_x("log_softmax", _same)
row_sum = _of_x("row_sum", _rows)
row_max = _of_x("row_max", _rows)
row_min = _of_x("row_min", _rows)
sum = _of_x("sum", _scalar)  # noqa: A001
max = _of_x("max", _scalar)  # noqa: A001
min = _of_x("min", _scalar)  # noqa: A001
transpose = _of_x("transpose", _transpose_fake)


def _gemv_fake(A, x, trans=False, alpha=1.0):
    return A.new_empty((A.shape[1] if trans else A.shape[0],))


@_op("gemv", _gemv_fake)
def gemv(A: torch.Tensor, x: torch.Tensor, trans: bool = False, alpha: float = 1.0) -> torch.Tensor:
    return _ops.gemv(A, x, trans=trans, alpha=alpha)


def _sgemm_fake(A, B, trans_a=False, trans_b=False, alpha=1.0):
    return A.new_empty((A.shape[1] if trans_a else A.shape[0], B.shape[0] if trans_b else B.shape[1]))


@_op("sgemm", _sgemm_fake)
def sgemm(A: torch.Tensor, B: torch.Tensor, trans_a: bool = False, trans_b: bool = False,
          alpha: float = 1.0) -> torch.Tensor:
    return _ops.sgemm(A, B, trans_a=trans_a, trans_b=trans_b, alpha=alpha)


@_op("matmul", lambda a, b: a.new_empty((a.shape[0], b.shape[1])))
def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return _ops.matmul(a, b)


add = _of_ab("add", _same)
mul = _of_ab("mul", _same)
relu = _of_x("relu", _same)


@_op("gelu", _same)
def gelu(x: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    return _ops.gelu(x, approximate=approximate)


sigmoid = _of_x("sigmoid", _same)


@_op("cast", lambda x, dtype: x.new_empty(x.shape, dtype=dtype))
def cast(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    return _ops.cast(x, dtype)


OPS = {name: getattr(torch.ops.kernelkit, name) for name in _ops.__all__}

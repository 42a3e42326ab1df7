# SPDX-License-Identifier: Apache-2.0
"""kernelkit: fast CUDA primitives (softmax, row and device-wide reductions, transpose, gemv,
sgemm, elementwise, norms, cross-entropy) on torch, CuPy and JAX arrays, zero-copy (kernelkit
works on the arrays' own device memory), on the caller's current stream.

    import torch, kernelkit
    x = torch.randn(4096, 50257, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    y = kernelkit.softmax(x, dim=-1)         # a torch tensor, on torch's current stream
    s = kernelkit.row_sum(x)                 # float32, shape (4096,)
    y.sum().backward()                       # autograd: every differentiable op has a backward
    z = torch.ops.kernelkit.softmax(x)       # the same as a torch custom op (torch.compile)

``import kernelkit`` imports no array framework: an argument is recognized as a torch tensor,
CuPy or JAX array only once its framework is imported. The torch custom ops
(``torch.ops.kernelkit.*``, with their fakes and autograd) are registered at the first call
with a torch tensor, or at import when torch is already imported, or by
``kernelkit.register_torch_ops()`` (needed only to call ``torch.ops.kernelkit.*`` before any
kernelkit function when torch was imported after kernelkit). KERNELKIT_NO_TORCH=1 turns them
off (and with them autograd: an input that requires grad is then a RuntimeError).
"""

import sys as _sys

from . import _C, _ops
from ._ops import *  # noqa: F401,F403  every function of _ops.__all__, the package's op list

__version__ = _C.__version__  # KERNELKIT_VERSION_STRING of <kernelkit/version.cuh>
__all__ = _ops.__all__ + ["device_count", "register_torch_ops"]


def device_count():
    """Number of CUDA devices kernelkit's runtime sees.

    Returns
    -------
    int
        0 without a GPU or driver (never raises).

    Example
    -------
    >>> kernelkit.device_count()
    1
    """
    return _C.device_count()


def register_torch_ops():
    """Registers kernelkit's functions as torch custom ops, ``torch.ops.kernelkit.<name>``
    for every name of ``kernelkit.__all__``'s functions, with fake implementations (the same
    argument checks as the real ones) and autograd. Imports torch. Idempotent.

    Returns
    -------
    bool
        True when they are registered, False when KERNELKIT_NO_TORCH=1 turns them off.

    Raises
    ------
    ImportError
        torch is not installed.

    Example
    -------
    >>> import kernelkit, torch
    >>> kernelkit.register_torch_ops()
    True
    >>> torch.ops.kernelkit.softmax(x, -1)
    """
    return _ops.torch_ops() is not None


def __getattr__(name):
    if name == "torch_ops_registered":  # True once torch.ops.kernelkit.* exist
        return bool(_ops._torch)
    raise AttributeError(f"module 'kernelkit' has no attribute {name!r}")


if "torch" in _sys.modules:  # torch is there already: registering imports nothing new
    _ops.torch_ops()

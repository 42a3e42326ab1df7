# SPDX-License-Identifier: Apache-2.0
"""kernelkit: fast CUDA primitives (softmax, row and device-wide reductions, transpose, gemv,
sgemm, elementwise) on torch, CuPy and JAX arrays, zero-copy (kernelkit works on the arrays'
own device memory), on the caller's current stream.

    import torch, kernelkit
    x = torch.randn(4096, 50257, device="cuda", dtype=torch.bfloat16)
    y = kernelkit.softmax(x)                 # a torch tensor, on torch's current stream
    s = kernelkit.row_sum(x)                 # float32, shape (4096,)
    z = torch.ops.kernelkit.softmax(x)       # the same as a torch custom op (torch.compile)

When torch is installed, ``import kernelkit`` imports it and registers the functions as
``torch.ops.kernelkit.*`` custom ops (set KERNELKIT_NO_TORCH=1 to skip that).
"""

import os as _os

from . import _C, _ops
from ._ops import *  # noqa: F401,F403  every function of _ops.__all__, the package's op list

__version__ = _C.__version__  # KERNELKIT_VERSION_STRING of <kernelkit/version.cuh>
__all__ = _ops.__all__ + ["device_count"]


def device_count():
    """Number of CUDA devices kernelkit's runtime sees (0 without a GPU or driver)."""
    return _C.device_count()


torch_ops_registered = False
if _os.environ.get("KERNELKIT_NO_TORCH", "") != "1":
    try:
        import torch as _torch  # noqa: F401
    except ImportError:
        pass
    else:
        from . import _torch_ops  # noqa: F401  registers torch.ops.kernelkit.*

        torch_ops_registered = True

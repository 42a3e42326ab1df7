# SPDX-License-Identifier: Apache-2.0
"""CuPy and JAX arrays in, the same framework's arrays out (zero-copy: kernelkit works on
their device memory), on each framework's stream; skipped where the framework or a GPU is
missing."""

import pytest

from conftest import HAS_CUPY, HAS_GPU, HAS_JAX

needs_cupy = pytest.mark.skipif(not (HAS_CUPY and HAS_GPU), reason="needs CuPy and a CUDA GPU")
needs_jax = pytest.mark.skipif(not (HAS_JAX and HAS_GPU), reason="needs JAX and a CUDA GPU")

import numpy as np  # noqa: E402

import kernelkit  # noqa: E402


def np_softmax(x, log=False):
    x = x.astype(np.float64)
    z = x - x.max(-1, keepdims=True)
    lse = np.log(np.exp(z).sum(-1, keepdims=True))
    return z - lse if log else np.exp(z - lse)


# ---- CuPy ------------------------------------------------------------------------------

@needs_cupy
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_cupy_arrays(dtype):
    import cupy

    rng = np.random.default_rng(7)
    h = (rng.standard_normal((37, 1001)) * 3).astype(dtype)
    x = cupy.asarray(h)
    y = kernelkit.softmax(x)
    assert isinstance(y, cupy.ndarray) and y.dtype == x.dtype and y.shape == x.shape
    tol = 1e-5 if dtype == "float32" else 2e-3
    np.testing.assert_allclose(cupy.asnumpy(y).astype(np.float64), np_softmax(h), rtol=tol, atol=1e-5)
    r = kernelkit.row_sum(x)
    assert isinstance(r, cupy.ndarray) and r.dtype == np.float32 and r.shape == (37,)
    np.testing.assert_allclose(cupy.asnumpy(r), h.astype(np.float64).sum(-1), rtol=1e-5, atol=1e-3)
    s = kernelkit.sum(x)  # the workspace comes from CuPy too
    assert isinstance(s, cupy.ndarray) and s.shape == ()
    np.testing.assert_allclose(float(s), h.astype(np.float64).sum(), rtol=1e-5, atol=0.1)
    t = kernelkit.transpose(x)
    assert isinstance(t, cupy.ndarray) and bool((t == x.T).all())
    out = cupy.empty_like(x)
    assert kernelkit.relu(x, out=out) is out
    assert bool((out == cupy.maximum(x, 0)).all())


@needs_cupy
def test_cupy_current_stream_keeps_order():
    import cupy

    h = np.random.default_rng(8).standard_normal((64, 4099)).astype(np.float32)
    src = cupy.asarray(h)
    x = cupy.zeros_like(src)
    cupy.cuda.Device().synchronize()
    s = cupy.cuda.Stream(non_blocking=True)
    with s:
        _spin()
        x[...] = src
        y = kernelkit.softmax(x)
    s.synchronize()
    np.testing.assert_allclose(cupy.asnumpy(y), np_softmax(h), rtol=1e-5, atol=1e-6)


def _spin(seconds=0.1):
    """Keeps CuPy's current stream busy for a while (a kernel that spins on the clock)."""
    import cupy

    k = cupy.RawKernel(r'''
    extern "C" __global__ void spin(long long cycles) {
      long long start = clock64();
      while (clock64() - start < cycles) {}
    }''', "spin")
    k((1,), (1,), (np.int64(int(seconds * 2e9)),))


@needs_cupy
def test_cupy_errors():
    import cupy

    x = cupy.asarray(np.random.default_rng(10).standard_normal((8, 8)).astype(np.float32))
    # an op that reads its operand as one flat range refuses a non-contiguous one, naming its
    # strides (in bytes, CuPy's), and copies nothing
    for f in (kernelkit.relu, kernelkit.transpose):
        with pytest.raises(ValueError, match=r"x is not C-contiguous \(shape \(8, 8\), "
                                             r"strides \(4, 32\)\); pass cupy.ascontiguousarray"):
            f(x.T)
    with pytest.raises(TypeError, match="unsupported dtype float64"):
        kernelkit.softmax(x.astype(np.float64))


@needs_cupy
def test_cupy_softmax_of_a_transposed_view_is_a_copy():
    """softmax over rows it cannot read in place (x.T's rows are columns of x): CuPy's copy
    with the axis moved last, as softmax's docstring says; x is left as it was."""
    import cupy

    h = (np.random.default_rng(11).standard_normal((33, 65)) * 3).astype(np.float32)
    x = cupy.asarray(h)
    for log in (False, True):
        y = (kernelkit.log_softmax if log else kernelkit.softmax)(x.T)
        assert isinstance(y, cupy.ndarray) and y.shape == (65, 33) and y.flags.c_contiguous
        np.testing.assert_allclose(cupy.asnumpy(y), np_softmax(h.T, log), rtol=1e-5, atol=1e-5)
    y0 = kernelkit.softmax(x, dim=0)  # the same rows, along axis 0 of x
    np.testing.assert_allclose(cupy.asnumpy(y0), np_softmax(h.T).T, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(cupy.asnumpy(x), h)


# ---- JAX -------------------------------------------------------------------------------

@needs_jax
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_jax_arrays(dtype):
    import jax
    import jax.numpy as jnp

    gpus = [d for d in jax.devices() if d.platform == "gpu"]
    if not gpus:
        pytest.skip("JAX sees no GPU")
    h = (np.random.default_rng(9).standard_normal((33, 517)) * 3).astype(np.float32)
    x = jax.device_put(jnp.asarray(h, dtype=getattr(jnp, dtype)), gpus[0])
    y = kernelkit.softmax(x)
    assert isinstance(y, jax.Array) and y.dtype == x.dtype and y.shape == x.shape
    ref = np.asarray(jax.nn.softmax(x.astype(jnp.float32), axis=-1), dtype=np.float64)
    tol = 1e-5 if dtype == "float32" else 1.6e-2
    np.testing.assert_allclose(np.asarray(y.astype(jnp.float32)), ref, rtol=tol, atol=1e-4)
    r = kernelkit.row_max(x)
    assert isinstance(r, jax.Array) and r.dtype == jnp.float32
    np.testing.assert_array_equal(np.asarray(r), np.asarray(x.astype(jnp.float32)).max(-1))
    s = kernelkit.sum(x)  # workspace allocated by JAX
    np.testing.assert_allclose(float(s), float(jnp.sum(x.astype(jnp.float32))), rtol=1e-4, atol=0.1)
    g = kernelkit.gelu(x)
    refg = np.asarray(jax.nn.gelu(x.astype(jnp.float32), approximate=False))
    np.testing.assert_allclose(np.asarray(g.astype(jnp.float32)), refg, rtol=tol, atol=1e-4)
    # the result is an ordinary JAX array: JAX computes on it
    np.testing.assert_allclose(np.asarray(jnp.sum(y.astype(jnp.float32), axis=-1)), 1.0, rtol=1e-2)


@needs_jax
def test_jax_out_is_refused():
    import jax.numpy as jnp

    x = jnp.ones((4, 8), dtype=jnp.float32)
    with pytest.raises(TypeError, match="JAX arrays are immutable"):
        kernelkit.softmax(x, out=x)


@pytest.mark.skipif(not HAS_JAX, reason="needs JAX")
def test_jax_cpu_array_is_a_type_error():
    import jax
    import jax.numpy as jnp

    cpus = jax.devices("cpu")
    x = jax.device_put(jnp.ones((4, 8), dtype=jnp.float32), cpus[0])
    with pytest.raises(TypeError, match="JAX array on cpu"):
        kernelkit.softmax(x)


# ---- any axis, strided rows, dtype= (a copy by the array's own framework first) -----------

@needs_cupy
def test_cupy_axes_and_strides():
    import cupy

    h = np.random.default_rng(10).standard_normal((6, 40, 9)).astype(np.float32)
    x = cupy.asarray(h)
    y = kernelkit.softmax(x, dim=1)
    assert isinstance(y, cupy.ndarray) and y.flags.c_contiguous
    ref = np.moveaxis(np_softmax(np.moveaxis(h, 1, -1)), -1, 1)
    np.testing.assert_allclose(cupy.asnumpy(y), ref, rtol=1e-5, atol=1e-6)
    r = kernelkit.row_sum(x, dim=(0, 2), keepdim=True)
    assert r.shape == (1, 40, 1)
    np.testing.assert_allclose(cupy.asnumpy(r), h.astype(np.float64).sum((0, 2), keepdims=True),
                               rtol=1e-5, atol=1e-4)
    m = kernelkit.row_max(x[:, ::2, :])  # a strided view
    np.testing.assert_array_equal(cupy.asnumpy(m), h[:, ::2, :].max(-1))
    s = kernelkit.sum(x, dtype="float16")
    assert s.dtype == np.float16
    np.testing.assert_allclose(float(s), h.astype(np.float64).sum(), rtol=2e-3, atol=0.1)
    with pytest.raises(ValueError, match="not C-contiguous"):
        kernelkit.relu(x[:, ::2, :])


@needs_jax
def test_jax_axes():
    import jax
    import jax.numpy as jnp

    gpus = [d for d in jax.devices() if d.platform == "gpu"]
    if not gpus:
        pytest.skip("JAX sees no GPU")
    h = np.random.default_rng(11).standard_normal((33, 50)).astype(np.float32)
    x = jax.device_put(jnp.asarray(h), gpus[0])
    y = kernelkit.log_softmax(x, dim=0)
    assert isinstance(y, jax.Array) and y.shape == x.shape
    np.testing.assert_allclose(np.asarray(y), np_softmax(h.T, log=True).T, rtol=1e-5, atol=1e-5)
    r = kernelkit.row_min(x, dim=0)
    np.testing.assert_array_equal(np.asarray(r), h.min(0))


# ---- norms: CuPy and JAX arrays, outputs from their own framework ---------------------------

def np_rms_norm(x, w, eps):
    x = x.astype(np.float64)
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w.astype(np.float64)


def np_layer_norm(x, w, b, eps):
    x = x.astype(np.float64)
    m = x.mean(-1, keepdims=True)
    return (x - m) / np.sqrt(((x - m) ** 2).mean(-1, keepdims=True) + eps) * w + b


@needs_cupy
def test_cupy_norms():
    import cupy

    rng = np.random.default_rng(12)
    h = rng.standard_normal((33, 1000)).astype(np.float32)
    r = rng.standard_normal((33, 1000)).astype(np.float32)
    w = rng.standard_normal(1000).astype(np.float32)
    b = rng.standard_normal(1000).astype(np.float32)
    x = cupy.asarray(h)
    y = kernelkit.rms_norm(x, weight=cupy.asarray(w), eps=1e-6)
    assert isinstance(y, cupy.ndarray) and y.dtype == np.float32
    np.testing.assert_allclose(cupy.asnumpy(y), np_rms_norm(h, w, 1e-6), rtol=1e-5, atol=1e-5)
    y = kernelkit.layer_norm(x, 1000, cupy.asarray(w), cupy.asarray(b))
    np.testing.assert_allclose(cupy.asnumpy(y), np_layer_norm(h, w, b, 1e-5), rtol=1e-5, atol=1e-5)
    y, s = kernelkit.add_rms_norm(x, cupy.asarray(r), cupy.asarray(w), 1e-6)
    np.testing.assert_array_equal(cupy.asnumpy(s), h + r)
    np.testing.assert_allclose(cupy.asnumpy(y), np_rms_norm(h + r, w, 1e-6), rtol=1e-5, atol=1e-5)


@needs_jax
def test_jax_norms():
    import jax
    import jax.numpy as jnp

    gpus = [d for d in jax.devices() if d.platform == "gpu"]
    if not gpus:
        pytest.skip("JAX sees no GPU")
    rng = np.random.default_rng(13)
    h = rng.standard_normal((17, 512)).astype(np.float32)
    w = rng.standard_normal(512).astype(np.float32)
    x = jax.device_put(jnp.asarray(h), gpus[0])
    y = kernelkit.rms_norm(x, weight=jax.device_put(jnp.asarray(w), gpus[0]), eps=1e-6)
    assert isinstance(y, jax.Array) and y.shape == x.shape
    np.testing.assert_allclose(np.asarray(y), np_rms_norm(h, w, 1e-6), rtol=1e-5, atol=1e-5)
    y, s = kernelkit.add_rms_norm(x, x)
    np.testing.assert_array_equal(np.asarray(s), h + h)

# SPDX-License-Identifier: Apache-2.0
"""kernelkit under jax.jit: every op through XLA's FFI (kernelkit._ffi, kernelkit/_jax.py), on
XLA's stream, without synchronization, against float64 NumPy references; the argument checks
under jit raise what the eager calls raise.

Skipped without JAX (CI). The tracing tests need kernelkit._ffi only (no GPU: they look at
the jaxpr and at the errors); the numerical ones need a GPU that JAX sees.
"""

import math
import time

import pytest

from conftest import HAS_GPU, HAS_JAX

pytestmark = pytest.mark.skipif(not HAS_JAX, reason="needs JAX (not installed)")

import numpy as np  # noqa: E402

import kernelkit  # noqa: E402

try:
    from kernelkit import _ffi  # noqa: F401
    HAS_FFI = True
except ImportError:
    HAS_FFI = False

# one forward target per norm (it writes the statistics always; the plain call discards them)
TARGETS = {"softmax", "softmax_backward", "softmax_inner", "softmax_inner_backward", "row_reduce",
           "col_reduce", "reduce", "transpose", "gemv", "sgemm", "unary", "binary", "cast",
           "rms_norm", "layer_norm", "add_rms_norm", "rms_norm_backward", "layer_norm_backward",
           "add_rms_norm_backward", "cross_entropy", "cross_entropy_backward"}

needs_ffi = pytest.mark.skipif(not HAS_FFI, reason="kernelkit._ffi was not built (no jax at build)")


def _gpu():
    if not (HAS_JAX and HAS_GPU):
        return None
    import jax

    try:
        gpus = jax.devices("gpu")
    except RuntimeError:
        return None
    return gpus[0] if gpus else None


GPU = _gpu()
needs_jax_gpu = pytest.mark.skipif(GPU is None, reason="needs a CUDA GPU that JAX sees")

SEED = 20261128
TOL = {"float32": (2e-5, 1e-6), "float16": (2e-3, 2e-3), "bfloat16": (1.6e-2, 1.6e-2)}


def _put(h, dtype):
    import jax
    import jax.numpy as jnp

    return jax.device_put(jnp.asarray(h, dtype=getattr(jnp, dtype)), GPU)


def _rand(rng, shape, dtype="float32", scale=1.0):
    """Fresh random values, exactly representable in dtype (so the references see the
    kernel's inputs)."""
    h = (rng.standard_normal(shape) * scale).astype(np.float32)
    x = _put(h, dtype)
    return x, np.asarray(x).astype(np.float64)


def _close(y, ref, dtype, rtol=None, atol=None, seed=SEED):
    r, a = TOL[dtype]
    got = np.asarray(y).astype(np.float64)
    assert got.shape == ref.shape, (got.shape, ref.shape)
    np.testing.assert_allclose(got, ref, rtol=rtol or r, atol=atol or a,
                               err_msg=f"seed {seed}, dtype {dtype}")


def _within(y, ref, mag, k, what=""):
    """A float32 sum or dot product against float64: error within k times the sum of the
    magnitudes of its terms (1e-5 for sums, 1e-4 for dot products, as test_torch_gpu)."""
    got = np.asarray(y).astype(np.float64)
    assert got.shape == np.shape(ref), (got.shape, np.shape(ref))
    err = np.abs(got - ref)
    bound = k * np.asarray(mag) + (1e-6 if k < 1e-4 else 1e-5)
    assert (err <= bound).all(), f"{what} (seed {SEED}): max error {err.max():.3g}"


def np_softmax(x, axis=-1, log=False):
    m = x.max(axis=axis, keepdims=True)
    e = np.exp(x - m)
    s = e.sum(axis=axis, keepdims=True)
    return (x - m - np.log(s)) if log else e / s


def np_gelu(x, tanh=False):
    if tanh:
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


def np_rms_norm(x, w, eps, k=1):
    axes = tuple(range(x.ndim - k, x.ndim))
    y = x / np.sqrt((x * x).mean(axis=axes, keepdims=True) + eps)
    return y if w is None else y * w


def np_cross_entropy(x, t, ignore_index=-100, reduction="mean", label_smoothing=0.0):
    """torch's cross_entropy in float64, and its float32 bound (as test_torch_gpu: 1e-5 of
    the magnitudes a row's loss is made of, summed as the reduction sums)."""
    m = x.max(axis=1, keepdims=True)
    lse = (m + np.log(np.exp(x - m).sum(axis=1, keepdims=True)))[:, 0]
    keep = t != ignore_index
    tt = np.where(keep, t, 0)
    xt = np.take_along_axis(x, tt[:, None], 1)[:, 0]
    eps = label_smoothing
    loss = np.where(keep, lse - (1 - eps) * xt - eps * x.mean(axis=1), 0.0)
    mag = np.where(keep, np.abs(lse) + np.abs(xt) + eps * np.abs(x).mean(axis=1), 0.0)
    if reduction == "none":
        return loss, 1e-5 * mag + 1e-6
    div = keep.sum() if reduction == "mean" else 1
    return loss.sum() / div, 1e-5 * mag.sum() / div + 1e-6


def _classes(rng, n, c, ignore=-100):
    """n class indices in [0, c) (int32), every fifth row from the fourth set to ignore."""
    t = rng.integers(0, c, n).astype(np.int32)
    t[3::5] = ignore
    return t


def np_layer_norm(x, w, b, eps):
    mu = x.mean(axis=-1, keepdims=True)
    y = (x - mu) / np.sqrt(((x - mu) ** 2).mean(axis=-1, keepdims=True) + eps)
    if w is not None:
        y = y * w
    return y if b is None else y + b


def _jit(f, **static):
    import jax

    return jax.jit(lambda *a: f(*a, **static))


# ---- the module and tracing (no GPU needed) -------------------------------------------------

@pytest.mark.skipif(not (HAS_GPU and HAS_JAX), reason="checks the GPU machine's build")
def test_ffi_module_is_built_where_jax_is():
    assert HAS_FFI, "jax is importable but kernelkit._ffi is missing: build with jax importable"
    from kernelkit import _ffi

    assert set(_ffi.targets) == {"kernelkit_" + t for t in TARGETS}


@needs_ffi
def test_traces_to_ffi_calls():
    """jax.jit(kernelkit.softmax) traces (issue 33: ConcretizationTypeError); a chain of ops
    is one jaxpr of FFI calls, nothing on the host between them."""
    import jax
    import jax.numpy as jnp

    def block(x, w, g):
        h = kernelkit.matmul(x, w)
        h = kernelkit.add(h, x)
        h = kernelkit.rms_norm(h, weight=g)
        return kernelkit.softmax(h), kernelkit.row_sum(h)

    spec = jax.ShapeDtypeStruct((16, 64), jnp.float32)
    wspec = jax.ShapeDtypeStruct((64, 64), jnp.float32)
    gspec = jax.ShapeDtypeStruct((64,), jnp.float32)
    text = str(jax.make_jaxpr(block)(spec, wspec, gspec))
    for t in ("sgemm", "binary", "rms_norm", "softmax", "row_reduce"):
        assert f"kernelkit_{t}" in text, text
    assert "callback" not in text
    assert "kernelkit_softmax" in str(jax.make_jaxpr(jax.jit(kernelkit.softmax))(spec))


@needs_ffi
def test_ffi_module_targets():
    from kernelkit import _ffi

    assert set(_ffi.targets) == {"kernelkit_" + t for t in TARGETS}


@needs_ffi
def test_softmax_over_another_axis_reads_in_place():
    """softmax / log_softmax over a non-last axis is one softmax_inner call on x reshaped to
    (outer, n, inner), no transpose (XLA's copy) around it; its gradient is one
    softmax_inner_backward."""
    import jax
    import jax.numpy as jnp

    x = jax.ShapeDtypeStruct((2, 5, 3, 4), jnp.bfloat16)
    for f in (kernelkit.softmax, kernelkit.log_softmax):
        for dim, shape3 in ((1, "[2,5,12]"), (0, "[1,2,60]"), (-2, "[10,3,4]")):
            text = str(jax.make_jaxpr(lambda v: f(v, dim))(x))
            assert "kernelkit_softmax_inner" in text and f"bf16{shape3}" in text, text
            assert "transpose" not in text, text
            g = jax.grad(lambda v: f(v, dim).astype(jnp.float32).sum())
            text = str(jax.make_jaxpr(g)(x))
            assert "kernelkit_softmax_inner_backward" in text and "transpose" not in text, text
    text = str(jax.make_jaxpr(lambda v: kernelkit.softmax(v, 0, dtype="float32"))(x))
    assert "kernelkit_cast" in text and "kernelkit_softmax_inner" in text and "f32[1,2,60]" in text


@needs_ffi
def test_cross_entropy_traces():
    """cross_entropy: one target writing the loss and the per-row lse; its gradient one
    cross_entropy_backward from the saved lse (the target, integers, gets no cotangent)."""
    import jax
    import jax.numpy as jnp

    x = jax.ShapeDtypeStruct((6, 100), jnp.bfloat16)
    t = jax.ShapeDtypeStruct((6,), jnp.int32)
    for kw, shape in (({}, ()), ({"reduction": "none", "label_smoothing": 0.1}, (6,)),
                      ({"reduction": "sum", "ignore_index": 3}, ())):
        out = jax.eval_shape(lambda a, b: kernelkit.cross_entropy(a, b, **kw), x, t)
        assert out.shape == shape and out.dtype == jnp.float32
        text = str(jax.make_jaxpr(lambda a, b: kernelkit.cross_entropy(a, b, **kw))(x, t))
        assert "kernelkit_cross_entropy" in text and "callback" not in text
        g = jax.grad(lambda a, b: kernelkit.cross_entropy(a, b, **kw).sum())
        text = str(jax.make_jaxpr(g)(x, t))
        found = sorted({w.split("=")[1] for w in text.split() if w.startswith("target_name=")})
        assert found == ["kernelkit_cross_entropy", "kernelkit_cross_entropy_backward"], found
        dx = jax.eval_shape(g, x, t)
        assert dx.shape == x.shape and dx.dtype == x.dtype


@needs_ffi
def test_grad_traces_to_kernelkit_backward_kernels():
    """jax.grad of softmax / log_softmax (any axis, dtype=) and of the norms runs kernelkit's
    fused backward kernels (the forward target writing the statistics they read), and each
    gradient has its argument's shape and dtype."""
    import jax
    import jax.numpy as jnp

    f32, bf16 = jnp.float32, jnp.bfloat16
    x, xb = jax.ShapeDtypeStruct((6, 16), f32), jax.ShapeDtypeStruct((6, 16), bf16)
    w = jax.ShapeDtypeStruct((16,), f32)
    cases = [
        (lambda x: kernelkit.softmax(x), (x,), ["softmax", "softmax_backward"]),
        (lambda x: kernelkit.log_softmax(x, 0, dtype="float32"), (xb,),
         ["cast", "softmax_inner", "softmax_inner_backward"]),
        (lambda x: kernelkit.softmax(x, -1, dtype="float32"), (xb,),
         ["cast", "softmax", "softmax_backward"]),
        (lambda x, w: kernelkit.rms_norm(x, weight=w, eps=1e-6), (x, w),
         ["rms_norm", "rms_norm_backward"]),
        (lambda x: kernelkit.rms_norm(x), (xb,), ["rms_norm", "rms_norm_backward"]),
        (lambda x, w, b: kernelkit.layer_norm(x, weight=w, bias=b), (x, w, w),
         ["layer_norm", "layer_norm_backward"]),
        (lambda x, b: kernelkit.layer_norm(x, bias=b), (xb, w),
         ["layer_norm", "layer_norm_backward"]),
        (lambda x, r, w: kernelkit.add_rms_norm(x, r, weight=w), (x, x, w),
         ["add_rms_norm", "add_rms_norm_backward"]),
        (lambda x, r: kernelkit.add_rms_norm(x, r), (xb, xb),
         ["add_rms_norm", "add_rms_norm_backward"]),
    ]
    for fn, args, targets in cases:
        def loss(*a):
            return sum(o.astype(f32).sum() for o in jax.tree_util.tree_leaves(fn(*a)))

        g = jax.grad(loss, argnums=tuple(range(len(args))))
        text = str(jax.make_jaxpr(g)(*args))
        found = sorted({t.split("=")[1] for t in text.split() if t.startswith("target_name=")})
        assert found == sorted("kernelkit_" + t for t in targets), (targets, found)
        assert "callback" not in text
        out = jax.eval_shape(g, *args)
        assert [(o.shape, o.dtype) for o in out] == [(a.shape, a.dtype) for a in args]


BAD = [  # (call, exception, message) - the same under jit as eagerly
    (lambda j: kernelkit.softmax(j.zeros((4, 8), j.int32)), TypeError, "unsupported dtype int32"),
    (lambda j: kernelkit.softmax(j.zeros((4, 8)), dim=2), IndexError, "out of range"),
    (lambda j: kernelkit.softmax(j.zeros((4, 8)), dim=(0, 1)), TypeError, "one axis"),
    (lambda j: kernelkit.softmax(j.zeros((4, 8)), dtype="int32"), TypeError, "unsupported dtype="),
    (lambda j: kernelkit.row_sum(j.zeros((4, 8)), dim=(1, 1)), ValueError, "appears twice"),
    (lambda j: kernelkit.matmul(j.zeros((4, 8)), j.zeros((7, 3))), ValueError,
     "inner dimensions differ"),
    (lambda j: kernelkit.matmul(j.zeros((4, 8), j.bfloat16), j.zeros((8, 3), j.bfloat16)),
     TypeError, "expected float32"),
    (lambda j: kernelkit.gemv(j.zeros((4, 8)), j.zeros((4,))), ValueError, "has shape"),
    (lambda j: kernelkit.sgemm(j.zeros((4, 8)), j.zeros((8, 3)), beta=1.0), ValueError, "beta"),
    (lambda j: kernelkit.add(j.zeros((4, 8)), j.zeros((8, 4))), ValueError, "shapes differ"),
    (lambda j: kernelkit.add(j.zeros((4, 8)), j.zeros((4, 8), j.float16)), TypeError, "dtype"),
    (lambda j: kernelkit.gelu(j.zeros((4, 8)), approximate="x"), ValueError, "approximate"),
    (lambda j: kernelkit.cast(j.zeros((4, 8)), "int32"), TypeError, "unsupported target dtype"),
    (lambda j: kernelkit.transpose(j.zeros((2, 4, 8))), ValueError, "must be 2-D"),
    (lambda j: kernelkit.rms_norm(j.zeros((4, 8)), weight=j.zeros((7,))), ValueError,
     "trailing dims"),
    (lambda j: kernelkit.rms_norm(j.zeros((4, 8)), eps=-1.0), ValueError, "eps must be >= 0"),
    (lambda j: kernelkit.layer_norm(j.zeros((4, 8)), weight=j.zeros((8,)),
                                    bias=j.zeros((8,), j.float16)), TypeError, "dtype"),
    (lambda j: kernelkit.add_rms_norm(j.zeros((4, 8)), j.zeros((4, 9))), ValueError, "shape"),
    (lambda j: kernelkit.cross_entropy(j.zeros((4, 8)), j.zeros((4,))), TypeError,
     "target has dtype float32, expected int64 or int32"),
    (lambda j: kernelkit.cross_entropy(j.zeros((4, 8)), j.zeros((5,), j.int32)), ValueError,
     r"target has shape \(5,\), expected \(4,\)"),
    (lambda j: kernelkit.cross_entropy(j.zeros((2, 4, 8)), j.zeros((2, 4), j.int32)), ValueError,
     "input must be 2-D"),
    (lambda j: kernelkit.cross_entropy(j.zeros((4, 8)), j.zeros((4,), j.int32), reduction="x"),
     ValueError, "reduction must be"),
    (lambda j: kernelkit.cross_entropy(j.zeros((4, 8)), j.zeros((4,), j.int32),
                                       label_smoothing=2.0), ValueError, "label_smoothing"),
    (lambda j: kernelkit.cross_entropy(j.zeros((4, 8)), j.zeros((4,), j.int32), j.ones((8,))),
     NotImplementedError, "class weights are not supported"),
]


@needs_ffi
@pytest.mark.parametrize("i", range(len(BAD)))
def test_bad_arguments_raise_under_jit(i):
    import jax
    import jax.numpy as jnp

    call, exc, msg = BAD[i]
    with pytest.raises(exc, match=msg):
        jax.make_jaxpr(lambda: call(jnp))()
    with pytest.raises(exc, match=msg):
        jax.jit(lambda: call(jnp))()
    if GPU is not None:  # eagerly, on GPU arrays (each call a cached jax.jit of the same checks)
        with pytest.raises(exc, match=msg):
            call(jnp)


@needs_ffi
def test_out_and_stream_are_refused():
    import jax
    import jax.numpy as jnp

    with pytest.raises(TypeError, match="JAX arrays are immutable"):
        jax.make_jaxpr(lambda x: kernelkit.softmax(x, out=x))(jnp.zeros((2, 3)))
    with pytest.raises(TypeError, match="XLA's stream"):
        jax.make_jaxpr(lambda x: kernelkit.relu(x, stream=0))(jnp.zeros((2, 3)))


@needs_ffi
def test_vmap_traces():
    """jax.vmap: row ops take the batch as more rows (one call), ops with parameters or a
    whole-array reduction call once per batch element."""
    import jax
    import jax.numpy as jnp

    x = jax.ShapeDtypeStruct((5, 16, 64), jnp.float32)
    w = jax.ShapeDtypeStruct((64,), jnp.float32)
    text = str(jax.make_jaxpr(jax.vmap(kernelkit.softmax))(x))
    assert "kernelkit_softmax" in text and "f32[5,16,64]" in text
    text = str(jax.make_jaxpr(jax.vmap(kernelkit.sum))(x))
    assert "kernelkit_reduce" in text
    text = str(jax.make_jaxpr(lambda x, w: jax.vmap(lambda v: kernelkit.rms_norm(v, weight=w))(x))(
        x, w))
    assert "kernelkit_rms_norm" in text


@needs_ffi
def test_handlers_decode_their_operands():
    """Every handler's binding matches what _jax passes (buffer types and ranks, optional
    parameters, int64 / float32 attributes, the scratch allocator), checked on XLA's CPU
    backend where no GPU is needed: registered there too, each call fails at operand 0 only,
    the CUDA stream the CPU platform has not (a mismatch would be listed beside it)."""
    import jax
    import jax.numpy as jnp
    from kernelkit import _ffi, _jax

    _jax._ffi()
    for name, capsule in _ffi.targets.items():
        jax.ffi.register_ffi_target(name, capsule, platform="cpu")
    cpu = jax.devices("cpu")[0]
    calls = [
        lambda x, w, A, v, b: kernelkit.softmax(x),
        lambda x, w, A, v, b: kernelkit.log_softmax(b, dtype="float32"),
        lambda x, w, A, v, b: kernelkit.row_max(x, dim=0, keepdim=True),
        lambda x, w, A, v, b: kernelkit.row_min(x.reshape(2, 2, 8), dim=1),
        lambda x, w, A, v, b: kernelkit.sum(b),
        lambda x, w, A, v, b: kernelkit.transpose(b),
        lambda x, w, A, v, b: kernelkit.gemv(A, v, trans=True, alpha=0.5),
        lambda x, w, A, v, b: kernelkit.sgemm(x, A, trans_b=True, alpha=2.0),
        lambda x, w, A, v, b: kernelkit.gelu(b, approximate="tanh"),
        lambda x, w, A, v, b: kernelkit.mul(x, x),
        lambda x, w, A, v, b: kernelkit.cast(x, "float16"),
        lambda x, w, A, v, b: kernelkit.rms_norm(b, weight=w),
        lambda x, w, A, v, b: kernelkit.layer_norm(x, bias=w),
        lambda x, w, A, v, b: kernelkit.layer_norm(b, weight=w, bias=w),
        lambda x, w, A, v, b: kernelkit.add_rms_norm(b, b),
        # the backward passes and the forward passes that save their statistics
        lambda x, w, A, v, b: _jax._softmax_bwd(b, b, op="log_softmax", log=True, dim=-1),
        lambda x, w, A, v, b: kernelkit.softmax(x.reshape(2, 2, 8), 1),
        lambda x, w, A, v, b: _jax._softmax_bwd(b, b, op="softmax", log=False, dim=0),
        lambda x, w, A, v, b: kernelkit.cross_entropy(b, v.astype("int32")[:4]),
        lambda x, w, A, v, b: kernelkit.cross_entropy(x, v.astype("int32")[:4], reduction="none",
                                                      label_smoothing=0.5, ignore_index=2),
        lambda x, w, A, v, b: _jax._cross_entropy_bwd(
            b, v.astype("int32")[:4], x[:, 0], x[0, 0], ignore_index=-100, reduction="mean",
            label_smoothing=0.0),
        lambda x, w, A, v, b: _jax._cross_entropy_bwd(
            x, v.astype("int32")[:4], x[:, 0], x[:, 1], ignore_index=-100, reduction="none",
            label_smoothing=0.2),
        lambda x, w, A, v, b: _jax._rms_norm_save(b, w, normalized_shape=None, eps=None),
        lambda x, w, A, v, b: _jax._layer_norm_save(x, None, w, normalized_shape=None, eps=1e-5),
        lambda x, w, A, v, b: _jax._add_rms_norm_save(b, b, w, eps=None),
        lambda x, w, A, v, b: _jax._rms_norm_bwd(b, w, x[:, 0], b, normalized_shape=None),
        lambda x, w, A, v, b: _jax._rms_norm_bwd(x, None, x[:, 0], x, normalized_shape=None),
        lambda x, w, A, v, b: _jax._layer_norm_bwd(x, w, w, x[:, 0], x[:, 1], x,
                                                   normalized_shape=None),
        lambda x, w, A, v, b: _jax._layer_norm_bwd(b, None, w, x[:, 0], x[:, 1], b,
                                                   normalized_shape=None),
        lambda x, w, A, v, b: _jax._add_rms_norm_bwd(b, w, x[:, 0], b, b),
    ]
    args = [jax.device_put(a, cpu) for a in (jnp.ones((4, 8)), jnp.ones((8,)), jnp.ones((8, 8)),
                                             jnp.ones((8,)), jnp.ones((4, 8), jnp.bfloat16))]
    for i, f in enumerate(calls):
        with pytest.raises(Exception) as err:
            jax.block_until_ready(jax.jit(f)(*args))
        assert "bad operands at: 0)" in str(err.value), (i, str(err.value)[:300])


# ---- numbers on the GPU, under jit -------------------------------------------------------------

@needs_jax_gpu
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_softmax_under_jit(dtype):
    rng = np.random.default_rng(SEED)
    for shape, dim in (((33, 1000), -1), ((4, 7, 50), -1), ((4, 7, 50), 1), ((1, 1), -1),
                       ((0, 5), -1)):
        x, h = _rand(rng, shape, dtype, 3.0)
        for log in (False, True):
            f = kernelkit.log_softmax if log else kernelkit.softmax
            y = _jit(f, dim=dim)(x)
            assert y.dtype == x.dtype and y.shape == x.shape
            _close(y, np_softmax(h, dim, log), dtype, atol=None if not log else 2 * TOL[dtype][1])
    x, h = _rand(rng, (9, 300), dtype)
    y = _jit(kernelkit.softmax, dtype="float32")(x)  # dtype=: converted first
    assert str(y.dtype) == "float32"
    _close(y, np_softmax(h), "float32")


@needs_jax_gpu
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_softmax_over_a_middle_axis_under_jit(dtype):
    """softmax_inner under jit: channel softmax, a tall column split through XLA's scratch
    allocator, against float64; and its gradient (softmax_inner_backward)."""
    import jax
    import jax.numpy as jnp

    rng = np.random.default_rng(SEED + 9)
    for shape, dim in (((4, 19, 8, 9), 1), ((5000, 3), 0), ((3, 20000, 4), 1)):
        x, h = _rand(rng, shape, dtype, 3.0)
        for log in (False, True):
            f = kernelkit.log_softmax if log else kernelkit.softmax
            y = _jit(f, dim=dim)(x)
            assert y.dtype == x.dtype and y.shape == x.shape
            _close(y, np_softmax(h, dim, log), dtype, atol=None if not log else 2 * TOL[dtype][1])
            g, hg = _rand(rng, shape, "float32")
            dx = jax.jit(jax.grad(lambda v: (f(v, dim).astype(jnp.float32) * g).sum()))(x)
            hy = np.asarray(y).astype(np.float64)  # the backward reads the rounded output
            want = (hg - np.exp(hy) * hg.sum(axis=dim, keepdims=True) if log else
                    hy * (hg - (hg * hy).sum(axis=dim, keepdims=True)))
            _close(dx, want, dtype, atol=2 * TOL[dtype][1] + 1e-5)


@needs_jax_gpu
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_cross_entropy_under_jit(dtype):
    """cross_entropy under jit against float64 (every reduction, label smoothing, ignored
    rows, a wide vocabulary), and jax.grad through it: kernelkit's cross_entropy_backward from
    the saved lse, against the float64 gradient."""
    import jax
    import jax.numpy as jnp

    rng = np.random.default_rng(SEED + 10)
    for shape in ((37, 1001), (3, 128256), (64, 5000)):
        x, h = _rand(rng, shape, dtype, 3.0)
        t = _classes(rng, *shape)
        tj = _put(t, "int32")
        for reduction in ("mean", "sum", "none"):
            for ls in (0.0, 0.1):
                f = _jit(kernelkit.cross_entropy, reduction=reduction, label_smoothing=ls)
                got = f(x, tj)
                assert str(got.dtype) == "float32"
                want, bound = np_cross_entropy(h, t, reduction=reduction, label_smoothing=ls)
                err = np.abs(np.asarray(got).astype(np.float64) - want)
                assert (err <= bound).all(), (shape, dtype, reduction, ls, err.max())
        dx = jax.jit(jax.grad(lambda v, tt: kernelkit.cross_entropy(v, tt, label_smoothing=0.1)))(
            x, tj)
        assert dx.dtype == x.dtype and dx.shape == x.shape
        keep = t != -100
        p = np.exp(h - h.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        onehot = np.zeros_like(h)
        onehot[np.arange(shape[0]), np.where(keep, t, 0)] = 1.0
        want = (p - 0.1 / shape[1] - 0.9 * onehot) * (keep / keep.sum())[:, None]
        _close(dx, want, dtype, atol=TOL[dtype][1] + 1e-7)


@needs_jax_gpu
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_reductions_under_jit(dtype):
    rng = np.random.default_rng(SEED + 1)
    x, h = _rand(rng, (6, 33, 257), dtype)
    n = {"sum": np.sum, "max": np.max, "min": np.min}
    for kind, ref in n.items():
        row = getattr(kernelkit, f"row_{kind}")
        whole = getattr(kernelkit, kind)
        for dim, keepdim in ((-1, False), (-1, True), (0, False), (1, True), ((0, 2), False),
                             ((1, 2), False)):
            y = _jit(row, dim=dim, keepdim=keepdim)(x)
            assert str(y.dtype) == "float32"
            what = f"row_{kind} dim={dim} keepdim={keepdim} {dtype}"
            if kind == "sum":
                _within(y, h.sum(axis=dim, keepdims=keepdim),
                        np.abs(h).sum(axis=dim, keepdims=keepdim), 1e-5, what)
            else:  # exact
                assert np.array_equal(np.asarray(y), ref(h, axis=dim, keepdims=keepdim)), what
        y = _jit(whole)(x)
        assert y.shape == ()
        if kind == "sum":
            _within(y, h.sum(), np.abs(h).sum(), 1e-5, f"sum {dtype}")
        else:
            assert float(y) == ref(h), f"{kind} {dtype}"
        y = _jit(whole, keepdim=True, dtype="bfloat16")(x)  # float32, then one cast
        assert y.shape == (1, 1, 1) and str(y.dtype) == "bfloat16"
        _close(y, ref(h, keepdims=True), "bfloat16", atol=1e-3 * np.abs(h).sum())


@needs_jax_gpu
def test_transpose_blas_under_jit():
    rng = np.random.default_rng(SEED + 2)
    for dtype in ("float32", "bfloat16"):
        x, h = _rand(rng, (37, 129), dtype)
        y = _jit(kernelkit.transpose)(x)
        assert np.array_equal(np.asarray(y).astype(np.float64), h.T)
    A, hA = _rand(rng, (65, 300))
    v, hv = _rand(rng, (300,))
    u, hu = _rand(rng, (65,))
    aA = np.abs(hA)
    _within(_jit(kernelkit.gemv)(A, v), hA @ hv, aA @ np.abs(hv), 1e-4, "gemv")
    _within(_jit(kernelkit.gemv, trans=True, alpha=0.5)(A, u), 0.5 * hA.T @ hu,
            0.5 * aA.T @ np.abs(hu), 1e-4, "gemv trans")
    B, hB = _rand(rng, (300, 70))
    Bt, hBt = _rand(rng, (70, 300))
    _within(_jit(kernelkit.matmul)(A, B), hA @ hB, aA @ np.abs(hB), 1e-4, "matmul")
    _within(_jit(kernelkit.sgemm, trans_b=True, alpha=2.0)(A, Bt), 2.0 * hA @ hBt.T,
            2.0 * aA @ np.abs(hBt).T, 1e-4, "sgemm nt")
    At, hAt = _rand(rng, (300, 65))
    _within(_jit(kernelkit.sgemm, trans_a=True, trans_b=True)(At, Bt), hAt.T @ hBt.T,
            np.abs(hAt).T @ np.abs(hBt).T, 1e-4, "sgemm tt")


@needs_jax_gpu
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_elementwise_under_jit(dtype):
    rng = np.random.default_rng(SEED + 3)
    a, ha = _rand(rng, (1001, 33), dtype)
    b, hb = _rand(rng, (1001, 33), dtype)
    _close(_jit(kernelkit.add)(a, b), ha + hb, dtype)
    _close(_jit(kernelkit.mul)(a, b), ha * hb, dtype)
    _close(_jit(kernelkit.relu)(a), np.maximum(ha, 0), dtype)
    _close(_jit(kernelkit.sigmoid)(a), 1 / (1 + np.exp(-ha)), dtype)
    _close(_jit(kernelkit.gelu)(a), np_gelu(ha), dtype)
    _close(_jit(kernelkit.gelu, approximate="tanh")(a), np_gelu(ha, True), dtype)
    for to in ("float32", "float16", "bfloat16"):
        y = _jit(kernelkit.cast, dtype=to)(a)
        assert str(y.dtype) == to
        _close(y, ha, to)


@needs_jax_gpu
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_norms_under_jit(dtype):
    rng = np.random.default_rng(SEED + 4)
    x, h = _rand(rng, (3, 17, 768), dtype)
    r, hr = _rand(rng, (3, 17, 768), dtype)
    w, hw = _rand(rng, (768,), dtype)
    b, hb = _rand(rng, (768,), "float32")
    w32, hw32 = _rand(rng, (768,), "float32")
    eps = 1e-6
    _close(_jit(kernelkit.rms_norm, eps=eps)(x, None), np_rms_norm(h, None, eps), dtype)
    _close(jax_call(lambda x, w: kernelkit.rms_norm(x, weight=w, eps=eps), x, w),
           np_rms_norm(h, hw, eps), dtype)
    _close(jax_call(lambda x, w: kernelkit.rms_norm(x, (17, 768), eps=eps), x, w),
           np_rms_norm(h, None, eps, k=2), dtype)
    _close(jax_call(lambda x, w, b: kernelkit.layer_norm(x, weight=w, bias=b), x, w32, b),
           np_layer_norm(h, hw32, hb, 1e-5), dtype)
    _close(jax_call(lambda x, b: kernelkit.layer_norm(x, bias=b), x, b),
           np_layer_norm(h, None, hb, 1e-5), dtype)
    y, s = jax_call(lambda x, r, w: kernelkit.add_rms_norm(x, r, weight=w, eps=eps), x, r, w)
    hs = np.asarray(_put((h + hr).astype(np.float32), dtype)).astype(np.float64)  # s in x's dtype
    _close(s, h + hr, dtype)
    _close(y, np_rms_norm(hs, hw, eps), dtype)


@needs_jax_gpu
def test_vmap_under_jit():
    import jax

    rng = np.random.default_rng(SEED + 7)
    x, h = _rand(rng, (5, 16, 300))
    w, hw = _rand(rng, (300,))
    _close(jax.jit(jax.vmap(kernelkit.softmax))(x), np_softmax(h), "float32")
    _close(jax.jit(jax.vmap(kernelkit.sum))(x), h.sum(axis=(1, 2)), "float32", rtol=1e-5,
           atol=1e-3)
    _close(jax.jit(jax.vmap(lambda v: kernelkit.rms_norm(v, weight=w, eps=1e-6)))(x),
           np_rms_norm(h, hw, 1e-6), "float32")


def jax_call(f, *args):
    import jax

    return jax.jit(f)(*args)


# ---- chained under one jit, and no host synchronization ----------------------------------------

@needs_jax_gpu
def test_chain_under_one_jit():
    """A transformer-ish block of kernelkit ops in one jax.jit, against float64."""
    rng = np.random.default_rng(SEED + 5)
    x, h = _rand(rng, (64, 256))
    w, hw = _rand(rng, (256, 256), scale=1 / 16)
    g, hg = _rand(rng, (256,))

    def block(x, w, g):
        t = kernelkit.matmul(x, w)
        y, s = kernelkit.add_rms_norm(t, x, weight=g, eps=1e-6)
        p = kernelkit.softmax(kernelkit.gelu(y))
        return kernelkit.row_max(p), kernelkit.sum(s)

    import jax

    m, tot = jax.jit(block)(x, w, g)
    ht = h @ hw
    hs = ht + h
    hy = np_rms_norm(hs, hg, 1e-6)
    hp = np_softmax(np_gelu(hy))
    # (float32 through five ops: matmul's error, 1e-4 of its magnitudes, dominates)
    _close(m, hp.max(-1), "float32", rtol=1e-3, atol=1e-5)
    _within(tot, hs.sum(), (np.abs(h) @ np.abs(hw) + np.abs(h)).sum(), 1e-4, "chain sum")


@needs_jax_gpu
def test_eager_and_jit_calls_do_not_synchronize():
    """kernelkit's call returns while a long XLA computation before it still runs (the old
    path waited for its input and synchronized the stream after)."""
    import jax
    import jax.numpy as jnp

    @jax.jit
    def slow(a):
        return jax.lax.fori_loop(0, 1500, lambda i, c: jnp.tanh(c @ a), a)

    a = _put(np.random.default_rng(SEED + 6).standard_normal((2048, 2048)) / 64, "float32")
    soft = jax.jit(kernelkit.softmax)
    slow(a).block_until_ready()  # compiled once
    soft(a).block_until_ready()
    kernelkit.softmax(a).block_until_ready()
    for f in (soft, kernelkit.softmax):
        t0 = time.perf_counter()
        c = slow(a)
        t1 = time.perf_counter()
        y = f(c)
        t2 = time.perf_counter()
        y.block_until_ready()
        t3 = time.perf_counter()
        assert t3 - t0 > 0.02, "the slow computation is too fast to tell on this GPU"
        assert t2 - t1 < 0.25 * (t3 - t0), (t1 - t0, t2 - t1, t3 - t2)


# ---- autodiff: jax.grad through kernelkit's ops under jit ---------------------------------------

def _jnp_refs():
    """Independent jnp references (float32, highest matmul precision) of the ops, for the
    gradient tests."""
    import jax
    import jax.numpy as jnp

    hi = jax.lax.Precision.HIGHEST
    f32 = jnp.float32

    def rms(x, w=None, eps=1e-6):
        xf = x.astype(f32)
        y = xf / jnp.sqrt((xf * xf).mean(-1, keepdims=True) + eps)
        return (y if w is None else y * w.astype(f32)).astype(x.dtype)

    def ln(x, w=None, b=None, eps=1e-5):
        xf = x.astype(f32)
        c = xf - xf.mean(-1, keepdims=True)
        y = c / jnp.sqrt((c * c).mean(-1, keepdims=True) + eps)
        y = y if w is None else y * w
        return (y if b is None else y + b).astype(x.dtype)

    return {
        "softmax": lambda x, dim=-1: jax.nn.softmax(x.astype(f32), axis=dim).astype(x.dtype),
        "softmax0": lambda x: jax.nn.softmax(x.astype(f32), axis=0).astype(x.dtype),
        "log_softmax": lambda x: jax.nn.log_softmax(x.astype(f32)).astype(x.dtype),
        "row_sum0": lambda x: x.astype(f32).sum(0),
        "row_max": lambda x: x.astype(f32).max(-1),
        "sum": lambda x: x.astype(f32).sum(),
        "matmul": lambda a, b: jnp.matmul(a, b, precision=hi),
        "sgemm_nt": lambda a, b: 0.5 * jnp.matmul(a, b.T, precision=hi),
        "gemv_t": lambda A, v: jnp.matmul(A.T, v, precision=hi),
        "add": lambda a, b: a + b,
        "mul": lambda a, b: a * b,
        "relu": jax.nn.relu,
        "gelu": lambda x: jax.nn.gelu(x, approximate=False),
        "sigmoid": jax.nn.sigmoid,
        "cast": lambda x: x.astype(jnp.bfloat16),
        "transpose": lambda x: x.T,
        "rms_norm": lambda x, w: rms(x, w),
        "layer_norm": lambda x, w, b: ln(x, w, b),
        "add_rms_norm": lambda x, r, w: (rms((x + r), w), x + r),
        "rms_norm_nw": lambda x: rms(x),
        "layer_norm_b": lambda x, b: ln(x, None, b),
        "add_rms_norm_nw": lambda x, r: (rms(x + r), x + r),
    }


KK_GRAD = {
    "softmax": lambda x, dim=-1: kernelkit.softmax(x, dim=dim),
    "softmax0": lambda x: kernelkit.softmax(x, dim=0),
    "log_softmax": lambda x: kernelkit.log_softmax(x),
    "row_sum0": lambda x: kernelkit.row_sum(x, dim=0),
    "row_max": lambda x: kernelkit.row_max(x),
    "sum": lambda x: kernelkit.sum(x),
    "matmul": lambda a, b: kernelkit.matmul(a, b),
    "sgemm_nt": lambda a, b: kernelkit.sgemm(a, b, trans_b=True, alpha=0.5),
    "gemv_t": lambda A, v: kernelkit.gemv(A, v, trans=True),
    "add": lambda a, b: kernelkit.add(a, b),
    "mul": lambda a, b: kernelkit.mul(a, b),
    "relu": lambda x: kernelkit.relu(x),
    "gelu": lambda x: kernelkit.gelu(x),
    "sigmoid": lambda x: kernelkit.sigmoid(x),
    "cast": lambda x: kernelkit.cast(x, "bfloat16"),
    "transpose": lambda x: kernelkit.transpose(x),
    "rms_norm": lambda x, w: kernelkit.rms_norm(x, weight=w, eps=1e-6),
    "layer_norm": lambda x, w, b: kernelkit.layer_norm(x, weight=w, bias=b),
    "add_rms_norm": lambda x, r, w: kernelkit.add_rms_norm(x, r, weight=w, eps=1e-6),
    "rms_norm_nw": lambda x: kernelkit.rms_norm(x, eps=1e-6),
    "layer_norm_b": lambda x, b: kernelkit.layer_norm(x, bias=b),
    "add_rms_norm_nw": lambda x, r: kernelkit.add_rms_norm(x, r, eps=1e-6),
}

GRAD_SHAPES = {  # the arguments' shapes (float32)
    "softmax": [(33, 100)], "log_softmax": [(33, 100)], "row_sum0": [(33, 100)],
    "row_max": [(33, 100)], "sum": [(33, 100)], "matmul": [(17, 40), (40, 9)],
    "sgemm_nt": [(17, 40), (9, 40)], "gemv_t": [(40, 17), (40,)], "add": [(33, 100)] * 2,
    "mul": [(33, 100)] * 2, "relu": [(33, 100)], "gelu": [(33, 100)], "sigmoid": [(33, 100)],
    "cast": [(33, 100)], "transpose": [(33, 100)], "rms_norm": [(33, 100), (100,)],
    "layer_norm": [(33, 100), (100,), (100,)], "add_rms_norm": [(33, 100)] * 2 + [(100,)],
    "softmax0": [(33, 100)], "rms_norm_nw": [(33, 100)], "layer_norm_b": [(33, 100), (100,)],
    "add_rms_norm_nw": [(33, 100)] * 2,
}


@needs_jax_gpu
@pytest.mark.parametrize("name", sorted(KK_GRAD))
def test_grad_under_jit(name):
    """jax.grad of a weighted sum of the op's result(s), through kernelkit (custom_vjp) and
    through an independent jnp reference, both under jit, on the same random inputs."""
    import jax
    import jax.numpy as jnp

    rng = np.random.default_rng(SEED + 8)
    args = [_rand(rng, s)[0] for s in GRAD_SHAPES[name]]
    ref = _jnp_refs()[name]

    def loss(f):
        def L(*a):
            out = f(*a)
            outs = out if isinstance(out, tuple) else (out,)
            total = 0.0
            for i, o in enumerate(outs):
                w = jnp.cos(jnp.arange(o.size, dtype=jnp.float32).reshape(o.shape) + i)
                total = total + (o.astype(jnp.float32) * w).sum()
            return total
        return jax.jit(jax.grad(L, argnums=tuple(range(len(args)))))

    got = loss(KK_GRAD[name])(*args)
    want = loss(ref)(*args)
    for i, (g, r) in enumerate(zip(got, want)):
        assert g.shape == r.shape and g.dtype == r.dtype, (i, g.shape, r.shape, g.dtype, r.dtype)
        rtol, atol = (1.6e-2, 1.6e-2) if name == "cast" else (1e-4, 1e-4)
        np.testing.assert_allclose(np.asarray(g), np.asarray(r), rtol=rtol, atol=atol,
                                   err_msg=f"{name}: gradient of argument {i} (seed {SEED + 8})")

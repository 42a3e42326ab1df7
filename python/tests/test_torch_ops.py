# SPDX-License-Identifier: Apache-2.0
"""torch.ops.kernelkit.*: registration, schemas and fake (meta) implementations (no GPU
needed), then torch.library.opcheck, torch.compile and CUDA graphs on the GPU."""

import numpy as np
import pytest

from conftest import HAS_GPU, HAS_TORCH, needs_torch, needs_torch_gpu

pytestmark = needs_torch

if HAS_TORCH:
    import torch

    import kernelkit
    from kernelkit import _ops

    # conftest imported kernelkit before torch: the custom ops are registered at the first
    # call with a torch tensor, or here (test_lazy_registration checks both in a fresh process)
    kernelkit.register_torch_ops()

# One call of every function: (name, args, kwargs, expected output shape, dtype). args(t)
# makes the tensors with t(*shape, dtype=..., seed=...) on the test's device (meta or cuda);
# dtypes are torch's names. test_every_function_is_registered checks that these cover every
# function of the package (a new op needs its line here).
SAMPLES = [
    ("softmax", lambda t: (t(3, 5, 33, dtype="bfloat16"),), {}, (3, 5, 33), "bfloat16"),
    ("log_softmax", lambda t: (t(7, 100),), {}, (7, 100), "float32"),
    ("row_sum", lambda t: (t(6, 40, dtype="float16"),), {}, (6,), "float32"),
    ("row_max", lambda t: (t(2, 3, 9),), {}, (2, 3), "float32"),
    ("row_min", lambda t: (t(5, 17, dtype="bfloat16"),), {}, (5,), "float32"),
    ("sum", lambda t: (t(1000),), {}, (), "float32"),
    ("max", lambda t: (t(10, 10, dtype="bfloat16"),), {}, (), "float32"),
    ("min", lambda t: (t(77),), {}, (), "float32"),
    ("transpose", lambda t: (t(9, 4),), {}, (4, 9), "float32"),
    ("gemv", lambda t: (t(6, 4), t(4, seed=1)), {}, (6,), "float32"),
    ("gemv", lambda t: (t(6, 4), t(6, seed=1)), {"trans": True, "alpha": 2.0}, (4,), "float32"),
    ("sgemm", lambda t: (t(5, 3), t(4, 5, seed=1)), {"trans_a": True, "trans_b": True}, (3, 4),
     "float32"),
    ("matmul", lambda t: (t(5, 3), t(3, 2, seed=1)), {}, (5, 2), "float32"),
    ("add", lambda t: (t(8, dtype="bfloat16"), t(8, dtype="bfloat16", seed=1)), {}, (8,), "bfloat16"),
    ("mul", lambda t: (t(3, 3), t(3, 3, seed=1)), {}, (3, 3), "float32"),
    ("relu", lambda t: (t(11, dtype="float16"),), {}, (11,), "float16"),
    ("gelu", lambda t: (t(11),), {"approximate": "tanh"}, (11,), "float32"),
    ("sigmoid", lambda t: (t(4, 4, dtype="bfloat16"),), {}, (4, 4), "bfloat16"),
    ("cast", lambda t: (t(6), torch.bfloat16), {}, (6,), "bfloat16"),
    # torch's dim / keepdim (any axis: softmax copies a non-last one, reductions read it)
    ("softmax", lambda t: (t(4, 6, 5),), {"dim": 1}, (4, 6, 5), "float32"),
    ("log_softmax", lambda t: (t(7, 9, dtype="bfloat16"),), {"dim": 0}, (7, 9), "bfloat16"),
    ("row_sum", lambda t: (t(5, 6, 7),), {"dim": [0, 2], "keepdim": True}, (1, 6, 1), "float32"),
    ("max", lambda t: (t(3, 8, dtype="float16"),), {"dim": [1]}, (3,), "float32"),
    ("sum", lambda t: (t(3, 8),), {"keepdim": True}, (1, 1), "float32"),
    # norms: the custom ops return the saved statistics too (the first output is y)
    ("rms_norm", lambda t: (t(6, 64, dtype="bfloat16"), None, t(64, dtype="bfloat16", seed=1), 1e-6),
     {}, (6, 64), "bfloat16"),
    ("rms_norm", lambda t: (t(2, 3, 40), [3, 40], t(3, 40, seed=1)), {}, (2, 3, 40), "float32"),
    ("layer_norm", lambda t: (t(5, 96, dtype="float16"), [96], t(96, seed=1), t(96, seed=2)), {},
     (5, 96), "float16"),
    ("layer_norm", lambda t: (t(4, 33),), {"eps": 1e-3}, (4, 33), "float32"),
    ("add_rms_norm", lambda t: (t(7, 128, dtype="bfloat16"), t(7, 128, dtype="bfloat16", seed=1),
                                t(128, seed=2), 1e-5), {}, (7, 128), "bfloat16"),
    # cross_entropy: the custom op returns (loss, lse); class indices from t's values
    ("cross_entropy", lambda t: (t(6, 10, dtype="bfloat16"), _classes(t(6), 10)), {}, (),
     "float32"),
    ("cross_entropy", lambda t: (t(5, 33), _classes(t(5), 33).int()),
     {"reduction": "none", "label_smoothing": 0.1, "ignore_index": 3}, (5,), "float32"),
]


def _classes(v, c):
    """Class indices in [0, c) (int64) made from the float tensor v."""
    return (v.abs() * 7).to(torch.int64).clamp(0, c - 1)


def first(out):
    """A custom op's first output (y) when it returns several."""
    return out[0] if isinstance(out, (tuple, list)) else out


def sample(case, device):
    """(name, args, kwargs, expected output shape, torch dtype) of SAMPLES[case] on device."""
    name, args, kwargs, shape, dtype = SAMPLES[case]

    def t(*shape, dtype="float32", seed=0):
        g = torch.Generator(device="cpu").manual_seed(seed)
        return torch.randn(shape, generator=g).to(device=device, dtype=getattr(torch, dtype))

    return name, args(t), kwargs, shape, getattr(torch, dtype)


CASES = pytest.mark.parametrize("case", range(len(SAMPLES)), ids=lambda i: SAMPLES[i][0])


def test_every_function_is_registered():
    assert kernelkit.torch_ops_registered
    names = list(_ops.__all__)
    assert sorted({s[0] for s in SAMPLES}) == sorted(names)
    for name in names:
        op = getattr(torch.ops.kernelkit, name)
        assert op.default._schema.name == f"kernelkit::{name}"


def test_schemas():
    s = lambda n: str(getattr(torch.ops.kernelkit, n).default._schema)  # noqa: E731
    assert s("softmax") == "kernelkit::softmax(Tensor x, int dim=-1, ScalarType? dtype=None) -> Tensor"
    assert s("row_sum") == ("kernelkit::row_sum(Tensor x, int[]? dim=None, bool keepdim=False, "
                            "ScalarType? dtype=None) -> Tensor")
    assert s("gemv") == "kernelkit::gemv(Tensor A, Tensor x, bool trans=False, float alpha=1.) -> Tensor"
    assert s("cast") == "kernelkit::cast(Tensor x, ScalarType dtype) -> Tensor"
    assert s("gelu") == "kernelkit::gelu(Tensor x, str approximate=\"none\") -> Tensor"


@CASES
def test_fake_implementations_on_meta(case):
    name, args, kwargs, shape, dtype = sample(case, "meta")
    out = first(getattr(torch.ops.kernelkit, name)(*args, **kwargs))
    assert out.device.type == "meta" and tuple(out.shape) == shape and out.dtype == dtype
    assert out.is_contiguous()


def test_traces_into_a_graph_without_a_gpu():
    from torch.fx.experimental.proxy_tensor import make_fx

    def f(x, w):
        return torch.ops.kernelkit.row_sum(torch.ops.kernelkit.softmax(x)) + torch.ops.kernelkit.gemv(w, x[0])

    g = make_fx(f, tracing_mode="fake")(torch.randn(4, 8, device="meta"), torch.randn(4, 8, device="meta"))
    targets = [str(n.target) for n in g.graph.nodes if n.op == "call_function"]
    assert "kernelkit.softmax.default" in targets and "kernelkit.gemv.default" in targets


def test_forward_and_backward_trace_without_a_gpu():
    """The plain function with an input that requires grad runs the custom op; its backward
    (register_autograd) traces with the fakes: what AOTAutograd does under torch.compile."""
    from torch.fx.experimental.proxy_tensor import make_fx

    def f(x, w):
        h = kernelkit.matmul(x, w)
        y = kernelkit.log_softmax(h, dim=0)
        return torch.autograd.grad(kernelkit.row_sum(y, dim=-1).sum(), (x, w))

    x = torch.randn(4, 8, device="meta", requires_grad=True)
    w = torch.randn(8, 3, device="meta", requires_grad=True)
    g = make_fx(f, tracing_mode="fake")(x, w)
    targets = [str(n.target) for n in g.graph.nodes if n.op == "call_function"]
    # forward, and matmul's backward: two more kernelkit sgemm calls; log_softmax's backward:
    # kernelkit's fused kernel
    assert targets.count("kernelkit.matmul.default") == 1
    assert targets.count("kernelkit.sgemm.default") == 2
    assert targets.count("kernelkit.softmax_backward.default") == 1


def test_dynamic_shapes_trace_without_a_gpu():
    """The fakes run on symbolic sizes (torch.compile(dynamic=True), AOTAutograd's dynamic
    tracing): describe and the allocations never ask a symbolic tensor for nbytes; forward
    and backward of the norms and of the reductions' in-place layouts."""
    from torch.fx.experimental.proxy_tensor import make_fx

    def f(x, r, w, b):
        y = kernelkit.rms_norm(x, weight=w, eps=1e-6) + kernelkit.layer_norm(x, None, w, b)
        a, s = kernelkit.add_rms_norm(x, r, w)
        t = kernelkit.row_sum(x, dim=0).sum() + kernelkit.row_max(x[:-1:2]).sum()
        return torch.autograd.grad((y + a + s).sum() + t, (x, r, w, b))

    args = [torch.empty(s, device="meta", requires_grad=True) for s in ((6, 64), (6, 64), (64,), (64,))]
    g = make_fx(f, tracing_mode="symbolic")(*args)
    targets = {str(n.target) for n in g.graph.nodes if n.op == "call_function"}
    for name in ("rms_norm", "layer_norm", "add_rms_norm", "rms_norm_backward",
                 "layer_norm_backward", "add_rms_norm_backward", "row_sum", "row_max"):
        assert f"kernelkit.{name}.default" in targets, name


def test_cpu_tensors_are_refused_by_the_real_implementation():
    with pytest.raises(TypeError, match="torch tensor on cpu"):
        torch.ops.kernelkit.softmax(torch.randn(3, 4))


# ---- fakes: the real op's checks, without a GPU -------------------------------------------

# Calls every real op refuses, with the exception and message it raises: the fake (on fake
# CUDA tensors, as torch.compile traces) must raise the same. t(*shape, dtype=, device=) makes
# a tensor; test_fake_and_real_refuse_alike (GPU) runs the same list on the real ops.
REFUSED = [
    ("matmul", lambda t: (t(4, 8, dtype="bfloat16"), t(8, 3, dtype="bfloat16")), {},
     TypeError, "A has dtype bfloat16, expected float32"),
    ("matmul", lambda t: (t(4, 8), t(7, 3)), {}, ValueError, r"inner dimensions differ"),
    ("sgemm", lambda t: (t(4, 8), t(4, 3)), {"trans_a": True, "trans_b": True}, ValueError,
     r"inner dimensions differ: op\(A\) is 8 x 4, op\(B\) is 3 x 4"),
    ("softmax", lambda t: (t(4, 8, dtype="int32"),), {}, TypeError, "unsupported dtype int32"),
    ("log_softmax", lambda t: (t(4, 8, dtype="float64"),), {}, TypeError, "unsupported dtype float64"),
    ("softmax", lambda t: (t(4, 8),), {"dim": 2}, IndexError, "dim 2 is out of range"),
    ("row_sum", lambda t: (t(4, 8),), {"dim": [0, -2]}, ValueError, "appears twice"),
    ("relu", lambda t: (t(8, 4).t(),), {}, ValueError,
     r"x is not contiguous \(shape \(4, 8\), strides \(1, 4\)\)"),
    ("matmul", lambda t: (t(8, 4).t(), t(8, 3)), {}, ValueError, "A is not contiguous"),
    ("gemv", lambda t: (t(4, 8), t(4)), {}, ValueError, r"x has shape \(4,\), expected \(8,\)"),
    ("transpose", lambda t: (t(2, 3, 4),), {}, ValueError, "x must be 2-D"),
    ("add", lambda t: (t(4, 8), t(8, 4)), {}, ValueError, "shapes differ"),
    ("mul", lambda t: (t(4), t(4, dtype="float16")), {}, TypeError, "b has dtype float16"),
    ("cast", lambda t: (t(4), torch.float64), {}, TypeError, "unsupported target dtype float64"),
    ("gelu", lambda t: (t(4),), {"approximate": "erf"}, ValueError, "approximate must be"),
    ("sum", lambda t: (t(4, dtype="int64"),), {}, TypeError, "unsupported dtype int64"),
    ("softmax", lambda t: (t(4, 8, device="cpu"),), {}, TypeError, "torch tensor on cpu"),
    # kernelkit's backward ops (what autograd calls) check as the forward ops do
    ("softmax_backward", lambda t: (t(4, 8), t(4, 8, dtype="float16"), -1, False), {}, TypeError,
     "kernelkit.softmax_backward: dy has dtype float16, expected float32"),
    ("softmax_backward", lambda t: (t(4, 8), t(4, 9), -1, True), {}, ValueError,
     r"kernelkit.log_softmax_backward: dy has shape \(4, 9\), expected \(4, 8\)"),
    ("softmax_backward", lambda t: (t(4, 8, dtype="int32"), t(4, 8, dtype="int32"), -1, False), {},
     TypeError, "unsupported dtype int32"),
    ("softmax_backward", lambda t: (t(4, 8), t(4, 8), 2, False), {}, IndexError,
     "dim 2 is out of range"),
    ("layer_norm_backward", lambda t: (t(4, 8), t(4, 8, dtype="float16"), None, None, t(4), t(4), 8,
                                       False, False), {}, TypeError,
     "kernelkit.layer_norm_backward: dy has dtype float32, expected float16"),
    ("layer_norm_backward", lambda t: (t(8, 4).t(), t(4, 8), None, None, t(4), t(4), 8, False,
                                       False), {}, ValueError, "dy is not contiguous"),
    ("add_rms_norm_backward", lambda t: (t(4, 8), t(4, 8), t(4, 7), None, t(4), 8, False), {},
     ValueError, r"kernelkit.add_rms_norm_backward: dsum has shape \(4, 7\), expected \(4, 8\)"),
    # cross_entropy and its backward
    ("cross_entropy", lambda t: (t(4, 8), t(4)), {}, TypeError,
     "target has dtype float32, expected int64 or int32 class indices"),
    ("cross_entropy", lambda t: (t(4, 8, dtype="int32"), t(4, dtype="int64")), {}, TypeError,
     "unsupported dtype int32"),
    ("cross_entropy", lambda t: (t(2, 4, 8), t(2, 4, dtype="int64")), {}, ValueError,
     r"input must be 2-D logits \(N, C\), got shape \(2, 4, 8\)"),
    ("cross_entropy", lambda t: (t(4, 8), t(5, dtype="int64")), {}, ValueError,
     r"target has shape \(5,\), expected \(4,\)"),
    ("cross_entropy", lambda t: (t(8, 4).t(), t(4, dtype="int64")), {}, ValueError,
     r"input is not contiguous \(shape \(4, 8\), strides \(1, 4\)\)"),
    ("cross_entropy", lambda t: (t(4, 8), t(4, 2, dtype="int64")[:, 0]), {}, ValueError,
     "target is not contiguous"),
    ("cross_entropy", lambda t: (t(4, 0), t(4, dtype="int64")), {}, ValueError,
     "input has 4 rows of 0 classes"),
    ("cross_entropy", lambda t: (t(4, 8), t(4, dtype="int64")), {"reduction": "avg"}, ValueError,
     "reduction must be 'none', 'mean' or 'sum', got 'avg'"),
    ("cross_entropy", lambda t: (t(4, 8), t(4, dtype="int64")), {"label_smoothing": 1.5},
     ValueError, r"label_smoothing must be in \[0, 1\], got 1.5"),
    ("cross_entropy", lambda t: (t(4, 8, device="cpu"), t(4, dtype="int64", device="cpu")), {},
     TypeError, "torch tensor on cpu"),
    ("cross_entropy_backward", lambda t: (t(4, 8), t(4, dtype="int64"), t(4), t(4), -100, "mean",
                                          0.0), {}, ValueError,
     r"kernelkit.cross_entropy_backward: dloss has shape \(4,\), expected \(\)"),
    ("cross_entropy_backward", lambda t: (t(4, 8), t(4, dtype="int64"), t(4, dtype="float16"),
                                          t(4), -100, "none", 0.0), {}, TypeError,
     "kernelkit.cross_entropy_backward: lse has dtype float16, expected float32"),
]
REFUSED_IDS = [f"{c[0]}-{i}" for i, c in enumerate(REFUSED)]


def _maker(device):
    def t(*shape, dtype="float32", device=device):
        return torch.empty(shape, dtype=getattr(torch, dtype), device=device)

    return t


@pytest.mark.parametrize("case", REFUSED, ids=REFUSED_IDS)
def test_fakes_refuse_what_the_real_op_refuses(case):
    from torch._subclasses.fake_tensor import FakeTensorMode

    name, args, kwargs, exc, msg = case
    with FakeTensorMode():
        a = args(_maker("cuda"))
        with pytest.raises(exc, match=msg):
            getattr(torch.ops.kernelkit, name)(*a, **kwargs)


# ---- the fast path: plain calls skip the Arr descriptions, not the checks -----------------

class _CudaLike(torch.Tensor if HAS_TORCH else object):
    """A CPU tensor that says it is a CUDA one: the plain functions' two paths run on it (the
    fast one taking _CudaLike for torch.Tensor) down to the extension, whose launches the
    `calls` fixture records."""

    @property
    def is_cuda(self):
        return True


def _both_paths(monkeypatch, calls, fn, args, kwargs):
    """[(taken fast, canonical calls)] of fn(*args, **kwargs) as called (fast path allowed)
    and with stream=0 (the full path: the same stream, 0 here). Canonical: an input's address
    named, a new array's "new" (the samples' sizes are far below 2^20, host addresses above)."""
    from kernelkit import _arrays

    monkeypatch.setattr(_ops, "_fast_types", (_CudaLike, torch.nn.Parameter))
    monkeypatch.setattr(_ops, "_fast_stream", lambda d: 0)
    monkeypatch.setattr(_arrays, "_torch_stream", lambda d: 0)
    monkeypatch.setattr(_arrays, "_torch_raw", ())  # workspaces: uint8 tensors on the CPU
    routed = []
    route = _ops._route
    monkeypatch.setattr(_ops, "_route", lambda *a, **k: routed.append(1) or route(*a, **k))
    inputs = {a.data_ptr(): f"in{i}" for i, a in enumerate(args) if isinstance(a, torch.Tensor)}

    def canonical(log):
        return [(n, tuple(inputs.get(v, "new" if isinstance(v, int) and v >= 2**20 else v)
                          for v in a)) for n, a in log]

    result = []
    for extra in ({}, {"stream": 0}):
        routed.clear()
        calls.clear()
        fn(*args, **kwargs, **extra)
        result.append((not routed, canonical(calls)))
    return result


@CASES
def test_fast_path_passes_what_the_full_path_passes(case, calls, monkeypatch):
    """Every plain call the fast path takes reaches the extension with the arguments of the
    full path's call (pointers of new arrays aside); the default-argument sample of every
    function takes it."""
    name, args, kwargs, _, _ = sample(case, "cpu")
    args = tuple(a.as_subclass(_CudaLike) if isinstance(a, torch.Tensor) else a for a in args)
    (fast, got), (full, want) = _both_paths(monkeypatch, calls, getattr(kernelkit, name), args,
                                            kwargs)
    assert not full and got == want and want
    plain = not kwargs and not any(isinstance(a, list) for a in args)
    assert fast or not plain, f"kernelkit.{name}: a plain call missed the fast path"


@pytest.mark.parametrize("case", [c for c in REFUSED if not c[0].endswith("_backward")],
                         ids=[i for c, i in zip(REFUSED, REFUSED_IDS)
                              if not c[0].endswith("_backward")])
def test_fast_path_refuses_what_the_full_path_refuses(case, calls, monkeypatch):
    """A call the full path refuses is refused the same way with the fast path on: the fast
    path never takes it."""
    name, args, kwargs, exc, msg = case
    monkeypatch.setattr(_ops, "_fast_types", (_CudaLike, torch.nn.Parameter))
    monkeypatch.setattr(_ops, "_fast_stream", lambda d: 0)
    a = tuple(x.as_subclass(_CudaLike) if isinstance(x, torch.Tensor) and "cpu" not in msg
              else x for x in args(_maker("cpu")))
    with pytest.raises(exc, match=msg):
        getattr(kernelkit, name)(*a, **kwargs)
    assert not calls


def test_fakes_accept_what_the_real_op_reads():
    """Shapes, dtypes and strides of the fakes' outputs, on fake CUDA tensors."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    k = torch.ops.kernelkit
    with FakeTensorMode():
        x = torch.empty(6, 5, 7, device="cuda", dtype=torch.bfloat16)
        for y, shape, dtype in [
            (k.softmax(x, 1), (6, 5, 7), torch.bfloat16),
            (k.softmax(x.transpose(0, 2), -1), (7, 5, 6), torch.bfloat16),  # a copy first
            (k.softmax(x[:, 1, :]), (6, 7), torch.bfloat16),  # rows at a stride: in place (ld)
            (k.log_softmax(x[::2, :, :3], -1), (3, 5, 3), torch.bfloat16),
            (k.softmax(x[:, 1, :], -1, torch.float32), (6, 7), torch.float32),  # cast: a copy
            (k.log_softmax(x, 0, torch.float32), (6, 5, 7), torch.float32),
            (k.row_sum(x), (6, 5), torch.float32),
            (k.row_sum(x, [0], True), (1, 5, 7), torch.float32),
            (k.row_max(x, [-1, 0], False, torch.bfloat16), (5,), torch.bfloat16),
            (k.sum(x), (), torch.float32),
            (k.sum(x, None, True), (1, 1, 1), torch.float32),
            (k.min(x, [1]), (6, 7), torch.float32),
            (k.row_min(x[:, 1, :]), (6,), torch.float32),  # rows at a stride: in place (ld)
            (k.row_sum(x[:, :, :5], [2], True), (6, 5, 1), torch.float32),
            (k.max(x, [0, 1]), (7,), torch.float32),  # col_reduce of (1, 30, 7)
            (k.row_max(x[::2], [1]), (3, 7), torch.float32),  # strided middle axis: a copy
        ]:
            assert tuple(y.shape) == shape and y.dtype == dtype and y.device.type == "cuda"
            assert y.is_contiguous()


# ---- autograd wiring without a GPU ---------------------------------------------------------

# (name, inputs (shape, dtype) of the tensors that get a gradient, other args, kwargs)
GRAD_CASES = [
    ("softmax", [((3, 5), "bfloat16")], (), {"dim": 0}),
    ("log_softmax", [((2, 3, 4), "float32")], (), {"dtype": "float32"}),
    ("row_sum", [((3, 5), "float16")], (), {"dim": 0, "keepdim": True}),
    ("row_max", [((3, 5), "float32")], (), {}),
    ("row_min", [((3, 5, 2), "bfloat16")], (), {"dim": (0, 2)}),
    ("sum", [((3, 5), "float32")], (), {}),
    ("max", [((3, 5), "float32")], (), {"dim": 1, "keepdim": True}),
    ("min", [((4,), "float16")], (), {}),
    ("transpose", [((3, 5), "float32")], (), {}),
    ("gemv", [((3, 5), "float32"), ((5,), "float32")], (), {}),
    ("gemv", [((3, 5), "float32"), ((3,), "float32")], (), {"trans": True, "alpha": 2.0}),
    ("sgemm", [((5, 3), "float32"), ((4, 5), "float32")], (), {"trans_a": True, "trans_b": True}),
    ("matmul", [((3, 5), "float32"), ((5, 2), "float32")], (), {}),
    ("add", [((3, 5), "bfloat16"), ((3, 5), "bfloat16")], (), {}),
    ("mul", [((7,), "float32"), ((7,), "float32")], (), {}),
    ("relu", [((7,), "float16")], (), {}),
    ("gelu", [((7,), "float32")], (), {"approximate": "tanh"}),
    ("sigmoid", [((7,), "float32")], (), {}),
    ("cast", [((7,), "float32")], ("bfloat16",), {}),
    ("rms_norm", [((3, 8), "bfloat16"), ((8,), "bfloat16")], (), {}),
    ("rms_norm", [((2, 3, 8), "float32"), ((3, 8), "float32")], (), {}),
    ("layer_norm", [((3, 8), "float16"), ((8,), "float32"), ((8,), "float32")], (), {}),
    ("add_rms_norm", [((3, 8), "bfloat16"), ((3, 8), "bfloat16"), ((8,), "float32")], (), {}),
    # (a callable extra argument is made at the test: the class indices, no gradient)
    ("cross_entropy", [((3, 7), "bfloat16")],
     (lambda: torch.zeros(3, dtype=torch.int64, device="meta"),), {"label_smoothing": 0.1}),
    ("cross_entropy", [((3, 7), "float32")],
     (lambda: torch.zeros(3, dtype=torch.int32, device="meta"),), {"reduction": "none"}),
]
# how a norm case's tensors are passed: the parameters are keywords (normalized_shape comes
# second), so weight / bias are never positional
NORM_CALL = {
    "rms_norm": lambda f, x, w: f(x, None, w, 1e-6),
    "layer_norm": lambda f, x, w, b: f(x, None, w, b),
    "add_rms_norm": lambda f, x, r, w: f(x, r, w, 1e-6),
}
GRAD_IDS = [f"{c[0]}-{i}" for i, c in enumerate(GRAD_CASES)]


def test_every_differentiable_op_has_a_grad_case():
    assert {c[0] for c in GRAD_CASES} == set(_ops.__all__)


@pytest.mark.parametrize("case", GRAD_CASES, ids=GRAD_IDS)
@pytest.mark.parametrize("via", ["function", "custom_op"])
def test_backward_is_wired_on_meta(case, via):
    """The plain function keeps the graph (an output with a grad_fn), and backward gives
    every input a gradient of its shape and dtype (the fakes and backward formulas, on meta
    tensors)."""
    name, inputs, extra, kwargs = case
    xs = [torch.empty(shape, dtype=getattr(torch, dt), device="meta", requires_grad=True)
          for shape, dt in inputs]
    if via == "function":
        f = getattr(kernelkit, name)
    else:
        op = getattr(torch.ops.kernelkit, name)
        f = lambda *a, **kw: op(*a, **{k: (list(v) if isinstance(v, tuple) else  # noqa: E731
                                           [v] if k == "dim" and name not in ("softmax", "log_softmax") else
                                           getattr(torch, v) if k == "dtype" and isinstance(v, str)
                                           else v) for k, v in kw.items()})
        if name == "cast":
            extra = (torch.bfloat16,)
    extra = tuple(e() if callable(e) else e for e in extra)
    if name in NORM_CALL:
        outs = NORM_CALL[name](f, *xs)
    else:
        outs = f(*xs, *extra, **kwargs)
    outs = list(outs) if isinstance(outs, (tuple, list)) else [outs]
    for y in outs:
        assert y.grad_fn is not None, f"{name}: the output has no grad_fn"
    torch.autograd.backward(outs, [torch.empty_like(y) for y in outs])
    for x in xs:
        assert x.grad is not None and x.grad.shape == x.shape and x.grad.dtype == x.dtype, name


def test_no_grad_and_out_with_autograd():
    x = torch.empty(3, 5, device="meta", requires_grad=True)
    with pytest.raises(RuntimeError, match="out= and stream= do not support autograd"):
        kernelkit.softmax(x, out=torch.empty(3, 5, device="meta"))
    with pytest.raises(RuntimeError, match="do not support autograd"):
        kernelkit.matmul(x, torch.empty(5, 2, device="meta"), stream=0)
    with pytest.raises(ValueError, match="beta=1.0 reads y: pass it as out="):
        kernelkit.gemv(x, torch.empty(5, device="meta"), beta=1)
    with pytest.raises(TypeError, match="normalized_shape is an array: pass the weight by keyword"):
        kernelkit.rms_norm(x, torch.empty(5, device="meta"))  # torch's order: (x, shape, weight)


# The custom ops' bodies replaced by torch on the CPU (float64 welcome): torch's autograd then
# runs kernelkit's registered backward formulas (and the kernelkit ops they call, also
# replaced) on real numbers, so gradcheck can judge them without a GPU.
def _cpu_bodies(monkeypatch):
    C = _ops._C
    unary = {C.UNARY_RELU: torch.relu, C.UNARY_SIGMOID: torch.sigmoid,
             C.UNARY_GELU: torch.nn.functional.gelu,
             C.UNARY_GELU_TANH: lambda x: torch.nn.functional.gelu(x, approximate="tanh")}
    red = {C.REDUCE_SUM: torch.sum, C.REDUCE_MAX: torch.amax, C.REDUCE_MIN: torch.amin}

    def dt(d):
        return d if d is None or isinstance(d, torch.dtype) else getattr(torch, d)

    def softmax(op, log, x, dim, dtype, out, stream, fake=False):
        y = (torch.log_softmax if log else torch.softmax)(x, dim, dtype=dt(dtype))
        return y if out is None else out.copy_(y)

    def reduce(op, which, x, dim, keepdim, dtype, out, stream, fake=False):
        dims = None if dim is None else _ops._dims(dim, x.dim(), op)
        x = x.to(torch.promote_types(x.dtype, torch.float32))  # the kernels accumulate in float32
        y = red[which](x) if not dims else red[which](x, dims, keepdim)
        if dims is None and keepdim:
            y = y.reshape((1,) * x.dim())
        return y.to(dt(dtype) or torch.float32)

    def gemv(A, x, trans, alpha, beta, out, stream, fake=False):
        return alpha * ((A.t() if trans else A) @ x)

    def sgemm(A, B, ta, tb, alpha, beta, out, stream, fake=False, op="sgemm"):
        return alpha * ((A.t() if ta else A) @ (B.t() if tb else B))

    from kernelkit import _torch_ops

    def rms(x, ns, weight, eps, out, stream, fake=False, save=False):
        cols = _torch_ops._cols(x, ns, weight)
        xf = x.reshape(-1, cols)
        rstd = torch.rsqrt(xf.pow(2).mean(1) + (torch.finfo(x.dtype).eps if eps is None else eps))
        y = xf * rstd[:, None]
        if weight is not None:
            y = y * weight.reshape(1, -1)
        y = y.reshape(x.shape).to(x.dtype)
        return (y, rstd.float() if x.dtype != torch.float64 else rstd) if save else y

    def layer(x, ns, weight, bias, eps, out, stream, fake=False, save=False):
        cols = _torch_ops._cols(x, ns, weight if weight is not None else bias)
        xf = x.reshape(-1, cols)
        mean = xf.mean(1)
        rstd = torch.rsqrt((xf - mean[:, None]).pow(2).mean(1) + eps)
        y = (xf - mean[:, None]) * rstd[:, None]
        if weight is not None:
            y = y * weight.reshape(1, -1)
        if bias is not None:
            y = y + bias.reshape(1, -1)
        y = y.reshape(x.shape).to(x.dtype)
        return (y, mean, rstd) if save else y

    def add_rms(x, residual, weight, eps, out, stream, fake=False, save=False):
        s = x + residual
        y, rstd = rms(s, None, weight, eps, None, None, save=True)
        return (y, s, rstd) if save else (y, s)

    def rms_backward(dy, x, weight, rstd, cols, want, fake=False):
        xf, g, r = x.reshape(-1, cols), dy.reshape(-1, cols), rstd.reshape(-1, 1).to(x.dtype)
        gw = g * weight.reshape(1, -1) if weight is not None else g
        dx = r * (gw - xf * r * r * (gw * xf).mean(1, keepdim=True))
        dw = (g * xf * r).sum(0).reshape(weight.shape) if weight is not None and want else None
        return dx.reshape(x.shape), dw

    def softmax_backward(log, y, dy, dim, fake=False):
        if log:
            return dy - y.exp() * dy.sum(dim, keepdim=True)
        return y * (dy - (dy * y).sum(dim, keepdim=True))

    def layer_backward(dy, x, weight, bias, mean, rstd, cols, want_dw, want_db, fake=False):
        xf, g = x.reshape(-1, cols), dy.reshape(-1, cols)
        xhat = (xf - mean.reshape(-1, 1)) * rstd.reshape(-1, 1)
        gw = g * weight.reshape(1, -1) if weight is not None else g
        dx = rstd.reshape(-1, 1) * (gw - gw.mean(1, keepdim=True) -
                                    xhat * (gw * xhat).mean(1, keepdim=True))
        dw = (g * xhat).sum(0).reshape(weight.shape) if weight is not None and want_dw else None
        db = g.sum(0).reshape(bias.shape) if bias is not None and want_db else None
        return dx.reshape(x.shape), dw, db

    def add_rms_backward(dy, s, dsum, weight, rstd, cols, want, fake=False):
        dx, dw = rms_backward(dy, s, weight, rstd, cols, want)
        return (dx if dsum is None else dx + dsum), dw

    def xent(input, target, ignore_index, reduction, label_smoothing, out, stream, fake=False,
             save=False):
        x = input.to(torch.promote_types(input.dtype, torch.float32))
        keep = target != ignore_index
        t = torch.where(keep, target, 0).long()
        lse = torch.logsumexp(x, 1)
        eps = label_smoothing
        loss = lse - (1 - eps) * x.gather(1, t[:, None])[:, 0] - eps / x.shape[1] * x.sum(1)
        loss = torch.where(keep, loss, torch.zeros((), dtype=loss.dtype))
        if reduction != "none":
            loss = loss.sum() if reduction == "sum" else loss.sum() / keep.sum()
        return (loss, lse) if save else loss

    def xent_backward(input, target, lse, dloss, ignore_index, reduction, label_smoothing,
                      fake=False):
        """The C++ formula: dlogits = g_r (exp(x - lse) - eps / C - (1 - eps) [j == t])."""
        x = input.to(torch.promote_types(input.dtype, torch.float32))
        keep = target != ignore_index
        t = torch.where(keep, target, 0).long()
        eps, c = label_smoothing, x.shape[1]
        d = (x - lse[:, None]).exp() - eps / c - (1 - eps) * torch.nn.functional.one_hot(t, c)
        if reduction == "none":
            g = dloss
        else:
            g = dloss.expand(x.shape[0]) / (keep.sum() if reduction == "mean" else 1)
        g = torch.where(keep, g, torch.zeros((), dtype=g.dtype))
        return (d * g[:, None]).to(input.dtype)

    monkeypatch.setattr(_ops, "_cross_entropy", xent)
    monkeypatch.setattr(_ops, "_cross_entropy_backward", xent_backward)
    monkeypatch.setattr(_ops, "_softmax_backward", softmax_backward)
    monkeypatch.setattr(_ops, "_layer_norm_backward", layer_backward)
    monkeypatch.setattr(_ops, "_add_rms_norm_backward", add_rms_backward)
    monkeypatch.setattr(_ops, "_rms_norm", rms)
    monkeypatch.setattr(_ops, "_layer_norm", layer)
    monkeypatch.setattr(_ops, "_add_rms_norm", add_rms)
    monkeypatch.setattr(_ops, "_rms_norm_backward", rms_backward)
    monkeypatch.setattr(_ops, "_softmax", softmax)
    monkeypatch.setattr(_ops, "_reduce", reduce)
    monkeypatch.setattr(_ops, "_transpose", lambda x, out, stream, fake=False: x.t().clone())
    monkeypatch.setattr(_ops, "_gemv", gemv)
    monkeypatch.setattr(_ops, "_sgemm", sgemm)
    monkeypatch.setattr(_ops, "_unary", lambda op, w, x, out, stream, fake=False: unary[w](x))
    monkeypatch.setattr(_ops, "_binary", lambda op, w, a, b, out, stream, fake=False:
                        a + b if w == C.BINARY_ADD else a * b)
    monkeypatch.setattr(_ops, "_cast", lambda x, dtype, out, stream, fake=False:
                        x.to(dt(dtype) if not isinstance(dtype, str) else getattr(torch, dtype),
                             copy=True))


def _no_sys_modules(monkeypatch):
    """The traced path (_route, _torch_dtype) reads no sys.modules: dynamo cannot trace it
    (it iterates sys.modules while imports may add to it; on the GPU machine that was
    "dictionary changed size during iteration"). Here any sys.* read in _ops or _arrays
    raises (the bodies are swapped for torch: nothing else reads them)."""
    import types

    from kernelkit import _arrays

    monkeypatch.setattr(_ops, "sys", types.SimpleNamespace())
    monkeypatch.setattr(_arrays, "sys", types.SimpleNamespace())


# (name, f(kernelkit or torch module-like, *tensors), shapes): the same expression with torch
GRADCHECK = [
    ("softmax", lambda k, x: k.softmax(x, 0), [(4, 5)]),
    ("log_softmax", lambda k, x: k.log_softmax(x, -1), [(3, 6)]),
    ("row_sum", lambda k, x: k.row_sum(x, dim=(0, 2), keepdim=True, dtype=torch.float64), [(3, 4, 2)]),
    ("row_max", lambda k, x: k.row_max(x, dtype=torch.float64), [(3, 5)]),
    ("row_min", lambda k, x: k.row_min(x, dim=0, dtype=torch.float64), [(3, 5)]),
    ("sum", lambda k, x: k.sum(x, dtype=torch.float64), [(3, 5)]),
    ("max", lambda k, x: k.max(x, dim=1, dtype=torch.float64), [(3, 5)]),
    ("min", lambda k, x: k.min(x, keepdim=True, dtype=torch.float64), [(3, 5)]),
    ("transpose", lambda k, x: k.transpose(x), [(3, 5)]),
    ("gemv", lambda k, A, x: k.gemv(A, x, alpha=1.5), [(3, 5), (5,)]),
    ("gemv", lambda k, A, x: k.gemv(A, x, trans=True), [(3, 5), (3,)]),
    ("sgemm", lambda k, A, B: k.sgemm(A, B, trans_a=True, alpha=0.5), [(4, 3), (4, 2)]),
    ("sgemm", lambda k, A, B: k.sgemm(A, B, trans_b=True), [(3, 4), (2, 4)]),
    ("sgemm", lambda k, A, B: k.sgemm(A, B, trans_a=True, trans_b=True), [(4, 3), (2, 4)]),
    ("matmul", lambda k, a, b: k.matmul(a, b), [(3, 4), (4, 2)]),
    ("add", lambda k, a, b: k.add(a, b), [(5,), (5,)]),
    ("mul", lambda k, a, b: k.mul(a, b), [(5,), (5,)]),
    ("relu", lambda k, x: k.relu(x), [(7,)]),
    ("gelu", lambda k, x: k.gelu(x), [(7,)]),
    ("gelu", lambda k, x: k.gelu(x, approximate="tanh"), [(7,)]),
    ("sigmoid", lambda k, x: k.sigmoid(x), [(7,)]),
    ("cast", lambda k, x: k.cast(x, torch.float64), [(7,)]),
    ("rms_norm", lambda k, x, w: k.rms_norm(x, weight=w, eps=1e-6), [(3, 6), (6,)]),
    ("rms_norm", lambda k, x: k.rms_norm(x, (2, 3)), [(4, 2, 3)]),
    ("layer_norm", lambda k, x, w, b: k.layer_norm(x, 6, w, b), [(3, 6), (6,), (6,)]),
    ("layer_norm", lambda k, x, b: k.layer_norm(x, bias=b, eps=0.1), [(3, 5), (5,)]),
    ("add_rms_norm", lambda k, x, r, w: k.add_rms_norm(x, r, w, 1e-5), [(3, 6), (3, 6), (6,)]),
    ("cross_entropy", lambda k, x: k.cross_entropy(x, torch.tensor([2, 0, -100, 5])), [(4, 6)]),
    ("cross_entropy", lambda k, x: k.cross_entropy(x, torch.tensor([2, 0, 1, 5], dtype=torch.int32),
                                                   ignore_index=1, reduction="sum",
                                                   label_smoothing=0.3), [(4, 6)]),
    ("cross_entropy", lambda k, x: k.cross_entropy(x, torch.tensor([4, 3, 0]), reduction="none",
                                                   label_smoothing=1.0), [(3, 5)]),
]
# backwards through kernelkit ops that have no backward of their own, or that use the saved
# statistics (first order only)
FIRST_ORDER = ("row_max", "row_min", "max", "min", "relu", "rms_norm", "layer_norm", "add_rms_norm",
               "cross_entropy")


@pytest.mark.parametrize("case", GRADCHECK, ids=[f"{c[0]}-{i}" for i, c in enumerate(GRADCHECK)])
def test_backward_formulas_gradcheck_with_cpu_bodies(case, monkeypatch):
    """gradcheck (float64) of each registered backward, the custom op's body computed by
    torch on the CPU; first- and second-order (the backwards are differentiable)."""
    _cpu_bodies(monkeypatch)
    name, f, shapes = case
    g = torch.Generator().manual_seed(7)
    xs = [torch.randn(s, generator=g, dtype=torch.float64).requires_grad_() for s in shapes]
    fn = lambda *a: f(kernelkit, *a)  # noqa: E731
    assert first(fn(*xs)).grad_fn is not None
    assert torch.autograd.gradcheck(fn, xs)
    if name not in FIRST_ORDER:
        assert torch.autograd.gradgradcheck(fn, xs)


def test_gradcheck_covers_every_op():
    assert {c[0] for c in GRADCHECK} == set(_ops.__all__)


def test_plain_functions_compile_fullgraph_with_backward(monkeypatch):
    """torch.compile traces the plain functions without a graph break (they run the custom
    ops while compiling) and AOTAutograd differentiates them: on the CPU, with the custom
    ops' bodies (real and fake) swapped for torch."""
    _cpu_bodies(monkeypatch)
    _no_sys_modules(monkeypatch)
    torch._dynamo.reset()

    def f(x, w, b):
        h = kernelkit.gelu(kernelkit.add(kernelkit.matmul(x, w), b), approximate="tanh")
        p = kernelkit.log_softmax(h, dim=0, dtype=np.float64)  # (a numpy dtype: dtype_name)
        return kernelkit.sum(kernelkit.row_max(p, dim=-1, keepdim=True, dtype=torch.float64))

    g = torch.Generator().manual_seed(3)
    args = [torch.randn(s, generator=g, dtype=torch.float64).requires_grad_()
            for s in ((5, 4), (4, 3), (5, 3))]
    want = torch.autograd.grad(f(*args), args)
    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    got = torch.autograd.grad(compiled(*args), args)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b)
    torch._dynamo.reset()


def test_norms_compile_fullgraph_with_backward(monkeypatch):
    """The norms' custom ops (several outputs, saved statistics, kernelkit's
    rms_norm_backward op in the backward) trace under torch.compile and AOTAutograd: on the
    CPU with the bodies swapped for torch."""
    _cpu_bodies(monkeypatch)
    _no_sys_modules(monkeypatch)
    torch._dynamo.reset()

    def f(x, r, w, b):
        h, s = kernelkit.add_rms_norm(x, r, w, 1e-6)
        loss = kernelkit.cross_entropy(h, torch.tensor([1, 0, 5, -100, 2]), label_smoothing=0.1)
        return ((kernelkit.layer_norm(h, 6, w, b) * s).sum() + kernelkit.rms_norm(s, weight=w).sum()
                + loss)

    g = torch.Generator().manual_seed(4)
    args = [torch.randn(s, generator=g, dtype=torch.float64).requires_grad_()
            for s in ((5, 6), (5, 6), (6,), (6,))]
    want = torch.autograd.grad(f(*args), args)
    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    got = torch.autograd.grad(compiled(*args), args)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b)
    torch._dynamo.reset()


def test_norm_fakes_refuse_what_the_real_op_refuses():
    from torch._subclasses.fake_tensor import FakeTensorMode

    k = torch.ops.kernelkit
    with FakeTensorMode():
        x = torch.empty(4, 8, device="cuda", dtype=torch.bfloat16)
        w16 = torch.empty(8, device="cuda", dtype=torch.float16)
        with pytest.raises(TypeError, match=r"weight has dtype float16, expected x's \(bfloat16\)"):
            k.rms_norm(x, None, w16)
        with pytest.raises(ValueError, match="must be the trailing dims"):
            k.layer_norm(x, [4])
        with pytest.raises(ValueError, match="eps must be >= 0"):
            k.rms_norm(x, None, None, -1.0)
        with pytest.raises(ValueError, match="x is not C-contiguous|x is not contiguous"):
            k.rms_norm(x.t())
        with pytest.raises(ValueError, match=r"residual has shape \(4, 7\)"):
            k.add_rms_norm(x, torch.empty(4, 7, device="cuda", dtype=torch.bfloat16))
        y, rstd = k.rms_norm(x, [8], torch.empty(8, device="cuda"))
        assert y.shape == (4, 8) and y.dtype == torch.bfloat16 and rstd.shape == (4,)
        y, mean, rstd = k.layer_norm(torch.empty(2, 3, 5, device="cuda"), [3, 5])
        assert mean.shape == rstd.shape == (2,) and mean.dtype == torch.float32
        y, s, rstd = k.add_rms_norm(x, x.clone())
        assert s.shape == x.shape and s.dtype == x.dtype
        dx, dw = k.rms_norm_backward(x, x, w16.to(torch.bfloat16), rstd, 8, True)
        assert dx.shape == x.shape and dw.shape == (8,) and dw.dtype == torch.bfloat16
        dx, dw = k.rms_norm_backward(x, x, None, rstd, 8, False)
        assert dw.numel() == 0
        w32 = torch.empty(8, device="cuda")
        dx, dw, db = k.layer_norm_backward(x, x, None, w32, rstd, rstd, 8, False, True)
        assert dx.shape == x.shape and dx.dtype == x.dtype and dw.numel() == 0
        assert db.shape == (8,) and db.dtype == torch.float32
        dx, dw, db = k.layer_norm_backward(x, x, w32, w32, rstd, rstd, 8, True, False)
        assert dw.shape == (8,) and db.numel() == 0
        dx, dw = k.add_rms_norm_backward(x, x, x, w32, rstd, 8, True)
        assert dx.shape == x.shape and dw.shape == (8,) and dw.dtype == torch.float32
        dx, dw = k.add_rms_norm_backward(x, x, None, None, rstd, 8, False)
        assert dx.dtype == x.dtype and dw.numel() == 0
        with pytest.raises(TypeError, match=r"add_rms_norm_backward: dsum has dtype float32"):
            k.add_rms_norm_backward(x, x, torch.empty(4, 8, device="cuda"), None, rstd, 8, False)


def test_softmax_backward_fakes_read_the_forward_layouts():
    """softmax_backward's fake: y and dy at a row stride, transposed, expanded (what
    autograd hands over for y.sum()), another axis; dx is new and contiguous, y's dtype."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    k = torch.ops.kernelkit
    with FakeTensorMode():
        y = torch.empty(6, 5, 7, device="cuda", dtype=torch.bfloat16)
        for yy, g, dim in [
            (y, y.clone(), -1),
            (y[:, 1, :], y[:, 2, :], -1),  # rows at a stride, in place
            (y, torch.ones((), device="cuda", dtype=torch.bfloat16).expand(6, 5, 7), -1),
            (y, y.transpose(0, 1).contiguous().transpose(0, 1), 1),
        ]:
            for log in (False, True):
                dx = k.softmax_backward(yy, g, dim, log)
                assert dx.shape == yy.shape and dx.dtype == yy.dtype and dx.is_contiguous()


# ---- on the GPU ------------------------------------------------------------------------

@needs_torch_gpu
@CASES
def test_opcheck(case):
    name, args, kwargs, shape, dtype = sample(case, "cuda")
    op = getattr(torch.ops.kernelkit, name)
    out = first(op(*args, **kwargs))
    assert tuple(out.shape) == shape and out.dtype == dtype and out.is_cuda
    torch.library.opcheck(op.default, args, kwargs)


@needs_torch_gpu
def test_matches_the_plain_functions():
    for case in range(len(SAMPLES)):
        name, args, kwargs, _, _ = sample(case, "cuda")
        a = getattr(torch.ops.kernelkit, name)(*args, **kwargs)
        b = getattr(kernelkit, name)(*args, **kwargs)
        if name == "add_rms_norm":  # (y, sum) of the function, (y, sum, rstd) of the op
            assert torch.equal(a[1], b[1]), name
        assert torch.equal(first(a), first(b)), name


@needs_torch_gpu
def test_torch_compile_fullgraph():
    def f(x, w, b):
        h = torch.ops.kernelkit.gelu(torch.ops.kernelkit.matmul(x, w) + b)
        return torch.ops.kernelkit.softmax(h) * 2, torch.ops.kernelkit.row_sum(h)

    x = torch.randn(64, 128, device="cuda")
    w = torch.randn(128, 96, device="cuda")
    b = torch.randn(96, device="cuda")
    eager = f(x, w, b)
    torch._dynamo.reset()
    compiled = torch.compile(f, fullgraph=True)
    for got, want in zip(compiled(x, w, b), eager):
        torch.testing.assert_close(got, want)
    x2 = torch.randn(32, 128, device="cuda")  # a new shape: recompiles or runs dynamic
    for got, want in zip(compiled(x2, w, b), f(x2, w, b)):
        torch.testing.assert_close(got, want)


@needs_torch_gpu
def test_custom_ops_in_a_cuda_graph():
    x = torch.randn(32, 1000, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        torch.ops.kernelkit.softmax(x)
        torch.ops.kernelkit.sum(x)
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = torch.ops.kernelkit.softmax(x)
        s = torch.ops.kernelkit.sum(x)
    new = torch.randn_like(x)
    x.copy_(new)
    g.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(y, torch.softmax(new, -1))
    torch.testing.assert_close(s, new.sum(), rtol=1e-5, atol=1e-3)


@pytest.mark.skipif(not (HAS_TORCH and HAS_GPU), reason="needs torch and a CUDA GPU")
def test_compile_reduce_overhead_mode():
    """torch.compile's CUDA-graph mode: the custom op replays inside inductor's graphs."""
    def f(x):
        return torch.ops.kernelkit.log_softmax(x) + 1

    x = torch.randn(16, 333, device="cuda")
    torch._dynamo.reset()
    compiled = torch.compile(f, mode="reduce-overhead", fullgraph=True)
    for _ in range(3):
        got = compiled(x)
    torch.testing.assert_close(got, f(x))

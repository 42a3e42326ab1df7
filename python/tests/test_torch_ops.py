# SPDX-License-Identifier: Apache-2.0
"""torch.ops.kernelkit.*: registration, schemas and fake (meta) implementations (no GPU
needed), then torch.library.opcheck, torch.compile and CUDA graphs on the GPU."""

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
]


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
    out = getattr(torch.ops.kernelkit, name)(*args, **kwargs)
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
    # forward, and matmul's backward: two more kernelkit sgemm calls
    assert targets.count("kernelkit.matmul.default") == 1
    assert targets.count("kernelkit.sgemm.default") == 2


def test_cpu_tensors_are_refused_by_the_real_implementation():
    with pytest.raises(TypeError, match="torch tensor on cpu"):
        torch.ops.kernelkit.softmax(torch.randn(3, 4))


# ---- on the GPU ------------------------------------------------------------------------

@needs_torch_gpu
@CASES
def test_opcheck(case):
    name, args, kwargs, shape, dtype = sample(case, "cuda")
    op = getattr(torch.ops.kernelkit, name)
    out = op(*args, **kwargs)
    assert tuple(out.shape) == shape and out.dtype == dtype and out.is_cuda
    torch.library.opcheck(op.default, args, kwargs)


@needs_torch_gpu
def test_matches_the_plain_functions():
    for case in range(len(SAMPLES)):
        name, args, kwargs, _, _ = sample(case, "cuda")
        a = getattr(torch.ops.kernelkit, name)(*args, **kwargs)
        b = getattr(kernelkit, name)(*args, **kwargs)
        assert torch.equal(a, b), name


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

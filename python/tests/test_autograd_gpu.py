# SPDX-License-Identifier: Apache-2.0
"""Gradients on the GPU: every differentiable op's forward and backward against torch's own
on random inputs (float32, and float16 / bfloat16 where the op takes them), eager, under
torch.compile and inside a CUDA graph; gradcheck in float64 where a kernel takes float64
(transpose); torch's dim / keepdim / dtype and strided inputs against torch; the real ops
refuse what their fakes refuse, with the same errors."""

import pytest

from conftest import HAS_GPU, HAS_TORCH, needs_torch_gpu

pytestmark = needs_torch_gpu

SEED = 20261128

if HAS_TORCH and HAS_GPU:
    import torch
    import torch.nn.functional as F

    import kernelkit

    # (rtol, atol) of a result or gradient against float64, per dtype: float32 math, and for
    # half types the rounding of the output and of the gradient, and of the half output that
    # a backward reads (softmax's, as torch's own backward reads it): 4 ulp-scale errors
    GTOL = {torch.float32: (1e-4, 1e-5), torch.float16: (4e-3, 4e-3), torch.bfloat16: (3e-2, 3e-2)}

    def _classes(n, c, ignore=-100, seed=0):
        """n class indices in [0, c), every fifth row from the fourth set to ignore."""
        g = torch.Generator(device="cpu").manual_seed(SEED + seed)
        t = torch.randint(0, c, (n,), generator=g)
        t[3::5] = ignore
        return t.cuda()

    # cross_entropy's targets, made once (the compiled and graphed tests read them as
    # constants); "sum" ignores class 7, and has one row of it
    TGT = {"mean": _classes(37, 1001), "none": _classes(64, 5000, seed=1),
           "sum": _classes(3, 128256, ignore=7, seed=2).index_fill_(0, torch.tensor([1]).cuda(), 7),
           "strided": _classes(16, 1000, seed=3)}


def rand(shape, dtype="float32", seed=0, scale=1.0):
    g = torch.Generator(device="cuda").manual_seed(SEED + seed)
    return (torch.randn(shape, device="cuda", generator=g) * scale).to(getattr(torch, dtype))


# name, input shapes, dtypes it runs in, kernelkit's expression, torch's expression (on the
# same inputs; outputs compared in float64)
CASES = [
    ("softmax", [(37, 1001)], "f32 f16 bf16", lambda x: kernelkit.softmax(x, -1),
     lambda x: torch.softmax(x, -1)),
    ("softmax dim=0", [(33, 65)], "f32 bf16", lambda x: kernelkit.softmax(x, 0),
     lambda x: torch.softmax(x, 0)),
    ("softmax dtype=f32", [(9, 300)], "bf16", lambda x: kernelkit.softmax(x, dtype=torch.float32),
     lambda x: torch.softmax(x, -1, dtype=torch.float32)),
    ("log_softmax", [(17, 4099)], "f32 f16 bf16", lambda x: kernelkit.log_softmax(x),
     lambda x: torch.log_softmax(x, -1)),
    ("log_softmax dim=1 of 3-D", [(4, 50, 6)], "f32", lambda x: kernelkit.log_softmax(x, 1),
     lambda x: torch.log_softmax(x, 1)),
    # rows at a stride (logits[:, -1, :]: strides (T V, 1)), read in place by the forward
    ("softmax strided rows", [(4, 7, 1000)], "f32 f16 bf16",
     lambda x: kernelkit.softmax(x[:, -1, :]), lambda x: torch.softmax(x[:, -1, :], -1)),
    ("log_softmax strided rows", [(5, 3, 2051)], "f32 f16 bf16",
     lambda x: kernelkit.log_softmax(x[:, 1, :]), lambda x: torch.log_softmax(x[:, 1, :], -1)),
    ("log_softmax dim=0", [(65, 33)], "f16", lambda x: kernelkit.log_softmax(x, 0),
     lambda x: torch.log_softmax(x, 0)),
    ("row_sum", [(64, 333)], "f32 f16 bf16", lambda x: kernelkit.row_sum(x),
     lambda x: x.sum(-1)),
    ("row_sum dim=0 (bias grad)", [(300, 96)], "f32 bf16", lambda x: kernelkit.row_sum(x, dim=0),
     lambda x: x.sum(0)),
    ("row_sum keepdim dtype", [(8, 5, 40)], "f32", lambda x: kernelkit.row_sum(
        x, dim=(0, 2), keepdim=True, dtype=torch.bfloat16),
     lambda x: x.sum((0, 2), keepdim=True).to(torch.bfloat16)),
    ("row_max", [(31, 257)], "f32 bf16", lambda x: kernelkit.row_max(x),
     lambda x: x.amax(-1)),
    ("row_min dim=1", [(6, 70, 3)], "f32", lambda x: kernelkit.row_min(x, 1),
     lambda x: x.amin(1)),
    ("sum", [(1000, 37)], "f32 f16", lambda x: kernelkit.sum(x), lambda x: x.sum()),
    ("max", [(513,)], "f32", lambda x: kernelkit.max(x), lambda x: x.amax()),
    ("min keepdim", [(20, 30)], "f32", lambda x: kernelkit.min(x, keepdim=True),
     lambda x: x.amin((0, 1), keepdim=True)),
    ("transpose", [(257, 129)], "f32 f16 bf16", lambda x: kernelkit.transpose(x),
     lambda x: x.t().contiguous()),
    ("gemv", [(300, 129), (129,)], "f32", lambda A, x: kernelkit.gemv(A, x, alpha=1.5),
     lambda A, x: 1.5 * (A @ x)),
    ("gemv_t", [(300, 129), (300,)], "f32", lambda A, x: kernelkit.gemv(A, x, trans=True),
     lambda A, x: A.t() @ x),
    ("sgemm tn", [(65, 33), (65, 17)], "f32", lambda A, B: kernelkit.sgemm(A, B, trans_a=True),
     lambda A, B: A.t() @ B),
    ("sgemm tt", [(65, 33), (17, 65)], "f32",
     lambda A, B: kernelkit.sgemm(A, B, trans_a=True, trans_b=True, alpha=0.5),
     lambda A, B: 0.5 * (A.t() @ B.t())),
    ("matmul", [(128, 96), (96, 80)], "f32", lambda a, b: kernelkit.matmul(a, b), lambda a, b: a @ b),
    ("add", [(1001,), (1001,)], "f32 f16 bf16", lambda a, b: kernelkit.add(a, b), lambda a, b: a + b),
    ("mul", [(7, 129), (7, 129)], "f32 bf16", lambda a, b: kernelkit.mul(a, b), lambda a, b: a * b),
    ("relu", [(4097,)], "f32 bf16", lambda x: kernelkit.relu(x), lambda x: F.relu(x)),
    ("gelu", [(4097,)], "f32 f16", lambda x: kernelkit.gelu(x), lambda x: F.gelu(x)),
    ("gelu tanh", [(4097,)], "f32 bf16", lambda x: kernelkit.gelu(x, approximate="tanh"),
     lambda x: F.gelu(x, approximate="tanh")),
    ("sigmoid", [(333,)], "f32 f16", lambda x: kernelkit.sigmoid(x), lambda x: torch.sigmoid(x)),
    ("cast", [(1025,)], "f32 bf16", lambda x: kernelkit.cast(x, torch.float16),
     lambda x: x.to(torch.float16)),
    # norms (weight of x's dtype; add_rms_norm's two outputs stacked: y and x + residual)
    ("rms_norm", [(64, 1024), (1024,)], "f32 f16 bf16",
     lambda x, w: kernelkit.rms_norm(x, weight=w, eps=1e-6),
     lambda x, w: F.rms_norm(x, (1024,), w, 1e-6)),
    ("rms_norm wide", [(3, 20000), (20000,)], "f32 bf16",  # past a block's registers
     lambda x, w: kernelkit.rms_norm(x, (20000,), w, 1e-5),
     lambda x, w: F.rms_norm(x, (20000,), w, 1e-5)),
    ("rms_norm no weight", [(5, 7, 96)], "f32", lambda x: kernelkit.rms_norm(x, (7, 96)),
     lambda x: F.rms_norm(x, (7, 96), eps=torch.finfo(torch.float32).eps)),
    ("layer_norm", [(37, 4099), (4099,), (4099,)], "f32 f16 bf16",
     lambda x, w, b: kernelkit.layer_norm(x, (4099,), w, b),
     lambda x, w, b: F.layer_norm(x, (4099,), w, b)),
    ("layer_norm no affine", [(16, 768)], "f32 bf16", lambda x: kernelkit.layer_norm(x, eps=1e-3),
     lambda x: F.layer_norm(x, (768,), eps=1e-3)),
    ("layer_norm bias only", [(16, 768), (768,)], "f32 bf16",
     lambda x, b: kernelkit.layer_norm(x, bias=b), lambda x, b: F.layer_norm(x, (768,), None, b)),
    ("add_rms_norm", [(33, 2048), (33, 2048), (2048,)], "f32 f16 bf16",
     lambda x, r, w: torch.stack(kernelkit.add_rms_norm(x, r, w, 1e-6)),
     lambda x, r, w: torch.stack((F.rms_norm(x + r, (2048,), w, 1e-6), x + r))),
    ("add_rms_norm y only", [(9, 5000), (9, 5000)], "f32 bf16",  # no gradient reaches the sum
     lambda x, r: kernelkit.add_rms_norm(x, r, None, 1e-6)[0],
     lambda x, r: F.rms_norm(x + r, (5000,), None, 1e-6)),
    # softmax over a non-last axis of a contiguous tensor: softmax_inner and its backward
    ("softmax dim=1 NCHW", [(4, 19, 8, 9)], "f32 f16 bf16", lambda x: kernelkit.softmax(x, 1),
     lambda x: torch.softmax(x, 1)),
    ("log_softmax dim=0 tall", [(5000, 3)], "f32 bf16", lambda x: kernelkit.log_softmax(x, 0),
     lambda x: torch.log_softmax(x, 0)),
    # cross_entropy (float32 loss; the gradient from the saved lse, kernelkit's
    # cross_entropy_backward)
    ("cross_entropy", [(37, 1001)], "f32 f16 bf16",
     lambda x: kernelkit.cross_entropy(x, TGT["mean"]),
     lambda x: F.cross_entropy(x, TGT["mean"])),
    ("cross_entropy none smoothing", [(64, 5000)], "f32 bf16",
     lambda x: kernelkit.cross_entropy(x, TGT["none"], reduction="none", label_smoothing=0.1),
     lambda x: F.cross_entropy(x, TGT["none"], reduction="none", label_smoothing=0.1)),
    ("cross_entropy sum wide vocab", [(3, 128256)], "f32 bf16",  # rows split over blocks
     lambda x: kernelkit.cross_entropy(x, TGT["sum"], ignore_index=7, reduction="sum"),
     lambda x: F.cross_entropy(x, TGT["sum"], ignore_index=7, reduction="sum")),
    ("cross_entropy strided rows int32", [(16, 1024)], "f32 bf16",
     lambda x: kernelkit.cross_entropy(x[:, :1000], TGT["strided"].int(), label_smoothing=0.05),
     lambda x: F.cross_entropy(x[:, :1000], TGT["strided"], label_smoothing=0.05)),
]
DT = {"f32": "float32", "f16": "float16", "bf16": "bfloat16"}
PARAMS = [(c, DT[d]) for c in CASES for d in c[2].split()]
IDS = [f"{c[0]}-{d}" for c, d in PARAMS]


def _inputs(case, dtype):
    return [rand(s, dtype, seed=i).requires_grad_() for i, s in enumerate(case[1])]


def _grads(fn, xs, g):
    y = fn(*xs)
    gr = torch.autograd.grad(y, xs, g)
    return y, gr


def test_every_op_has_a_gradient_case():
    assert {c[0].split()[0] for c in CASES} >= set(kernelkit._ops.__all__)


@pytest.mark.parametrize("case,dtype", PARAMS, ids=IDS)
def test_gradients_match_torch_eager(case, dtype):
    name, _, _, kk, ref = case
    xs = _inputs(case, dtype)
    y = kk(*xs)
    assert y.grad_fn is not None, f"{name}: the plain function lost the graph"
    g = rand(y.shape, "float32", seed=99).to(y.dtype)
    y, got = _grads(kk, xs, g)
    ry, want = _grads(ref, [x.detach().double().requires_grad_() for x in xs], g.double())
    r, a = GTOL[y.dtype if y.dtype in GTOL else torch.float32]
    torch.testing.assert_close(y.double(), ry.to(y.dtype).double(), rtol=r, atol=a)
    for x, gx, wx in zip(xs, got, want):
        assert gx.dtype == x.dtype and gx.shape == x.shape
        r, a = GTOL[x.dtype]
        torch.testing.assert_close(gx.double(), wx, rtol=r, atol=a,
                                   msg=lambda m: f"{name} {dtype} (seed {SEED}): {m}")


def _all_ops(xs):
    """One expression using every case (float32): the scalar sum of each output times a fixed
    weight, for the torch.compile and CUDA-graph tests."""
    total = 0
    for (case, _), (args, w) in zip(F32, xs):
        total = total + (case[3](*args).float() * w).sum()
    return total


if HAS_TORCH and HAS_GPU:
    F32 = [(c, "float32") for c in CASES if "f32" in c[2].split()]


def _all_inputs():
    xs = []
    for i, (case, dt) in enumerate(F32):
        args = _inputs(case, dt)
        w = rand(case[4](*[a.detach() for a in args]).shape, "float32", seed=200 + i)
        xs.append((args, w))
    return xs


def _reference_grads(xs):
    total = 0
    leaves = []
    for (case, _), (args, w) in zip(F32, xs):
        a64 = [a.detach().double().requires_grad_() for a in args]
        leaves += a64
        total = total + (case[4](*a64).double() * w.double()).sum()
    return torch.autograd.grad(total, leaves)


def _flat(xs):
    return [a for args, _ in xs for a in args]


def test_gradients_under_torch_compile():
    """Inductor with eager's half-precision rounding (emulate_precision_casts): by default it
    fuses a downcast into the next op and skips its rounding, e.g. the bfloat16 gradient of
    "row_sum keepdim dtype" (w rounded by .float()'s backward, then expanded and upcast by
    row_sum's backward in one fused kernel) reached x unrounded, 0.3 % from the float64
    reference that rounds it as eager does (torch's own x.sum(dtype=bfloat16) compiles to the
    same; reproduced on the CPU). The compiled backwards are checked against eager numerics."""
    import torch._inductor.config as inductor_config

    xs = _all_inputs()
    torch._dynamo.reset()
    with inductor_config.patch(emulate_precision_casts=True):  # (the backward compiles at its
        f = torch.compile(_all_ops, fullgraph=True)             # first call: inside too)
        got = torch.autograd.grad(f(xs), _flat(xs))
    torch._dynamo.reset()
    for x, gx, wx in zip(_flat(xs), got, _reference_grads(xs)):
        torch.testing.assert_close(gx.double(), wx, rtol=1e-4, atol=1e-4)


def test_gradients_in_a_cuda_graph():
    xs = _all_inputs()
    leaves = _flat(xs)

    def step():
        return torch.autograd.grad(_all_ops(xs), leaves)

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        grads = step()
    for seed in (1, 2):  # new inputs, replayed
        for i, x in enumerate(leaves):
            with torch.no_grad():
                x.copy_(rand(x.shape, "float32", seed=1000 * seed + i))
        graph.replay()
        torch.cuda.synchronize()
        for gx, wx in zip(grads, _reference_grads(xs)):
            torch.testing.assert_close(gx.double(), wx, rtol=1e-4, atol=1e-4)


def test_compiled_calls_with_out_run_eagerly():
    """Under torch.compile a call with out= (no autograd) stays the direct path: a graph
    break, not an error."""
    x = rand((16, 100))
    y = torch.empty_like(x)
    torch._dynamo.reset()
    f = torch.compile(lambda x, y: kernelkit.softmax(x, out=y) * 2)
    torch.testing.assert_close(f(x, y), torch.softmax(x, -1) * 2)
    torch.testing.assert_close(y, torch.softmax(x, -1))


def test_gradcheck_float64_transpose():
    x = rand((7, 5), "float64").requires_grad_()
    assert torch.autograd.gradcheck(kernelkit.transpose, (x,))
    assert torch.autograd.gradgradcheck(kernelkit.transpose, (x,))


def test_training_step():
    """The README's step: a linear layer, gelu, log_softmax and a loss, forward and backward
    through kernelkit, against the same step in torch."""
    x = rand((64, 128))
    w = rand((128, 96), seed=1, scale=0.1).requires_grad_()
    b = rand((64, 96), seed=2).requires_grad_()
    target = torch.randint(0, 96, (64,), device="cuda")

    def step(k):
        h = k.gelu(k.add(k.matmul(x, w), b)) if k is kernelkit else F.gelu(x @ w + b)
        logp = k.log_softmax(h, dim=-1)
        return -logp.gather(1, target[:, None]).mean()

    loss = step(kernelkit)
    loss.backward()
    got = (w.grad.clone(), b.grad.clone())
    w.grad = b.grad = None
    ref = step(torch)
    ref.backward()
    torch.testing.assert_close(loss, ref, rtol=1e-5, atol=1e-6)
    for gx, wx in zip(got, (w.grad, b.grad)):
        torch.testing.assert_close(gx, wx, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("log", [False, True])
def test_softmax_backward_reads_strided_rows(dtype, log):
    """kernelkit's softmax_backward op (what autograd calls) on y and dy in the layouts
    autograd hands over: rows at a stride, read in place; an expanded dy (y.sum()'s
    gradient) and a transposed one, copied first; another axis. Against float64."""
    k = torch.ops.kernelkit
    x = rand((4, 7, 1000), dtype)
    y = (kernelkit.log_softmax if log else kernelkit.softmax)(x)
    g = rand((4, 7, 1000), dtype, seed=5)

    def want(y, g, dim):
        y, g = y.double(), g.double()
        if log:
            return g - y.exp() * g.sum(dim, keepdim=True)
        return y * (g - (g * y).sum(dim, keepdim=True))

    r, a = GTOL[getattr(torch, dtype)]
    for yy, gg, dim in [
        (y[:, -1, :], g[:, 2, :], -1),  # both at a row stride (7000)
        (y, torch.ones((), device="cuda", dtype=y.dtype).expand(y.shape), -1),
        (y[:, 1, :], rand((1000, 4), dtype, seed=6).t(), -1),  # dy's rows not unit-stride
        (y, g, 1),
    ]:
        dx = k.softmax_backward(yy, gg, dim, log)
        assert dx.dtype == yy.dtype and dx.shape == yy.shape
        torch.testing.assert_close(dx.double(), want(yy, gg, dim), rtol=r, atol=a)


# ---- dim / keepdim / dtype and strided inputs, forward ---------------------------------

def test_strided_rows_and_axes_against_torch():
    from test_torch_gpu import sum_close

    logits = rand((4, 7, 1000), "bfloat16")
    last = logits[:, -1, :]  # strides (7000, 1): rows at a stride, read in place (ld)
    torch.testing.assert_close(kernelkit.softmax(last).double(), torch.softmax(last.double(), -1),
                               rtol=1.6e-2, atol=1e-4)
    torch.testing.assert_close(kernelkit.row_max(last), last.float().amax(-1), rtol=0, atol=0)
    x = rand((6, 50, 9))
    for d in (0, 1, -1):
        torch.testing.assert_close(kernelkit.softmax(x, d), torch.softmax(x, d))
        torch.testing.assert_close(kernelkit.log_softmax(x.transpose(0, 2), d),
                                   torch.log_softmax(x.transpose(0, 2), d), rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(kernelkit.row_sum(x, d, True), x.sum(d, keepdim=True),
                                   rtol=1e-5, atol=1e-5)
    # float32 sums rounded once to float16, against float64 (torch's x.sum(dtype=float16)
    # is no reference: it casts x to float16 first, 54 roundings of the terms)
    s16 = kernelkit.sum(x, (0, 2), dtype=torch.float16)
    assert s16.dtype == torch.float16 and s16.shape == (50,)
    xd = x.double()
    sum_close(s16, xd.sum((0, 2)), xd.abs().sum((0, 2)), "sum dim=(0, 2) dtype=float16",
              rounding=2.0**-11)
    torch.testing.assert_close(kernelkit.max(x.transpose(1, 2)), x.amax(), rtol=0, atol=0)
    y = torch.empty(6, 50, 9, device="cuda")
    assert kernelkit.softmax(x, 1, out=y) is y
    torch.testing.assert_close(y, torch.softmax(x, 1))
    kernelkit.softmax(y, 0, out=y)  # in place along a non-last axis
    torch.testing.assert_close(y, torch.softmax(torch.softmax(x, 1), 0))


# ---- fakes and real ops refuse alike -------------------------------------------------------

def test_fake_and_real_refuse_alike():
    from test_torch_ops import REFUSED, _maker
    from torch._subclasses.fake_tensor import FakeTensorMode

    for name, args, kwargs, exc, msg in REFUSED:
        op = getattr(torch.ops.kernelkit, name)
        with pytest.raises(exc, match=msg) as real:
            op(*args(_maker("cuda")), **kwargs)
        with FakeTensorMode():
            with pytest.raises(exc) as fake:
                op(*args(_maker("cuda")), **kwargs)
        assert str(fake.value) == str(real.value), name

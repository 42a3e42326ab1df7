# SPDX-License-Identifier: Apache-2.0
"""Every function against torch on random data (all dtypes, odd shapes), out= and in place,
streams (work on a non-default torch stream stays ordered with it), CUDA graph capture and
replay. References are computed in float64 by torch; tolerances are per dtype."""

import pytest

from conftest import HAS_GPU, HAS_TORCH, needs_torch_gpu

pytestmark = needs_torch_gpu

if HAS_TORCH and HAS_GPU:
    import torch

    import kernelkit

    DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
    # (rtol, atol) of a rounded float result against float64, per output dtype
    TOL = {torch.float32: (1e-5, 1e-6), torch.float16: (2e-3, 1e-5),
           torch.bfloat16: (1.6e-2, 1e-4)}
else:
    DTYPES = {"float32": None, "float16": None, "bfloat16": None}

SEED = 20261123
ROW_SHAPES = [(1, 1), (3, 7), (5, 1000), (2, 3, 33), (7, 4099), (1, 65537), (33, 8193),
              (64, 50257), (0, 5), (4, 0), (1,), ()]
FLAT_SHAPES = [(1,), (31,), (33,), (1000003,), (3, 5, 7), (0,), ()]


def rand(shape, dtype, scale=3.0, seed=SEED):
    g = torch.Generator(device="cuda").manual_seed(seed)
    return (torch.randn(shape, device="cuda", generator=g, dtype=torch.float32) * scale).to(dtype)


def close(out, ref, dtype=None, rtol=None, atol=None, what=""):
    r, a = TOL[dtype or out.dtype]
    torch.testing.assert_close(out.double(), ref.double(), rtol=rtol or r, atol=atol or a,
                               equal_nan=True, msg=lambda m: f"{what} (seed {SEED}): {m}")


def sum_close(out, ref, mag, what="", rounding=0.0):
    """A float32 sum against float64: error within 1e-5 of the sum of magnitudes; rounding:
    the unit roundoff of a narrower output dtype (2**-11 for float16) the float32 sum is
    rounded to once, allowed relative to the sum."""
    err = (out.double() - ref.double()).abs()
    bound = 1e-5 * mag.double() + 1e-6 + rounding * ref.double().abs()
    assert bool((err <= bound).all()), f"{what} (seed {SEED}): max error {err.max().item():.3g}"


# ---- softmax ---------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", ROW_SHAPES, ids=str)
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_softmax(shape, dtype, log):
    x = rand(shape, DTYPES[dtype])
    f, ref_f = (kernelkit.log_softmax, torch.log_softmax) if log else (kernelkit.softmax, torch.softmax)
    y = f(x)
    assert type(y) is torch.Tensor and y.shape == x.shape and y.dtype == x.dtype
    assert y.device == x.device and y.is_contiguous()
    ref = ref_f(x.double(), -1) if x.dim() else ref_f(x.double().reshape(1), -1).reshape(())
    atol = 1e-2 if log and x.dtype != torch.float32 else (1e-5 if log else None)
    close(y, ref, atol=atol, what=f"{f.__name__} {shape} {dtype}")


def close_softmax_grad(dx, y, g, log, what):
    """dx of softmax (y * (g - s), s = sum(g * y)) or log_softmax (g - exp(y) * s, s = sum(g))
    against float64 from the backward's own inputs y and g, within the bound the C++ tests
    (softmax_rows_test.cu) hold the kernels to: dx's rounding (TOL) plus the float32 row sum's
    error, which grows with the row's length and the sum of its terms' sizes, and a few
    roundings of the operands w = exp(y) or y, g and s (cancellation in g - w * s can leave
    these far above |dx|)."""
    r, a = TOL[dx.dtype]
    yd, gd = y.detach().double(), g.double()
    t = gd if log else gd * yd
    s = t.sum(-1, keepdim=True)
    err_s = 1.2e-7 * (y.shape[-1] / 64 + 64) * t.abs().sum(-1, keepdim=True)
    w = yd.exp() if log else yd
    want = gd - w * s if log else yd * (gd - s)
    tol = r * want.abs() + a + w.abs() * (err_s + 2e-6 * (gd.abs() + s.abs())) + 1e-6 * gd.abs()
    bad = (dx.double() - want).abs() > tol
    assert not bad.any(), (f"{what} (seed {SEED}): {int(bad.sum())} of {bad.numel()} outside the "
                           f"bound, first at {tuple(bad.nonzero()[0].tolist())}")


def test_softmax_reads_strided_rows_in_place(monkeypatch):
    """softmax / log_softmax of rows at a stride (kernelkit's ld overloads: aligned and
    misaligned strides, 3-D rows that collapse to one stride, few long rows) against
    float64, forward and backward (autograd: softmax_backward), with the framework's copy
    forbidden."""
    from kernelkit import _ops

    def no_copy(*args, **kwargs):
        raise AssertionError("a copy: this layout should be read in place")

    monkeypatch.setattr(_ops, "moved_copy", no_copy)
    cases = [
        lambda: rand((4, 7, 1000), torch.bfloat16)[:, -1, :],  # rows at stride 7000
        lambda: rand((4, 7, 1000), torch.float32)[:, :, :999],  # ld 1000, rows of 999
        lambda: rand((8, 4104), torch.float16)[:, 3:4102],  # misaligned start and stride
        lambda: rand((3, 16, 2, 64), torch.float32)[:, :, 0, :],  # (3, 16) rows at stride 128
        lambda: rand((2, 70000), torch.float32)[:, :65537],  # few long rows
    ]
    for make in cases:
        for log in (False, True):
            f, ref_f = (kernelkit.log_softmax, torch.log_softmax) if log else (kernelkit.softmax,
                                                                                torch.softmax)
            base = make()
            x = base.detach().requires_grad_()  # a leaf with the view's strides
            assert not x.is_contiguous()
            what = f"{f.__name__} {tuple(x.shape)} strides {x.stride()} {x.dtype}"
            y = f(x)
            atol = 1e-2 if log and x.dtype != torch.float32 else (1e-5 if log else None)
            close(y, ref_f(x.detach().double(), -1), atol=atol, what=what)
            g = rand(y.shape, torch.float32, seed=SEED + 7).to(y.dtype)
            (dx,) = torch.autograd.grad(y, x, g)
            close_softmax_grad(dx, y, g, log, what + " dx")


def test_softmax_reads_a_middle_axis_in_place(monkeypatch):
    """softmax / log_softmax over a non-last axis of a contiguous tensor (kernelkit's
    softmax_inner over (outer, n, inner): channel softmax of NCHW, short and tall columns,
    the tall ones split through the workspace) against float64, forward and backward
    (autograd: softmax_inner_backward), with the framework's copy forbidden."""
    from kernelkit import _ops

    def no_copy(*args, **kwargs):
        raise AssertionError("a copy: this layout should be read in place")

    monkeypatch.setattr(_ops, "moved_copy", no_copy)
    cases = [((4, 19, 8, 9), 1, torch.float32), ((4, 19, 8, 9), 1, torch.bfloat16),
             ((6, 50, 9), 0, torch.float16), ((5000, 3), 0, torch.bfloat16),
             ((3, 20000, 4), 1, torch.float32), ((2, 3, 1000, 2), -2, torch.float32)]
    for shape, d, dtype in cases:
        for log in (False, True):
            f, ref_f = (kernelkit.log_softmax, torch.log_softmax) if log else (kernelkit.softmax,
                                                                                torch.softmax)
            x = rand(shape, dtype).requires_grad_()
            what = f"{f.__name__} {shape} dim={d} {dtype}"
            y = f(x, d)
            assert y.shape == x.shape and y.dtype == dtype and y.is_contiguous()
            atol = 1e-2 if log and dtype != torch.float32 else (1e-5 if log else None)
            close(y, ref_f(x.detach().double(), d), atol=atol, what=what)
            g = rand(shape, torch.float32, seed=SEED + 7).to(dtype)
            (dx,) = torch.autograd.grad(y, x, g)
            assert dx.dtype == dtype and dx.shape == x.shape
            close_softmax_grad(dx.movedim(d, -1), y.movedim(d, -1), g.movedim(d, -1), log,
                               what + " dx")


def _loss_ref(x, t, ignore_index=-100, reduction="mean", label_smoothing=0.0):
    """torch's cross_entropy in float64, and the bound of a float32 computation of it: per row
    1e-5 of the magnitudes the loss is made of (lse, the target's logit, the smoothing term),
    summed as the reduction sums."""
    F = torch.nn.functional
    x64 = x.double()
    keep = t != ignore_index
    ref = F.cross_entropy(x64, t.long(), ignore_index=ignore_index, reduction=reduction,
                          label_smoothing=label_smoothing)
    lse = torch.logsumexp(x64, 1) if x.shape[1] else torch.zeros(x.shape[0], device=x.device)
    tgt = torch.where(keep, t.long(), 0)
    mag = lse.abs() + x64.gather(1, tgt[:, None])[:, 0].abs() if x.shape[1] else lse
    mag = torch.where(keep, mag + label_smoothing * x64.abs().mean(1), 0.0)
    if reduction == "sum":
        mag = mag.sum()
    elif reduction == "mean":
        mag = mag.sum() / keep.sum()
    return ref, 1e-5 * mag + 1e-6


def _classes(n, c, ignore=-100, seed=SEED, dtype=None):
    """n class indices in [0, c) (int64, or dtype), every fifth row from the fourth set to
    ignore."""
    g = torch.Generator(device="cpu").manual_seed(seed)
    t = torch.randint(0, max(c, 1), (n,), generator=g)
    t[3::5] = ignore  # every fifth row from the fourth ignored
    return t.to(device="cuda", dtype=dtype or torch.int64)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (7, 33), (64, 5000), (4, 128256), (1, 262144),
                                   (300, 50257), (2, 100003)], ids=str)
def test_cross_entropy(shape, dtype):
    """Every reduction, with and without label smoothing, int64 and int32 targets, rows
    ignored, against torch's float64 cross_entropy; the saved lse (the custom op's second
    output) against float64 logsumexp."""
    x = rand(shape, DTYPES[dtype])
    for tdt in (torch.int64, torch.int32):
        t = _classes(shape[0], shape[1], dtype=tdt)
        for reduction in ("mean", "sum", "none"):
            for ls in (0.0, 0.1):
                got = kernelkit.cross_entropy(x, t, reduction=reduction, label_smoothing=ls)
                assert got.dtype == torch.float32
                assert got.shape == ((shape[0],) if reduction == "none" else ())
                want, bound = _loss_ref(x, t, reduction=reduction, label_smoothing=ls)
                err = (got.double() - want).abs()
                assert bool((err <= bound).all()), (
                    f"cross_entropy {shape} {dtype} {tdt} {reduction} eps={ls} (seed {SEED}): "
                    f"max error {err.max().item():.3g}")
    loss, lse = torch.ops.kernelkit.cross_entropy(x, t)
    want = torch.logsumexp(x.double(), 1)
    assert bool(((lse.double() - want).abs() <= 1e-6 * want.abs() + 1e-6).all()), "lse"


def test_cross_entropy_special_values():
    """torch's answers where they are defined: every row ignored (mean NaN, sum 0), no rows,
    -inf logits (exp 0; +inf loss for an -inf target logit); a target outside [0, C) (torch
    raises) is a NaN loss for its row."""
    inf = float("inf")
    ce = kernelkit.cross_entropy
    x = rand((4, 10), torch.float32)
    ign = torch.full((4,), -100, device="cuda")
    assert torch.isnan(ce(x, ign)) and ce(x, ign, reduction="sum").item() == 0.0
    assert (ce(x, ign, reduction="none") == 0).all()
    empty = torch.empty(0, 10, device="cuda")
    e_t = torch.empty(0, dtype=torch.int64, device="cuda")
    assert torch.isnan(ce(empty, e_t)) and ce(empty, e_t, reduction="sum").item() == 0.0
    assert ce(empty, e_t, reduction="none").shape == (0,)
    y = x.clone()
    y[0, 3] = -inf
    y[1, 2] = -inf
    t = torch.tensor([1, 2, 5, 7], device="cuda")
    got = ce(y, t, reduction="none")
    assert torch.isfinite(got[[0, 2, 3]]).all() and got[1].item() == inf
    close(got[[0, 2, 3]], torch.nn.functional.cross_entropy(
        y.double(), t, reduction="none")[[0, 2, 3]])
    bad = torch.tensor([1, 10, -1, 7], device="cuda")
    got = ce(x, bad, reduction="none")
    assert torch.isnan(got[[1, 2]]).all() and torch.isfinite(got[[0, 3]]).all()
    assert torch.isnan(ce(x, bad)) and torch.isnan(ce(x, bad, reduction="sum"))
    assert torch.isfinite(ce(x, bad.clamp(0, 9)))


def test_cross_entropy_strided_rows_out_and_determinism(monkeypatch):
    """Logits at a row stride read in place (no copy), int32 targets, out=, a custom
    ignore_index; the same bits run after run, forward and backward."""
    from kernelkit import _ops

    def no_copy(*args, **kwargs):
        raise AssertionError("a copy: strided rows should be read in place")

    monkeypatch.setattr(_ops, "moved_copy", no_copy)
    base = rand((16, 1024), torch.bfloat16)
    x = base[:, 3:1003]  # ld 1024, misaligned start
    t = _classes(16, 1000, ignore=7, dtype=torch.int32)
    out = torch.full((), float("nan"), device="cuda")
    assert kernelkit.cross_entropy(x, t, ignore_index=7, out=out) is out
    want, bound = _loss_ref(x, t, ignore_index=7)
    assert abs(out.double().item() - want.item()) <= bound.item()
    again = kernelkit.cross_entropy(x, t, ignore_index=7)
    assert torch.equal(again, out)
    xg = x.detach().requires_grad_()
    g1 = torch.autograd.grad(kernelkit.cross_entropy(xg, t, ignore_index=7, label_smoothing=0.2),
                             xg)[0]
    g2 = torch.autograd.grad(kernelkit.cross_entropy(xg, t, ignore_index=7, label_smoothing=0.2),
                             xg)[0]
    assert torch.equal(g1, g2) and g1.is_contiguous() and g1.dtype == x.dtype
    assert (g1[t == 7] == 0).all()


def test_softmax_out_and_in_place():
    x = rand((37, 1001), torch.float32)
    ref = torch.softmax(x.double(), -1)
    out = torch.full_like(x, float("nan"))
    assert kernelkit.softmax(x, out=out) is out
    close(out, ref)
    y = x.clone()
    assert kernelkit.softmax(y, out=y) is y
    close(y, ref)
    lx = x.clone()
    kernelkit.log_softmax(lx, out=lx)
    close(lx, torch.log_softmax(x.double(), -1), atol=1e-5)


def test_softmax_special_values():
    x = torch.tensor([[0.0, float("-inf"), 1.0], [float("nan"), 0.0, 0.0],
                      [float("-inf")] * 3], device="cuda")
    y = kernelkit.softmax(x)
    assert y[0, 1].item() == 0.0 and abs(y[0].sum().item() - 1) < 1e-6
    assert torch.isnan(y[1]).all() and torch.isnan(y[2]).all()


def test_requires_grad_input_keeps_the_graph():
    """An input that requires grad goes through torch.ops.kernelkit.softmax (autograd);
    under no_grad the direct path runs and the output has no graph."""
    x = rand((8, 100), torch.float32).requires_grad_()
    y = kernelkit.softmax(x)
    assert y.requires_grad and y.grad_fn is not None
    close(y, torch.softmax(x.detach().double(), -1))
    with torch.no_grad():
        z = kernelkit.softmax(x)
    assert not z.requires_grad and torch.equal(z, y.detach())


# ---- reductions ------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", ROW_SHAPES, ids=str)
def test_row_reductions(shape, dtype):
    x = rand(shape, DTYPES[dtype])
    xd = x.double().reshape(x.shape[:-1] + (x.shape[-1] if x.dim() else 1,))
    s, mx, mn = kernelkit.row_sum(x), kernelkit.row_max(x), kernelkit.row_min(x)
    for r in (s, mx, mn):
        assert r.dtype == torch.float32 and r.shape == x.shape[:-1] and r.device == x.device
    sum_close(s, xd.sum(-1), xd.abs().sum(-1), what=f"row_sum {shape} {dtype}")
    if xd.shape[-1] == 0:
        assert bool((mx == float("-inf")).all()) and bool((mn == float("inf")).all())
    else:
        # max / min are exact (a float32 output holds every f16 / bf16 value)
        assert torch.equal(mx.double(), xd.amax(-1)), f"row_max {shape} {dtype}"
        assert torch.equal(mn.double(), xd.amin(-1)), f"row_min {shape} {dtype}"


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", FLAT_SHAPES, ids=str)
def test_reductions(shape, dtype):
    x = rand(shape, DTYPES[dtype])
    xd = x.double()
    s, mx, mn = kernelkit.sum(x), kernelkit.max(x), kernelkit.min(x)
    for r in (s, mx, mn):
        assert r.dtype == torch.float32 and r.shape == () and r.device == x.device
    sum_close(s, xd.sum(), xd.abs().sum(), what=f"sum {shape} {dtype}")
    if x.numel() == 0:
        assert mx.item() == float("-inf") and mn.item() == float("inf")
    else:
        assert mx.item() == xd.max().item() and mn.item() == xd.min().item()


def test_reductions_deterministic_and_out():
    x = rand((1 << 22) + 7, torch.float32)
    a, b = kernelkit.sum(x), kernelkit.sum(x)
    assert torch.equal(a, b)
    out = torch.empty(1, device="cuda")
    assert kernelkit.sum(x, out=out) is out and torch.equal(out[0], a)
    rows = torch.empty(31, device="cuda")
    kernelkit.row_sum(rand((31, 333), torch.bfloat16), out=rows)
    assert torch.isfinite(rows).all()


@pytest.mark.parametrize("path", ["raw", "tensor"])
@pytest.mark.parametrize("name", ["row_sum", "row_sum strided", "col_sum", "gemv", "sgemm", "sum",
                                  "softmax_inner", "cross_entropy"])
def test_workspace_plumbing(name, path, monkeypatch):
    """Whatever bytes the extension asks for reach it from torch's allocator, uninitialized,
    and the launch gets exactly that workspace's address and size: a block of the caching
    allocator taken for the launch's stream ("raw", the default), or a uint8 tensor ("tensor":
    where torch has no raw allocator or the device is not the current one), which is filled
    with 0xA5 first: the op is right whatever the workspace holds."""
    from kernelkit import _C, _arrays, _ops

    base = {"row_sum": "row_reduce", "row_sum strided": "row_reduce", "col_sum": "col_reduce",
            "gemv": "gemv", "sgemm": "sgemm", "sum": "reduce", "softmax_inner": "softmax_inner",
            "cross_entropy": "cross_entropy"}[name]
    launch = getattr(_C, base)
    orig = getattr(_C, f"{base}_workspace_bytes")
    alloc = _ops.workspace
    asked, made, seen = [], [], []

    def more(*args):  # 4 KiB more than the op asks for (today's ops may ask for none)
        asked.append(orig(*args) + 4096)
        return asked[-1]

    def filled(like, nbytes, op, stream):
        assert stream == torch.cuda.current_stream().cuda_stream  # the launch's stream
        ws = alloc(like, nbytes, op, stream)
        if path == "tensor":
            assert isinstance(ws.obj, torch.Tensor) and ws.obj.dtype == torch.uint8
            assert ws.obj.numel() == ws.nbytes
            ws.obj.fill_(0xA5)
        else:  # raw memory: no fill from here (the tensor path checks the contents rule)
            assert isinstance(ws.obj, _arrays._RawBlock) and ws.obj.ptr == ws.ptr
        assert ws.ptr % 16 == 0
        made.append((ws.ptr, ws.nbytes))
        return ws

    def spy(*args):  # ..., workspace, workspace_bytes, device, stream
        seen.append(tuple(args[-4:-2]))
        return launch(*args)

    monkeypatch.setattr(_C, f"{base}_workspace_bytes", more)
    monkeypatch.setattr(_ops, "workspace", filled)
    if path == "tensor":
        monkeypatch.setattr(_arrays, "_torch_raw", ())
    monkeypatch.setattr(_C, base, spy)
    A = rand((64, 256), torch.float32)
    x = rand((256,), torch.float32, seed=SEED + 1).double()
    B = rand((256, 8), torch.float32, seed=SEED + 2).double()
    A64 = A.double()
    T = rand((20000, 24), torch.float32, seed=SEED + 3)  # x.sum(0) of a tall x: a split of n
    if name == "row_sum":
        got, want, mag = kernelkit.row_sum(A), A64.sum(1), A64.abs().sum(1)
    elif name == "row_sum strided":
        got, want, mag = kernelkit.row_sum(A[:3, :200]), A64[:3, :200].sum(1), A64[:3, :200].abs().sum(1)
    elif name == "col_sum":
        got, want, mag = kernelkit.row_sum(T, dim=0), T.double().sum(0), T.double().abs().sum(0)
    elif name == "gemv":
        got, want, mag = kernelkit.gemv(A, x.float()), A64 @ x, A64.abs() @ x.abs()
    elif name == "sgemm":
        got, want, mag = kernelkit.sgemm(A, B.float()), A64 @ B, A64.abs() @ B.abs()
    elif name == "softmax_inner":  # softmax over axis 0 of a tall x: n split over blocks
        got = kernelkit.softmax(T, dim=0)
        assert [n for _, n in made] == asked and seen == made
        close(got, torch.softmax(T.double(), 0), what=f"softmax_inner with a {path} workspace")
        return
    elif name == "cross_entropy":  # few rows over a wide vocabulary: rows split over blocks
        X = rand((3, 100000), torch.float32, seed=SEED + 4)
        t = torch.tensor([5, 99999, 0], device="cuda")
        X64 = X.double()
        lse = torch.logsumexp(X64, 1)
        got = kernelkit.cross_entropy(X, t, reduction="sum")
        want = torch.nn.functional.cross_entropy(X64, t, reduction="sum")
        mag = (lse.abs() + X64.gather(1, t[:, None]).abs()[:, 0]).sum()
    else:
        got, want, mag = kernelkit.sum(A), A64.sum(), A64.abs().sum()
    assert [n for _, n in made] == asked and seen == made
    sum_close(got, want, mag, what=f"{name} with a {path} workspace")


def test_reductions_read_strided_rows_and_middle_axes_in_place(monkeypatch):
    """_row_layout's in-place layouts against float64, with the framework's copy forbidden:
    rows at a stride (row_reduce's ld: aligned and misaligned strides, 3-D rows that collapse
    to one stride) and consecutive non-last axes of a contiguous tensor (col_reduce: narrow,
    wide, split over n, inner == 1, empty)."""
    from kernelkit import _ops

    real_copy, made = _ops.moved_copy, []

    def no_copy(*args, **kwargs):
        raise AssertionError("a copy: this layout should be read in place")

    def counted_copy(*args, **kwargs):
        made.append(tuple(args[0].shape))
        return real_copy(*args, **kwargs)

    monkeypatch.setattr(_ops, "moved_copy", no_copy)
    logits = rand((4, 7, 1000), torch.bfloat16)
    x3 = rand((6, 50, 9), torch.float32)
    cases = [
        (logits[:, -1, :], -1),  # rows at stride 7000
        (logits[:, :, :999], -1),  # ld 1000, rows of 999 (off the 16-byte grid)
        (logits[::2, -1, :], (-1,)),  # rows at stride 14000
        (rand((8, 4104), torch.float16)[:, 3:4102], -1),  # misaligned start and stride
        (rand((3, 16, 2, 64), torch.float32)[:, :, 0, :], -1),  # (3, 16) rows at stride 128
        (rand((5, 3, 40), torch.bfloat16)[:, :, :32], 2),
        (rand((2, 70000), torch.float32)[:, :65537], -1),  # few long rows (split, workspace)
        (x3, 0), (x3, 1), (x3, (0, 1)), (x3, (1, 2)),
        (rand((20000, 24), torch.float32), 0),  # x.sum(0) of a tall x: n split over blocks
        (rand((1, 300000, 4), torch.bfloat16), 1),  # one tile, split
        (rand((64, 4097), torch.float16), 0),  # odd inner: single-element columns
        (rand((3, 5, 1), torch.float32), 1),  # inner == 1: a row reduction
    ]
    # rows at two strides, no one ld: logits[::2] is 2 blocks of 7 rows at ld 1000, the
    # blocks 14000 apart (not 7 * 1000): neither row_reduce's ld overloads (row r at
    # in + r * ld) nor col_reduce (a contiguous (outer, n, inner)) read it, so torch copies
    # (test_api checks the same layout is a copy on a generic array)
    copied = [(logits[::2], (-1,))]

    def check(x, d):
        xd = x.double()
        what = f"{tuple(x.shape)} strides {x.stride()} dim {d}"
        sum_close(kernelkit.row_sum(x, d), xd.sum(d), xd.abs().sum(d), what=what)
        assert torch.equal(kernelkit.row_max(x, d).double(), xd.amax(d)), what
        got = kernelkit.min(x, d, keepdim=True)
        assert got.shape == xd.amin(d, keepdim=True).shape and got.is_contiguous(), what
        assert torch.equal(got.double(), xd.amin(d, keepdim=True)), what

    for x, d in cases:
        check(x, d)
    monkeypatch.setattr(_ops, "moved_copy", counted_copy)
    for x, d in copied:
        made.clear()
        check(x, d)
        assert made == [tuple(x.shape)] * 3, f"{tuple(x.shape)} strides {x.stride()}: {made}"
    monkeypatch.setattr(_ops, "moved_copy", no_copy)
    # out= and dtype= on the in-place paths; an empty reduced axis writes the identity
    out = torch.empty(4, device="cuda", dtype=torch.bfloat16)
    assert kernelkit.row_sum(logits[:, -1, :], dtype=torch.bfloat16, out=out) is out
    close(out, logits[:, -1, :].double().sum(-1), rtol=2e-2, atol=0.1)
    e = torch.empty(5, 0, 3, device="cuda")
    assert torch.equal(kernelkit.row_sum(e, 1), torch.zeros(5, 3, device="cuda"))
    assert bool((kernelkit.row_max(e, 1) == float("-inf")).all())
    # out must not fall in the strided rows' span (gaps included: kernelkit's rule)
    buf = torch.empty(4, 16, device="cuda")
    with pytest.raises(ValueError, match="out overlaps x"):
        kernelkit.row_sum(buf[:, :8], out=buf[2, 8:12])


# ---- norms -------------------------------------------------------------------------------

NORM_SHAPES = [(1, 1), (3, 7), (64, 1024), (5, 4099), (2, 3, 768), (7, 16384), (2, 20001),
               (0, 64), (1000, 128)]


def _rms_ref(x, w, eps):
    xd = x.double()
    y = xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + eps)
    return y if w is None else y * w.double()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", NORM_SHAPES, ids=str)
def test_norms_forward(shape, dtype):
    t = DTYPES[dtype]
    x = rand(shape, t)
    c = shape[-1]
    w = rand((c,), t, seed=SEED + 1)
    b = rand((c,), t, seed=SEED + 2)
    r = rand(shape, t, seed=SEED + 3)
    what = f"{shape} {dtype}"
    close(kernelkit.rms_norm(x, weight=w, eps=1e-6), _rms_ref(x, w, 1e-6), what="rms_norm " + what)
    xd = x.double()
    ln = torch.nn.functional.layer_norm(xd, (c,), w.double(), b.double(), 1e-5)
    close(kernelkit.layer_norm(x, (c,), w, b), ln, what="layer_norm " + what)
    y, s = kernelkit.add_rms_norm(x, r, w, 1e-6)
    assert torch.equal(s, x + r), what  # the rounded sum, bit for bit
    close(y, _rms_ref(s, w, 1e-6), what="add_rms_norm " + what)


def test_norms_options():
    x = rand((33, 512), torch.bfloat16)
    w32 = rand((512,), torch.float32, seed=SEED + 1)
    # float32 weight (and bias) with half x
    close(kernelkit.rms_norm(x, weight=w32, eps=1e-5), _rms_ref(x, w32, 1e-5))
    b32 = rand((512,), torch.float32, seed=SEED + 2)
    close(kernelkit.layer_norm(x, 512, w32, b32),
          torch.nn.functional.layer_norm(x.double(), (512,), w32.double(), b32.double()))
    # torch's default eps: the machine epsilon of x's dtype (F.rms_norm's eps=None)
    close(kernelkit.rms_norm(x), _rms_ref(x, None, torch.finfo(torch.bfloat16).eps))
    # several trailing dims normalized together
    x3 = rand((4, 6, 50), torch.float32)
    w3 = rand((6, 50), torch.float32, seed=SEED + 4)
    close(kernelkit.rms_norm(x3, (6, 50), w3, 1e-6),
          _rms_ref(x3.reshape(4, 300), w3.reshape(300), 1e-6).reshape(4, 6, 50))
    # in place: y = x; the residual stream update: out=(x, residual)
    h, res = rand((8, 256), torch.float16), rand((8, 256), torch.float16, seed=SEED + 5)
    w = rand((256,), torch.float16, seed=SEED + 6)
    want_s = h + res
    want_y = _rms_ref(want_s, w, 1e-6)
    y, s = kernelkit.add_rms_norm(h, res, w, 1e-6, out=(h, res))
    assert y is h and s is res and torch.equal(res, want_s)
    close(h, want_y)
    z = rand((8, 256), torch.float32)
    zc = z.clone()
    assert kernelkit.layer_norm(z, out=z) is z
    close(z, torch.nn.functional.layer_norm(zc.double(), (256,)))
    # special values: a NaN row stays NaN, the others are untouched
    x = rand((4, 100), torch.float32)
    x[1, 3] = float("nan")
    y = kernelkit.rms_norm(x, eps=1e-6)
    assert bool(y[1].isnan().all()) and bool(y[[0, 2, 3]].isfinite().all())
    with pytest.raises(ValueError, match="must be the trailing dims"):
        kernelkit.layer_norm(x, (4,))


def test_rms_norm_backward_is_deterministic():
    """dweight from per-block partials summed in a fixed order: the same bits run after run
    (torch's own rms_norm backward sums with atomics on some paths)."""
    x = rand((4096, 1024), torch.bfloat16).requires_grad_()
    w = rand((1024,), torch.bfloat16, seed=SEED + 1).requires_grad_()
    g = rand((4096, 1024), torch.bfloat16, seed=SEED + 2)
    grads = [torch.autograd.grad(kernelkit.rms_norm(x, weight=w, eps=1e-6), (x, w), g) for _ in range(3)]
    for dx, dw in grads[1:]:
        assert torch.equal(dx, grads[0][0]) and torch.equal(dw, grads[0][1])


def test_layer_norm_and_add_rms_norm_backward_are_deterministic():
    """layer_norm's dweight / dbias and add_rms_norm's dweight (kernelkit's backward kernels,
    fixed-order sums): the same bits run after run."""
    x = rand((4096, 1024), torch.bfloat16).requires_grad_()
    r = rand((4096, 1024), torch.bfloat16, seed=SEED + 3).requires_grad_()
    w = rand((1024,), torch.float32, seed=SEED + 1).requires_grad_()
    b = rand((1024,), torch.float32, seed=SEED + 4).requires_grad_()
    g = rand((4096, 1024), torch.bfloat16, seed=SEED + 2)
    for f, args, gy in ((lambda: kernelkit.layer_norm(x, None, w, b), (x, w, b), g),
                        (lambda: torch.stack(kernelkit.add_rms_norm(x, r, w, 1e-6)), (x, r, w),
                         torch.stack((g, g.flip(0))))):
        grads = [torch.autograd.grad(f(), args, gy) for _ in range(3)]
        for got in grads[1:]:
            assert all(torch.equal(a, c) for a, c in zip(got, grads[0]))


def test_nan_propagates_in_max_min():
    x = torch.arange(1000.0, device="cuda")
    x[517] = float("nan")
    assert torch.isnan(kernelkit.max(x)) and torch.isnan(kernelkit.min(x))
    assert torch.isnan(kernelkit.row_max(x.reshape(10, 100))[5])


# ---- transpose -------------------------------------------------------------------------

TRANSPOSE_SHAPES = [(1, 1), (3, 5), (33, 17), (1000, 3), (2, 4097), (257, 1023), (0, 3), (4, 0)]


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64", "int8", "int64", "bool"])
@pytest.mark.parametrize("shape", TRANSPOSE_SHAPES, ids=str)
def test_transpose(shape, dtype):
    x = rand(shape, torch.float32, scale=50).to(getattr(torch, dtype))
    y = kernelkit.transpose(x)
    assert y.shape == (shape[1], shape[0]) and y.dtype == x.dtype and y.is_contiguous()
    assert torch.equal(y, x.t().contiguous()), f"transpose {shape} {dtype}"
    out = torch.empty_like(y)
    assert kernelkit.transpose(x, out=out) is out and torch.equal(out, y)


# ---- BLAS ------------------------------------------------------------------------------

def dot_close(out, ref, mag, what=""):
    err = (out.double() - ref).abs()
    bound = 1e-4 * mag + 1e-5
    assert bool((err <= bound).all()), f"{what} (seed {SEED}): max error {err.max().item():.3g}"


@pytest.mark.parametrize("trans", [False, True])
@pytest.mark.parametrize("m,n", [(1, 1), (7, 33), (33, 7), (1000, 999), (3, 65537), (4097, 5), (0, 4), (4, 0)])
def test_gemv(m, n, trans):
    A = rand((m, n), torch.float32, scale=1)
    x = rand((m if trans else n,), torch.float32, scale=1, seed=SEED + 1)
    opA = A.double().t() if trans else A.double()
    y = kernelkit.gemv(A, x, trans=trans, alpha=1.5)
    assert y.shape == (n if trans else m,)
    dot_close(y, 1.5 * opA @ x.double(), 1.5 * opA.abs() @ x.double().abs(), f"gemv {m}x{n} {trans}")
    y0 = rand(y.shape, torch.float32, seed=SEED + 2)
    out = y0.clone()
    assert kernelkit.gemv(A, x, trans=trans, alpha=-1, beta=0.5, out=out) is out
    dot_close(out, -(opA @ x.double()) + 0.5 * y0.double(),
              opA.abs() @ x.double().abs() + y0.double().abs(), f"gemv beta {m}x{n} {trans}")


@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (33, 17, 65), (128, 64, 256), (257, 129, 31),
                                   (1, 4096, 512), (5, 0, 3), (3, 4, 0), (1000, 1000, 100)])
def test_sgemm(m, n, k, ta, tb):
    A = rand((k, m) if ta else (m, k), torch.float32, scale=1)
    B = rand((n, k) if tb else (k, n), torch.float32, scale=1, seed=SEED + 1)
    a, b = A.double(), B.double()
    a, b = (a.t() if ta else a), (b.t() if tb else b)
    C = kernelkit.sgemm(A, B, trans_a=ta, trans_b=tb, alpha=2.0)
    assert C.shape == (m, n)
    dot_close(C, 2 * a @ b, 2 * a.abs() @ b.abs(), f"sgemm {m}x{n}x{k} {ta}{tb}")
    C0 = rand((m, n), torch.float32, seed=SEED + 2)
    out = C0.clone()
    kernelkit.sgemm(A, B, trans_a=ta, trans_b=tb, alpha=1.0, beta=-1.0, out=out)
    dot_close(out, a @ b - C0.double(), a.abs() @ b.abs() + C0.double().abs(), "sgemm beta")
    if not ta and not tb:
        dot_close(kernelkit.matmul(A, B), a @ b, a.abs() @ b.abs(), "matmul")


# ---- elementwise -----------------------------------------------------------------------

EW_SHAPES = [(1,), (31,), (33,), (1000003,), (7, 129), (0,), ()]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", EW_SHAPES, ids=str)
def test_unary(shape, dtype):
    x = rand(shape, DTYPES[dtype])
    xd = x.double()
    F = torch.nn.functional
    for name, got, ref in [("relu", kernelkit.relu(x), F.relu(xd)),
                           ("gelu", kernelkit.gelu(x), F.gelu(xd)),
                           ("gelu tanh", kernelkit.gelu(x, approximate="tanh"), F.gelu(xd, approximate="tanh")),
                           ("sigmoid", kernelkit.sigmoid(x), torch.sigmoid(xd))]:
        assert got.shape == x.shape and got.dtype == x.dtype
        close(got, ref, what=f"{name} {shape} {dtype}")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", EW_SHAPES, ids=str)
def test_binary(shape, dtype):
    a = rand(shape, DTYPES[dtype])
    b = rand(shape, DTYPES[dtype], seed=SEED + 1)
    close(kernelkit.add(a, b), a.double() + b.double(), what=f"add {shape} {dtype}")
    close(kernelkit.mul(a, b), a.double() * b.double(), what=f"mul {shape} {dtype}")


def test_elementwise_out_and_in_place():
    a = rand((1001,), torch.float16)
    b = rand((1001,), torch.float16, seed=SEED + 1)
    ref = a.double() + b.double()
    kernelkit.add(a, b, out=a)
    close(a, ref)
    x = rand((513,), torch.bfloat16)
    ref = torch.relu(x.double())
    assert kernelkit.relu(x, out=x) is x
    close(x, ref)
    x = rand((101,), torch.float32)[1:]  # views one element in: the narrow-pack path
    out = torch.empty(101, device="cuda")[1:]
    assert kernelkit.sigmoid(x, out=out) is out
    close(out, torch.sigmoid(x.double()))


@pytest.mark.parametrize("src", DTYPES)
@pytest.mark.parametrize("dst", DTYPES)
def test_cast(src, dst):
    x = rand((1025,), DTYPES[src], scale=1000)
    x[0], x[1] = float("inf"), float("nan")
    y = kernelkit.cast(x, DTYPES[dst])
    assert y.dtype == DTYPES[dst]
    assert torch.equal(y[2:], x[2:].to(DTYPES[dst])) and y[0] == float("inf") and torch.isnan(y[1])
    assert kernelkit.cast(x, dst).dtype == DTYPES[dst]  # a dtype name works too


# ---- streams, devices, graphs ----------------------------------------------------------

SLEEP_CYCLES = 200_000_000  # ~0.1 s of spinning on the GPU before the input is written


def _written_late(src):
    """(x, s): x receives src on a new side stream s after ~0.1 s of sleep there; a call that
    reads x on any other stream without waiting for s reads zeros."""
    x = torch.zeros_like(src)
    torch.cuda.synchronize()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        torch.cuda._sleep(SLEEP_CYCLES)
        x.copy_(src)
    return x, s


def test_current_stream_keeps_order():
    """x is written on a side stream after a long sleep: kernelkit must run on that stream
    (torch's current one inside the context), or it reads x before the write."""
    src = rand((64, 4099), torch.float32)
    x, s = _written_late(src)
    with torch.cuda.stream(s):
        y = kernelkit.softmax(x)
        r = kernelkit.row_sum(x)
        t = kernelkit.sum(x)
    s.synchronize()
    close(y, torch.softmax(src.double(), -1))
    sum_close(r, src.double().sum(-1), src.double().abs().sum(-1))
    sum_close(t, src.double().sum(), src.double().abs().sum())


def test_explicit_stream_argument():
    src = rand((16, 1000), torch.float32)
    out = torch.empty_like(src)
    x, s = _written_late(src)
    kernelkit.softmax(x, out=out, stream=s)  # a torch.cuda.Stream
    kernelkit.relu(x, out=x, stream=s.cuda_stream)  # a raw handle, after the softmax
    s.synchronize()
    close(out, torch.softmax(src.double(), -1))
    close(x, torch.relu(src.double()))


def test_explicit_stream_workspace_is_that_streams():
    """A workspace of a call with stream= is taken for that stream: while a kernel on the side
    stream still waits (a sleep first), torch's current stream allocates and writes the
    workspace's size over and over; a workspace tied to the current stream would be handed
    out and overwritten under the waiting kernel."""
    src = rand((3, 100000), torch.float32)  # row_sum: few long rows split over blocks
    x, s = _written_late(src)
    r = kernelkit.row_sum(x, stream=s)
    t = kernelkit.sum(x, stream=s)
    for _ in range(64):  # the current stream: blocks of every small size, written
        for n in (512, 4096, 1 << 16, 1 << 20):
            torch.empty(n, dtype=torch.uint8, device="cuda").fill_(0xA5)
    s.synchronize()
    sum_close(r, src.double().sum(-1), src.double().abs().sum(-1))
    sum_close(t, src.double().sum(), src.double().abs().sum())


@pytest.mark.skipif(not (HAS_TORCH and HAS_GPU) or torch.cuda.device_count() < 2,
                    reason="needs two GPUs")
def test_second_device():
    torch.cuda.set_device(0)
    x = rand((8, 1000), torch.float32).to("cuda:1")
    y = kernelkit.softmax(x)
    assert y.device == x.device and torch.cuda.current_device() == 0
    close(y, torch.softmax(x.double(), -1))


def test_cuda_graph_capture_and_replay():
    x = rand((96, 1000), torch.float32)
    a = rand((64, 48), torch.float32, seed=SEED + 1)
    b = rand((48, 32), torch.float32, seed=SEED + 2)

    def work():
        return (kernelkit.softmax(x), kernelkit.row_sum(x), kernelkit.sum(x), kernelkit.gelu(x),
                kernelkit.transpose(x), kernelkit.matmul(a, b), kernelkit.cast(x, torch.bfloat16))

    side = torch.cuda.Stream()  # warm up on a side stream, as torch's docs ask
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        work()
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        outs = work()
    for seed in (SEED + 10, SEED + 11):  # replay twice: the reduction's workspace is reused
        new = rand(x.shape, torch.float32, seed=seed)
        x.copy_(new)
        g.replay()
        torch.cuda.synchronize()
        xd = new.double()
        close(outs[0], torch.softmax(xd, -1), what="graph softmax")
        sum_close(outs[1], xd.sum(-1), xd.abs().sum(-1), what="graph row_sum")
        sum_close(outs[2], xd.sum(), xd.abs().sum(), what="graph sum")
        close(outs[3], torch.nn.functional.gelu(xd), what="graph gelu")
        assert torch.equal(outs[4], new.t().contiguous())
        dot_close(outs[5], a.double() @ b.double(), a.double().abs() @ b.double().abs(), "graph matmul")
        assert torch.equal(outs[6], new.to(torch.bfloat16))


def test_non_contiguous_tensor_is_refused_by_flat_ops():
    """Elementwise, transpose and BLAS read one flat range: a non-contiguous operand is a
    ValueError naming its strides. The row ops take it (softmax through the framework's copy
    that its docstring states, the reductions of strided rows in place)."""
    x = rand((64, 32), torch.float32)
    with pytest.raises(ValueError, match=r"x is not contiguous \(shape \(32, 64\), strides \(1, 32\)\)"):
        kernelkit.relu(x.t())
    with pytest.raises(ValueError, match="b is not contiguous"):
        kernelkit.add(x[:, ::2].contiguous(), x[:, ::2])
    with pytest.raises(ValueError, match="A is not contiguous"):
        kernelkit.matmul(x.t(), x)
    with pytest.raises(ValueError, match="x is not contiguous"):
        kernelkit.transpose(x.t())
    close(kernelkit.softmax(x.t()), torch.softmax(x.t().double(), -1))
    sum_close(kernelkit.row_sum(x[:, ::2]), x[:, ::2].double().sum(-1), x[:, ::2].double().abs().sum(-1))


def test_errors_on_cuda_tensors():
    x = rand((4, 8), torch.float32)
    with pytest.raises(TypeError, match="unsupported dtype float64"):
        kernelkit.softmax(x.double())
    buf = torch.empty(40, device="cuda")
    with pytest.raises(ValueError, match=r"out overlaps x \(only exact in-place"):
        kernelkit.softmax(buf[:32].view(4, 8), out=buf[1:33].view(4, 8))
    sq = rand((8, 8), torch.float32)
    with pytest.raises(ValueError, match="out overlaps x"):
        kernelkit.transpose(sq, out=sq)
    with pytest.raises(ValueError, match=r"out has shape \(4, 9\), expected \(4, 8\)"):
        kernelkit.softmax(x, out=torch.empty(4, 9, device="cuda"))
    with pytest.raises(TypeError, match="CPU|cpu"):
        kernelkit.add(x, x.cpu())

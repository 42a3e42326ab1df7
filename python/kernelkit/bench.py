# SPDX-License-Identifier: Apache-2.0
"""kernelkit vs PyTorch eager vs torch.compile, on listed shapes and on a seeded sample of
generated ones; GPU time per case and host time per call.

    python -m kernelkit.bench [--seed N|random] [--quick] [--max-seconds S]
                              [--json PATH] [--table PATH.md] [--chart PATH.png]
                              [--ops softmax,row_sum,...] [--dtypes f32,bf16] [--list]
                              [--host-only]

Cases. Per op and dtype a few LISTED shapes (the C++ benchmark's, tools/goals) and
--generated (default 6) GENERATED ones, drawn by generated_shapes() from one seed (--seed,
default 1; "random" draws one and prints it): input bytes log-uniform over 1 MiB..512 MiB,
every third shape with an odd width (the next prime, or a power of two plus one), and for
the row ops decode / few-row shapes (1-64 rows x 32K-256K columns). `--list` prints the
cases and exits (no GPU, no torch needed).

GPU time. Each case is checked once against torch eager, then kernelkit, torch eager and
torch.compile of the same torch function are timed the same way: after warm-up, --samples
samples, each one an L2 flush (a write of a buffer twice the L2's size), a short spin
kernel that holds the stream while the host enqueues (so the host's call overhead is not
timed), then CUDA events around one call; the case's time is the median. torch.compile
uses dynamic=False (a graph per shape, as a user with fixed shapes gets it; a second or
two of compiling each); once the first calls of compiled functions have taken
--compile-seconds, later cases use one dynamic=True graph per op and dtype (marked "dyn"
in the table), and past 1.5 times that none (torch_compile_us = null). A compile that
fails (no Triton, ...) is recorded as null too.

Host time. Per op and dtype, on tiny inputs (8 x 64 rows, 64 elements, 8 x 8 x 8), with the
GPU idle: the median over 5 runs of the wall time of --host-calls back-to-back calls (a
synchronize before and after each run, inside the timed span) divided by the count, for
kernelkit's function and torch's own op (not compiled). Each case of that op and dtype
carries those two figures. --host-only measures these alone (seconds, no GPU-time case, no
torch.compile) and prints them per op and dtype with torch's over kernelkit's (the Python
goal: >= 1.00x), then the host time of a 1 x 32 softmax through each layer; with --json,
{"gpu", "torch", "host": [{"op", "dtype", "shape", "kernelkit_host_us", "torch_host_us"}]}.

Budget. The cases run round-robin over the ops (every op's first case, then every op's
second, ...), so a run cut by --max-seconds (default 240, --quick 90) still has every op;
the cut is printed. An op that raises is recorded (null time, "error") and the run goes on.

Output: --json (default bench/results/<gpu>-python.json, <gpu> like h100; under $OUT
when that is set, as scripts/run-bench does),
{"seed", "gpu", "torch", "cases": [{"op", "dtype", "shape", "generated", "kernelkit_us",
"torch_us", "torch_compile_us", "kernelkit_host_us", "torch_host_us"}]} (a case that failed
also has "error"; the norm ops' cases also "liger_us": Liger-Kernel's op, liger_kernel.ops,
imported lazily, null when it is not installed); op names are the C++ benchmark's; --table
and --chart (default: beside the JSON, .md and .png) hold the same figures for people.
"""

import argparse
import json
import math
import os
import random
import statistics
import sys
import time

MiB = 1 << 20
MIN_BYTES, MAX_BYTES = 1 * MiB, 512 * MiB
ITEMSIZE = {"f32": 4, "f16": 2, "bf16": 2}
TORCH_DTYPE = {"f32": "float32", "f16": "float16", "bf16": "bfloat16"}


# ---- the ops -------------------------------------------------------------------------------
# One entry per op, everything the benchmark knows of it. The key is kernelkit's function
# (kernelkit.<key> is what is timed). name: the C++ benchmark's op name; dtypes ("f32-bf16":
# a cast from f32 to bf16); kind (what the generator draws: "rows" = rows x cols, "matrix" =
# rows x cols of two free sides, "n" = elements, "gemm" = m x n x k); cols (the width range of
# "rows" draws); decode (draw decode shapes); listed (per dtype group: "f32" or "half"); tiny
# (the host-time shape); inputs(rand, d, to): the call's arguments for the shape's dimensions
# d (rand(*shape): a random tensor of the input dtype; to: the torch dtype of the output;
# default: one tensor of shape d); torch(torch, *inputs): torch's own op, which kernelkit is
# checked and timed against; exact: the result must equal torch's bit for bit; moved(d, size,
# out_size): the fewest bytes the case must move (read once, write once; element sizes in
# bytes), GB/s in the table; flops(d): for the table's TFLOP/s instead.
def _two_passes(d, size, out_size):  # read x, write an output of its shape and type
    return 2 * math.prod(d) * size


# issue 34's listed norm shapes (rows x hidden)
_NORM_LISTED = ["8192x4096", "32768x8192", "4096x16384", "1x4096", "64x8192", "65536x768"]
# cross_entropy's (rows x vocabulary), bench/loss_bench.cu's
_LOSS_LISTED = ["8192x32000", "4096x128256", "1x128256", "16x151936", "32768x50257"]


def _classes(rand, d):
    """d[0] class indices (int64) in [0, d[1]) made from a random tensor of the case."""
    return (rand(d[0]).float().abs() * 1000).long() % d[1]


def _torch_add_rms_norm(torch, x, r, w):
    s = x + r
    return torch.nn.functional.rms_norm(s, (s.shape[-1],), w, 1e-6), s


# Liger-Kernel's autograd Functions (liger_kernel.ops), imported at first use; None when the
# package (or that op of it) is absent: the case then has liger_us = null.
_LIGER = {"rms_norm": ("liger_kernel.ops.rms_norm", "LigerRMSNormFunction"),
          "layer_norm": ("liger_kernel.ops.layer_norm", "LigerLayerNormFunction"),
          "add_rms_norm": ("liger_kernel.ops.fused_add_rms_norm", "LigerFusedAddRMSNormFunction")}


def _liger(op):
    import importlib

    module, name = _LIGER[op]
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return None


def liger_available(op):
    """Whether Liger-Kernel's counterpart of op can be imported here."""
    return op in _LIGER and _liger(op) is not None


OPS = {
    "softmax": dict(name="softmax", dtypes=("f32", "f16", "bf16"), kind="rows", cols=(16, 1 << 18),
                    decode=True, tiny="8x64",
                    listed={"f32": ["4096x50257", "32768x1024", "16x2097152"],
                            "half": ["4096x50257", "32768x1024", "16x2097152"]},
                    torch=lambda torch, x: torch.softmax(x, -1), moved=_two_passes),
    "log_softmax": dict(name="log_softmax", dtypes=("f32", "f16", "bf16"), kind="rows",
                        cols=(16, 1 << 18), decode=True, tiny="8x64",
                        listed={"f32": ["32768x1024", "4096x50257"],
                                "half": ["32768x1024", "4096x50257"]},
                        torch=lambda torch, x: torch.log_softmax(x, -1), moved=_two_passes),
    "row_sum": dict(name="row_reduce.sum", dtypes=("f32", "bf16"), kind="rows", cols=(1, 1 << 20),
                    decode=True, tiny="8x64",
                    listed={"f32": ["33554432x1", "32768x1024", "1x33554432"],
                            "half": ["32768x1024", "4x8388608"]},
                    torch=lambda torch, x: x.sum(-1, dtype=torch.float32),
                    moved=lambda d, size, _: math.prod(d) * size + math.prod(d[:-1]) * 4),
    "sum": dict(name="reduce.sum", dtypes=("f32", "bf16"), kind="n", tiny="64",
                listed={"f32": ["67108864", "100000007"], "half": ["16777216", "268435456"]},
                torch=lambda torch, x: x.sum(dtype=torch.float32),
                moved=lambda d, size, _: math.prod(d) * size + 4),
    "transpose": dict(name="transpose", dtypes=("f32", "bf16"), kind="matrix", tiny="8x8",
                      listed={"f32": ["8192x8192", "16385x4097", "8388608x3"],
                              "half": ["8192x8192", "1000x33554"]},
                      torch=lambda torch, x: x.t().contiguous(), exact=True, moved=_two_passes),
    "gemv": dict(name="gemv", dtypes=("f32",), kind="matrix", tiny="8x8",
                 listed={"f32": ["4096x4096", "14336x4096", "524288x64"]},
                 inputs=lambda rand, d, to: (rand(*d), rand(d[1])),  # A (m x k), x (k)
                 torch=lambda torch, a, x: a @ x,
                 moved=lambda d, size, _: 4 * (d[0] * d[1] + d[1] + d[0])),
    "matmul": dict(name="sgemm", dtypes=("f32",), kind="gemm", tiny="8x8x8",
                   listed={"f32": ["1024x1024x1024", "4096x4096x4096", "8x4096x4096"]},
                   inputs=lambda rand, d, to: (rand(d[0], d[2]), rand(d[2], d[1])),  # m x k, k x n
                   torch=lambda torch, a, b: a @ b,
                   moved=lambda d, size, _: 4 * (d[0] * d[2] + d[2] * d[1] + d[0] * d[1]),
                   flops=lambda d: 2 * d[0] * d[1] * d[2]),
    "add": dict(name="elementwise.add", dtypes=("f32", "bf16"), kind="n", tiny="64",
                listed={"f32": ["16777216", "268435456"], "half": ["16777216", "268435456"]},
                inputs=lambda rand, d, to: (rand(*d), rand(*d)), torch=lambda torch, a, b: a + b,
                moved=lambda d, size, _: 3 * math.prod(d) * size),
    "gelu": dict(name="elementwise.gelu", dtypes=("f32", "bf16"), kind="n", tiny="64",
                 listed={"f32": ["16777216", "268435456"], "half": ["16777216", "268435456"]},
                 torch=lambda torch, x: torch.nn.functional.gelu(x), moved=_two_passes),
    "cast": dict(name="elementwise.cast", dtypes=("f32-bf16",), kind="n", tiny="64",
                 listed={"f32": ["16777216", "268435456"]},
                 inputs=lambda rand, d, to: (rand(*d), to), torch=lambda torch, x, to: x.to(to),
                 exact=True, moved=lambda d, size, out_size: math.prod(d) * (size + out_size)),
    # norms (issue 34's listed shapes); weight (and bias) of x's dtype, eps 1e-6 (LayerNorm
    # 1e-5); kernelkit(kk, *inputs) is the call timed, liger(*inputs) Liger-Kernel's op
    # (timed when liger_kernel is installed: liger_us)
    "rms_norm": dict(name="rms_norm", dtypes=("f32", "bf16"), kind="rows", cols=(256, 65536),
                     tiny="8x64", listed={"f32": _NORM_LISTED, "half": _NORM_LISTED},
                     inputs=lambda rand, d, to: (rand(*d), rand(d[-1])),
                     kernelkit=lambda kk, x, w: kk.rms_norm(x, weight=w, eps=1e-6),
                     torch=lambda torch, x, w: torch.nn.functional.rms_norm(x, (x.shape[-1],), w, 1e-6),
                     liger=lambda x, w: _liger("rms_norm").apply(x, w, 1e-6),
                     moved=lambda d, size, _: (2 * math.prod(d) + d[-1]) * size),
    "layer_norm": dict(name="layer_norm", dtypes=("f32", "bf16"), kind="rows", cols=(256, 65536),
                       tiny="8x64", listed={"f32": _NORM_LISTED, "half": _NORM_LISTED},
                       inputs=lambda rand, d, to: (rand(*d), rand(d[-1]), rand(d[-1])),
                       kernelkit=lambda kk, x, w, b: kk.layer_norm(x, None, w, b, 1e-5),
                       torch=lambda torch, x, w, b: torch.nn.functional.layer_norm(
                           x, (x.shape[-1],), w, b, 1e-5),
                       liger=lambda x, w, b: _liger("layer_norm").apply(x, w, b, 1e-5),
                       moved=lambda d, size, _: (2 * math.prod(d) + 2 * d[-1]) * size),
    "add_rms_norm": dict(name="add_rms_norm", dtypes=("f32", "bf16"), kind="rows",
                         cols=(256, 65536), tiny="8x64",
                         listed={"f32": _NORM_LISTED + ["2048x32768"], "half": _NORM_LISTED},
                         inputs=lambda rand, d, to: (rand(*d), rand(*d), rand(d[-1])),
                         kernelkit=lambda kk, x, r, w: kk.add_rms_norm(x, r, w, 1e-6),
                         torch=lambda torch, x, r, w: _torch_add_rms_norm(torch, x, r, w),
                         liger=lambda x, r, w: _liger("add_rms_norm").apply(x, r, w, 1e-6),
                         moved=lambda d, size, _: (4 * math.prod(d) + d[-1]) * size),
    # cross-entropy over the vocabulary (bench/loss_bench.cu's listed shapes), class indices
    # int64 in [0, C); torch's F.cross_entropy returns the logits' dtype, kernelkit float32
    "cross_entropy": dict(name="cross_entropy", dtypes=("f32", "bf16"), kind="rows",
                          cols=(1024, 262144), decode=True, tiny="8x64",
                          listed={"f32": _LOSS_LISTED, "half": _LOSS_LISTED},
                          inputs=lambda rand, d, to: (rand(*d), _classes(rand, d)),
                          torch=lambda torch, x, t: torch.nn.functional.cross_entropy(x, t),
                          moved=lambda d, size, _: math.prod(d) * size + 8 * d[0] + 4),
}
# --ops also takes the C++ names
OP_ALIASES = {spec["name"]: key for key, spec in OPS.items()}
DTYPE_ALIASES = {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}


def in_dtype(dtype):
    """The input's dtype of a case dtype ("f32-bf16" reads f32)."""
    return dtype.split("-")[0]


def out_dtype(dtype):
    """The output's dtype of a case dtype ("f32-bf16" writes bf16; "f32" writes f32)."""
    return dtype.split("-")[-1]


def dims(shape):
    return tuple(int(v) for v in shape.split("x"))


def input_bytes(op, shape, dtype):
    """Bytes of the case's main input: x (a and b each for add; A for gemv); A, B and C
    together for matmul. The generator draws this within MIN_BYTES..MAX_BYTES."""
    d = dims(shape)
    if OPS[op]["kind"] == "gemm":
        m, n, k = d
        return 4 * (m * k + k * n + m * n)
    return math.prod(d) * ITEMSIZE[in_dtype(dtype)]


def moved_bytes(op, shape, dtype):
    """The fewest bytes the case must move (read once, write once): GB/s in the table."""
    return OPS[op]["moved"](dims(shape), ITEMSIZE[in_dtype(dtype)], ITEMSIZE[out_dtype(dtype)])


def flops(op, shape):
    """The case's floating-point operations, for the ops that count them (None for others)."""
    f = OPS[op].get("flops")
    return f(dims(shape)) if f else None


# ---- the shape generator -------------------------------------------------------------------
def is_prime(n):
    if n < 2:
        return False
    if n % 2 == 0:
        return n == 2
    f = 3
    while f * f <= n:
        if n % f == 0:
            return False
        f += 2
    return True


def next_prime(n):
    n = max(n, 3) | 1
    while not is_prime(n):
        n += 2
    return n


def _log_uniform(rng, lo, hi):
    return math.exp(rng.uniform(math.log(lo), math.log(hi)))


def _odd(rng, v):
    """An odd size near v: the next prime, or the power of two nearest v plus one."""
    if rng.random() < 0.5:
        return next_prime(v)
    return (1 << max(1, round(math.log2(max(v, 2))))) + 1


def _draw(rng, op, dtype, slot):
    """One candidate shape for slot `slot` (slot % 3 == 1: odd width; == 2: a decode or
    few-row shape for ops that have them, a small M for matmul). May fall outside the byte
    range: generated_shapes() then draws again."""
    spec = OPS[op]
    size = ITEMSIZE[in_dtype(dtype)]
    odd = slot % 3 == 1
    special = slot % 3 == 2
    nbytes = _log_uniform(rng, MIN_BYTES, MAX_BYTES)
    kind = spec["kind"]
    if kind == "n":
        n = max(1, round(nbytes / size))
        return str(_odd(rng, n) if odd else n)
    if kind == "rows":
        if special and spec.get("decode"):
            cols = round(_log_uniform(rng, 32768, 262144))
            lo = max(1, math.ceil(MIN_BYTES / (cols * size)))
            rows = round(_log_uniform(rng, lo, 64)) if lo < 64 else 64
        else:
            lo, hi = spec["cols"]
            cols = round(_log_uniform(rng, lo, min(hi, nbytes / size)))
            rows = max(1, round(nbytes / (cols * size)))
        if odd:
            cols = _odd(rng, cols)
        return f"{rows}x{cols}"
    if kind == "matrix":
        cols = round(_log_uniform(rng, 2, nbytes / size / 2))
        rows = max(2, round(nbytes / (cols * size)))
        if odd:
            cols, rows = _odd(rng, cols), rows | 1
        return f"{rows}x{cols}"
    # gemm: C = A (m x k) @ B (k x n), 4 (mk + kn + mn) bytes together
    if special:
        m = round(_log_uniform(rng, 1, 256))
        ratio = _log_uniform(rng, 0.25, 4)  # n / k
        k = math.sqrt(nbytes / 4 / ratio)
        n = ratio * k
    else:
        m, n, k = (_log_uniform(rng, 0.125, 8) for _ in range(3))
        scale = math.sqrt(nbytes / (4 * (m * k + k * n + m * n)))
        m, n, k = m * scale, n * scale, k * scale
    m, n, k = (max(1, round(v)) for v in (m, n, k))
    if odd:
        m, n, k = m | 1, n | 1, k | 1
    return f"{m}x{n}x{k}"


def generated_shapes(op, dtype, count, seed):
    """`count` distinct shapes for op and dtype, a function of (seed, op, dtype) alone: the
    same seed gives the same sample, and adding an op changes no other op's shapes. Every
    shape's input_bytes() lies in MIN_BYTES..MAX_BYTES; slots 1, 4, 7, ... (a third) have
    an odd width (last dimension; for matmul m, n and k all odd)."""
    rng = random.Random(f"kernelkit-bench/{seed}/{op}/{dtype}")
    avoid = set(listed_shapes(op, dtype))
    out = []
    for slot in range(count):
        for _ in range(1000):
            shape = _draw(rng, op, dtype, slot)
            if shape not in avoid and shape not in out and \
                    MIN_BYTES <= input_bytes(op, shape, dtype) <= MAX_BYTES:
                break
        else:  # cannot happen with these ranges; a loud failure beats a silent short sample
            raise RuntimeError(f"kernelkit.bench: no shape in range for {op}/{dtype} slot {slot}")
        out.append(shape)
    return out


def listed_shapes(op, dtype):
    listed = OPS[op]["listed"]
    return list(listed["f32" if in_dtype(dtype) == "f32" else "half"])


def plan(seed, ops=None, dtypes=None, generated=6, listed=None):
    """The run's cases in report order: per op (OPS order) and dtype, the listed shapes
    (the first `listed` of them, all when None), then the generated ones. Each case:
    {"op" (key), "name", "dtype", "shape", "generated": 0/1}."""
    cases = []
    for op in ops or list(OPS):
        for dtype in OPS[op]["dtypes"]:
            if dtypes and in_dtype(dtype) not in dtypes:
                continue
            shapes = [(s, 0) for s in listed_shapes(op, dtype)[:listed]]
            shapes += [(s, 1) for s in generated_shapes(op, dtype, generated, seed)]
            for shape, gen in shapes:
                cases.append(dict(op=op, name=OPS[op]["name"], dtype=dtype, shape=shape, generated=gen))
    return cases


def round_robin(cases):
    """Run order: the first case of every op and dtype, then every second one, ...: a run
    cut short by its time budget still covers every op and dtype."""
    groups = {}
    for i, c in enumerate(cases):
        groups.setdefault((c["op"], c["dtype"]), []).append(i)
    order = []
    for j in range(max((len(g) for g in groups.values()), default=0)):
        order += [g[j] for g in groups.values() if j < len(g)]
    return order


# ---- the results ---------------------------------------------------------------------------
FIELDS = ("kernelkit_us", "torch_us", "torch_compile_us", "kernelkit_host_us", "torch_host_us")


def gpu_short_name(name):
    """"NVIDIA H100 80GB HBM3" -> "h100" (the C++ results' file name), else "gpu"."""
    for short in ("GB200", "B200", "H200", "H100", "A100", "L40S", "L4", "T4"):
        if short.lower() in name.lower():
            return short.lower()
    return "gpu"


def _num(v):
    return None if v is None or v != v else round(float(v), 3)


def results_json(seed, gpu, torch_version, cases):
    """The JSON document: cases are dicts with op (the C++ name), dtype, shape, generated
    and the five FIELDS (None for a figure not measured); "error" is kept when set."""
    rows = []
    for c in cases:
        row = {"op": c["name"], "dtype": c["dtype"], "shape": c["shape"], "generated": int(c["generated"])}
        row.update({f: _num(c.get(f)) for f in FIELDS})
        if "liger_us" in c:  # the ops with a Liger-Kernel counterpart (null when not installed)
            row["liger_us"] = _num(c["liger_us"])
        if c.get("error"):
            row["error"] = c["error"]
        rows.append(row)
    return {"seed": seed, "gpu": gpu, "torch": torch_version, "cases": rows}


def write_json(path, seed, gpu, torch_version, cases):
    doc = results_json(seed, gpu, torch_version, cases)
    d = os.path.dirname(path)
    if d:
        os.makedirs(d, exist_ok=True)
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    return doc


def geomean(v):
    v = [x for x in v if x]
    return math.exp(statistics.mean(math.log(x) for x in v)) if v else None


def _ratio(a, b):
    return a / b if a and b else None


def _f(x, fmt="{:.1f}"):
    return "" if x is None else fmt.format(x)


def markdown(doc, header, compile_modes=None):
    """Per op and dtype: geomeans of torch eager / kernelkit and torch.compile / kernelkit
    over listed, generated and all shapes, the host times; then every case (compile_modes:
    per case, "dynamic" marks a torch.compile time of a dynamic=True graph)."""
    cases = doc["cases"]
    modes = compile_modes or [None] * len(cases)
    out = [header, "",
           "Speedup = torch's time / kernelkit's (GPU time, median of cold samples); "
           "host = one call's wall time on tiny inputs. Generated shapes are marked *.", "",
           "| op | dtype | cases | vs eager: listed | generated | all | worst | "
           "vs torch.compile: all | worst | host kernelkit (us) | host torch (us) | host: torch / kernelkit |",
           "|---|---|---:|---:|---:|---:|---|---:|---|---:|---:|---:|"]
    groups = {}
    for c in cases:
        groups.setdefault((c["op"], c["dtype"]), []).append(c)
    for (op, dtype), cs in groups.items():
        def speed(field, which=None):
            return [(_ratio(c[field], c["kernelkit_us"]), c) for c in cs
                    if (which is None or c["generated"] == which) and _ratio(c[field], c["kernelkit_us"])]
        eager, comp = speed("torch_us"), speed("torch_compile_us")
        worst_e = min(eager, key=lambda x: x[0]) if eager else None
        worst_c = min(comp, key=lambda x: x[0]) if comp else None
        out.append(
            f"| {op} | {dtype} | {len(cs)} | {_f(geomean([r for r, _ in speed('torch_us', 0)]), '{:.2f}x')} | "
            f"{_f(geomean([r for r, _ in speed('torch_us', 1)]), '{:.2f}x')} | "
            f"{_f(geomean([r for r, _ in eager]), '{:.2f}x')} | "
            + (f"{worst_e[0]:.2f}x ({worst_e[1]['shape']})" if worst_e else "") + " | "
            + f"{_f(geomean([r for r, _ in comp]), '{:.2f}x')} | "
            + (f"{worst_c[0]:.2f}x ({worst_c[1]['shape']})" if worst_c else "") + " | "
            + f"{_f(cs[0]['kernelkit_host_us'])} | {_f(cs[0]['torch_host_us'])} | "
            + f"{_f(_ratio(cs[0]['torch_host_us'], cs[0]['kernelkit_host_us']), '{:.2f}x')} |")
    out += ["", "| op | dtype | shape | torch (us) | torch.compile (us) | kernelkit (us) | "
            "speedup vs eager | vs compile | kernelkit GB/s (sgemm: TFLOP/s) |",
            "|---|---|---|---:|---:|---:|---:|---:|---:|"]
    key_of = {spec["name"]: key for key, spec in OPS.items()}
    for c, mode in zip(cases, modes):
        op = key_of.get(c["op"], c["op"])
        rate = ""
        if c["kernelkit_us"] and op in OPS:
            fl = flops(op, c["shape"])
            rate = f"{fl / c['kernelkit_us'] / 1e6:.1f} TFLOP/s" if fl else \
                f"{moved_bytes(op, c['shape'], c['dtype']) / c['kernelkit_us'] / 1e3:.0f}"
        note = f" error: {c['error'][:80]}" if c.get("error") else ""
        out.append(f"| {c['op']} | {c['dtype']} | {c['shape']}{' *' if c['generated'] else ''} | "
                   f"{_f(c['torch_us'])} | {_f(c['torch_compile_us'])}{' dyn' if mode == 'dynamic' else ''} | "
                   f"{_f(c['kernelkit_us'])}{note} | "
                   f"{_f(_ratio(c['torch_us'], c['kernelkit_us']), '{:.2f}x')} | "
                   f"{_f(_ratio(c['torch_compile_us'], c['kernelkit_us']), '{:.2f}x')} | {rate} |")
    if any("liger_us" in c for c in cases):
        lig = [c for c in cases if c.get("liger_us") and c["kernelkit_us"]]
        out += ["", "Liger-Kernel (liger_kernel.ops, Triton) beside kernelkit on the norm ops: "
                "Liger's time / kernelkit's (above 1: kernelkit is faster)"
                + ("" if lig else ": liger_kernel not installed (or failed), not measured.")]
        if lig:
            out += ["", "| op | dtype | shape | Liger (us) | kernelkit (us) | Liger / kernelkit |",
                    "|---|---|---|---:|---:|---:|"]
            out += [f"| {c['op']} | {c['dtype']} | {c['shape']}{' *' if c['generated'] else ''} | "
                    f"{_f(c['liger_us'])} | {_f(c['kernelkit_us'])} | "
                    f"{_ratio(c['liger_us'], c['kernelkit_us']):.2f}x |" for c in lig]
    return "\n".join(out) + "\n"


def chart(doc, path, title):
    """One panel per op: per case (dtype and shape; generated ones marked * and in italics)
    torch eager's and torch.compile's time over kernelkit's, log scale (above 1: kernelkit
    is faster)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    ops = {}
    for c in doc["cases"]:
        ops.setdefault(c["op"], []).append(c)
    width = max(10.0, 2.0 + 0.32 * max((len(v) for v in ops.values()), default=1))
    fig, axes = plt.subplots(len(ops), 1, figsize=(width, 3.3 * len(ops) + 0.6), squeeze=False)
    for ax, (op, cs) in zip(axes[:, 0], ops.items()):
        x = range(len(cs))
        seen = []
        for off, field, color, label in ((-0.2, "torch_us", "tab:blue", "torch eager / kernelkit"),
                                         (0.2, "torch_compile_us", "tab:orange",
                                          "torch.compile / kernelkit")):
            ys = [_ratio(c[field], c["kernelkit_us"]) for c in cs]
            # bars grow from 1: up where kernelkit is faster, down where it is slower
            ax.bar([i + off for i in x], [(y or 1) - 1 for y in ys], 0.4, bottom=1, color=color,
                   label=label)
            for i, y in enumerate(ys):
                if y is None:
                    ax.text(i + off, 1, "n/a", ha="center", va="bottom", fontsize=6, rotation=90)
                seen += [y] if y else []
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_yscale("log")
        lo, hi = min(seen + [0.8]) / 1.15, max(seen + [1.25]) * 1.15
        ax.set_ylim(lo, hi)
        ax.yaxis.set_major_locator(matplotlib.ticker.FixedLocator(
            [t for t in (0.1, 0.2, 0.3, 0.5, 0.7, 1, 1.5, 2, 3, 5, 7, 10, 20, 50, 100) if lo <= t <= hi]))
        ax.yaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%.3g"))
        ax.yaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        ax.grid(axis="y", alpha=0.3)
        ax.set_xticks(list(x))
        labels = ax.set_xticklabels([f"{c['dtype']} {c['shape']}{' *' if c['generated'] else ''}" for c in cs],
                                    rotation=50, ha="right", fontsize=7)
        for lab, c in zip(labels, cs):
            if c["generated"]:
                lab.set_style("italic")
                lab.set_color("#555555")
        ax.set_xlim(-0.6, len(cs) - 0.4)
        ax.set_ylabel("speedup of kernelkit")
        ax.set_title(op, loc="left", fontsize=10)
        ax.legend(fontsize=7, loc="upper right")
    fig.suptitle(title + "\n(* generated shape)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


# ---- the measurement (needs torch and a GPU) -----------------------------------------------
def _tensors(torch, op, shape, dtype):
    """The case's inputs (OPS[op]["inputs"]): CUDA tensors of the input dtype, and for cast
    the torch dtype it casts to."""
    dt = getattr(torch, TORCH_DTYPE[in_dtype(dtype)])
    to = getattr(torch, TORCH_DTYPE[out_dtype(dtype)])

    def rand(*s):
        return torch.randn(*s, device="cuda", dtype=dt)

    inputs = OPS[op].get("inputs", lambda rand, d, to: (rand(*d),))
    return inputs(rand, dims(shape), to)


def _functions(torch, kernelkit, op):
    """(kernelkit's function, torch's own op), both called with the case's inputs."""
    ref = OPS[op]["torch"]
    call = OPS[op].get("kernelkit")
    kk = (lambda *args: call(kernelkit, *args)) if call else getattr(kernelkit, op)
    return kk, lambda *args: ref(torch, *args)


def _check(torch, op, got, want):
    if isinstance(got, (tuple, list)):  # several outputs (add_rms_norm: y and the sum)
        for g, w in zip(got, want):
            _check(torch, op, g, w)
        return
    if OPS[op].get("exact"):
        if not torch.equal(got, want):
            raise AssertionError(f"{op} differs from torch")
        return
    got, want = got.float(), want.float()
    scale = max(1.0, want.abs().max().item()) if want.numel() else 1.0
    torch.testing.assert_close(got, want, rtol=2e-2, atol=1e-3 * scale)


class Timer:
    """GPU time of one call, the same way for every implementation: `samples` times an L2
    flush, a spin kernel holding the stream while the host enqueues, then events around the
    call; the median. The spin outlasts the host's enqueue time (measured on the warm-up
    calls), so the events see only the GPU's work."""

    def __init__(self, torch, samples, warmup=3):
        self.torch, self.samples, self.warmup = torch, samples, warmup
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        l2 = getattr(props, "L2_cache_size", 0) or 64 * MiB
        self.flush = torch.empty(2 * l2, dtype=torch.uint8, device="cuda")
        self.sleep = getattr(torch.cuda, "_sleep", None)
        self.cycles_per_us = 0.0
        if self.sleep is not None:
            start, stop = self._events()
            torch.cuda.synchronize()
            start.record()
            self.sleep(1_000_000)
            stop.record()
            stop.synchronize()
            self.cycles_per_us = 1_000_000 / max(start.elapsed_time(stop) * 1e3, 1.0)

    def _events(self):
        e = self.torch.cuda.Event
        return e(enable_timing=True), e(enable_timing=True)

    def gpu_us(self, fn):
        """(median us, seconds the first call took: the compile time of a compiled fn)."""
        torch = self.torch
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        first = time.perf_counter() - t0
        enqueue = 0.0
        for _ in range(self.warmup):
            t0 = time.perf_counter()
            fn()
            enqueue = max(enqueue, time.perf_counter() - t0)
            torch.cuda.synchronize()
        hold_cycles = int(min(5000.0, 20.0 + 2.0 * enqueue * 1e6) * self.cycles_per_us)
        events = [self._events() for _ in range(self.samples)]
        for start, stop in events:
            self.flush.fill_(1)
            if hold_cycles:
                self.sleep(hold_cycles)
            start.record()
            fn()
            stop.record()
        torch.cuda.synchronize()
        return statistics.median(s.elapsed_time(e) * 1e3 for s, e in events), first


def host_us(torch, fn, calls, runs=5):
    """Median over `runs` of the wall time per call of `calls` back-to-back calls, the GPU
    idle before each run and drained at its end (inside the timed span)."""
    for _ in range(50):
        fn()
    per = []
    for _ in range(runs):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
        per.append((time.perf_counter() - t0) * 1e6 / calls)
    return statistics.median(per)


def overhead_us(torch, kernelkit, calls=3000):
    """Host time per call (us) of a 1 x 32 f32 softmax through each layer."""
    x = torch.randn(1, 32, device="cuda")
    out = torch.empty_like(x)
    fns = {
        "kernelkit.softmax(x)": lambda: kernelkit.softmax(x),
        "kernelkit.softmax(x, out=out)": lambda: kernelkit.softmax(x, out=out),
        "torch.softmax(x, -1)": lambda: torch.softmax(x, -1),
    }
    if hasattr(torch.ops, "kernelkit") and getattr(kernelkit, "torch_ops_registered", False):
        fns["torch.ops.kernelkit.softmax(x)"] = lambda: torch.ops.kernelkit.softmax(x)
    result = {}
    for name, fn in fns.items():
        try:
            result[name] = host_us(torch, fn, calls, runs=3)
        except Exception as e:  # noqa: BLE001 (reported, not fatal)
            result[name] = f"error: {e}"
    return result


def _short_error(e):
    return f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"


class Compiler:
    """torch.compile of torch's own op, per op and dtype. While the compile time spent is
    within budget_s: dynamic=False, a graph per shape (what a user with fixed shapes gets).
    Past it: one dynamic=True graph per op and dtype for the later cases (marked "dyn" in
    the table), until 1.5 x budget_s; then none (torch_compile_us = null). None too where
    compiling is off or failed twice for that op and dtype."""

    def __init__(self, torch, enabled, budget_s):
        self.torch, self.budget_s, self.spent_s = torch, budget_s, 0.0
        self.fns, self.failures = {}, {}
        self.notes = []
        self.enabled = enabled
        if not enabled:
            self.notes.append("torch.compile: off (--no-compile)")
            return
        try:
            import triton  # noqa: F401 (inductor's GPU code generator)
            import torch._dynamo
        except ImportError as e:
            self.enabled = False
            self.notes.append(f"torch.compile: off ({_short_error(e)})")
            return
        cfg = torch._dynamo.config
        for knob in ("recompile_limit", "cache_size_limit", "accumulated_recompile_limit",
                     "accumulated_cache_size_limit"):
            if hasattr(cfg, knob):
                setattr(cfg, knob, 4096)

    def _note(self, text):
        if text not in self.notes:
            self.notes.append(text)
            print(text, flush=True)

    def get(self, key, eager):
        """(compiled function, "static" or "dynamic"), or (None, None)."""
        if not self.enabled or self.failures.get(key, 0) >= 2:
            return None, None
        if self.spent_s <= self.budget_s:
            mode = "static"
        elif self.spent_s <= 1.5 * self.budget_s:
            mode = "dynamic"
            self._note(f"torch.compile: {self.budget_s:.0f} s of compiling spent: later cases use one "
                       "dynamic=True graph per op and dtype (dyn)")
        else:
            self._note(f"torch.compile: {1.5 * self.budget_s:.0f} s of compiling spent: later cases "
                       "have no torch.compile time")
            return None, None
        if (key, mode) not in self.fns:
            self.fns[(key, mode)] = self.torch.compile(eager, dynamic=mode == "dynamic")
        return self.fns[(key, mode)], mode

    def failed(self, key):
        self.failures[key] = self.failures.get(key, 0) + 1


def run_case(torch, kernelkit, timer, compiler, case):
    """Fills case's kernelkit_us, torch_us, torch_compile_us (None where not measured) and
    error; never raises for a failing op."""
    op, dtype, shape = case["op"], case["dtype"], case["shape"]
    case.update(kernelkit_us=None, torch_us=None, torch_compile_us=None)
    errors = []
    try:
        args = _tensors(torch, op, shape, dtype)
    except Exception as e:  # noqa: BLE001 (out of memory, ...)
        case["error"] = f"inputs: {_short_error(e)}"
        return
    kk, th = _functions(torch, kernelkit, op)
    want = None
    try:
        want = th(*args)
        case["torch_us"] = timer.gpu_us(lambda: th(*args))[0]
    except Exception as e:  # noqa: BLE001
        errors.append(f"torch: {_short_error(e)}")
    try:
        got = kk(*args)
        torch.cuda.synchronize()
        if want is not None:
            try:
                _check(torch, op, got, want)
            except AssertionError as e:
                errors.append(f"kernelkit differs from torch: {str(e).splitlines()[0][:160]}")
        del got
        case["kernelkit_us"] = timer.gpu_us(lambda: kk(*args))[0]
    except Exception as e:  # noqa: BLE001
        errors.append(f"kernelkit: {_short_error(e)}")
    del want
    key = (op, dtype)
    fn, mode = compiler.get(key, th)
    if fn is not None:
        try:
            case["torch_compile_us"], first_s = timer.gpu_us(lambda: fn(*args))
            case["compile_mode"] = mode
            compiler.spent_s += first_s
        except Exception as e:  # noqa: BLE001 (no Triton, an inductor error, ...)
            compiler.failed(key)
            errors.append(f"torch.compile: {_short_error(e)}")
    liger = OPS[op].get("liger")
    if liger is not None:
        case["liger_us"] = None
        if liger_available(op):
            try:
                case["liger_us"] = timer.gpu_us(lambda: liger(*args))[0]
            except Exception as e:  # noqa: BLE001
                errors.append(f"liger: {_short_error(e)}")
    if errors:
        case["error"] = "; ".join(errors)


def measure_host(torch, kernelkit, op, dtype, calls):
    """(kernelkit's, torch's) host time per call on the op's tiny inputs."""
    try:
        args = _tensors(torch, op, OPS[op]["tiny"], dtype)
    except Exception as e:  # noqa: BLE001
        print(f"  host time of {op}/{dtype}: inputs: {_short_error(e)}", flush=True)
        return None, None
    kk, th = _functions(torch, kernelkit, op)
    result = []
    for fn in (kk, th):
        try:
            result.append(host_us(torch, lambda: fn(*args), calls))
        except Exception as e:  # noqa: BLE001
            print(f"  host time of {op}/{dtype}: {_short_error(e)}", flush=True)
            result.append(None)
    return tuple(result)


# ---- the command ---------------------------------------------------------------------------
def _parse(argv):
    p = argparse.ArgumentParser(prog="python -m kernelkit.bench",
                                description=" ".join(__doc__.split("\n")[:2]),
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="ops: " + ", ".join(f"{k} ({v['name']}: {', '.join(v['dtypes'])})"
                                                           for k, v in OPS.items()))
    p.add_argument("--seed", default="1", help="the generator's seed: an integer or 'random' (default 1)")
    p.add_argument("--ops", default=",".join(OPS), help="comma-separated ops (kernelkit's or the C++ names)")
    p.add_argument("--dtypes", "--dtype", default="f32,f16,bf16",
                   help="comma-separated input dtypes to run (f32, f16, bf16)")
    p.add_argument("--generated", type=int, default=None, help="generated shapes per op and dtype (default 6, --quick 3)")
    p.add_argument("--quick", action="store_true",
                   help="one listed and 3 generated shapes per op and dtype, fewer samples, 90 s budget")
    p.add_argument("--samples", type=int, default=None, help="timed samples per case (default 20, --quick 10)")
    p.add_argument("--host-calls", type=int, default=None, help="calls per host-time run (default 1000, --quick 300)")
    p.add_argument("--max-seconds", type=float, default=None,
                   help="the run's time budget: no case starts after this many seconds less 10 "
                        "(default 240, --quick 90)")
    p.add_argument("--compile-seconds", type=float, default=None,
                   help="torch.compile time budget (default 60%% of --max-seconds)")
    p.add_argument("--no-compile", action="store_true", help="skip torch.compile (torch_compile_us = null)")
    p.add_argument("--json", help="results JSON (default $OUT/<gpu>-python.json when OUT is set, "
                   "else bench/results/<gpu>-python.json)")
    p.add_argument("--table", help="markdown (default: the JSON's path with .md)")
    p.add_argument("--chart", help="chart PNG (default: the JSON's path with .png; needs matplotlib)")
    p.add_argument("--list", action="store_true", help="print the cases and exit (no GPU needed)")
    p.add_argument("--host-only", action="store_true",
                   help="only the host time per call on tiny inputs (kernelkit and torch), seconds")
    args = p.parse_args(argv)
    if args.seed == "random":
        args.seed = random.SystemRandom().randrange(1, 1 << 31)
    else:
        try:
            args.seed = int(args.seed)
        except ValueError:
            p.error(f"--seed takes an integer or 'random', not {args.seed!r}")
    ops = []
    for o in filter(None, args.ops.split(",")):
        o = OP_ALIASES.get(o, o)
        if o not in OPS:
            p.error(f"unknown op {o} ({', '.join(OPS)})")
        ops.append(o)
    args.ops = ops
    args.dtypes = [DTYPE_ALIASES.get(d, d) for d in args.dtypes.split(",") if d]
    for d in args.dtypes:
        if d not in ITEMSIZE:
            p.error(f"unknown dtype {d} (f32, f16, bf16)")
    q = args.quick
    args.generated = args.generated if args.generated is not None else (3 if q else 6)
    args.samples = args.samples or (10 if q else 20)
    args.host_calls = args.host_calls or (300 if q else 1000)
    args.max_seconds = args.max_seconds or (90.0 if q else 240.0)
    if args.compile_seconds is None:
        args.compile_seconds = 0.6 * args.max_seconds
    return args


def _host_only(args, torch, kernelkit, gpu, host):
    """--host-only: the host times per op and dtype, torch's over kernelkit's, the layers of
    a 1 x 32 softmax; the JSON only when --json names it."""
    rows, worst = [], None
    print(f"\nhost time per call (us), tiny inputs, {args.host_calls} calls a run, median of 5:")
    print(f"{'op':22s} {'dtype':9s} {'shape':7s} {'kernelkit':>9s} {'torch':>7s} {'torch/kk':>8s}")
    for (op, dtype), (kk_h, th_h) in host.items():
        ratio = th_h / kk_h if kk_h and th_h else None
        if ratio is not None and (worst is None or ratio < worst[0]):
            worst = (ratio, f"{OPS[op]['name']}/{dtype}")
        rows.append(dict(op=OPS[op]["name"], dtype=dtype, shape=OPS[op]["tiny"],
                         kernelkit_host_us=kk_h, torch_host_us=th_h))
        print(f"{OPS[op]['name']:22s} {dtype:9s} {OPS[op]['tiny']:7s} {_f(kk_h, '{:.2f}'):>9s} {_f(th_h, '{:.2f}'):>7s} "
              f"{'' if ratio is None else f'{ratio:.2f}x':>8s}")
    failed = [f"{r['op']}/{r['dtype']}" for r in rows if r["kernelkit_host_us"] is None
              or r["torch_host_us"] is None]
    if worst is not None:
        ok = worst[0] >= 1.0 and not failed
        print(f"worst: {worst[1]} {worst[0]:.2f}x ({'meets' if ok else 'misses'} the goal, >= 1.00x"
              + (f"; not measured: {', '.join(failed)}" if failed else "") + ")")
    print("\nhost time per call of a 1 x 32 f32 softmax through each layer:")
    try:
        for name, us in overhead_us(torch, kernelkit).items():
            print(f"- {name}: {_f(us) + ' us' if isinstance(us, float) else us}")
    except Exception as e:  # noqa: BLE001 (a figure for people)
        print(f"- not measured: {_short_error(e)}")
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump({"gpu": gpu, "torch": torch.__version__, "host": rows}, f, indent=1)
        print(f"json: {args.json}")
    return 0


def main(argv=None):
    args = _parse(argv)
    cases = plan(args.seed, args.ops, args.dtypes, args.generated, listed=1 if args.quick else None)
    if args.list:
        for c in cases:
            print(f"{c['name']}/{c['dtype']}/{c['shape']}{'  (generated)' if c['generated'] else ''}  "
                  f"{input_bytes(c['op'], c['shape'], c['dtype']) / MiB:.1f} MiB")
        print(f"{len(cases)} cases, seed {args.seed}")
        return 0

    t_start = time.perf_counter()
    try:
        import torch
    except ImportError:
        print("kernelkit.bench: needs torch (not installed); --list works without it", file=sys.stderr)
        return 2
    import kernelkit

    if not torch.cuda.is_available():
        print("kernelkit.bench: no CUDA GPU visible", file=sys.stderr)
        return 2
    # IEEE fp32 on both sides (kernelkit's sgemm and gemv are IEEE)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    gpu = torch.cuda.get_device_name()
    short = gpu_short_name(gpu)
    json_path = args.json or os.path.join(os.environ.get("OUT") or os.path.join("bench", "results"),
                                          f"{short}-python.json")
    stem = os.path.splitext(json_path)[0]
    table_path = args.table or stem + ".md"
    chart_path = args.chart or stem + ".png"
    print(f"kernelkit {kernelkit.__version__}, torch {torch.__version__}, {gpu}; seed {args.seed}; "
          f"{len(cases)} cases; budget {args.max_seconds:.0f} s (compile {args.compile_seconds:.0f} s)",
          flush=True)

    # host times first, with the GPU idle and before any big allocation
    host = {}
    for op, dtype in dict.fromkeys((c["op"], c["dtype"]) for c in cases):
        host[(op, dtype)] = measure_host(torch, kernelkit, op, dtype, args.host_calls)
        kk_h, th_h = host[(op, dtype)]
        print(f"host {OPS[op]['name']}/{dtype}: kernelkit {_f(kk_h)} us, torch {_f(th_h)} us", flush=True)
    if args.host_only:
        return _host_only(args, torch, kernelkit, gpu, host)
    for c in cases:
        c["kernelkit_host_us"], c["torch_host_us"] = host[(c["op"], c["dtype"])]

    timer = Timer(torch, args.samples)
    compiler = Compiler(torch, not args.no_compile, args.compile_seconds)
    for note in compiler.notes:
        print(note, flush=True)
    done = []
    order = round_robin(cases)
    for n, i in enumerate(order):
        c = cases[i]
        elapsed = time.perf_counter() - t_start
        if elapsed > args.max_seconds - 10:  # what follows the cases takes a few seconds
            print(f"time budget ({args.max_seconds:.0f} s) spent after {n} of {len(cases)} cases: "
                  f"the other {len(cases) - n} are left out", flush=True)
            break
        run_case(torch, kernelkit, timer, compiler, c)
        done.append(i)
        print(f"[{n + 1}/{len(cases)} {elapsed:5.0f} s] {c['name']}/{c['dtype']}/{c['shape']}"
              f"{' (gen)' if c['generated'] else ''}: kernelkit {_f(c['kernelkit_us'])} us, "
              f"torch {_f(c['torch_us'])} us, compile {_f(c['torch_compile_us'])} us"
              + (f", liger {_f(c['liger_us'])} us" if "liger_us" in c else "")
              + (f"  ERROR {c['error']}" if c.get("error") else ""), flush=True)
        torch.cuda.empty_cache()
    kept = [cases[i] for i in sorted(done)]
    doc = write_json(json_path, args.seed, gpu, torch.__version__, kept)
    print(f"json: {json_path} ({len(kept)} cases)", flush=True)

    header = (f"kernelkit {kernelkit.__version__} vs torch {torch.__version__} (eager and "
              f"torch.compile, dynamic=False) on {gpu}; seed {args.seed}; {len(kept)} of {len(cases)} "
              f"cases; GPU time = median of {args.samples} cold samples (L2 flushed, launch hidden)"
              + "".join(f"; {note}" for note in compiler.notes))
    tail = ["", "Python call overhead, host time per call of a 1 x 32 f32 softmax:"]
    try:
        tail += [f"- {name}: {_f(us) + ' us' if isinstance(us, float) else us}"
                 for name, us in overhead_us(torch, kernelkit).items()]
    except Exception as e:  # noqa: BLE001 (a figure for people, not for the JSON)
        tail.append(f"- not measured: {_short_error(e)}")
    tail.append(f"\nThe run took {time.perf_counter() - t_start:.0f} s; torch.compile's first calls "
                f"{compiler.spent_s:.0f} s of it.")
    md = markdown(doc, header, [c.get("compile_mode") for c in kept]) + "\n".join(tail) + "\n"
    with open(table_path, "w") as f:
        f.write(md)
    print(md, flush=True)
    try:
        if doc["cases"]:
            chart(doc, chart_path, f"kernelkit vs torch on {gpu}, seed {args.seed}")
            print(f"chart: {chart_path}", flush=True)
    except ImportError:
        print("kernelkit.bench: matplotlib not installed: no chart", flush=True)
    except Exception as e:  # noqa: BLE001 (the figures are written already)
        print(f"kernelkit.bench: no chart: {_short_error(e)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

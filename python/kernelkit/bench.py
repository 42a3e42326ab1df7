# SPDX-License-Identifier: Apache-2.0
"""kernelkit vs PyTorch eager on the benchmark's softmax, row-sum and transpose sweeps.

    python -m kernelkit.bench [--chart PATH.png] [--table PATH.md] [--dtype float32]
                              [--ops softmax,row_sum,transpose] [--quick]

Each case is checked once against torch, then both sides are timed the way a Python user
runs them: back-to-back calls on torch's current stream between two CUDA events (outputs
allocated by torch's caching allocator on both sides), the median of 5 such runs divided by
the calls in a run. Below ~20 us a case measures the Python call, not the kernel: the
overhead lines at the end give that floor (host time per call of a 1 x 32 softmax).
The shape lists are the C++ benchmark's (tools/goals: SOFTMAX, ROW_SUM, TRANSPOSE).
"""

import argparse
import math
import statistics
import sys
import time


def _rows_for(cols, total=1 << 25):
    return max(1, round(total / cols))


SOFTMAX_COLS = [32, 96, 500, 1000, 1024, 1500, 2048, 3000, 4096, 5000, 8192, 10000, 16384,
                32000, 65536, 100000, 151936, 262144]
SOFTMAX = [f"{_rows_for(c)}x{c}" for c in SOFTMAX_COLS] + \
          ["4096x50257", "1x1048576", "4x500000", "32x250000", "16x2097152"]
ROW_COLS = [1, 2, 3, 5, 8, 16, 48, 100, 333, 1000, 4096, 10000, 65536, 1048576]
ROW_SUM = [f"{_rows_for(c)}x{c}" for c in ROW_COLS] + ["1x33554432", "2x16777216", "5x6710886"]
TRANSPOSE = ["2x16777216", "16777216x2", "3x8388608", "8388608x3", "7x4194304", "4194304x7",
             "32x1048576", "1048576x32", "100x300000", "300000x100", "1000x33554",
             "4096x8192", "8192x8192", "16385x4097"]
QUICK = {"softmax": ["32768x1024", "4096x50257", "16x2097152"],
         "row_sum": ["33554432x1", "32768x1024", "1x33554432"],
         "transpose": ["8388608x3", "8192x8192", "16385x4097"]}


def _time_us(torch, fn, target_ms=20.0, repeats=5):
    """Median time per call (us) of back-to-back calls between two CUDA events."""
    fn()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    stop.record()
    stop.synchronize()
    once_ms = max(start.elapsed_time(stop), 1e-3)
    calls = int(min(1000, max(3, math.ceil(target_ms / once_ms))))
    runs = []
    for _ in range(repeats):
        start.record()
        for _ in range(calls):
            fn()
        stop.record()
        stop.synchronize()
        runs.append(start.elapsed_time(stop) * 1e3 / calls)
    return statistics.median(runs)


def _cases(torch, kernelkit, op, dtype):
    """(shape, kernelkit call, torch call, bytes moved, check) per shape of the op."""
    for shape in OPS[op]:
        rows, cols = (int(v) for v in shape.split("x"))
        x = torch.randn(rows, cols, device="cuda", dtype=dtype)
        n = rows * cols * x.element_size()
        if op == "softmax":
            yield shape, (lambda x=x: kernelkit.softmax(x)), (lambda x=x: torch.softmax(x, -1)), 2 * n, x
        elif op == "row_sum":
            yield (shape, (lambda x=x: kernelkit.row_sum(x)), (lambda x=x: x.sum(-1, dtype=torch.float32)),
                   n + rows * 4, x)
        else:
            yield shape, (lambda x=x: kernelkit.transpose(x)), (lambda x=x: x.t().contiguous()), 2 * n, x


OPS = {"softmax": SOFTMAX, "row_sum": ROW_SUM, "transpose": TRANSPOSE}


def _check(torch, op, got, want):
    if op == "transpose":
        assert torch.equal(got, want), "transpose differs from torch"
    else:
        torch.testing.assert_close(got.float(), want.float(), rtol=2e-2, atol=1e-3 * max(1.0, want.float().abs().max().item()))


def overhead_us(torch, kernelkit, calls=3000):
    """Host time per call (us) of a 1 x 32 f32 softmax: the Python call floor."""
    x = torch.randn(1, 32, device="cuda")
    out = torch.empty_like(x)
    s = torch.cuda.current_stream().cuda_stream
    from kernelkit import _C

    fns = {
        "kernelkit.softmax(x)": lambda: kernelkit.softmax(x),
        "kernelkit.softmax(x, out=out)": lambda: kernelkit.softmax(x, out=out),
        "torch.ops.kernelkit.softmax(x)": lambda: torch.ops.kernelkit.softmax(x),
        "kernelkit._C.softmax (extension only)": lambda: _C.softmax(x, out, False, s),
        "torch.softmax(x, -1)": lambda: torch.softmax(x, -1),
    }
    result = {}
    for name, fn in fns.items():
        for _ in range(100):
            fn()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        result[name] = (t1 - t0) * 1e6 / calls
    return result


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m kernelkit.bench", description=__doc__.split("\n")[0])
    p.add_argument("--chart", help="write the chart (PNG) here")
    p.add_argument("--table", help="also write the markdown table here")
    p.add_argument("--dtype", default="float32", choices=["float32", "float16", "bfloat16"])
    p.add_argument("--ops", default="softmax,row_sum,transpose")
    p.add_argument("--quick", action="store_true", help="three shapes per op")
    args = p.parse_args(argv)

    import torch

    import kernelkit

    if not torch.cuda.is_available():
        print("kernelkit.bench: no CUDA GPU visible", file=sys.stderr)
        return 2
    dtype = getattr(torch, args.dtype)
    ops = [o for o in args.ops.split(",") if o]
    for o in ops:
        if o not in OPS:
            p.error(f"unknown op {o} (softmax, row_sum, transpose)")
    if args.quick:
        OPS.update({o: QUICK[o] for o in ops})

    gpu = torch.cuda.get_device_name()
    lines = [f"kernelkit {kernelkit.__version__} vs torch {torch.__version__} on {gpu}, {args.dtype}; "
             "eager calls, median us per call",
             "",
             "| op | shape | torch (us) | kernelkit (us) | speedup | kernelkit GB/s |",
             "|---|---|---:|---:|---:|---:|"]
    print("\n".join(lines), flush=True)
    results = {}
    for op in ops:
        for shape, kk, th, nbytes, x in _cases(torch, kernelkit, op, dtype):
            _check(torch, op, kk(), th())
            t_kk = _time_us(torch, kk)
            t_th = _time_us(torch, th)
            results.setdefault(op, []).append((shape, t_th, t_kk))
            line = (f"| {op} | {shape} | {t_th:.1f} | {t_kk:.1f} | {t_th / t_kk:.2f}x | "
                    f"{nbytes / t_kk / 1e3:.0f} |")
            lines.append(line)
            print(line, flush=True)
            del x
            torch.cuda.empty_cache()
    geo = []
    for op, rs in results.items():
        g = math.exp(statistics.mean(math.log(t / k) for _, t, k in rs))
        geo.append(f"{op}: geometric-mean speedup {g:.2f}x over {len(rs)} shapes "
                   f"(min {min(t / k for _, t, k in rs):.2f}x, max {max(t / k for _, t, k in rs):.2f}x)")
    tail = [""] + geo + ["", "Python call overhead, host time per call of a 1 x 32 f32 softmax:"]
    tail += [f"- {name}: {us:.1f} us" for name, us in overhead_us(torch, kernelkit).items()]
    lines += tail
    print("\n".join(tail), flush=True)
    if args.table:
        with open(args.table, "w") as f:
            f.write("\n".join(lines) + "\n")
    if args.chart:
        _chart(results, args.chart, f"kernelkit vs torch eager, {args.dtype}, {gpu}")
        print(f"chart: {args.chart}")
    return 0


def _chart(results, path, title):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    fig, axes = plt.subplots(len(results), 1, figsize=(12, 3.6 * len(results)), squeeze=False)
    for ax, (op, rs) in zip(axes[:, 0], results.items()):
        speed = [t / k for _, t, k in rs]
        colors = ["tab:green" if s >= 1 else "tab:red" for s in speed]
        ax.bar(range(len(rs)), speed, color=colors)
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%.3g"))
        ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_xticks(range(len(rs)))
        ax.set_xticklabels([s for s, _, _ in rs], rotation=45, ha="right", fontsize=8)
        ax.set_ylabel("speedup over torch")
        ax.set_title(op)
        for i, s in enumerate(speed):
            ax.text(i, s, f"{s:.2f}", ha="center", va="bottom", fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    sys.exit(main())

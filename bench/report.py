#!/usr/bin/env python3
"""Turn kernelkit-bench JSON into the results table (markdown) and, where matplotlib is
installed, a chart. Standard library only otherwise.

usage: report.py RESULTS.json [--md OUT.md] [--png OUT.png] [--readme README.md]

Columns: median time, GB/s (fewest bytes), % of the memcpy case of the same run, the rate
over the same case's baseline (cub / cublas / cuda) where one was measured, and TFLOP/s for
cases that count flops. --readme replaces the block between the README's results markers.
"""
import json
import sys

MEMCPY = "memcpy/cuda/f32/268435456"
BASELINES = ("cub", "cublas", "cuda")


def load(path):
    with open(path) as f:
        data = json.load(f)
    rows = {}
    for b in data.get("benchmarks", []):
        agg = b.get("aggregate_name")
        if agg not in (None, "median"):
            continue
        name = (b.get("run_name") or b["name"]).split("/manual_time")[0]
        if agg is None and name in rows:
            continue
        rows[name] = b
    return data.get("context", {}), rows


def table(context, rows):
    copy = rows.get(MEMCPY, {}).get("bytes_per_second")
    out = []
    gpu = context.get("gpu", context.get("host_name", "?"))
    out.append(f"Results on {gpu} ({context.get('date', '?')}); medians of "
               "the timed launches of each case. "
               f"% copy: GB/s over `{MEMCPY}` of the same run.\n")
    out.append("| case | time (us) | GB/s | % copy | vs baseline | TFLOP/s |")
    out.append("|---|---:|---:|---:|---:|---:|")
    for name, b in rows.items():
        if b.get("error_occurred"):
            out.append(f"| {name} | error: {b.get('error_message', '')[:60]} | | | | |")
            continue
        t = b.get("real_time", 0)
        unit = b.get("time_unit", "us")
        t_us = b.get("median_us") or t * {"ns": 1e-3, "us": 1, "ms": 1e3, "s": 1e6}[unit]
        bps = b.get("bytes_per_second")
        gbs = f"{bps / 1e9:.0f}" if bps else ""
        pct = f"{100 * bps / copy:.1f}" if bps and copy else ""
        parts = name.split("/")
        ratio = ""
        if len(parts) == 4 and parts[1] not in BASELINES:
            for base in BASELINES:
                ref = rows.get("/".join([parts[0], base, parts[2], parts[3]]))
                if ref:
                    key = "flops_per_second" if b.get("flops_per_second") else "bytes_per_second"
                    if ref.get(key) and b.get(key):
                        ratio = f"{b[key] / ref[key]:.3f}x {base}"
                    break
        fl = b.get("flops_per_second")
        tf = f"{fl / 1e12:.1f}" if fl else ""
        out.append(f"| {name} | {t_us:.1f} | {gbs} | {pct} | {ratio} | {tf} |")
    return "\n".join(out) + "\n"


def chart(rows, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    copy = rows.get(MEMCPY, {}).get("bytes_per_second")
    if not copy:
        return
    names = [n for n, b in rows.items() if b.get("bytes_per_second") and not b.get("flops_per_second")]
    vals = [100 * rows[n]["bytes_per_second"] / copy for n in names]
    fig, ax = plt.subplots(figsize=(10, max(3, 0.22 * len(names))))
    ax.barh(range(len(names)), vals, color=["#4477aa" if "/kernelkit/" in n else "#aaaaaa" for n in names])
    ax.set_yticks(range(len(names)))
    ax.set_yticklabels(names, fontsize=6)
    ax.invert_yaxis()
    ax.axvline(100, color="k", lw=0.5)
    ax.set_xlabel("% of device-to-device copy rate")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv):
    if not argv:
        print(__doc__)
        return 2
    path = argv[0]
    opts = dict(zip(argv[1::2], argv[2::2]))
    context, rows = load(path)
    md = table(context, rows)
    if "--md" in opts:
        with open(opts["--md"], "w") as f:
            f.write(md)
    else:
        sys.stdout.write(md)
    if "--png" in opts:
        chart(rows, opts["--png"])
    if "--readme" in opts:
        begin, end = "<!-- results:begin -->", "<!-- results:end -->"
        with open(opts["--readme"]) as f:
            text = f.read()
        if begin in text and end in text:
            head, rest = text.split(begin, 1)
            _, tail = rest.split(end, 1)
            with open(opts["--readme"], "w") as f:
                f.write(head + begin + "\n" + md + end + tail)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

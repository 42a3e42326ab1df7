#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Turn kernelkit-bench JSON into the results people read: a markdown summary and table,
one chart per op and one per ladder, and the README's results block. Also merges runs.

usage:
  report.py RESULTS.json [--md OUT.md] [--charts DIR] [--readme README.md]
  report.py --merge OLD.json NEW.json [--out MERGED.json] [report options]

--md       the summary per op and dtype (geometric mean and worst copy_ratio, and of the
           vendor ratio), the timing-method figures, errors, and every case in a table.
--charts   DIR/<op>.png: x = the sweep's shapes (in the order the benchmark ran them, which
           is the issue's), y = fraction of the same-bytes copy (sgemm: TFLOP/s), a series
           for kernelkit and one per baseline, a panel per dtype; DIR/ladder-<op>.png: each
           ladder step's fraction of the copy (sgemm: of cuBLAS) at each of its shapes.
           Needs matplotlib (pip install matplotlib); skipped with a note without it.
--readme   replaces the block between <!-- results:begin --> and <!-- results:end --> with
           the summary and links to the charts (paths relative to the README).
--merge    OLD and NEW are two runs (e.g. NEW re-measured one op with --benchmark_filter):
           the merged file keeps OLD's cases in OLD's order with NEW's replacing those of the
           same name, then NEW's other cases; the context (and the memcpy headline, when NEW
           has it) is NEW's. Written to --out (default: OLD), then reported like RESULTS.json.
copy_ratio is measured inside each run (the same-bytes copy of that run), so it stays
comparable across merged runs; the vendor ratio compares two cases, possibly of two runs.
"""
import json
import math
import os
import sys

MEMCPY = "memcpy/cuda/f32/268435456"
BASELINES = ("cub", "cublas", "cuda")
# display order of the ops (others follow in the order they appear)
OP_ORDER = ["memcpy", "elementwise.add", "elementwise.cast", "elementwise.gelu", "reduce.sum",
            "row_reduce.sum", "softmax", "log_softmax", "transpose", "gemv", "gemv_t", "sgemm",
            "sgemm_tn", "sgemm_nt", "sgemm_tt", "block_reduce.sum", "block_all_reduce.sum"]
# ops drawn together in one chart (x = op + shape)
CHART_GROUPS = {"sgemm_tn": "sgemm_ops", "sgemm_nt": "sgemm_ops", "sgemm_tt": "sgemm_ops",
                "block_reduce.sum": "block_reduce", "block_all_reduce.sum": "block_reduce"}


def clean_name(b):
    name = b.get("run_name") or b.get("name", "")
    for suffix in ("/manual_time", "/real_time"):
        name = name.split(suffix)[0]
    return name


def load_raw(path):
    with open(path) as f:
        return json.load(f)


def cases_of(data):
    """name -> benchmark record (medians of repetitions preferred), in run order."""
    cases = {}
    for b in data.get("benchmarks", []):
        agg = b.get("aggregate_name")
        if agg not in (None, "median"):
            continue
        name = clean_name(b)
        if agg is None and cases.get(name, {}).get("aggregate_name") == "median":
            continue
        cases[name] = b
    return cases


def merge(old, new):
    """OLD's cases in OLD's order, NEW's replacing them by name, then NEW's others."""
    new_by_name = {}
    for b in new.get("benchmarks", []):
        new_by_name.setdefault(clean_name(b), []).append(b)
    out, seen = [], set()
    for b in old.get("benchmarks", []):
        name = clean_name(b)
        if name in new_by_name:
            if name not in seen:
                out.extend(new_by_name[name])
                seen.add(name)
        else:
            out.append(b)
    for b in new.get("benchmarks", []):
        if clean_name(b) not in seen:
            out.append(b)
    context = dict(new.get("context", {}))
    context["kk_merged"] = (f"{old.get('context', {}).get('date', '?')} run, with "
                            f"{len(new_by_name)} cases of the {context.get('date', '?')} run")
    return {"context": context, "benchmarks": out}


# ---- figures of one case --------------------------------------------------------------------
def seconds(b):
    if b.get("median_us"):
        return b["median_us"] * 1e-6
    t = b.get("real_time")
    unit = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}.get(b.get("time_unit", "ns"), 1e-9)
    return t * unit if t else None


def ok(b):
    return b is not None and not b.get("error_occurred") and seconds(b)


def parts(name):
    p = name.split("/")
    return p if len(p) == 4 else None


def vendor_of(cases, op, dtype, shape):
    for base in BASELINES:
        v = cases.get(f"{op}/{base}/{dtype}/{shape}")
        if v is not None:
            return base, v
    return None, None


def geomean(v):
    return math.exp(sum(map(math.log, v)) / len(v)) if v else None


def fmt(x, digits=3):
    return "" if x is None else f"{x:.{digits}f}"


def is_flops_op(op):
    return op.startswith("sgemm")


# ---- the sweep: op -> dtype -> shapes (run order) ------------------------------------------
def sweeps(cases):
    ops = {}
    for name, b in cases.items():
        p = parts(name)
        if not p or p[1].startswith("ladder."):
            continue
        op, impl, dtype, shape = p
        d = ops.setdefault(op, {}).setdefault(dtype, [])
        if shape not in d:
            d.append(shape)
    order = [o for o in OP_ORDER if o in ops] + [o for o in ops if o not in OP_ORDER]
    return [(op, ops[op]) for op in order]


def summary_rows(cases):
    rows = []
    for op, dtypes in sweeps(cases):
        if op == "memcpy":
            continue
        for dtype, shapes in dtypes.items():
            copy, vend, tflops, errors, missing = [], [], [], [], 0
            vendor = None
            for sh in shapes:
                k = cases.get(f"{op}/kernelkit/{dtype}/{sh}")
                base, v = vendor_of(cases, op, dtype, sh)
                vendor = vendor or base
                if k is None:
                    missing += 1
                    continue
                if not ok(k):
                    errors.append(sh)
                    continue
                if k.get("copy_ratio"):
                    copy.append((k["copy_ratio"], sh))
                if k.get("flops_per_second") and is_flops_op(op):
                    tflops.append(k["flops_per_second"] / 1e12)
                if ok(v):
                    vend.append((seconds(v) / seconds(k), sh))
            rows.append(dict(op=op, dtype=dtype, shapes=len(shapes), copy=copy, vendor=vendor,
                             vend=vend, tflops=tflops, errors=errors, missing=missing))
    return rows


def summary_table(cases):
    out = ["| op | dtype | shapes | of copy: geomean | worst (shape) | vendor | vs vendor: geomean "
           "| worst (shape) | TFLOP/s geomean | errors |",
           "|---|---|---:|---:|---|---|---:|---|---:|---|"]
    for r in summary_rows(cases):
        flops = is_flops_op(r["op"])
        copy_geo = "" if flops else fmt(geomean([c for c, _ in r["copy"]]))
        worst_c = "" if flops or not r["copy"] else "{:.3f} ({})".format(*min(r["copy"]))
        vend_geo = fmt(geomean([c for c, _ in r["vend"]]))
        worst_v = "{:.3f} ({})".format(*min(r["vend"])) if r["vend"] else ""
        errs = ", ".join(r["errors"]) + (f" {r['missing']} missing" if r["missing"] else "")
        out.append(f"| {r['op']} | {r['dtype']} | {r['shapes']} | {copy_geo} | {worst_c} | "
                   f"{r['vendor'] or ''} | {vend_geo} | {worst_v} | "
                   f"{fmt(geomean(r['tflops']), 1)} | {errs} |")
    return "\n".join(out) + "\n"


def timing_table(cases):
    rows = []
    for what in ("empty", "memcpy-16777216"):
        old, cold = cases.get(f"timing/old/{what}"), cases.get(f"timing/cold/{what}")
        if not ok(old) and not ok(cold):
            continue
        cells = []
        for b in (old, cold):
            if ok(b):
                gbs = f", {b['bytes_per_second'] / 1e9:.0f} GB/s" if b.get("bytes_per_second") else ""
                cells.append(f"{seconds(b) * 1e6:.2f} us{gbs}")
            else:
                cells.append("")
        rows.append(f"| {what} | {cells[0]} | {cells[1]} |")
    if not rows:
        return ""
    return ("| case | old: event, launch, event | cold: flushed L2, launch queued behind a hold |\n"
            "|---|---:|---:|\n" + "\n".join(rows) + "\n")


def full_table(cases):
    out = ["| case | time (us) | GB/s | copy_ratio | vs vendor | TFLOP/s |",
           "|---|---:|---:|---:|---:|---:|"]
    for name, b in cases.items():
        if b.get("error_occurred"):
            out.append(f"| {name} | error: {b.get('error_message', '')[:80]} | | | | |")
            continue
        t = seconds(b)
        bps = b.get("bytes_per_second")
        p = parts(name)
        ratio = ""
        if p and p[1] not in BASELINES:
            base, v = vendor_of(cases, p[0], p[2], p[3])
            if ok(v) and t:
                ratio = f"{seconds(v) / t:.3f}x {base}"
        fl = b.get("flops_per_second")
        gbs = f"{bps / 1e9:.0f}" if bps else ""
        tf = f"{fl / 1e12:.1f}" if fl else ""
        out.append(f"| {name} | {t * 1e6:.1f} | {gbs} | {fmt(b.get('copy_ratio'))} | {ratio} | {tf} |")
    return "\n".join(out) + "\n"


def headline(context, cases):
    gpu = context.get("gpu", context.get("host_name", "?"))
    m = cases.get(MEMCPY)
    copy = f"`{MEMCPY}`: {m['bytes_per_second'] / 1e9:.0f} GB/s" if ok(m) and m.get(
        "bytes_per_second") else f"`{MEMCPY}`: not in this run"
    merged = f" Merged: {context['kk_merged']}." if context.get("kk_merged") else ""
    if context.get("kk_run_seconds"):
        merged += f" The run took {context['kk_run_seconds'] / 60:.1f} min (build excluded)."
    return (f"Results on {gpu} ({context.get('date', '?')}); {copy}.{merged} Each case's time is "
            f"the median of cold samples (L2 flushed, launch queued behind a hold: "
            f"{context.get('kk_timing', '?')}). *of copy*: `copy_ratio`, the time of a "
            f"device-to-device copy of the case's own bytes (half read, half written), measured "
            f"the same way in the same run, over the case's time. *vs vendor*: the baseline's "
            f"time (CUB / cuBLAS) over kernelkit's on the same case. Geometric means and worst "
            f"over each op's sweep of shapes.\n")


def markdown(context, cases):
    errors = [(n, b.get("error_message", "")) for n, b in cases.items() if b.get("error_occurred")]
    out = [headline(context, cases), "## Summary per op and dtype\n", summary_table(cases)]
    t = timing_table(cases)
    if t:
        out += ["\n## The timing method (bench/NOTES.md \"Timing\")\n", t]
    if errors:
        out.append(f"\n## Errors ({len(errors)})\n")
        out += [f"- `{n}`: {msg}" for n, msg in errors]
        out.append("")
    out += ["\n## Every case\n", full_table(cases)]
    return "\n".join(out)


# ---- charts --------------------------------------------------------------------------------
def pyplot():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        return plt
    except ImportError:
        return None


COLORS = {"kernelkit": "#1f77b4", "cub": "#d62728", "cublas": "#2ca02c", "cuda": "#7f7f7f"}


def chart_groups(cases):
    """chart file stem -> [(op, {dtype: [shapes]})] in display order."""
    groups = {}
    for op, dtypes in sweeps(cases):
        if op == "memcpy":
            continue
        groups.setdefault(CHART_GROUPS.get(op, op), []).append((op, dtypes))
    return groups


def label_axes(ax, labels, rotation, ylabel, legend_loc):
    """One x tick label per position, the y label, a light grid and the legend."""
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=rotation, ha="right", fontsize=8)
    ax.set_ylabel(ylabel)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8, loc=legend_loc)


def save(plt, fig, path):
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def op_chart(plt, cases, stem, members, path, gpu):
    flops = all(is_flops_op(op) for op, _ in members)
    # panels: one per dtype; x: (op, shape) pairs
    panels = {}
    for op, dtypes in members:
        for dtype, shapes in dtypes.items():
            panels.setdefault(dtype, []).extend((op, sh) for sh in shapes)
    n = len(panels)
    width = max(8.0, 2.0 + 0.42 * max(len(v) for v in panels.values()))
    fig, axes = plt.subplots(n, 1, figsize=(width, 3.4 * n + 0.6), squeeze=False)
    for ax, (dtype, xs) in zip(axes[:, 0], panels.items()):
        impls = []
        for op, sh in xs:
            for impl in ("kernelkit",) + BASELINES:
                if f"{op}/{impl}/{dtype}/{sh}" in cases and impl not in impls:
                    impls.append(impl)
        top = 1.0
        for impl in impls:
            ys, errs = [], []
            for i, (op, sh) in enumerate(xs):
                b = cases.get(f"{op}/{impl}/{dtype}/{sh}")
                y = None
                if ok(b):
                    y = b.get("flops_per_second", 0) / 1e12 if flops else b.get("copy_ratio")
                elif b is not None:
                    errs.append(i)
                ys.append(float("nan") if y is None else y)
            top = max([top] + [y for y in ys if y == y])
            style = "-" if impl == "kernelkit" else "--"
            ax.plot(range(len(xs)), ys, style, marker="o", ms=4, lw=1.6,
                    color=COLORS.get(impl, None), label=impl)
            if errs:
                ax.plot(errs, [0] * len(errs), "x", color="#e31a1c", ms=10, mew=2.5, clip_on=False,
                        label=f"{impl}: error (not timed)")
        if not flops:
            ax.axhline(1.0, color="k", lw=0.6, ls=":")
        ax.set_ylim(0, top * 1.08)
        multi_op = len({op for op, _ in xs}) > 1
        labels = [(op.replace("sgemm_", "").replace(".sum", "") + " " if multi_op else "") + sh
                  for op, sh in xs]
        label_axes(ax, labels, 55, "TFLOP/s" if flops else "fraction of the copy", "best")
        ax.set_xlim(-0.5, len(xs) - 0.5)
        ax.set_title(f"{dtype}", fontsize=10, loc="left")
    what = "TFLOP/s" if flops else "time of a same-bytes copy / case time"
    fig.suptitle(f"{stem} on {gpu}\n{what}", fontsize=11)
    save(plt, fig, path)


def ladders(cases):
    """op -> list of (series label, dtype, shape) and the ordered step list."""
    out = {}
    for name in cases:
        p = parts(name)
        if not p or not p[1].startswith("ladder."):
            continue
        op, impl, dtype, shape = p
        d = out.setdefault(op, {"steps": [], "series": []})
        step = impl[len("ladder."):]
        if step not in d["steps"]:
            d["steps"].append(step)
        if (dtype, shape) not in d["series"]:
            d["series"].append((dtype, shape))
    return out


def ladder_chart(plt, cases, op, d, path, gpu):
    flops = is_flops_op(op)
    bars = d["steps"] + ["kernelkit"]
    series = d["series"]
    vendor_bars = []
    for dtype, shape in series:
        base, v = vendor_of(cases, op, dtype, shape)
        if base and not flops and base not in vendor_bars:
            vendor_bars.append(base)
    bars += vendor_bars
    width = max(7.0, 1.6 + 0.9 * len(bars) * max(1, len(series)) ** 0.5)
    fig, ax = plt.subplots(figsize=(width, 4.6))
    w = 0.8 / max(1, len(series))
    cmap = plt.get_cmap("tab10")
    top = 1.0
    for s, (dtype, shape) in enumerate(series):
        ys = []
        base, v = vendor_of(cases, op, dtype, shape)
        for bar in bars:
            impl = bar if bar in ("kernelkit",) + BASELINES else "ladder." + bar
            b = cases.get(f"{op}/{impl}/{dtype}/{shape}")
            y = None
            if ok(b):
                if flops:
                    y = seconds(v) / seconds(b) if ok(v) else None
                else:
                    y = b.get("copy_ratio")
            ys.append(y)
        xs = [i + (s - (len(series) - 1) / 2) * w for i in range(len(bars))]
        vals = [y if y is not None else 0 for y in ys]
        top = max([top] + vals)
        ax.bar(xs, vals, w * 0.95, color=cmap(s % 10), label=f"{dtype} {shape}")
        for x, y in zip(xs, ys):
            ax.text(x, (y or 0) + 0.01, "n/a" if y is None else f"{y:.2f}", ha="center",
                    va="bottom", fontsize=6.5, rotation=90 if len(series) > 2 else 0)
    ax.axhline(1.0, color="k", lw=0.6, ls=":")
    ax.set_ylim(0, top * 1.18)
    label_axes(ax, bars, 30, "fraction of cuBLAS's time" if flops else "fraction of the copy",
               "upper left")
    what = "cuBLAS time / step time" if flops else "time of a same-bytes copy / step time"
    ax.set_title(f"{op} ladder on {gpu}\n{what}", fontsize=10)
    save(plt, fig, path)


def charts(context, cases, outdir):
    """Writes the charts; returns [(title, file name)]."""
    plt = pyplot()
    if plt is None:
        print("report.py: matplotlib not installed (pip install matplotlib): no charts",
              file=sys.stderr)
        return []
    os.makedirs(outdir, exist_ok=True)
    gpu = context.get("gpu", "?")
    made = []
    for stem, members in chart_groups(cases).items():
        f = f"{stem}.png"
        op_chart(plt, cases, stem, members, os.path.join(outdir, f), gpu)
        made.append((stem, f))
    for op, d in ladders(cases).items():
        f = f"ladder-{op}.png"
        ladder_chart(plt, cases, op, d, os.path.join(outdir, f), gpu)
        made.append((f"{op} ladder", f))
    return made


def readme_block(context, cases, links):
    out = [headline(context, cases), summary_table(cases)]
    t = timing_table(cases)
    if t:
        out += ["\nWhat the timing method changes (bench/NOTES.md \"Timing\"):\n", t]
    ops = [(t, p) for t, p in links if not t.endswith(" ladder")]
    lads = [(t[:-len(" ladder")], p) for t, p in links if t.endswith(" ladder")]
    if ops:
        out.append("\nCharts per op (fraction of the copy across the sweep; sgemm: TFLOP/s): " +
                   " · ".join(f"[{t}]({p})" for t, p in ops) + "\n")
    if lads:
        out.append("Ladders (what each step buys): " +
                   " · ".join(f"[{t}]({p})" for t, p in lads) + "\n")
    return "\n".join(out)


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 2
    opts, pos, i = {}, [], 0
    while i < len(argv):
        if argv[i] == "--merge":
            opts["--merge"] = (argv[i + 1], argv[i + 2])
            i += 3
        elif argv[i].startswith("--"):
            opts[argv[i]] = argv[i + 1]
            i += 2
        else:
            pos.append(argv[i])
            i += 1
    if "--merge" in opts:
        old_path, new_path = opts["--merge"]
        data = merge(load_raw(old_path), load_raw(new_path))
        out = opts.get("--out", old_path)
        with open(out, "w") as f:
            json.dump(data, f, indent=2)
        print(f"report.py: merged {new_path} into {old_path} -> {out}", file=sys.stderr)
    elif pos:
        data = load_raw(pos[0])
    else:
        print(__doc__)
        return 2
    context, cases = data.get("context", {}), cases_of(data)
    md = markdown(context, cases)
    if "--md" in opts:
        with open(opts["--md"], "w") as f:
            f.write(md)
    elif "--readme" not in opts and "--charts" not in opts:
        sys.stdout.write(md)
    links = []
    if "--charts" in opts:
        made = charts(context, cases, opts["--charts"])
        base = os.path.dirname(os.path.abspath(opts.get("--readme", "README.md")))
        links = [(t, os.path.relpath(os.path.join(os.path.abspath(opts["--charts"]), f), base))
                 for t, f in made]
    if "--readme" in opts:
        begin, end = "<!-- results:begin -->", "<!-- results:end -->"
        with open(opts["--readme"]) as f:
            text = f.read()
        if begin in text and end in text:
            head, rest = text.split(begin, 1)
            _, tail = rest.split(end, 1)
            with open(opts["--readme"], "w") as f:
                f.write(head + begin + "\n" + readme_block(context, cases, links) + end + tail)
        else:
            print(f"report.py: no results markers in {opts['--readme']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

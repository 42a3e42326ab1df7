#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Turn kernelkit-bench JSON into the results people read: a markdown summary and table,
one chart per op and one per ladder, and the README's results block. Also merges runs.

usage:
  report.py RESULTS.json [--md OUT.md] [--charts DIR] [--readme README.md] [--python PY.json]
  report.py --merge OLD.json NEW.json [--out MERGED.json] [report options]

--md       the summary per op and dtype: the geometric mean and the worst of `sol_ratio`
           over the listed shapes, the generated ones (counter generated = 1) and all, the
           geometric mean of copy_ratio, and the vendor ratio's geomean and worst; the seed
           of the generated shapes (context kk_seed); the speed-of-light kernel's check
           against cudaMemcpyAsync and CUB (cases sol_check/<impl>/u8/<bytes>); the
           timing-method figures; the Python benchmark's summary; errors; every case.
           Where a case has no sol_ratio (results from before it existed), its copy_ratio
           stands in and the "of" column says so.
--charts   DIR/<op>.png: x = the sweep's shapes (the listed ones in the order the benchmark
           ran them, then the generated ones by size, marked with * and a hollow marker),
           y = sol_ratio (where the run has none: copy_ratio; sgemm: TFLOP/s), a series for
           kernelkit and one per baseline (a baseline's figure is kernelkit's sol_us /
           copy_us of that shape over the baseline's time), a panel per dtype;
           DIR/ladder-<op>.png: each ladder step's fraction of SOL (or of the copy; sgemm:
           of cuBLAS) at each of its shapes. Needs matplotlib; skipped with a note without.
--readme   replaces the block between <!-- results:begin --> and <!-- results:end --> with
           the summary, the SOL check, the Python summary and links to the charts (paths
           relative to the README).
--python   the Python benchmark's JSON (python -m kernelkit.bench); default: <gpu>-python.json
           beside RESULTS.json (h100.json -> h100-python.json), when it exists.
--merge    OLD and NEW are two runs (e.g. NEW re-measured one op with --benchmark_filter):
           the merged file keeps OLD's cases in OLD's order with NEW's replacing those of the
           same name, then NEW's other cases; the context (and the memcpy headline, when NEW
           has it) is NEW's. Written to --out (default: OLD), then reported like RESULTS.json.
sol_ratio and copy_ratio are measured inside each run (the SOL kernel and the same-bytes
copy of that run), so they stay comparable across merged runs; the vendor ratio compares
two cases, possibly of two runs.
"""
import json
import math
import os
import sys

MEMCPY = "memcpy/cuda/f32/268435456"
BASELINES = ("cub", "cublas", "cuda")
# display order of the ops (others follow in the order they appear)
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


def is_generated(b):
    return bool(b) and b.get("generated") == 1


def vendor_of(cases, op, dtype, shape):
    for base in BASELINES:
        v = cases.get(f"{op}/{base}/{dtype}/{shape}")
        if v is not None:
            return base, v
    return None, None


def limit_ratio(cases, op, impl, dtype, shape):
    """(ratio, "sol" or "copy") of one case against the limit: its sol_ratio, else its
    copy_ratio. A case without the counters (a baseline) is set against kernelkit's sol_us
    (else copy_us) of the same shape: the limit is the shape's, whoever runs it.
    (None, None) when the case did not run or nothing is known of the limit."""
    b = cases.get(f"{op}/{impl}/{dtype}/{shape}")
    if not ok(b):
        return None, None
    k = cases.get(f"{op}/kernelkit/{dtype}/{shape}") or {}
    us = seconds(b) * 1e6
    for ratio, limit_us, ref in (("sol_ratio", "sol_us", "sol"), ("copy_ratio", "copy_us", "copy")):
        if b.get(ratio):
            return b[ratio], ref
        if k.get(limit_us):
            return k[limit_us] / us, ref
    return None, None


def geomean(v):
    return math.exp(sum(map(math.log, v)) / len(v)) if v else None


def fmt(x, digits=3):
    return "" if x is None else f"{x:.{digits}f}"


def is_flops_op(op):
    return op.startswith("sgemm")


# ---- the sweep: op -> dtype -> shapes (run order) ------------------------------------------
NOT_SWEEPS = ("memcpy", "sol_check")  # cases of the run's own references


def sweeps(cases):
    ops = {}
    for name, b in cases.items():
        p = parts(name)
        if not p or p[1].startswith("ladder.") or p[0] in NOT_SWEEPS:
            continue
        op, impl, dtype, shape = p
        d = ops.setdefault(op, {}).setdefault(dtype, [])
        if shape not in d:
            d.append(shape)
    # the order the run took them in (kernelkit-bench's rank in bench/harness.cu, the one
    # list of ops; a merge keeps the older run's order)
    return list(ops.items())


def summary_rows(cases):
    rows = []
    for op, dtypes in sweeps(cases):
        for dtype, shapes in dtypes.items():
            lim = {"listed": [], "generated": [], "all": []}  # (ratio, shape)
            refs = {"sol": 0, "copy": 0}
            copy, vend, tflops, errors, missing, generated = [], [], [], [], 0, 0
            vendor = None
            for sh in shapes:
                k = cases.get(f"{op}/kernelkit/{dtype}/{sh}")
                base, v = vendor_of(cases, op, dtype, sh)
                vendor = vendor or base
                if k is None:
                    missing += 1
                    continue
                generated += is_generated(k)
                if not ok(k):
                    errors.append(sh)
                    continue
                if not is_flops_op(op):
                    r, ref = limit_ratio(cases, op, "kernelkit", dtype, sh)
                    if r:
                        refs[ref] += 1
                        lim["all"].append((r, sh))
                        lim["generated" if is_generated(k) else "listed"].append((r, sh))
                if k.get("copy_ratio"):
                    copy.append((k["copy_ratio"], sh))
                if k.get("flops_per_second") and is_flops_op(op):
                    tflops.append(k["flops_per_second"] / 1e12)
                if ok(v):
                    vend.append((seconds(v) / seconds(k), sh))
            rows.append(dict(op=op, dtype=dtype, shapes=len(shapes), generated=generated, lim=lim,
                             refs=refs, copy=copy, vendor=vendor, vend=vend, tflops=tflops,
                             errors=errors, missing=missing))
    return rows


def ref_label(refs):
    if refs["sol"] and refs["copy"]:
        return f"SOL (copy for {refs['copy']})"
    return "SOL" if refs["sol"] else "copy" if refs["copy"] else ""


def geo_worst(pairs, with_shape=False):
    """'geomean / worst' of (ratio, shape) pairs; the worst's shape in brackets."""
    if not pairs:
        return ""
    r, sh = min(pairs)
    return f"{geomean([p for p, _ in pairs]):.3f} / {r:.3f}" + (f" ({sh})" if with_shape else "")


def summary_table(cases):
    out = ["| op | dtype | shapes (gen.) | of | listed: geomean / worst | generated: geomean / worst "
           "| all: geomean / worst (shape) | of copy: geomean | vendor | vs vendor: geomean "
           "| worst (shape) | TFLOP/s geomean | errors |",
           "|---|---|---:|---|---:|---:|---:|---:|---|---:|---|---:|---|"]
    for r in summary_rows(cases):
        lim = r["lim"]
        copy_geo = "" if is_flops_op(r["op"]) else fmt(geomean([c for c, _ in r["copy"]]))
        vend_geo = fmt(geomean([c for c, _ in r["vend"]]))
        worst_v = "{:.3f} ({})".format(*min(r["vend"])) if r["vend"] else ""
        errs = ", ".join(r["errors"]) + (f" {r['missing']} missing" if r["missing"] else "")
        out.append(f"| {r['op']} | {r['dtype']} | {r['shapes']} ({r['generated']}) | {ref_label(r['refs'])} | "
                   f"{geo_worst(lim['listed'])} | {geo_worst(lim['generated'])} | "
                   f"{geo_worst(lim['all'], True)} | {copy_geo} | {r['vendor'] or ''} | {vend_geo} | "
                   f"{worst_v} | {fmt(geomean(r['tflops']), 1)} | {errs} |")
    return "\n".join(out) + "\n"


SOL_IMPLS = (("sol", "SOL kernel"), ("cuda", "cudaMemcpyAsync"), ("cub", "CUB DeviceTransform"))


def sol_check_table(cases):
    """The speed-of-light kernel against cudaMemcpyAsync and CUB on the same bytes: one row
    per size, GB/s (time), and whether the SOL kernel is at least as fast as both."""
    sizes = []
    for name in cases:
        p = parts(name)
        if p and p[0] == "sol_check" and p[3] not in sizes:
            sizes.append(p[3])
    if not sizes:
        return ""
    out = ["| bytes copied | " + " | ".join(label for _, label in SOL_IMPLS) + " | SOL kernel at least as fast |",
           "|---:|" + "---:|" * len(SOL_IMPLS) + "---|"]
    for size in sorted(sizes, key=lambda v: int(v) if v.isdigit() else 0):
        cells, times = [], {}
        for impl, _ in SOL_IMPLS:
            b = cases.get(f"sol_check/{impl}/u8/{size}")
            if not ok(b):
                cells.append("error" if b is not None else "")
                continue
            times[impl] = seconds(b)
            gbs = f"{b['bytes_per_second'] / 1e9:.0f} GB/s " if b.get("bytes_per_second") else ""
            cells.append(f"{gbs}({seconds(b) * 1e6:.1f} us)")
        others = {i: t for i, t in times.items() if i != "sol"}
        if "sol" not in times or not others:
            verdict = "not measured"
        else:
            vs = ", ".join(f"{t / times['sol']:.3f}x {i}" for i, t in others.items())
            verdict = ("yes" if times["sol"] <= min(others.values()) else "**no**") + f" ({vs})"
        label = f"{size} ({int(size) / 2**20:.0f} MiB)" if size.isdigit() else size
        out.append(f"| {label} | " + " | ".join(cells) + f" | {verdict} |")
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
    out = ["| case | time (us) | GB/s | sol_ratio | copy_ratio | vs vendor | TFLOP/s |",
           "|---|---:|---:|---:|---:|---:|---:|"]
    for name, b in cases.items():
        mark = " *" if is_generated(b) else ""
        if b.get("error_occurred"):
            out.append(f"| {name}{mark} | error: {b.get('error_message', '')[:80]} | | | | | |")
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
        out.append(f"| {name}{mark} | {t * 1e6:.1f} | {gbs} | {fmt(b.get('sol_ratio'))} | "
                   f"{fmt(b.get('copy_ratio'))} | {ratio} | {tf} |")
    return "\n".join(out) + "\n"


def headline(context, cases):
    gpu = context.get("gpu", context.get("host_name", "?"))
    m = cases.get(MEMCPY)
    copy = f"`{MEMCPY}`: {m['bytes_per_second'] / 1e9:.0f} GB/s" if ok(m) and m.get(
        "bytes_per_second") else f"`{MEMCPY}`: not in this run"
    merged = f" Merged: {context['kk_merged']}." if context.get("kk_merged") else ""
    if context.get("kk_run_seconds"):
        merged += f" The run took {context['kk_run_seconds'] / 60:.1f} min (build excluded)."
    generated = sum(is_generated(b) for n, b in cases.items() if "/kernelkit/" in n)
    seed = (f" Generated shapes: {generated} kernelkit cases drawn with seed {context['kk_seed']} "
            f"(`scripts/bench --seed {context['kk_seed']}` draws them again), marked * below."
            if context.get("kk_seed") not in (None, "") else
            " This run has no kk_seed: no generated shapes." if not generated else
            f" Generated shapes: {generated} kernelkit cases (seed not recorded), marked * below.")
    return (f"Results on {gpu} ({context.get('date', '?')}); {copy}.{merged}{seed} Each case's "
            f"time is the median of cold samples (L2 flushed, launch queued behind a hold: "
            f"{context.get('kk_timing', '?')}). *of SOL*: `sol_ratio`, the time of the "
            f"speed-of-light kernel that reads the case's input bytes once and writes its output "
            f"bytes once, timed the same way in the same run, over the case's time (where a "
            f"case has none, *of copy* stands in and the *of* column says so). *of copy*: "
            f"`copy_ratio`, a device-to-device copy of the case's own bytes (half read, half "
            f"written) over the case's time. *vs vendor*: the baseline's time (CUB / cuBLAS) "
            f"over kernelkit's on the same case. Geometric means and worst over the listed "
            f"shapes, the generated ones and all of an op's sweep.\n")


# ---- the Python benchmark (python -m kernelkit.bench) ------------------------------------
def python_path(results_path):
    """<gpu>-python.json beside RESULTS.json (h100.json or h100.run.json -> h100-python.json)."""
    stem = os.path.basename(results_path).split(".")[0]
    return os.path.join(os.path.dirname(results_path), f"{stem}-python.json")


def python_summary(py, path):
    """Per op and dtype of the Python JSON: kernelkit against torch eager and torch.compile
    (their time over kernelkit's, geomean and worst), and one call's host time."""
    rows = py.get("cases", [])
    if not rows:
        return ""
    groups = {}
    for r in rows:
        groups.setdefault((r.get("op"), r.get("dtype")), []).append(r)

    def speed(rs, field):
        return [(r[field] / r["kernelkit_us"], r.get("shape", "")) for r in rs
                if r.get(field) and r.get("kernelkit_us")]

    gen = sum(1 for r in rows if r.get("generated") == 1)
    errs = sum(1 for r in rows if r.get("error"))
    out = [f"`{os.path.basename(path)}`: `python -m kernelkit.bench` on {py.get('gpu', '?')}, torch "
           f"{py.get('torch', '?')}, seed {py.get('seed', '?')}: {len(rows)} cases ({gen} generated"
           + (f", {errs} with an error" if errs else "") + "). Speedup = torch's GPU time over "
           "kernelkit's on the same tensors (above 1: kernelkit is faster); host = one call's wall "
           "time on tiny inputs, GPU idle.\n",
           "| op | dtype | cases | vs torch eager: geomean / worst | vs torch.compile: geomean / worst "
           "| host kernelkit (us) | host torch (us) | host: torch / kernelkit (worst) |",
           "|---|---|---:|---:|---:|---:|---:|---:|"]
    for (op, dtype), rs in groups.items():
        host = [(r["torch_host_us"] / r["kernelkit_host_us"], r) for r in rs
                if r.get("torch_host_us") and r.get("kernelkit_host_us")]
        worst_host = min(host, key=lambda x: x[0]) if host else None
        kk_h = worst_host[1]["kernelkit_host_us"] if worst_host else None
        th_h = worst_host[1]["torch_host_us"] if worst_host else None
        out.append(f"| {op} | {dtype} | {len(rs)} | {geo_worst(speed(rs, 'torch_us'), True)} | "
                   f"{geo_worst(speed(rs, 'torch_compile_us'), True)} | {fmt(kk_h, 1)} | {fmt(th_h, 1)} | "
                   f"{fmt(worst_host[0] if worst_host else None, 2)} |")
    return "\n".join(out) + "\n"


def load_python(path):
    if not path or not os.path.exists(path):
        return None
    try:
        return load_raw(path)
    except (OSError, ValueError) as e:
        print(f"report.py: cannot read {path}: {e}", file=sys.stderr)
        return None


def markdown(context, cases, python=None):
    errors = [(n, b.get("error_message", "")) for n, b in cases.items() if b.get("error_occurred")]
    out = [headline(context, cases), "## Summary per op and dtype\n", summary_table(cases)]
    sol = sol_check_table(cases)
    if sol:
        out += ["\n## The speed-of-light kernel against cudaMemcpyAsync and CUB (same bytes)\n", sol]
    t = timing_table(cases)
    if t:
        out += ["\n## The timing method (bench/NOTES.md \"Timing\")\n", t]
    if python:
        out += ["\n## Python: kernelkit against torch eager and torch.compile\n", python_summary(*python)]
    if errors:
        out.append(f"\n## Errors ({len(errors)})\n")
        out += [f"- `{n}`: {msg}" for n, msg in errors]
        out.append("")
    out += ["\n## Every case (* generated shape)\n", full_table(cases)]
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


def panel_shapes(cases, op_shapes, dtype):
    """A panel's x positions: the listed shapes in run order, then the generated ones by
    the bytes they move (kernelkit's case says which is which)."""
    listed, generated = [], []
    for op, sh in op_shapes:
        k = cases.get(f"{op}/kernelkit/{dtype}/{sh}")
        if is_generated(k):
            generated.append((k.get("bytes") or 0, op, sh))
        else:
            listed.append((op, sh))
    return listed + [(op, sh) for _, op, sh in sorted(generated, key=lambda g: g[0])], len(listed)


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
    refs = set()
    for ax, (dtype, op_shapes) in zip(axes[:, 0], panels.items()):
        xs, n_listed = panel_shapes(cases, op_shapes, dtype)
        gen = [i >= n_listed for i in range(len(xs))]
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
                    if flops:
                        y = b.get("flops_per_second", 0) / 1e12
                    else:
                        y, ref = limit_ratio(cases, op, impl, dtype, sh)
                        refs.add(ref)
                elif b is not None:
                    errs.append(i)
                ys.append(float("nan") if y is None else y)
            top = max([top] + [y for y in ys if y == y])
            color = COLORS.get(impl, None)
            ax.plot(range(len(xs)), ys, "-" if impl == "kernelkit" else "--", lw=1.4, color=color,
                    label=impl)
            # listed shapes: filled circles; generated: hollow diamonds
            for is_gen, marker, fill in ((False, "o", color), (True, "D", "white")):
                idx = [i for i in range(len(xs)) if gen[i] == is_gen]
                ax.plot(idx, [ys[i] for i in idx], marker, ms=4.5 if is_gen else 4, color=color,
                        mfc=fill, mew=1.2, ls="none")
            if errs:
                ax.plot(errs, [0] * len(errs), "x", color="#e31a1c", ms=10, mew=2.5, clip_on=False,
                        label=f"{impl}: error (not timed)")
        if not flops:
            ax.axhline(1.0, color="k", lw=0.6, ls=":")
        if 0 < n_listed < len(xs):
            ax.axvline(n_listed - 0.5, color="#888888", lw=0.8, ls="--")
            ax.text((n_listed + len(xs)) / 2 - 0.5, top * 1.07, "generated", fontsize=7,
                    color="#555555", va="top", ha="center")
        if any(gen):
            ax.plot([], [], "o", color="k", ms=4, label="listed shape")
            ax.plot([], [], "D", color="k", mfc="white", ms=4.5, label="generated shape")
        ax.set_ylim(0, top * 1.1)
        multi_op = len({op for op, _ in xs}) > 1
        labels = [(op.replace("sgemm_", "").replace(".sum", "") + " " if multi_op else "") + sh
                  + (" *" if g else "") for (op, sh), g in zip(xs, gen)]
        ylabel = "TFLOP/s" if flops else "of SOL" if refs == {"sol"} else \
            "fraction of the copy" if refs == {"copy"} else "of SOL (copy where none)"
        label_axes(ax, labels, 55, ylabel, "best")
        for lab, g in zip(ax.get_xticklabels(), gen):
            if g:
                lab.set_style("italic")
                lab.set_color("#444444")
        ax.set_xlim(-0.5, len(xs) - 0.5)
        ax.set_title(f"{dtype}", fontsize=10, loc="left")
    if flops:
        what = "TFLOP/s"
    elif refs == {"copy"}:
        what = "time of a same-bytes copy / case time (no sol_ratio in this run)"
    else:
        what = "speed-of-light time / case time (sol_ratio" + ("; copy_ratio where none)" if "copy" in refs else ")")
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
    refs = set()
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
                    y, ref = limit_ratio(cases, op, impl, dtype, shape)
                    refs.add(ref)
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
    sol = "sol" in refs
    label_axes(ax, bars, 30, "fraction of cuBLAS's time" if flops else "of SOL" if sol
               else "fraction of the copy", "upper left")
    what = "cuBLAS time / step time" if flops else "speed-of-light time / step time" if sol \
        else "time of a same-bytes copy / step time"
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


def readme_block(context, cases, links, python=None):
    out = [headline(context, cases), summary_table(cases)]
    sol = sol_check_table(cases)
    if sol:
        out += ["\nThe speed-of-light kernel against cudaMemcpyAsync and CUB on the same bytes:\n", sol]
    t = timing_table(cases)
    if t:
        out += ["\nWhat the timing method changes (bench/NOTES.md \"Timing\"):\n", t]
    if python:
        out += ["\n" + python_summary(*python)]
    ops = [(t, p) for t, p in links if not t.endswith(" ladder")]
    lads = [(t[:-len(" ladder")], p) for t, p in links if t.endswith(" ladder")]
    if ops:
        out.append("\nCharts per op (fraction of SOL across the sweep, generated shapes marked; "
                   "sgemm: TFLOP/s): " + " · ".join(f"[{t}]({p})" for t, p in ops) + "\n")
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
    results_path = opts.get("--out", opts["--merge"][0]) if "--merge" in opts else pos[0]
    py_path = opts.get("--python") or python_path(results_path)
    py = load_python(py_path)
    python = (py, py_path) if py else None
    if python:
        print(f"report.py: Python results from {py_path}", file=sys.stderr)
    md = markdown(context, cases, python)
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
                f.write(head + begin + "\n" + readme_block(context, cases, links, python) + end + tail)
        else:
            print(f"report.py: no results markers in {opts['--readme']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

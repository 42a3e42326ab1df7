# SPDX-License-Identifier: Apache-2.0
"""bench/report.py on results of both shapes, with no GPU: the committed results (from
before sol_ratio, generated shapes and the SOL check) must still render, and a small run
with the new counters must show them: of-SOL over listed / generated / all, the seed, the
SOL check, the Python summary, the README block, a merge."""

import importlib.util
import json
import os
import shutil

import pytest

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
REPORT_PY = os.path.join(ROOT, "bench", "report.py")
_spec = importlib.util.spec_from_file_location("kernelkit_report_under_test", REPORT_PY)
report = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(report)


def case(name, us, **counters):
    b = {"name": name + "/manual_time", "run_name": name + "/manual_time", "run_type": "iteration",
         "real_time": us, "time_unit": "us", "median_us": us}
    b.update(counters)
    return b


def new_run():
    """Listed and generated softmax and sgemm cases, a baseline, an error, the SOL check."""
    bs = [case("memcpy/cuda/f32/268435456", 700.0, bytes_per_second=3.0e12, copy_ratio=1.0)]
    for shape, us, sol, gen in (("4096x50257", 600.0, 540.0, 0), ("32768x1024", 100.0, 90.0, 0),
                                ("37x131073", 20.0, 10.0, 1), ("9000x4103_ld4107", 110.0, 99.0, 1),
                                ("1x200003+1", 8.0, 6.0, 1)):
        extra = {"generated": 1.0} if gen else {}
        bs.append(case(f"softmax/kernelkit/f32/{shape}", us, sol_us=sol, sol_ratio=sol / us,
                       copy_us=sol * 0.95, copy_ratio=sol * 0.95 / us, bytes=1e8, **extra))
    bs.append(case("softmax/kernelkit/f32/77x500009", 1.0, generated=1.0, error_occurred=True,
                   error_message="synthetic"))
    for shape, gen in (("2048x2048x2048", 0), ("1003x5007x999_ld1003x5006x5004", 1)):
        extra = {"generated": 1.0} if gen else {}
        bs.append(case(f"sgemm/kernelkit/f32/{shape}", 400.0, flops_per_second=4e13, **extra))
        bs.append(case(f"sgemm/cublas/f32/{shape}", 380.0, flops_per_second=4.2e13))
    for size, t in (("67108864", 25.0), ("1073741824", 370.0)):
        for impl, f in (("sol", 1.0), ("cuda", 1.03), ("cub", 1.01)):
            bs.append(case(f"sol_check/{impl}/u8/{size}", t * f, bytes_per_second=2 * int(size) / (t * f * 1e-6)))
    return {"context": {"date": "2026-11-28", "gpu": "NVIDIA H100 80GB HBM3", "kk_seed": 42}, "benchmarks": bs}


def python_run():
    rows = []
    for shape, gen, kk, th, comp in (("4096x50257", 0, 100.0, 150.0, 110.0), ("37x131073", 1, 10.0, 30.0, None)):
        rows.append({"op": "softmax", "dtype": "bf16", "shape": shape, "generated": gen, "kernelkit_us": kk,
                     "torch_us": th, "torch_compile_us": comp, "kernelkit_host_us": 8.0, "torch_host_us": 10.0})
    return {"seed": 42, "gpu": "NVIDIA H100 80GB HBM3", "torch": "2.11.0", "cases": rows}


def test_new_counters_render(tmp_path):
    results = tmp_path / "h100.json"
    results.write_text(json.dumps(new_run()))
    (tmp_path / "h100-python.json").write_text(json.dumps(python_run()))
    md_path = tmp_path / "h100.md"
    assert report.main([str(results), "--md", str(md_path)]) == 0
    md = md_path.read_text()
    assert "seed 42" in md
    row = next(line for line in md.splitlines() if line.startswith("| softmax | f32 |"))
    cells = [c.strip() for c in row.split("|")[1:-1]]
    # 6 shapes, 4 generated (one errored); of SOL listed: 0.9 and 0.9; generated: 0.5, 0.9, 0.75
    assert cells[2] == "6 (4)" and cells[3] == "SOL"
    assert cells[4] == "0.900 / 0.900"
    assert cells[5].endswith("/ 0.500")
    assert cells[6].endswith("/ 0.500 (37x131073)")
    assert cells[-1] == "77x500009"
    # the SOL check: both sizes, GB/s, the verdict
    assert "| 67108864 (64 MiB) |" in md and "| 1073741824 (1024 MiB) |" in md
    assert "yes (1.030x cuda, 1.010x cub)" in md
    # the Python summary from the JSON beside
    py = next(line for line in md.splitlines() if line.startswith("| softmax | bf16 |"))
    assert "2.121 / 1.500 (4096x50257)" in py and "1.100 / 1.100 (4096x50257)" in py and "1.25" in py
    assert "| softmax/kernelkit/f32/37x131073 * |" in md


def old_run():
    """Results from before sol_ratio: copy_ratio only, no generated shapes, no SOL check."""
    bs = [case("memcpy/cuda/f32/268435456", 709.9, bytes_per_second=3.02e12, copy_ratio=1.0)]
    for shape, us, copy in (("4096x50257", 600.0, 520.0), ("1x1048576", 11.0, 5.2)):
        bs.append(case(f"softmax/kernelkit/f32/{shape}", us, copy_us=copy, copy_ratio=copy / us,
                       bytes=1e8))
        bs.append(case(f"softmax/kernelkit/bf16/{shape}", us / 2, copy_us=copy / 2,
                       copy_ratio=copy / us, bytes=5e7))
    bs.append(case("gemv/kernelkit/f32/4096x4096", 25.0, copy_us=20.6, copy_ratio=0.824, bytes=6.7e7))
    bs.append(case("gemv/cublas/f32/4096x4096", 26.0, copy_us=20.6, copy_ratio=0.79, bytes=6.7e7))
    return {"context": {"date": "2026-11-24T08:26:00+00:00", "gpu": "NVIDIA H100 80GB HBM3"},
            "benchmarks": bs}


def test_old_results_still_render(tmp_path):
    results = tmp_path / "h100.json"
    results.write_text(json.dumps(old_run()))
    md_path = tmp_path / "h100.md"
    assert report.main([str(results), "--md", str(md_path), "--python", str(tmp_path / "none.json")]) == 0
    md = md_path.read_text()
    assert "## Summary per op and dtype" in md and "| copy |" in md
    assert "speed-of-light kernel against" not in md  # no sol_check cases in that run


def test_readme_block_and_merge(tmp_path):
    old = new_run()
    new = {"context": {"date": "2026-11-29", "gpu": "NVIDIA H100 80GB HBM3", "kk_seed": 43},
           "benchmarks": [case("softmax/kernelkit/f32/4096x50257", 300.0, sol_us=270.0, sol_ratio=0.9)]}
    (tmp_path / "old.json").write_text(json.dumps(old))
    (tmp_path / "new.json").write_text(json.dumps(new))
    readme = tmp_path / "README.md"
    readme.write_text("# x\n<!-- results:begin -->\nstale\n<!-- results:end -->\ntail\n")
    merged = tmp_path / "merged.json"
    assert report.main(["--merge", str(tmp_path / "old.json"), str(tmp_path / "new.json"), "--out", str(merged),
                        "--readme", str(readme)]) == 0
    data = json.loads(merged.read_text())
    names = [b["name"] for b in data["benchmarks"]]
    assert len(names) == len(old["benchmarks"]) and data["context"]["kk_seed"] == 43
    text = readme.read_text()
    assert "stale" not in text and text.endswith("<!-- results:end -->\ntail\n")
    assert "seed 43" in text and "speed-of-light kernel against" in text


def test_charts(tmp_path):
    pytest.importorskip("matplotlib")
    results = tmp_path / "h100.json"
    results.write_text(json.dumps(new_run()))
    assert report.main([str(results), "--charts", str(tmp_path / "charts")]) == 0
    made = sorted(os.listdir(tmp_path / "charts"))
    assert made == ["sgemm.png", "softmax.png"]  # no chart of sol_check or memcpy
    shutil.rmtree(tmp_path / "charts")

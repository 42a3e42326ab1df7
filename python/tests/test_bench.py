# SPDX-License-Identifier: Apache-2.0
"""The benchmark's pure parts (python -m kernelkit.bench): the shape generator, the case
plan and the results JSON, with no GPU and no torch. bench.py is loaded from its file, so
these tests need neither the compiled extension nor a framework."""

import importlib.machinery
import importlib.util
import json
import math
import os
import subprocess
import sys

import pytest

BENCH_PY = os.path.join(os.path.dirname(__file__), "..", "kernelkit", "bench.py")
_spec = importlib.util.spec_from_file_location("kernelkit_bench_under_test", BENCH_PY)
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)

OP_DTYPES = [(op, dt) for op, spec in bench.OPS.items() for dt in spec["dtypes"]]


def width_is_odd(op, shape):
    d = bench.dims(shape)
    if bench.OPS[op]["kind"] == "gemm":
        return all(v % 2 for v in d)
    return d[-1] % 2 == 1


@pytest.mark.parametrize("op,dtype", OP_DTYPES)
def test_generated_shapes_are_a_function_of_the_seed(op, dtype):
    a = bench.generated_shapes(op, dtype, 6, seed=1)
    assert a == bench.generated_shapes(op, dtype, 6, seed=1)
    assert a != bench.generated_shapes(op, dtype, 6, seed=2)
    # a longer sample starts with the shorter one (the slots are drawn in order)
    assert bench.generated_shapes(op, dtype, 9, seed=1)[:6] == a


@pytest.mark.parametrize("op,dtype", OP_DTYPES)
@pytest.mark.parametrize("seed", [1, 7, 123456789])
def test_generated_shapes_counts_bytes_and_odd_widths(op, dtype, seed):
    count = 12
    shapes = bench.generated_shapes(op, dtype, count, seed)
    assert len(shapes) == count and len(set(shapes)) == count
    assert not set(shapes) & set(bench.listed_shapes(op, dtype))
    for sh in shapes:
        d = bench.dims(sh)
        assert all(v >= 1 for v in d), sh
        assert len(d) == {"n": 1, "rows": 2, "matrix": 2, "gemm": 3}[bench.OPS[op]["kind"]], sh
        assert bench.MIN_BYTES <= bench.input_bytes(op, sh, dtype) <= bench.MAX_BYTES, sh
    odd = [sh for sh in shapes if width_is_odd(op, sh)]
    assert len(odd) >= count // 3, shapes


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax_draws_decode_shapes(op):
    shapes = bench.generated_shapes(op, "bf16", 6, seed=3)
    decode = [sh for sh in shapes if bench.dims(sh)[0] <= 64 and 32768 <= bench.dims(sh)[1] <= 262145]
    assert len(decode) >= 2, shapes


def test_bytes_are_spread_log_uniformly():
    sizes = [bench.input_bytes("sum", sh, "f32") for seed in range(20)
             for sh in bench.generated_shapes("sum", "f32", 6, seed)]
    logs = [math.log2(s / bench.MiB) for s in sizes]  # 0 .. 9
    assert min(logs) < 2 and max(logs) > 7
    assert 2.5 < sum(logs) / len(logs) < 6.5


def test_primes_and_odd_sizes():
    assert [n for n in range(30) if bench.is_prime(n)] == [2, 3, 5, 7, 11, 13, 17, 19, 23, 29]
    assert bench.next_prime(100) == 101 and bench.next_prime(7919) == 7919
    assert bench.is_prime(100000007)


def test_plan_lists_then_generates_per_op_and_dtype():
    cases = bench.plan(5, ops=["softmax", "matmul"], dtypes=["f32", "bf16"], generated=4)
    keys = [(c["name"], c["dtype"]) for c in cases]
    assert list(dict.fromkeys(keys)) == [("softmax", "f32"), ("softmax", "bf16"), ("sgemm", "f32")]
    for name, dtype in set(keys):
        mine = [c for c in cases if (c["name"], c["dtype"]) == (name, dtype)]
        flags = [c["generated"] for c in mine]
        assert flags == sorted(flags) and flags.count(1) == 4 and flags.count(0) >= 1
    quick = bench.plan(5, ops=["softmax"], dtypes=["f16"], generated=3, listed=1)
    assert [c["generated"] for c in quick] == [0, 1, 1, 1]


def test_round_robin_covers_every_op_first():
    cases = bench.plan(1, ops=["sum", "gemv", "cast"], generated=2)
    order = bench.round_robin(cases)
    assert sorted(order) == list(range(len(cases)))
    groups = len({(c["op"], c["dtype"]) for c in cases})
    assert len({(cases[i]["op"], cases[i]["dtype"]) for i in order[:groups]}) == groups


def test_op_names_are_the_cpp_benchmarks():
    names = {spec["name"] for spec in bench.OPS.values()}
    assert names == {"softmax", "log_softmax", "row_reduce.sum", "reduce.sum", "transpose", "gemv",
                     "sgemm", "elementwise.add", "elementwise.gelu", "elementwise.cast", "rms_norm",
                     "layer_norm", "add_rms_norm", "cross_entropy"}


def test_norm_ops_have_liger_beside_them():
    """The norm ops list issue 34's shapes, call kernelkit with keyword parameters, and carry
    Liger-Kernel's counterpart, imported only when measured (absent here: None, not an
    ImportError)."""
    for op in ("rms_norm", "layer_norm", "add_rms_norm"):
        spec = bench.OPS[op]
        assert "4096x16384" in spec["listed"]["f32"] and "65536x768" in spec["listed"]["half"]
        assert callable(spec["liger"]) and callable(spec["kernelkit"])
        assert isinstance(bench.liger_available(op), bool)
    assert "liger_kernel" not in __import__("sys").modules or bench.liger_available("rms_norm")
    doc = bench.results_json(1, "gpu", "t", [dict(name="rms_norm", dtype="f32", shape="8x64",
                                                  generated=0, kernelkit_us=2.0, liger_us=None)])
    assert doc["cases"][0]["liger_us"] is None
    md = bench.markdown(doc, "h")
    assert "liger_kernel not installed" in md
    doc["cases"][0]["liger_us"] = 3.0
    assert "| rms_norm | f32 | 8x64 | 3.0 | 2.0 | 1.50x |" in bench.markdown(doc, "h")


def fake_cases():
    cases = bench.plan(11, ops=["softmax", "sum", "matmul"], dtypes=["f32"], generated=2)
    for i, c in enumerate(cases):
        c.update(kernelkit_us=10.0 + i, torch_us=12.5 + i, torch_compile_us=11.0 + i,
                 kernelkit_host_us=6.25, torch_host_us=7.5)
    cases[1]["torch_compile_us"] = None
    cases[2].update(kernelkit_us=None, error="kernelkit: RuntimeError: boom")
    return cases


def test_results_json_schema(tmp_path):
    cases = fake_cases()
    path = tmp_path / "sub" / "h100-python.json"
    bench.write_json(str(path), 11, "NVIDIA H100 80GB HBM3", "2.11.0", cases)
    doc = json.loads(path.read_text())
    assert set(doc) == {"seed", "gpu", "torch", "cases"}
    assert doc["seed"] == 11 and doc["gpu"] == "NVIDIA H100 80GB HBM3" and doc["torch"] == "2.11.0"
    assert len(doc["cases"]) == len(cases)
    want = {"op", "dtype", "shape", "generated", "kernelkit_us", "torch_us", "torch_compile_us",
            "kernelkit_host_us", "torch_host_us"}
    for row, c in zip(doc["cases"], cases):
        assert set(row) - {"error"} == want
        assert row["op"] == c["name"] and row["shape"] == c["shape"] and row["generated"] in (0, 1)
        assert row["kernelkit_host_us"] == 6.25 and row["torch_host_us"] == 7.5
    assert doc["cases"][1]["torch_compile_us"] is None
    assert doc["cases"][2]["kernelkit_us"] is None and "boom" in doc["cases"][2]["error"]
    assert doc["cases"][0]["shape"] == "4096x50257" and doc["cases"][0]["generated"] == 0
    assert [r["generated"] for r in doc["cases"]].count(1) == 6
    # the shapes read as the C++ names do: RxC, N, MxNxK
    assert {len(r["shape"].split("x")) for r in doc["cases"] if r["op"] == "sgemm"} == {3}
    assert {len(r["shape"].split("x")) for r in doc["cases"] if r["op"] == "reduce.sum"} == {1}


def test_goals_tool_reads_the_json(tmp_path):
    """The shared goals tool's check_python, where the checkout has it beside it."""
    goals = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "tools", "goals")
    if not os.path.exists(goals):
        pytest.skip("../shared/tools/goals not beside this checkout")
    loader = importlib.machinery.SourceFileLoader("kk_goals", goals)
    spec = importlib.util.spec_from_loader("kk_goals", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    path = tmp_path / "h100-python.json"
    cases = fake_cases()
    cases[2].update(kernelkit_us=12.0, error=None)
    bench.write_json(str(path), 1, "gpu", "2", cases)
    out = []
    mod.check_python(str(path), [], out)
    host = [(ok, text) for ok, grp, text in out if "host time" in text]
    assert host and host[0][0] and f"over {len(cases)} of {len(cases)} cases" in host[0][1], out
    n_softmax = sum(c["name"] == "softmax" for c in cases)
    assert any("python softmax: GPU time vs torch eager geomean" in text and f"over {n_softmax} cases" in text
               for _, _, text in out), out


def test_markdown_marks_generated_and_errors():
    doc = bench.results_json(11, "gpu", "2", fake_cases())
    md = bench.markdown(doc, "header", ["dynamic"] + [None] * (len(doc["cases"]) - 1))
    assert md.startswith("header")
    assert "| softmax | f32 |" in md and " * |" in md and "boom" in md and " dyn |" in md


def test_chart_from_fake_timings(tmp_path):
    pytest.importorskip("matplotlib")
    path = tmp_path / "c.png"
    bench.chart(bench.results_json(11, "gpu", "2", fake_cases()), str(path), "title")
    assert path.stat().st_size > 1000


def test_gpu_short_name():
    assert bench.gpu_short_name("NVIDIA H100 80GB HBM3") == "h100"
    assert bench.gpu_short_name("NVIDIA H200") == "h200"
    assert bench.gpu_short_name("Some GPU") == "gpu"


def test_list_and_help_need_no_gpu_nor_torch():
    env = dict(os.environ, PYTHONPATH="")
    out = subprocess.run([sys.executable, BENCH_PY, "--list", "--seed", "3", "--quick"],
                         capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().endswith("cases, seed 3")
    assert "(generated)" in out.stdout
    out = subprocess.run([sys.executable, BENCH_PY, "--help"], capture_output=True, text=True,
                         env=env, timeout=60)
    assert out.returncode == 0 and "--seed" in out.stdout
    out = subprocess.run([sys.executable, BENCH_PY, "--list", "--ops", "nope"], capture_output=True,
                         text=True, env=env, timeout=60)
    assert out.returncode == 2 and "unknown op" in out.stderr


# ---- main() end to end on a stand-in for torch and kernelkit (no GPU, no torch) ---------
class FakeTensor:
    """Only a shape: every op returns a new one; nothing is computed."""

    def __init__(self, *shape):
        self.shape = tuple(shape)

    def _new(self, *shape):
        return FakeTensor(*shape)

    def sum(self, dim=None, dtype=None):
        return self._new(*self.shape[:-1]) if dim is not None else self._new()

    def t(self):
        return self._new(*reversed(self.shape))

    def contiguous(self):
        return self

    def to(self, dtype):
        return self._new(*self.shape)

    def float(self):
        return self

    def abs(self):
        return self

    def max(self):
        return self

    def item(self):
        return 1.0

    def numel(self):
        return math.prod(self.shape)

    def fill_(self, v):
        return self

    def __matmul__(self, other):
        return self._new(self.shape[0], *other.shape[1:])

    def __add__(self, other):
        return self._new(*self.shape)


class FakeEvent:
    def __init__(self, enable_timing=False):
        self.t = None

    def record(self):
        self.t = 0.0

    def synchronize(self):
        pass

    def elapsed_time(self, other):
        return 0.25  # ms


def fake_torch_modules(compile_calls):
    import types
    torch = types.ModuleType("torch")
    torch.__version__ = "0.0-fake"
    torch.float32, torch.float16, torch.bfloat16, torch.uint8 = "float32", "float16", "bfloat16", "uint8"
    torch.cuda = types.SimpleNamespace(
        is_available=lambda: True, get_device_name=lambda: "NVIDIA H100 80GB HBM3",
        current_device=lambda: 0, synchronize=lambda: None, empty_cache=lambda: None,
        get_device_properties=lambda i: types.SimpleNamespace(L2_cache_size=50 << 20),
        Event=FakeEvent, _sleep=lambda cycles: None)
    torch.backends = types.SimpleNamespace(cuda=types.SimpleNamespace(matmul=types.SimpleNamespace()),
                                           cudnn=types.SimpleNamespace())
    torch.randn = lambda *s, device=None, dtype=None: FakeTensor(*s)
    torch.empty = lambda *s, device=None, dtype=None: FakeTensor(*s)
    torch.empty_like = lambda x: x._new(*x.shape)
    torch.softmax = torch.log_softmax = lambda x, dim: x._new(*x.shape)
    torch.nn = types.SimpleNamespace(functional=types.SimpleNamespace(gelu=lambda x: x._new(*x.shape)))
    torch.equal = lambda a, b: a.shape == b.shape

    def assert_close(a, b, **kw):
        if a.shape != b.shape:
            raise AssertionError(f"shapes {a.shape} {b.shape}")

    torch.testing = types.SimpleNamespace(assert_close=assert_close)

    def compile(fn, dynamic=None):
        compile_calls.append(dynamic)
        return fn

    torch.compile = compile
    torch.ops = types.SimpleNamespace()
    dynamo = types.ModuleType("torch._dynamo")
    dynamo.config = types.SimpleNamespace(recompile_limit=8)
    torch._dynamo = dynamo
    kk = types.ModuleType("kernelkit")
    kk.__version__ = "0.0-fake"
    same = lambda x, *a, **k: x._new(*x.shape)  # noqa: E731
    kk.softmax = kk.log_softmax = kk.gelu = kk.add = kk.cast = same
    kk.row_sum = lambda x: x._new(*x.shape[:-1])
    kk.sum = lambda x: x._new()
    kk.transpose = lambda x: x.t()
    kk.matmul = lambda a, b: a @ b

    def gemv(a, x):
        raise RuntimeError("kernelkit.gemv: a planted failure\nsecond line")

    kk.gemv = gemv
    return {"torch": torch, "torch._dynamo": dynamo, "triton": types.ModuleType("triton"), "kernelkit": kk}


def test_main_end_to_end_on_a_fake_torch(tmp_path, monkeypatch, capsys):
    compiles = []
    for name, mod in fake_torch_modules(compiles).items():
        monkeypatch.setitem(sys.modules, name, mod)
    path = tmp_path / "out" / "h100-python.json"
    rc = bench.main(["--quick", "--seed", "5", "--samples", "3", "--host-calls", "5", "--json", str(path),
                     "--ops", "softmax,sum,gemv,sgemm,cast,transpose", "--dtypes", "f32,bf16"])
    assert rc == 0
    doc = json.loads(path.read_text())
    want = bench.plan(5, ["softmax", "sum", "gemv", "matmul", "cast", "transpose"], ["f32", "bf16"],
                      generated=3, listed=1)
    assert doc["seed"] == 5 and doc["torch"] == "0.0-fake" and doc["gpu"] == "NVIDIA H100 80GB HBM3"
    assert [(r["op"], r["dtype"], r["shape"], r["generated"]) for r in doc["cases"]] == \
        [(c["name"], c["dtype"], c["shape"], c["generated"]) for c in want]
    for r in doc["cases"]:
        assert r["torch_host_us"] is not None
        assert r["torch_us"] == 250.0 and r["torch_compile_us"] == 250.0
        if r["op"] == "gemv":  # the failing op is recorded and the run goes on
            assert r["kernelkit_us"] is None and "planted failure" in r["error"]
            assert r["kernelkit_host_us"] is None
        else:
            assert r["kernelkit_host_us"] is not None
            assert r["kernelkit_us"] == 250.0 and "error" not in r, r
    # one static compile per op and dtype
    assert compiles == [False] * len({(c["op"], c["dtype"]) for c in want})
    assert (tmp_path / "out" / "h100-python.md").exists()
    out = capsys.readouterr().out
    assert "seed 5" in out and "json:" in out


def test_main_stops_at_its_time_budget(tmp_path, monkeypatch):
    for name, mod in fake_torch_modules([]).items():
        monkeypatch.setitem(sys.modules, name, mod)
    monkeypatch.setenv("OUT", str(tmp_path))  # the default JSON goes under $OUT when it is set
    assert bench.main(["--quick", "--max-seconds", "1", "--host-calls", "2", "--ops", "add"]) == 0
    doc = json.loads((tmp_path / "h100-python.json").read_text())
    assert doc["cases"] == []


def test_host_only_measures_host_times_alone(tmp_path, monkeypatch, capsys):
    compiles = []
    for name, mod in fake_torch_modules(compiles).items():
        monkeypatch.setitem(sys.modules, name, mod)
    path = tmp_path / "host.json"
    rc = bench.main(["--host-only", "--host-calls", "3", "--ops", "softmax,sum,gemv", "--dtypes", "f32,bf16",
                     "--json", str(path)])
    assert rc == 0 and compiles == []  # no GPU-time case, nothing compiled
    doc = json.loads(path.read_text())
    assert doc["gpu"] == "NVIDIA H100 80GB HBM3" and doc["torch"] == "0.0-fake"
    got = {(r["op"], r["dtype"]): r for r in doc["host"]}
    assert set(got) == {("softmax", "f32"), ("softmax", "bf16"), ("reduce.sum", "f32"), ("reduce.sum", "bf16"),
                        ("gemv", "f32")}
    assert got[("softmax", "f32")]["shape"] == "8x64" and got[("softmax", "f32")]["kernelkit_host_us"] > 0
    assert got[("gemv", "f32")]["kernelkit_host_us"] is None  # the planted failure
    assert got[("gemv", "f32")]["torch_host_us"] is not None
    out = capsys.readouterr().out
    assert "torch/kk" in out and "json:" in out
    assert "misses the goal" in out and "not measured: gemv/f32" in out  # a failed op misses it

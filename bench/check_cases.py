#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Check that kernelkit-bench registers every case the goals tool looks up (no GPU needed).

usage: check_cases.py GOALS_TOOL (CASE_LIST.txt | path/to/kernelkit-bench)

GOALS_TOOL is ../shared/tools/goals (the script that reads the results); the second argument
is the output of `kernelkit-bench --benchmark_list_tests [--kk_seed=N]`, or the executable
itself (it is then run with that flag). Prints every missing name (each listed kernelkit case
of every sweep and its vendor case where the goal has one), every sweep with fewer generated
shapes than its goal asks (a case not among the listed shapes counts as generated) or a
generated shape without its vendor case, and exits 1 if anything is missing. Sweeps of ops
the benchmark has no case of yet are named and left out.
"""
import importlib.machinery
import importlib.util
import os
import subprocess
import sys


def load_goals(path):
    loader = importlib.machinery.SourceFileLoader("kk_goals", path)
    spec = importlib.util.spec_from_loader("kk_goals", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def listed(arg):
    if os.access(arg, os.X_OK) and not arg.endswith(".txt"):
        text = subprocess.run([arg, "--benchmark_list_tests"], check=True, capture_output=True,
                              text=True).stdout
    else:
        with open(arg) as f:
            text = f.read()
    return {line.strip().split("/manual_time")[0] for line in text.splitlines() if line.strip()}


def main(argv):
    if len(argv) != 2:
        print(__doc__)
        return 2
    goals = load_goals(argv[0])
    names = listed(argv[1])
    wanted, short, absent = [], [], []
    for grp, op, dtypes, shapes, min_gen, _, _, vendor, _, _ in goals.SWEEPS:
        if not any(n.startswith(op + "/kernelkit/") for n in names):
            absent.append(op)
            continue
        for dt in dtypes:
            for sh in shapes:
                wanted.append(f"{op}/kernelkit/{dt}/{sh}")
                if vendor:
                    wanted.append(f"{op}/{vendor}/{dt}/{sh}")
            prefix = f"{op}/kernelkit/{dt}/"
            gen = [n[len(prefix):] for n in names if n.startswith(prefix) and n[len(prefix):] not in shapes]
            if len(gen) < min_gen:
                short.append(f"{op}/{dt}: {len(gen)} generated < {min_gen}")
            if vendor:
                wanted += [f"{op}/{vendor}/{dt}/{sh}" for sh in gen]
    missing = [w for w in wanted if w not in names]
    for m in missing:
        print(f"missing: {m}")
    for m in short:
        print(f"short: {m}")
    if absent:
        print(f"no cases yet (left out): {', '.join(sorted(set(absent)))}")
    print(f"{len(wanted) - len(missing)} of {len(wanted)} goal cases registered "
          f"({len(names)} cases in all)")
    return 1 if missing or short else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Check that kernelkit-bench registers every case the goals tool looks up (no GPU needed).

usage: check_cases.py GOALS_TOOL (CASE_LIST.txt | path/to/kernelkit-bench)

GOALS_TOOL is ../shared/tools/goals (the script that reads the results); the second argument
is the output of `kernelkit-bench --benchmark_list_tests`, or the executable itself (it is
then run with that flag). Prints every missing name (each kernelkit case of every sweep and
its vendor case where the goal has one) and exits 1 if any is missing.
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
    wanted = [goals.MEMCPY]
    for grp, op, dtypes, shapes, copy_each, copy_geo, vendor, _, _ in goals.SWEEPS:
        for dt in dtypes:
            for sh in shapes:
                wanted.append(f"{op}/kernelkit/{dt}/{sh}")
                if vendor:
                    wanted.append(f"{op}/{vendor}/{dt}/{sh}")
    missing = [w for w in wanted if w not in names]
    for m in missing:
        print(f"missing: {m}")
    print(f"{len(wanted) - len(missing)} of {len(wanted)} goal cases registered "
          f"({len(names)} cases in all)")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

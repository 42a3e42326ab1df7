# SPDX-License-Identifier: Apache-2.0
# Sourced by scripts/test, scripts/bench and scripts/gpu-check: makes sure the tools and
# libraries kernelkit builds with are present, installing what is missing where it can.
# shellcheck shell=bash

kk_die() {
  echo "kernelkit: $*" >&2
  exit 1
}

if ! command -v nvcc >/dev/null 2>&1; then
  for d in /usr/local/cuda/bin /usr/local/cuda-13.0/bin; do
    [ -x "$d/nvcc" ] && export PATH="$d:$PATH" && break
  done
fi
command -v nvcc >/dev/null 2>&1 ||
  kk_die "nvcc not found: install the CUDA toolkit (12.4 or newer, e.g. the cuda-toolkit package) and put its bin/ on PATH"

kk_missing=()
command -v cmake >/dev/null 2>&1 || kk_missing+=(cmake)
command -v ninja >/dev/null 2>&1 || kk_missing+=(ninja-build)
[ -f /usr/include/gtest/gtest.h ] || [ -f /usr/local/include/gtest/gtest.h ] || kk_missing+=(libgtest-dev)
[ -f /usr/include/benchmark/benchmark.h ] || [ -f /usr/local/include/benchmark/benchmark.h ] ||
  kk_missing+=(libbenchmark-dev)
if [ ${#kk_missing[@]} -gt 0 ]; then
  if command -v apt-get >/dev/null 2>&1; then
    echo "kernelkit: installing ${kk_missing[*]}"
    sudo_cmd=""
    [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
    $sudo_cmd apt-get update -qq && $sudo_cmd apt-get install -y -qq "${kk_missing[@]}" >/dev/null ||
      kk_die "could not install ${kk_missing[*]}; install them and run again"
  else
    kk_die "missing ${kk_missing[*]}; install them and run again"
  fi
fi

KK_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
KK_JOBS="${KK_JOBS:-$(nproc)}"

# kk_configure BUILD_DIR [cmake args...]
kk_configure() {
  local dir="$1"
  shift
  cmake -S "$KK_ROOT" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null ||
    kk_die "cmake configure failed"
}

# True when a CUDA GPU is visible.
kk_have_gpu() {
  command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1
}

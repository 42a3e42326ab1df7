// SPDX-License-Identifier: Apache-2.0
// The gather kernel (transpose_gather_kernel) run on the host: the kernel's own per-thread code
// (TransposeGatherThread's tile, stage and store), every thread of every tile, with the
// kernel's order of phases and barriers. A run checks what the GPU tests cannot see from the
// outside:
//  - every out element is written by exactly one tile, with its source's bits, and nothing
//    before or past out is written;
//  - no 32-byte sector of out is written by two tiles (the kernel owns out in whole sectors),
//    but for the sectors that hold the boundary between two out rows in tiles of out rows;
//  - nothing a tile stores was read from shared memory it did not stage (the run is repeated
//    with two shared-memory poisons), and the stage stays inside the plan's shared memory;
//  - in is never read past its end or before its start (every global load is checked through
//    transpose_gather_hook; the matrix is also placed against an inaccessible page, where a
//    stray read faults), and every global access is aligned to its size (16-byte cp.async and
//    stores).
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernelkit/transpose/transpose.cuh"

namespace transpose_emu {

// `bytes` bytes of read-write memory placed against an inaccessible page: ending exactly at
// it (at_end) or starting right after one, `lead` bytes of accessible memory before them.
class GuardedBytes {
 public:
  GuardedBytes(size_t bytes, bool at_end, size_t lead = 0) {
    page_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const size_t data = (bytes + lead + page_ - 1) / page_ * page_ + page_;
    total_ = data + 2 * page_;
    base_ = static_cast<unsigned char*>(
        mmap(nullptr, total_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    if (base_ == MAP_FAILED) {
      base_ = nullptr;
      return;
    }
    mprotect(base_, page_, PROT_NONE);
    mprotect(base_ + page_ + data, page_, PROT_NONE);
    p_ = at_end ? base_ + page_ + data - bytes : base_ + page_ + lead;
    lo_ = base_ + page_;
    hi_ = base_ + page_ + data;
  }
  ~GuardedBytes() {
    if (base_) munmap(base_, total_);
  }
  GuardedBytes(const GuardedBytes&) = delete;
  GuardedBytes& operator=(const GuardedBytes&) = delete;
  unsigned char* get() const { return p_; }
  // The accessible memory around the bytes: [lo, hi).
  unsigned char* lo() const { return lo_; }
  unsigned char* hi() const { return hi_; }
  bool ok() const { return base_ != nullptr; }

 private:
  size_t page_ = 0, total_ = 0;
  unsigned char* base_ = nullptr;
  unsigned char *p_ = nullptr, *lo_ = nullptr, *hi_ = nullptr;
};

// Where in and out lie for one run: element phases (in mod 16 bytes, out mod 32 bytes, as
// element counts), or placed against a guard page (in: ending at one or starting after one).
struct Placement {
  int in_off = 0;    // elements past a 256-byte boundary (in_guard == 0)
  int out_off = 0;   // elements past a 256-byte boundary
  int in_guard = 0;  // 0: none; 1: in ends at a guard page; 2: in starts after one
};

// Runs plan p (kGather) on the host for a rows x cols matrix of U; returns the number of
// failures and sets *what to the first one.
template <typename U>
int64_t run_gather(const kernelkit::TransposePlan& p, int64_t rows, int64_t cols,
                   const Placement& at, uint64_t seed, std::string* what) {
  using kernelkit::detail::TransposeGatherThread;
  constexpr int kE = static_cast<int>(sizeof(U));
  const int64_t n = rows * cols;
  const size_t bytes = static_cast<size_t>(n) * kE;
  int64_t bad = 0;
  auto fail = [&](const std::string& s) {
    if (bad++ == 0) *what = s;
  };
  // in: random bits, never the out poison
  const U poison = static_cast<U>(std::numeric_limits<U>::max() >> 1);  // never drawn below
  const size_t in_lead = at.in_guard == 0 ? 256 + static_cast<size_t>(at.in_off) * kE : 0;
  GuardedBytes in_buf(bytes, at.in_guard == 1, in_lead);
  const size_t out_lead = 256 + static_cast<size_t>(at.out_off) * kE;
  GuardedBytes out_buf(bytes, false, out_lead);
  if (!in_buf.ok() || !out_buf.ok()) {
    fail("mmap failed");
    return bad;
  }
  U* in = reinterpret_cast<U*>(in_buf.get());
  U* out = reinterpret_cast<U*>(out_buf.get());
  std::mt19937_64 gen(seed);
  for (int64_t i = 0; i < n; ++i) {
    U v;
    do {
      v = static_cast<U>(gen());
    } while (v == poison);
    in[i] = v;
  }
  const auto fill_out = [&] {
    for (unsigned char* b = out_buf.lo(); b < out_buf.hi(); b += kE)
      memcpy(b, &poison, kE);
  };
  const kernelkit::TransposeGatherShape& g = p.gather;
  const int in_ph = static_cast<int>(reinterpret_cast<uintptr_t>(in) & 15);
  const int k_sec = 32 / kE;
  const int out_sec = static_cast<int>((reinterpret_cast<uintptr_t>(out) / kE) & (k_sec - 1));
  const size_t smem_bytes = p.shape.smem;
  std::vector<unsigned char> smem(smem_bytes + 64);
  std::vector<int64_t> owner(static_cast<size_t>(n), -1);
  std::vector<U> result(static_cast<size_t>(n), poison);  // the recorded run's writes
  std::vector<int64_t> sector_owner(static_cast<size_t>(n * kE / 32 + 2), -1);
  const uintptr_t out_sector0 = reinterpret_cast<uintptr_t>(out) / 32;

  // Tiles of out rows own each out row from a sector boundary on: the sector that holds the end
  // of one out row and the start of the next is written by two tiles (the last tile row of one
  // and the first of the next). Tiles of flat out own whole sectors.
  const auto row_boundary = [&](const unsigned char* b) {
    if (p.flat_out) return false;
    const uintptr_t s0 = reinterpret_cast<uintptr_t>(b) / 32 * 32;
    const int64_t first = (static_cast<int64_t>(s0 - reinterpret_cast<uintptr_t>(out)) / kE);
    const int64_t last = first + k_sec - 1;
    const int64_t lo = first < 0 ? 0 : first, hi = last >= n ? n - 1 : last;
    return lo / rows != hi / rows;
  };
  static thread_local const unsigned char *read_lo, *read_hi;
  static thread_local int64_t stray_reads, misaligned;
  read_lo = reinterpret_cast<const unsigned char*>(in);
  read_hi = read_lo + bytes;
  stray_reads = misaligned = 0;
  kernelkit::detail::transpose_gather_hook = [](const void* q, int k, bool store) {
    const auto* b = static_cast<const unsigned char*>(q);
    if (!store) stray_reads += b < read_lo || b + k > read_hi;
    misaligned += reinterpret_cast<uintptr_t>(q) % static_cast<uintptr_t>(k) != 0;
  };
  auto run = [&](auto flat_tag, unsigned char smem_poison, bool record) {
    constexpr bool kFlat = decltype(flat_tag)::value;
    std::vector<TransposeGatherThread<U, kFlat>> th;
    for (int tid = 0; tid < kernelkit::detail::kTransposeBlock; ++tid)
      th.emplace_back(g, in_ph, out_sec, tid);
    for (int64_t t = 0; t < g.num_tiles; ++t) {
      const kernelkit::detail::TransposeGatherTile T = th[0].tile(g, t);
      for (int tid = 1; tid < kernelkit::detail::kTransposeBlock; tid += 97) {
        const auto T2 = th[static_cast<size_t>(tid)].tile(g, t);
        if (T2.c_lo != T.c_lo || T2.rb != T.rb || T2.c0 != T.c0 || T2.r0 != T.r0)
          fail("threads disagree on a tile");
      }
      std::fill(smem.begin(), smem.end(), smem_poison);
      for (auto& x : th)
        x.stage(in, g, T, smem.data());
      for (size_t i = smem_bytes; i < smem.size(); ++i)
        if (smem[i] != smem_poison) {
          fail("tile " + std::to_string(t) + " staged past its shared memory");
          break;
        }
      if (record) {
        for (int64_t o = 0; o < n; ++o)  // (earlier tiles' elements: owner records them)
          out[o] = poison;
      }
      for (const auto& x : th)
        x.store(out, g, T, smem.data());
      if (!record) continue;
      // what this tile wrote: every element no longer the poison
      for (unsigned char* b = out_buf.lo(); b < out_buf.hi(); b += kE) {
        U v;
        memcpy(&v, b, kE);
        if (v == poison) continue;
        const int64_t o = (reinterpret_cast<U*>(b) - out);
        if (o < 0 || o >= n) {
          fail("tile " + std::to_string(t) + " wrote outside out at " + std::to_string(o));
          continue;
        }
        if (owner[static_cast<size_t>(o)] != -1)
          fail("out element " + std::to_string(o) + " written by tiles " +
               std::to_string(owner[static_cast<size_t>(o)]) + " and " + std::to_string(t));
        owner[static_cast<size_t>(o)] = t;
        result[static_cast<size_t>(o)] = v;
        const size_t s = reinterpret_cast<uintptr_t>(b) / 32 - out_sector0;
        if (sector_owner[s] != -1 && sector_owner[s] != t && !row_boundary(b))
          fail("a sector of out written by tiles " + std::to_string(sector_owner[s]) + " and " +
               std::to_string(t));
        sector_owner[s] = t;
        const int64_t c = o / rows, r = o % rows;
        if (memcmp(&v, &in[r * cols + c], kE) != 0)
          fail("out element " + std::to_string(o) + " (tile " + std::to_string(t) + ") is wrong");
      }
    }
  };
  // A run with shared-memory poison 0x00, recording each tile's writes where that is cheap
  // (it scans out after every tile), then a run with poison 0xFF: the same out.
  const bool record = n * g.num_tiles <= int64_t{8} << 20;
  fill_out();
  if (p.flat_out) {
    run(std::true_type{}, 0x00, record);
  } else {
    run(std::false_type{}, 0x00, record);
  }
  if (record) memcpy(out, result.data(), bytes);
  for (int64_t o = 0; o < n; ++o) {
    if (record && owner[static_cast<size_t>(o)] == -1) {
      fail("out element " + std::to_string(o) + " never written");
      break;
    }
    const int64_t c = o / rows, r = o % rows;
    if (memcmp(&out[o], &in[r * cols + c], kE) != 0) {
      fail("out element " + std::to_string(o) + " is wrong");
      break;
    }
  }
  std::vector<U> first(out, out + n);
  fill_out();
  if (p.flat_out) {
    run(std::true_type{}, 0xFF, false);
  } else {
    run(std::false_type{}, 0xFF, false);
  }
  kernelkit::detail::transpose_gather_hook = nullptr;
  if (stray_reads) fail(std::to_string(stray_reads) + " loads outside in");
  if (misaligned) fail(std::to_string(misaligned) + " accesses not aligned to their size");
  if (memcmp(first.data(), out, bytes) != 0) fail("out depends on unstaged shared memory");
  for (unsigned char* b = out_buf.lo(); b < out_buf.hi(); b += kE) {
    if (b >= reinterpret_cast<unsigned char*>(out) && b < reinterpret_cast<unsigned char*>(out + n))
      continue;
    U v;
    memcpy(&v, b, kE);
    if (v != poison) {
      fail("wrote outside out");
      break;
    }
  }
  return bad;
}

}  // namespace transpose_emu

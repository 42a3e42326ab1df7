// SPDX-License-Identifier: Apache-2.0
#include "harness.cuh"
#include "shapes.h"

#include <cub/device/device_transform.cuh>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

namespace kkbench {

namespace {

std::vector<Case>& queued() {
  static std::vector<Case> cases;
  return cases;
}

struct Generator {
  const char* stream;
  void (*generate)(ShapeGen&);
};
std::vector<Generator>& generators() {
  static std::vector<Generator> g;
  return g;
}
bool generating = false;  // cases added now are generated ones

// ---- the timing machinery (one per process, created on first use) ----------------------

// Holds the stream until the host sets *flag (or timeout_ns passes: then *timed_out = 1, so a
// launch that never gets queued cannot hang the GPU).
__global__ void hold_kernel(const volatile int* flag, volatile int* timed_out,
                            unsigned long long timeout_ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  while (*flag == 0) {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    if (t - t0 > timeout_ns) {
      *timed_out = 1;
      break;
    }
#if __CUDA_ARCH__ >= 700
    __nanosleep(256);
#endif
  }
}

__global__ void empty_kernel() {}

// Reads the flush buffer (n 16-byte words) so that the L2 holds only its clean lines: the
// timed work then starts on a cold L2 without dirty lines to write back (a memset would
// leave up to an L2 of them, which a case that reads N bytes pays as up to N bytes of extra
// writes). The store is never taken; it keeps the loads.
__global__ void flush_kernel(const int4* p, int64_t n, int* sink) {
  int acc = 0;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int4 v = p[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x5EED1234) *sink = acc;
}

// The speed-of-light kernel: reads n_in 16-byte words of `in` and writes n_out of `out`, each
// once, with 16-byte loads and stores, Unroll words of a thread in flight before its first
// store. Word i of `out` gets word i of `in` where there is one; loads past n_out are kept
// alive by a never-taken store of their xor. Several ways to cover the words are timed on
// each traffic and the fastest taken (sol_of): one full wave of blocks striding over all words
// with streaming (evict-first) accesses; one block per tile of kSolBlock * Unroll consecutive
// words (1, 4 or 8 words a thread); and, for a copy-shaped traffic (as many bytes written as
// read) on sm_90+, bulk copies through shared memory (sol_bulk_kernel). Measured on the H100
// (2026-11-27, bench/NOTES.md): no one way is fastest everywhere; 1-word tiles copy 1 GiB in
// 708 us (cudaMemcpyAsync 710, CUB 717), bulk copies 64 MiB in 42.1 us (43.2, 43.2).
constexpr int kSolBlock = 256;
struct SolWay {
  bool grid_stride;  // one wave striding over the words; else one block per tile
  bool streaming;    // __ldcs / __stcs; else default loads and stores
  int unroll;        // words of a thread in flight
  bool bulk;         // sol_bulk_kernel (the other fields unused)
};
constexpr SolWay kSolWays[] = {{true, true, 4, false},
                               {false, false, 1, false},
                               {false, false, 4, false},
                               {false, true, 8, false},
                               {false, false, 0, true}};

template <bool GridStride, bool Streaming, int Unroll>
__global__ void __launch_bounds__(kSolBlock)
    sol_kernel(const int4* __restrict__ in, int64_t n_in, int4* __restrict__ out, int64_t n_out,
               int* sink) {
  const int64_t n = n_in > n_out ? n_in : n_out;
  const int64_t stride = GridStride ? int64_t{gridDim.x} * kSolBlock : kSolBlock;
  const int64_t step = GridStride ? stride * Unroll : n;
  const int64_t first = GridStride ? blockIdx.x * int64_t{kSolBlock} + threadIdx.x
                                   : blockIdx.x * int64_t{kSolBlock * Unroll} + threadIdx.x;
  int acc = 0;
  for (int64_t base = first; base < n; base += step) {
    int4 v[Unroll];
#pragma unroll
    for (int u = 0; u < Unroll; ++u) {
      const int64_t i = base + u * stride;
      v[u] = i < n_in ? (Streaming ? __ldcs(in + i) : in[i]) : make_int4(int(i), 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < Unroll; ++u) {
      const int64_t i = base + u * stride;
      if (i < n_out) {
        if (Streaming) {
          __stcs(out + i, v[u]);
        } else {
          out[i] = v[u];
        }
      } else {
        acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
      }
    }
  }
  if (acc == 0x5EED1234) *sink = acc;
}

// sol_kernel's instance for a way (the ways of kSolWays only)
using SolKernel = void (*)(const int4*, int64_t, int4*, int64_t, int*);
SolKernel sol_kernel_of(const SolWay& w) {
  if (w.grid_stride) return sol_kernel<true, true, 4>;
  if (w.unroll == 1) return sol_kernel<false, false, 1>;
  if (w.unroll == 4) return sol_kernel<false, false, 4>;
  return sol_kernel<false, true, 8>;
}

// The bulk way (sm_90+): one thread of each block streams chunks of kBulkChunk bytes of `in`
// to `out` through kBulkStages shared-memory buffers with 1-D bulk copies (TMA): chunk k of
// the block lands in stage k % kBulkStages (an mbarrier counts its bytes), is stored from
// there, and the stage is loaded again once that store has read it. bytes: a multiple of 16.
constexpr int kBulkChunk = 16384, kBulkStages = 4;
__global__ void __launch_bounds__(32) sol_bulk_kernel(const char* in, char* out, int64_t bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  extern __shared__ __align__(128) char stages[];
  __shared__ __align__(8) uint64_t full[kBulkStages];
  if (threadIdx.x != 0) return;
  const uint32_t s0 = static_cast<uint32_t>(__cvta_generic_to_shared(stages));
  const uint32_t b0 = static_cast<uint32_t>(__cvta_generic_to_shared(full));
  for (int s = 0; s < kBulkStages; ++s)
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(b0 + 8 * s));
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  const int64_t chunks = (bytes + kBulkChunk - 1) / kBulkChunk;
  const auto size_of = [&](int64_t c) {
    return static_cast<uint32_t>(bytes - c * kBulkChunk < kBulkChunk ? bytes - c * kBulkChunk
                                                                     : kBulkChunk);
  };
  const auto load = [&](int64_t k) {  // the block's chunk k into stage k % kBulkStages
    const int64_t c = blockIdx.x + k * gridDim.x;
    if (c >= chunks) return;
    const uint32_t st = static_cast<uint32_t>(k % kBulkStages);
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(b0 + 8 * st),
                 "r"(size_of(c))
                 : "memory");
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, "
        "[%3];" ::"r"(s0 + st * kBulkChunk),
        "l"(in + c * kBulkChunk), "r"(size_of(c)), "r"(b0 + 8 * st)
        : "memory");
  };
  for (int64_t k = 0; k < kBulkStages; ++k)
    load(k);
  for (int64_t k = 0; blockIdx.x + k * gridDim.x < chunks; ++k) {
    const int64_t c = blockIdx.x + k * gridDim.x;
    const uint32_t st = static_cast<uint32_t>(k % kBulkStages);
    const uint32_t parity = static_cast<uint32_t>((k / kBulkStages) & 1);
    uint32_t landed = 0;
    while (!landed) {
      asm volatile(
          "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, "
          "0, p; }"
          : "=r"(landed)
          : "r"(b0 + 8 * st), "r"(parity)
          : "memory");
    }
    asm volatile(
        "cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(out + c * kBulkChunk),
        "r"(s0 + st * kBulkChunk), "r"(size_of(c))
        : "memory");
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");  // the stage is free again
    load(k + kBulkStages);
  }
  asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
#endif
}

struct Timer {
  cudaEvent_t start = nullptr, stop = nullptr;
  volatile int* flag = nullptr;       // host-mapped: 0 holds the stream, 1 releases it
  volatile int* timed_out = nullptr;  // host-mapped: set by hold_kernel when it gave up
  int* d_flag = nullptr;
  int* d_timed_out = nullptr;
  void* flush = nullptr;  // twice the L2, read before every cold sample
  size_t flush_bytes = 0;
  int flush_blocks = 0;
  int sol_wave = 0;   // blocks of kSolBlock threads resident on the whole device at once
  int bulk_wave = 0;  // blocks of sol_bulk_kernel resident at once; 0: no bulk copies here
  int cases_fallen_back = 0;

  Timer() {
    BENCH_CUDA(cudaEventCreate(&start));
    BENCH_CUDA(cudaEventCreate(&stop));
    void* h = nullptr;
    BENCH_CUDA(cudaHostAlloc(&h, 2 * sizeof(int), cudaHostAllocMapped));
    flag = static_cast<volatile int*>(h);
    timed_out = flag + 1;
    flag[0] = 1;
    timed_out[0] = 0;
    BENCH_CUDA(cudaHostGetDevicePointer(reinterpret_cast<void**>(&d_flag), h, 0));
    d_timed_out = d_flag + 1;
    int dev = 0, l2 = 0, sms = 0;
    BENCH_CUDA(cudaGetDevice(&dev));
    BENCH_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
    BENCH_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    flush_bytes = std::max<size_t>(2 * size_t(l2), size_t{1} << 20) / 16 * 16;
    flush_blocks = 4 * sms;
    int per_sm = 0;
    BENCH_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, sol_kernel_of(kSolWays[0]),
                                                             kSolBlock, 0));
    sol_wave = per_sm * sms;
    // bulk copies where the device and the kernel's code are sm_90+
    int major = 0;
    cudaFuncAttributes attr{};
    BENCH_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    BENCH_CUDA(cudaFuncGetAttributes(&attr, sol_bulk_kernel));
    if (major >= 9 && attr.binaryVersion >= 90) {
      constexpr int smem = kBulkStages * kBulkChunk;
      BENCH_CUDA(
          cudaFuncSetAttribute(sol_bulk_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
      BENCH_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, sol_bulk_kernel, 32, smem));
      bulk_wave = per_sm * sms;
    }
    BENCH_CUDA(cudaMalloc(&flush, flush_bytes + 16));  // the last 16 bytes: the sink
    BENCH_CUDA(cudaMemset(flush, 0x5A, flush_bytes + 16));
    BENCH_CUDA(cudaDeviceSynchronize());
  }
};

Timer& timer() {
  static Timer t;  // never destroyed before exit: the process owns these until it ends
  return t;
}

// Releases the hold when a launch throws, so the stream is not left waiting for the timeout.
struct Release {
  volatile int* flag;
  ~Release() {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    *flag = 1;
  }
};

// One sample of launch in seconds. Cold: flush (read twice the L2), hold, start, launch, stop,
// release. Old:
// start, launch, stop (the previous harness). *timed_out: the hold gave up before the
// launch was queued (the sample then includes host time and is discarded by the caller).
double sample(const Launch& launch, cudaStream_t s, Timing timing, bool* timed_out) {
  Timer& t = timer();
  *timed_out = false;
  if (timing == Timing::kCold) {
    flush_kernel<<<t.flush_blocks, 256, 0, s>>>(
        static_cast<const int4*>(t.flush), int64_t(t.flush_bytes / 16),
        reinterpret_cast<int*>(static_cast<char*>(t.flush) + t.flush_bytes));
    BENCH_CUDA(cudaGetLastError());
    *t.timed_out = 0;
    *t.flag = 0;
    std::atomic_thread_fence(std::memory_order_seq_cst);
    {
      Release release{t.flag};
      hold_kernel<<<1, 1, 0, s>>>(t.d_flag, t.d_timed_out,
                                  static_cast<unsigned long long>(options().spin_timeout_s * 1e9));
      BENCH_CUDA(cudaGetLastError());
      BENCH_CUDA(cudaEventRecord(t.start, s));
      launch(s);
      BENCH_CUDA(cudaEventRecord(t.stop, s));
    }
    BENCH_CUDA(cudaEventSynchronize(t.stop));
    *timed_out = *t.timed_out != 0;
  } else {
    BENCH_CUDA(cudaEventRecord(t.start, s));
    launch(s);
    BENCH_CUDA(cudaEventRecord(t.stop, s));
    BENCH_CUDA(cudaEventSynchronize(t.stop));
  }
  float ms = 0;
  BENCH_CUDA(cudaEventElapsedTime(&ms, t.start, t.stop));
  return ms * 1e-3;
}

struct Measured {
  double median = 0;  // seconds
  int samples = 0;
  bool fell_back = false;  // the hold timed out: the rest of the samples were taken the old way
};

constexpr int kWarmup = 2;

// Warm-up launches (not timed), then samples until options() are met (the references: their
// min_time scaled by time_share); the median.
Measured measure(const Launch& launch, cudaStream_t s, Timing timing, double time_share = 1.0) {
  const Options& o = options();
  const double min_time = o.min_time * time_share;
  if (o.timing == Timing::kOld) timing = Timing::kOld;
  for (int i = 0; i < kWarmup; ++i)
    launch(s);
  BENCH_CUDA(cudaStreamSynchronize(s));
  BENCH_CUDA(cudaGetLastError());
  Measured m;
  std::vector<double> times;
  double total = 0;
  int timeouts = 0;
  while (true) {
    const int n = static_cast<int>(times.size());
    if (n >= o.min_samples && (total >= min_time || n >= o.max_samples)) break;
    bool timed_out = false;
    const double t = sample(launch, s, timing, &timed_out);
    if (timed_out) {
      // the launch was not queued within the timeout: it synchronizes with the device, or a
      // profiler serializes launches. Discard the sample; after two, time this case the old way.
      if (++timeouts >= 2) {
        timing = Timing::kOld;
        m.fell_back = true;
      }
      continue;
    }
    times.push_back(t);
    total += t;
  }
  BENCH_CUDA(cudaStreamSynchronize(s));
  BENCH_CUDA(cudaGetLastError());
  std::sort(times.begin(), times.end());
  const size_t n = times.size();
  m.median = n % 2 ? times[n / 2] : 0.5 * (times[n / 2 - 1] + times[n / 2]);
  m.samples = static_cast<int>(n);
  if (m.fell_back && ++timer().cases_fallen_back >= 3 && options().timing != Timing::kOld) {
    std::fprintf(stderr,
                 "kernelkit-bench: the stream hold timed out in 3 cases (a profiler serializing "
                 "launches?): the rest of the run is timed without it (--kk_timing=old)\n");
    options().timing = Timing::kOld;
  }
  return m;
}

// The time of a device-to-device cudaMemcpyAsync of `half` bytes (the copy of a case that
// moves 2 * half bytes), measured once per byte count and run.
std::map<int64_t, double>& copy_times() {
  static std::map<int64_t, double> m;
  return m;
}

int64_t copy_half(double bytes) {
  return static_cast<int64_t>(std::llround(bytes / 2));
}

double copy_time(double bytes, cudaStream_t s) {
  const int64_t half = copy_half(bytes);
  auto it = copy_times().find(half);
  if (it != copy_times().end()) return it->second;
  double t = 0;
  {
    auto src = std::make_shared<DeviceArray<unsigned char>>(size_t(half));
    auto dst = std::make_shared<DeviceArray<unsigned char>>(size_t(half));
    BENCH_CUDA(cudaMemset(src->p, 0x3C, size_t(half)));
    BENCH_CUDA(cudaDeviceSynchronize());
    const Launch copy = [src, dst, half](cudaStream_t st) {
      BENCH_CUDA(cudaMemcpyAsync(dst->p, src->p, size_t(half), cudaMemcpyDeviceToDevice, st));
    };
    t = measure(copy, s, Timing::kCold, 1.0 / 3).median;
  }
  copy_times()[half] = t;
  return t;
}

int64_t words16(double bytes) {
  return static_cast<int64_t>(std::ceil(bytes / 16));
}

// Whether a way can move this traffic here (bulk copies: a copy's traffic on sm_90+).
bool sol_way_fits(const SolWay& way, int64_t in_words, int64_t out_words) {
  return !way.bulk || (in_words == out_words && timer().bulk_wave > 0);
}

// The launch of one way of the speed-of-light kernel from src (in_words 16-byte words) to dst
// (out_words); the way fits the traffic.
Launch sol_launch(SolWay way, Array<int4> src, int64_t in_words, Array<int4> dst,
                  int64_t out_words) {
  if (way.bulk) {
    const int grid = timer().bulk_wave;
    return [=](cudaStream_t st) {
      sol_bulk_kernel<<<grid, 32, kBulkStages * kBulkChunk, st>>>(
          reinterpret_cast<const char*>(src->p), reinterpret_cast<char*>(dst->p), in_words * 16);
      BENCH_CUDA(cudaGetLastError());
    };
  }
  const int64_t n = std::max(in_words, out_words);
  const int64_t per_block = int64_t{kSolBlock} * (way.grid_stride ? 1 : way.unroll);
  int64_t blocks = (n + per_block - 1) / per_block;
  if (way.grid_stride) blocks = std::min<int64_t>(blocks, timer().sol_wave);
  const int grid = static_cast<int>(std::max<int64_t>(1, blocks));
  const SolKernel kernel = sol_kernel_of(way);
  int* sink = reinterpret_cast<int*>(static_cast<char*>(timer().flush) + timer().flush_bytes);
  return [=](cudaStream_t st) {
    kernel<<<grid, kSolBlock, 0, st>>>(src->p, in_words, dst->p, out_words, sink);
    BENCH_CUDA(cudaGetLastError());
  };
}

// 16-byte words filled with 0x3C bytes, and an output of them poisoned (0xFF bytes).
Array<int4> sol_input(int64_t words) {
  auto a = std::make_shared<DeviceArray<int4>>(size_t(words));
  if (words) BENCH_CUDA(cudaMemset(a->p, 0x3C, size_t(words) * 16));
  BENCH_CUDA(cudaDeviceSynchronize());
  return a;
}

// The speed of light of a traffic: the fastest way of the kernel on it (seconds, and which
// way), measured once per (read, written) pair of 16-byte word counts and run. The ways share
// one case's sampling time: the kernel's samples spread little.
struct Sol {
  double seconds = 0;
  SolWay way = kSolWays[0];
  int index = 0;  // of the way in kSolWays
};
Sol sol_of(const Traffic& t, cudaStream_t s) {
  static std::map<std::pair<int64_t, int64_t>, Sol> sols;
  const auto key = std::make_pair(words16(t.read), words16(t.written));
  auto it = sols.find(key);
  if (it != sols.end()) return it->second;
  auto src = sol_input(key.first);
  auto dst = poisoned_array<int4>(size_t(key.second));
  Sol best{0, kSolWays[0]};
  for (const SolWay& way : kSolWays) {
    if (!sol_way_fits(way, key.first, key.second)) continue;
    const double sec = measure(sol_launch(way, src, key.first, dst, key.second), s, Timing::kCold,
                               1.0 / std::size(kSolWays))
                           .median;
    if (best.seconds == 0 || sec < best.seconds)
      best = {sec, way, static_cast<int>(&way - kSolWays)};
  }
  sols[key] = best;
  return best;
}

struct Result {
  bool done = false;
  std::string error;
  Measured m;
  double copy = 0;  // seconds; 0: none
  double sol = 0;   // seconds; 0: none
  int sol_way = 0;  // the fastest way of the speed-of-light kernel (index in kSolWays)
};

void run(const Case& c, Result& r) {
  r.done = true;
  cudaStream_t s = nullptr;
  try {
    BENCH_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    // the same-bytes copy first, on its own buffers, freed before the case allocates
    const double bytes = c.traffic.total();
    const bool has_copy = bytes > 0 && copy_half(bytes) > 0;
    if (has_copy && !c.copy_reference) r.copy = copy_time(bytes, s);
    if (bytes > 0 && c.bound == Bound::kMemory) {
      const Sol sol = sol_of(c.traffic, s);
      r.sol = sol.seconds;
      r.sol_way = sol.index;
    }
    {
      Launch launch = c.setup(s);
      BENCH_CUDA(cudaStreamSynchronize(s));
      r.m = measure(launch, s, c.timing);
    }  // the case's buffers are freed here
    if (has_copy && c.copy_reference) {
      auto it = copy_times().find(copy_half(bytes));
      if (it == copy_times().end()) copy_times()[copy_half(bytes)] = r.m.median;
      r.copy = copy_times()[copy_half(bytes)];
    }
    BENCH_CUDA(cudaDeviceSynchronize());
    BENCH_CUDA(cudaGetLastError());
  } catch (const std::exception& e) {
    r.error = e.what();
    cudaDeviceSynchronize();
    cudaGetLastError();  // report this case's error, not the next one's
  }
  if (s) cudaStreamDestroy(s);
}

// The order cases run and appear in: the headline copy first, then each op's sweep (in the
// order of its issue), the ladder cases last; registration order within those.
int rank(const std::string& name) {
  static const char* const kOps[] = {"memcpy",
                                     "sol_check",
                                     "timing",
                                     "elementwise.add",
                                     "elementwise.cast",
                                     "elementwise.gelu",
                                     "reduce.sum",
                                     "row_reduce.sum",
                                     "softmax",
                                     "log_softmax",
                                     "rms_norm",
                                     "layer_norm",
                                     "add_rms_norm",
                                     "rms_norm_backward",
                                     "transpose",
                                     "gemv",
                                     "gemv_t",
                                     "sgemm",
                                     "sgemm_tn",
                                     "sgemm_nt",
                                     "sgemm_tt",
                                     "block_reduce.sum",
                                     "block_all_reduce.sum"};
  const std::string op = name.substr(0, name.find('/'));
  const size_t slash = name.find('/');
  const bool ladder = slash != std::string::npos && name.compare(slash + 1, 7, "ladder.") == 0;
  int r = static_cast<int>(std::size(kOps));
  for (size_t i = 0; i < std::size(kOps); ++i)
    if (op == kOps[i]) r = static_cast<int>(i);
  return ladder ? 100 + r : r;
}

}  // namespace

Options& options() {
  static Options o;
  return o;
}

void add(Case c) {
  c.generated = generating;
  queued().push_back(std::move(c));
}

void add_generator(const char* stream, void (*generate)(ShapeGen&)) {
  generators().push_back({stream, generate});
}

bool register_cases(uint64_t seed) {
  if (options().generated) {
    generating = true;
    for (const Generator& g : generators()) {
      ShapeGen gen(seed, g.stream);
      g.generate(gen);
    }
    generating = false;
  }
  std::vector<Case> cases = std::move(queued());
  queued().clear();
  std::stable_sort(cases.begin(), cases.end(),
                   [](const Case& a, const Case& b) { return rank(a.name) < rank(b.name); });
  std::set<std::string> names;
  bool ok = true;
  for (const Case& c : cases) {
    if (c.optional || c.generated) continue;
    if (!names.insert(c.name).second) {
      std::fprintf(stderr, "kernelkit-bench: two cases are named %s\n", c.name.c_str());
      ok = false;
    }
  }
  for (const Case& c : cases) {
    // a generated shape that repeats a listed one (or an optional case another has) is run once
    if ((c.optional || c.generated) && !names.insert(c.name).second) continue;
    auto result = std::make_shared<Result>();
    benchmark::RegisterBenchmark(c.name.c_str(),
                                 [c, result](benchmark::State& st) {
                                   // measured once; Google Benchmark may call this again with
                                   // more iterations (--benchmark_min_time): those reuse it
                                   if (!result->done) run(c, *result);
                                   if (!result->error.empty()) {
                                     st.SkipWithError(result->error.c_str());
                                     return;
                                   }
                                   // (a zero median would make Google Benchmark spin up to 1e9
                                   // iterations)
                                   const double t = std::max(result->m.median, 1e-8);
                                   for (auto _ : st)
                                     st.SetIterationTime(t);
                                   st.counters["median_us"] = t * 1e6;
                                   st.counters["samples"] = result->m.samples;
                                   const double bytes = c.traffic.total();
                                   if (bytes > 0) {
                                     st.counters["bytes"] = bytes;
                                     st.counters["bytes_per_second"] = bytes / t;
                                   }
                                   if (result->copy > 0) {
                                     st.counters["copy_us"] = result->copy * 1e6;
                                     st.counters["copy_ratio"] = result->copy / t;
                                   }
                                   if (result->sol > 0) {
                                     st.counters["sol_us"] = result->sol * 1e6;
                                     st.counters["sol_ratio"] = result->sol / t;
                                     st.counters["sol_way"] = result->sol_way;
                                   }
                                   if (c.generated) st.counters["generated"] = 1;
                                   if (c.flops > 0) st.counters["flops_per_second"] = c.flops / t;
                                   if (result->m.fell_back) st.counters["timing_fell_back"] = 1;
                                 })
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
  }
  return ok;
}

// ---- the timing-method cases (bench/NOTES.md "Timing") ---------------------------------
namespace {
void add_timing_cases() {
  for (Timing timing : {Timing::kOld, Timing::kCold}) {
    const std::string method = timing == Timing::kOld ? "old" : "cold";
    Case empty{"timing/" + method + "/empty", Traffic{}, 0, [](cudaStream_t) -> Launch {
                 return [](cudaStream_t st) {
                   empty_kernel<<<1, 1, 0, st>>>();
                   BENCH_CUDA(cudaGetLastError());
                 };
               }};
    empty.timing = timing;
    add(empty);
    constexpr int64_t n = int64_t{1} << 24;  // floats
    Case copy{"timing/" + method + "/memcpy-16777216",
              Traffic{double(n) * sizeof(float), double(n) * sizeof(float)}, 0,
              [](cudaStream_t) -> Launch {
                auto src = random_array<float>(n, 5);
                auto dst = poisoned_array<float>(n);
                return [src, dst](cudaStream_t st) {
                  BENCH_CUDA(cudaMemcpyAsync(dst->p, src->p, n * sizeof(float),
                                             cudaMemcpyDeviceToDevice, st));
                };
              }};
    copy.timing = timing;
    add(copy);
  }
}
const int kTimingCases = (add_timing_cases(), 0);

// The speed-of-light kernel against cudaMemcpyAsync and CUB's DeviceTransform (an identity
// on 16-byte words) copying the same bytes: sol_check/{sol,cuda,cub}/u8/<bytes copied>. The
// kernel is the limit only if it is at least as fast as both (report.py says whether it is).
struct Identity {
  __device__ int4 operator()(int4 v) const { return v; }
};
void add_sol_check_cases() {
  for (int64_t bytes : {int64_t{64} << 20, int64_t{1} << 30}) {
    const int64_t words = bytes / 16;
    const Traffic traffic{double(bytes), double(bytes)};
    for (const char* impl : {"sol", "cuda", "cub"}) {
      const std::string name = std::string("sol_check/") + impl + "/u8/" + std::to_string(bytes);
      const std::string which = impl;
      add_case(name, traffic, 0, [which, words, bytes, name, traffic](cudaStream_t s) -> Launch {
        auto src = sol_input(words);
        auto dst = poisoned_array<int4>(size_t(words));
        Launch launch;
        if (which == "sol") {  // the fastest way on these bytes (as every case's reference)
          launch = sol_launch(sol_of(traffic, s).way, src, words, dst, words);
        } else if (which == "cuda") {
          launch = [src, dst, bytes](cudaStream_t st) {
            BENCH_CUDA(
                cudaMemcpyAsync(dst->p, src->p, size_t(bytes), cudaMemcpyDeviceToDevice, st));
          };
        } else {
          launch = [src, dst, words](cudaStream_t st) {
            BENCH_CUDA(cub::DeviceTransform::Transform(src->p, dst->p, words, Identity{}, st));
          };
        }
        launch(s);
        BENCH_CUDA(cudaStreamSynchronize(s));
        // every sampled word copied (0x3C bytes where the poison was 0xFF)
        const auto idx = sample_indices(size_t(words), 4096);
        std::vector<double> got, want(idx.size(), double(0x3C3C3C3C));
        for (const int4& w : gather(dst->p, idx))
          got.push_back(w.x == w.y && w.y == w.z && w.z == w.w ? double(w.x) : -1.0);
        verify(name, got, want, 0.0);
        return launch;
      });
    }
  }
}
const int kSolCheckCases = (add_sol_check_cases(), 0);
}  // namespace

// ---- verification helpers ---------------------------------------------------------------
namespace {
__global__ void dots_kernel(const float* X, const float* Y, const Dot* dots, int64_t chunk,
                            double* out) {
  __shared__ double part[256];
  const Dot d = dots[blockIdx.x];
  const int64_t begin = blockIdx.y * chunk, end = begin + chunk < d.len ? begin + chunk : d.len;
  double s = 0;
  for (int64_t p = begin + threadIdx.x; p < end; p += blockDim.x)
    s += double(X[d.x0 + p * d.xs]) * double(Y[d.y0 + p * d.ys]);
  part[threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.x == 0) {
    double t = 0;
    for (int i = 0; i < blockDim.x; ++i)
      t += part[i];
    out[blockIdx.x * int64_t{gridDim.y} + blockIdx.y] = t;
  }
}
}  // namespace

std::vector<double> dots_f64(const float* X, const float* Y, const std::vector<Dot>& dots) {
  if (dots.empty()) return {};
  int64_t longest = 1;
  for (const Dot& d : dots)
    longest = std::max(longest, d.len);
  const int64_t chunks = std::min<int64_t>(256, (longest + 16383) / 16384);
  const int64_t chunk = (longest + chunks - 1) / chunks;
  DeviceArray<Dot> d_dots(dots.size());
  DeviceArray<double> d_out(dots.size() * chunks);
  BENCH_CUDA(cudaMemcpy(d_dots.p, dots.data(), dots.size() * sizeof(Dot), cudaMemcpyHostToDevice));
  dots_kernel<<<dim3(unsigned(dots.size()), unsigned(chunks)), 256>>>(X, Y, d_dots.p, chunk,
                                                                      d_out.p);
  BENCH_CUDA(cudaGetLastError());
  BENCH_CUDA(cudaDeviceSynchronize());
  const auto parts = d_out.download();
  std::vector<double> r(dots.size(), 0.0);
  for (size_t i = 0; i < dots.size(); ++i)
    for (int64_t c = 0; c < chunks; ++c)
      r[i] += parts[i * chunks + c];
  return r;
}

void verify(const std::string& what, const std::vector<double>& got, const std::vector<double>& ref,
            double rtol, double atol) {
  if (got.size() != ref.size()) throw std::runtime_error(what + ": size mismatch");
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = got[i], r = ref[i];
    const bool ok =
        std::isnan(r) ? std::isnan(g) : (g == r || std::fabs(g - r) <= atol + rtol * std::fabs(r));
    if (!ok) {
      std::ostringstream os;
      os << what << ": wrong result at sample " << i << " of " << got.size() << ": got " << g
         << ", want " << r;
      throw std::runtime_error(os.str());
    }
  }
}

std::vector<size_t> sample_indices(size_t n, size_t count) {
  std::vector<size_t> idx;
  if (n == 0 || count == 0) return idx;
  if (count >= n) {
    for (size_t i = 0; i < n; ++i)
      idx.push_back(i);
    return idx;
  }
  if (count == 1) return {0};
  for (size_t k = 0; k < count; ++k)
    idx.push_back(k * (n - 1) / (count - 1));
  return idx;
}

}  // namespace kkbench

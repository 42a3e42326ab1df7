// SPDX-License-Identifier: Apache-2.0
// Every ladder: each step of `kernelkit::ladder::<op>::kSteps` timed at a few shapes of its
// op's sweep, named `<op>/ladder.<step name>/<dtype>/<shape>`, verified by the same checks as
// the library cases. The library (`kLibrary`) is the sweep's own `<op>/kernelkit/...` case at
// that shape; it is added here (under that name) only when the sweep's case is not built.
// A step whose `supports` declines a shape is not registered (checked with stand-in pointers
// as aligned as cudaMalloc's), and checked again with the real pointers before it runs.
//
// The registries' contract (ladder/<op>/registry.cuh): `struct Step { const char* name; Fn fn;
// SupportsFn supports; }`, `kSteps[]` and `kLibrary` (templated on T for reduce and transpose,
// plus `reduce::workspace_bytes<T>(n)`), with these fn types:
//   elementwise (f32 add): (int64_t n, float* out, const float* a, const float* b, stream)
//   reduce<T> (sum):       (const T* in, int64_t n, T* out, void* ws, size_t ws_bytes, stream)
//   row_reduce (f32 sum):  (const float* in, int64_t rows, int64_t cols, float* out, stream)
//   softmax (f32):         (const float* in, float* out, int64_t rows, int64_t cols, stream)
//   layer_norm (f32):      (const float* x, const float* weight, const float* bias, float* y,
//                           float* mean, float* rstd, int64_t rows, int64_t cols, float eps,
//                           stream)
//   transpose<T>:          (const T* in, T* out, int64_t rows, int64_t cols, stream)
//   gemv (N):  (int64_t m, int64_t n, float alpha, const float* A, int64_t lda, const float* x,
//               float beta, float* y, stream)
//   sgemm:     (BlasOp, BlasOp, int64_t m, int64_t n, int64_t k, float alpha, const float* A,
//               int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc,
//               stream)
#include <array>
#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "checks.cuh"
#include "harness.cuh"
#include "ladder/elementwise/registry.cuh"
#include "ladder/gemv/registry.cuh"
#include "ladder/layer_norm/registry.cuh"
#include "ladder/reduce/registry.cuh"
#include "ladder/row_reduce/registry.cuh"
#include "ladder/sgemm/registry.cuh"
#include "ladder/softmax/registry.cuh"
#include "ladder/transpose/registry.cuh"

namespace {

using kernelkit::BlasOp;
namespace lad = kernelkit::ladder;

// ---- calling a step's `supports` ---------------------------------------------------------
// A SupportsFn takes "the arguments that decide", a subset of the step's fn arguments. The
// call below passes all of them when it can, else all but the stream, else the first
// in-order run of arguments whose types match its parameters (a pointer also matches a
// parameter that only adds const, or a void pointer); a signature none of these fit counts
// as supported (the step's own argument checks then decide, and a refusal is an error).

template <typename Arg, typename Param>
constexpr bool arg_matches() {
  using A = std::decay_t<Arg>;
  using P = std::decay_t<Param>;
  if constexpr (std::is_same_v<A, P>) {
    return true;
  } else if constexpr (std::is_pointer_v<A> && std::is_pointer_v<P>) {
    using AE = std::remove_pointer_t<A>;
    using PE = std::remove_pointer_t<P>;
    const bool const_ok = std::is_const_v<PE> || !std::is_const_v<AE>;
    return const_ok &&
           (std::is_void_v<PE> || std::is_same_v<std::remove_cv_t<AE>, std::remove_cv_t<PE>>);
  } else {
    return false;
  }
}

template <typename... Ts>
struct List {};

template <typename Params, typename Args>
struct Match;
template <typename... P, typename... A>
struct Match<List<P...>, List<A...>> {
  static constexpr size_t kP = sizeof...(P), kA = sizeof...(A);
  struct Result {
    bool ok;
    std::array<size_t, kP> idx;
  };
  template <typename Param>
  static constexpr std::array<bool, kA> row() {
    return {{arg_matches<A, Param>()...}};
  }
  static constexpr Result compute() {
    const std::array<std::array<bool, kA>, kP> table{{row<P>()...}};
    Result r{true, {}};
    size_t j = 0;
    for (size_t i = 0; i < kP; ++i) {
      while (j < kA && !table[i][j])
        ++j;
      if (j == kA) {
        r.ok = false;
        return r;
      }
      r.idx[i] = j++;
    }
    return r;
  }
  static constexpr Result kResult = compute();
};

template <typename F, typename Tuple, size_t... I>
constexpr bool invocable_with(std::index_sequence<I...>) {
  return std::is_invocable_r_v<bool, F, std::tuple_element_t<I, Tuple>...>;
}

template <typename F, typename Tuple, size_t... I>
bool call_with(F f, const Tuple& t, std::index_sequence<I...>) {
  return f(std::get<I>(t)...);
}

template <typename M, typename F, typename Tuple, size_t... I>
bool call_indexed(F f, const Tuple& t, std::index_sequence<I...>) {
  return f(std::get<M::kResult.idx[I]>(t)...);
}

template <typename... P, typename... A>
bool call_greedy(bool (*f)(P...), const std::tuple<A...>& t) {
  using M = Match<List<P...>, List<A...>>;
  if constexpr (M::kResult.ok) {
    return call_indexed<M>(f, t, std::index_sequence_for<P...>{});
  } else {
    return true;  // a signature not understood: the step's own checks decide
  }
}

template <typename F, typename... A>
bool call_supports(F f, A... args) {
  if constexpr (std::is_pointer_v<F>) {
    if (f == nullptr) return true;
  }
  using All = std::tuple<A...>;
  constexpr size_t kN = sizeof...(A);
  static_assert(kN > 0, "every fn takes a stream");
  if constexpr (std::is_invocable_r_v<bool, F, A...>) {
    return f(args...);
  } else if constexpr (invocable_with<F, All>(std::make_index_sequence<kN - 1>{})) {
    return call_with(f, All(args...), std::make_index_sequence<kN - 1>{});
  } else if constexpr (std::is_pointer_v<F>) {
    return call_greedy(f, All(args...));
  } else {
    return true;
  }
}

template <typename S, typename = void>
struct HasSupports : std::false_type {};
template <typename S>
struct HasSupports<S, std::void_t<decltype(std::declval<const S&>().supports)>> : std::true_type {};

// Whether step takes these arguments (its fn's, in order, stream last).
template <typename Step, typename... A>
bool step_supports(const Step& step, A... args) {
  if constexpr (HasSupports<Step>::value) {
    return call_supports(step.supports, args...);
  } else {
    return true;
  }
}

// Stand-in pointers for the registration-time check: 2^36 bytes apart (no two overlap) and
// as aligned as cudaMalloc's; never dereferenced.
template <typename T>
T* fake(int slot) {
  return reinterpret_cast<T*>((uintptr_t{1} << 40) + (uintptr_t(slot) << 36));
}

template <typename Step>
std::string impl_of(const Step& step, bool library) {
  return library ? std::string("kernelkit") : std::string("ladder.") + step.name;
}

// The library step is optional: the sweep's case of that name wins.
void add_step_case(bool library, kkbench::Case c) {
  c.optional = library;
  kkbench::add(std::move(c));
}

void require(bool supported, const std::string& name) {
  if (!supported)
    throw std::runtime_error(name + ": the step's supports() declines the allocated buffers");
}

// Runs `step` once on these arguments (its fn's, stream left out) after its supports accepts
// them, and returns the launch the case times; the launch holds `keep` (the arrays behind the
// pointers) so that they live as long as it does.
template <typename Step, typename Keep, typename... A>
kkbench::Launch run_once(const Step& step, const std::string& name, cudaStream_t s, Keep keep,
                         A... args) {
  require(step_supports(step, args..., s), name);
  kkbench::Launch launch = [step, keep, args...](cudaStream_t st) {
    (void)keep;
    BENCH_CUDA(step.fn(args..., st));
  };
  launch(s);
  BENCH_CUDA(cudaStreamSynchronize(s));
  return launch;
}

// ---- elementwise.add (f32) -----------------------------------------------------------------
template <typename Step>
void add_elementwise(const Step& step, bool library, int64_t n) {
  if (!step_supports(step, n, fake<float>(0), fake<const float>(1), fake<const float>(2),
                     cudaStream_t{}))
    return;
  const std::string name =
      kkbench::case_name<float>("elementwise.add", impl_of(step, library), kkbench::dims(n));
  add_step_case(library, {name,
                          {2.0 * n * sizeof(float), double(n) * sizeof(float)},
                          0,
                          [=](cudaStream_t s) -> kkbench::Launch {
                            auto a = kkbench::random_array<float>(size_t(n), 101, -2.0, 2.0);
                            auto b = kkbench::random_array<float>(size_t(n), 102, -2.0, 2.0);
                            auto out = kkbench::poisoned_array<float>(size_t(n));
                            kkbench::Launch launch = run_once(
                                step, name, s, std::make_tuple(a, b, out), n, out->p,
                                static_cast<const float*>(a->p), static_cast<const float*>(b->p));
                            kkbench::check_add(name, a->p, b->p, out->p, n, 1e-6);
                            return launch;
                          }});
}

// ---- reduce.sum (T into T) -----------------------------------------------------------------
template <typename T, typename Step>
void add_reduce(const Step& step, bool library, int64_t n) {
  const size_t ws_bytes = lad::reduce::workspace_bytes<T>(n);
  if (!step_supports(step, fake<const T>(0), n, fake<T>(1), fake<void>(2), ws_bytes,
                     cudaStream_t{}))
    return;
  const std::string name =
      kkbench::case_name<T>("reduce.sum", impl_of(step, library), kkbench::dims(n));
  add_step_case(
      library,
      {name, {double(n) * sizeof(T), sizeof(T)}, 0, [=](cudaStream_t s) -> kkbench::Launch {
         constexpr bool integral = std::is_integral_v<T>;
         auto in = kkbench::random_array<T>(size_t(n), 2024, integral ? -1e12 : -1.0,
                                            integral ? 1e12 : 1.0);
         auto out = kkbench::poisoned_array<T>(1);
         auto ws = kkbench::zeroed_workspace(ws_bytes);  // zero once (the library's contract)
         kkbench::Launch launch =
             run_once(step, name, s, std::make_tuple(in, out, ws), static_cast<const T*>(in->p), n,
                      out->p, static_cast<void*>(ws->p), ws->n);
         // v0 adds everything into one float: within 2e-5 of sum |x|
         kkbench::check_sum(name, in->p, n, out->p, 0.0, library ? 2e-7 : 2e-5);
         return launch;
       }});
}

// ---- row_reduce.sum (f32) ------------------------------------------------------------------
template <typename Step>
void add_row_reduce(const Step& step, bool library, int64_t rows, int64_t cols) {
  if (!step_supports(step, fake<const float>(0), rows, cols, fake<float>(1), cudaStream_t{}))
    return;
  const std::string name = kkbench::case_name<float>("row_reduce.sum", impl_of(step, library),
                                                     kkbench::dims(rows, cols));
  const kkbench::Traffic bytes{double(rows) * double(cols) * sizeof(float),
                               double(rows) * sizeof(float)};
  add_step_case(library, {name, bytes, 0, [=](cudaStream_t s) -> kkbench::Launch {
                            auto in = kkbench::random_array<float>(size_t(rows * cols), 42);
                            auto out = kkbench::poisoned_array<float>(size_t(rows));
                            kkbench::Launch launch =
                                run_once(step, name, s, std::make_tuple(in, out),
                                         static_cast<const float*>(in->p), rows, cols, out->p);
                            kkbench::check_row_sums(name, in->p, out->p, rows, cols);
                            return launch;
                          }});
}

// ---- softmax (f32) -------------------------------------------------------------------------
template <typename Step>
void add_softmax(const Step& step, bool library, int64_t rows, int64_t cols) {
  if (!step_supports(step, fake<const float>(0), fake<float>(1), rows, cols, cudaStream_t{}))
    return;
  const std::string name =
      kkbench::case_name<float>("softmax", impl_of(step, library), kkbench::dims(rows, cols));
  const double half = double(rows) * double(cols) * sizeof(float);
  add_step_case(library, {name, {half, half}, 0, [=](cudaStream_t s) -> kkbench::Launch {
                            auto in =
                                kkbench::random_array<float>(size_t(rows * cols), 11, -8.0, 8.0);
                            auto out = kkbench::poisoned_array<float>(size_t(rows * cols));
                            kkbench::Launch launch =
                                run_once(step, name, s, std::make_tuple(in, out),
                                         static_cast<const float*>(in->p), out->p, rows, cols);
                            kkbench::check_softmax(name, in->p, out->p, rows, cols, false);
                            return launch;
                          }});
}

// ---- layer_norm (f32; weight and bias given, mean and rstd saved: norm_bench's case) -------
template <typename Step>
void add_layer_norm(const Step& step, bool library, int64_t rows, int64_t cols) {
  if (!step_supports(step, fake<const float>(0), fake<const float>(1), fake<const float>(2),
                     fake<float>(3), fake<float>(4), fake<float>(5), rows, cols, 1e-5f,
                     cudaStream_t{}))
    return;
  const std::string name =
      kkbench::case_name<float>("layer_norm", impl_of(step, library), kkbench::dims(rows, cols));
  const double matrix = double(rows) * double(cols) * sizeof(float);
  const kkbench::Traffic bytes{matrix + 2.0 * double(cols) * sizeof(float),
                               matrix + 2.0 * double(rows) * sizeof(float)};
  add_step_case(library,
                {name, bytes, 0, [=](cudaStream_t s) -> kkbench::Launch {
                   const size_t n = size_t(rows * cols);
                   auto x = kkbench::random_array<float>(n, 21, -2.0, 2.0);
                   auto w = kkbench::random_array<float>(size_t(cols), 23, 0.5, 1.5);
                   auto b = kkbench::random_array<float>(size_t(cols), 24);
                   auto y = kkbench::poisoned_array<float>(n);
                   auto mean = kkbench::poisoned_array<float>(size_t(rows));
                   auto rstd = kkbench::poisoned_array<float>(size_t(rows));
                   kkbench::Launch launch = run_once(
                       step, name, s, std::make_tuple(x, w, b, y, mean, rstd),
                       static_cast<const float*>(x->p), static_cast<const float*>(w->p),
                       static_cast<const float*>(b->p), y->p, mean->p, rstd->p, rows, cols, 1e-5f);
                   kkbench::check_norm<float>(name, kernelkit::NormKind::kLayer, x->p, nullptr,
                                              w->p, b->p, y->p, nullptr, rows, cols);
                   return launch;
                 }});
}

// ---- transpose (T) -------------------------------------------------------------------------
template <typename T, typename Step>
void add_transpose(const Step& step, bool library, int64_t rows, int64_t cols) {
  if (!step_supports(step, fake<const T>(0), fake<T>(1), rows, cols, cudaStream_t{})) return;
  const std::string name =
      kkbench::case_name<T>("transpose", impl_of(step, library), kkbench::dims(rows, cols));
  const double half = double(rows) * double(cols) * sizeof(T);
  add_step_case(library, {name, {half, half}, 0, [=](cudaStream_t s) -> kkbench::Launch {
                            auto in = kkbench::random_array<T>(size_t(rows * cols), 42);
                            auto out = kkbench::poisoned_array<T>(size_t(rows * cols));
                            kkbench::Launch launch =
                                run_once(step, name, s, std::make_tuple(in, out),
                                         static_cast<const T*>(in->p), out->p, rows, cols);
                            kkbench::check_transpose(name, in->p, out->p, rows, cols);
                            return launch;
                          }});
}

// ---- gemv (BlasOp::N, f32) ----------------------------------------------------------------
template <typename Step>
void add_gemv(const Step& step, bool library, int64_t m, int64_t n) {
  if (!step_supports(step, m, n, 1.f, fake<const float>(0), n, fake<const float>(1), 0.f,
                     fake<float>(2), cudaStream_t{}))
    return;
  const std::string name =
      kkbench::case_name<float>("gemv", impl_of(step, library), kkbench::dims(m, n));
  const kkbench::Traffic bytes{(double(m) * double(n) + double(n)) * sizeof(float),
                               double(m) * sizeof(float)};
  add_step_case(library,
                {name, bytes, 2.0 * double(m) * double(n), [=](cudaStream_t s) -> kkbench::Launch {
                   auto A = kkbench::random_array<float>(size_t(m * n), 61);
                   auto x = kkbench::random_array<float>(size_t(n), 62);
                   auto y = kkbench::poisoned_array<float>(size_t(m));
                   kkbench::Launch launch = run_once(step, name, s, std::make_tuple(A, x, y), m, n,
                                                     1.f, static_cast<const float*>(A->p), n,
                                                     static_cast<const float*>(x->p), 0.f, y->p);
                   kkbench::check_gemv(name, BlasOp::N, m, n, A->p, n, x->p, y->p);
                   return launch;
                 }});
}

// ---- sgemm (NN, f32) -----------------------------------------------------------------------
template <typename Step>
void add_sgemm(const Step& step, bool library, int64_t m, int64_t n, int64_t k) {
  if (!step_supports(step, BlasOp::N, BlasOp::N, m, n, k, 1.f, fake<const float>(0), k,
                     fake<const float>(1), n, 0.f, fake<float>(2), n, cudaStream_t{}))
    return;
  const std::string name =
      kkbench::case_name<float>("sgemm", impl_of(step, library), kkbench::dims(m, n, k));
  const kkbench::Traffic bytes{(double(m) * k + double(k) * n) * sizeof(float),
                               double(m) * n * sizeof(float)};
  add_step_case(library, {name, bytes, 2.0 * double(m) * double(n) * double(k),
                          [=](cudaStream_t s) -> kkbench::Launch {
                            auto A = kkbench::random_array<float>(size_t(m * k), 71);
                            auto B = kkbench::random_array<float>(size_t(k * n), 72);
                            auto C = kkbench::poisoned_array<float>(size_t(m * n));
                            kkbench::Launch launch =
                                run_once(step, name, s, std::make_tuple(A, B, C), BlasOp::N,
                                         BlasOp::N, m, n, k, 1.f, static_cast<const float*>(A->p),
                                         k, static_cast<const float*>(B->p), n, 0.f, C->p, n);
                            kkbench::check_sgemm(name, BlasOp::N, BlasOp::N, m, n, k, A->p, k, B->p,
                                                 n, C->p, n);
                            return launch;
                          },
                          kkbench::Bound::kCompute});
}

// Each ladder at a few shapes of its op's sweep: every step, then the library.
template <typename Steps, typename Step, typename Add>
void each_step(const Steps& steps, const Step& library, Add add) {
  for (const auto& step : steps)
    add(step, false);
  add(library, true);
}

KKBENCH_CASES {
  for (int64_t n : {16777216, 268435456})
    each_step(lad::elementwise::kSteps, lad::elementwise::kLibrary,
              [n](const auto& step, bool lib) { add_elementwise(step, lib, n); });
  for (int64_t n : {1048576, 16777216})
    each_step(lad::reduce::kSteps<float>, lad::reduce::kLibrary<float>,
              [n](const auto& step, bool lib) { add_reduce<float>(step, lib, n); });
  each_step(lad::reduce::kSteps<int64_t>, lad::reduce::kLibrary<int64_t>,
            [](const auto& step, bool lib) { add_reduce<int64_t>(step, lib, 16777216); });
  const int64_t row_shapes[][2] = {{2097152, 16}, {33554, 1000}, {8192, 4096}, {32, 1048576}};
  for (const auto& sh : row_shapes)
    each_step(lad::row_reduce::kSteps, lad::row_reduce::kLibrary,
              [sh](const auto& step, bool lib) { add_row_reduce(step, lib, sh[0], sh[1]); });
  const int64_t softmax_shapes[][2] = {{1048576, 32}, {32768, 1024}, {4096, 8192}};
  for (const auto& sh : softmax_shapes)
    each_step(lad::softmax::kSteps, lad::softmax::kLibrary,
              [sh](const auto& step, bool lib) { add_softmax(step, lib, sh[0], sh[1]); });
  // layer_norm: the listed 8192x4096, a wide row (4096x16384: v3 declines it) and a narrow one
  const int64_t layer_norm_shapes[][2] = {{8192, 4096}, {4096, 16384}, {65536, 768}};
  for (const auto& sh : layer_norm_shapes)
    each_step(lad::layer_norm::kSteps, lad::layer_norm::kLibrary,
              [sh](const auto& step, bool lib) { add_layer_norm(step, lib, sh[0], sh[1]); });
  const int64_t transpose_shapes[][2] = {{8192, 8192}, {1000, 33554}};
  for (const auto& sh : transpose_shapes)
    each_step(lad::transpose::kSteps<float>, lad::transpose::kLibrary<float>,
              [sh](const auto& step, bool lib) { add_transpose<float>(step, lib, sh[0], sh[1]); });
  const int64_t gemv_shapes[][2] = {{8192, 8192}, {1024, 32768}};
  for (const auto& sh : gemv_shapes)
    each_step(lad::gemv::kSteps, lad::gemv::kLibrary,
              [sh](const auto& step, bool lib) { add_gemv(step, lib, sh[0], sh[1]); });
  each_step(lad::sgemm::kSteps, lad::sgemm::kLibrary,
            [](const auto& step, bool lib) { add_sgemm(step, lib, 2048, 2048, 2048); });
}

}  // namespace

// SPDX-License-Identifier: Apache-2.0
// kernelkit._C: the nanobind extension. Arrays arrive through DLPack (torch, CuPy, JAX, any
// producer of CUDA DLPack capsules), zero-copy, C-contiguous, never converted: a
// non-contiguous or CPU array is refused, not copied. Every function takes the stream to
// launch on as an integer handle and allocates nothing: outputs and workspaces come from the
// caller (the Python layer allocates them with the caller's framework).
//
// The Python layer (kernelkit/_ops.py) checks every argument first and raises TypeError /
// ValueError with the offending value; the checks here are the last line (a direct caller of
// _C, a check the Python layer missed): TypeError for a dtype, ValueError for shapes, devices
// and overlap, then kernelkit's own checks (cudaErrorInvalidValue -> ValueError) and any
// other CUDA error -> RuntimeError with cudaGetErrorString's text.
//
// Arrays are imported read-only (nb::ro) even where they are written: JAX exports its
// (immutable) buffers read-only through versioned DLPack, and the Python layer only passes
// JAX arrays it allocated itself as outputs. nb::ro also makes nanobind ask for the cheaper
// unversioned capsule first.
#include <cuda_runtime.h>
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

#include <algorithm>
#include <utility>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "kernelkit/version.cuh"
#include "ops.h"

namespace nb = nanobind;

namespace kkpy {
namespace {

using Array = nb::ndarray<nb::ro, nb::device::cuda, nb::c_contig>;

// ---- errors ---------------------------------------------------------------------------

[[noreturn]] void raise_cuda(cudaError_t e, const char* op) {
  const std::string msg =
      std::string("kernelkit.") + op + ": " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e);
  if (e == cudaErrorInvalidValue) throw nb::value_error(msg.c_str());
  throw std::runtime_error(msg);
}

void check(cudaError_t e, const char* op) {
  if (e != cudaSuccess) raise_cuda(e, op);
}

[[noreturn]] void value_error(const char* op, const std::string& what) {
  throw nb::value_error((std::string("kernelkit.") + op + ": " + what).c_str());
}

[[noreturn]] void type_error(const char* op, const std::string& what) {
  throw nb::type_error((std::string("kernelkit.") + op + ": " + what).c_str());
}

// ---- arrays ---------------------------------------------------------------------------

std::string dtype_name(nb::dlpack::dtype t) {
  using C = nb::dlpack::dtype_code;
  std::string s;
  switch (static_cast<C>(t.code)) {
    case C::Float:
      s = "float";
      break;
    case C::Bfloat:
      s = "bfloat";
      break;
    case C::Int:
      s = "int";
      break;
    case C::UInt:
      s = "uint";
      break;
    case C::Bool:
      return "bool";
    default:
      s = "code" + std::to_string(t.code) + "_";
      break;
  }
  return s + std::to_string(t.bits) + (t.lanes != 1 ? "x" + std::to_string(t.lanes) : "");
}

std::string shape_str(const Array& a) {
  std::string s = "(";
  for (size_t i = 0; i < a.ndim(); ++i)
    s += std::to_string(a.shape(i)) + (a.ndim() == 1 ? "," : i + 1 < a.ndim() ? ", " : "");
  return s + ")";
}

// The float type of a (f32, f16, bf16), else TypeError.
DType float_dtype(const Array& a, const char* op) {
  const nb::dlpack::dtype t = a.dtype();
  using C = nb::dlpack::dtype_code;
  if (t.lanes == 1 && t.code == static_cast<uint8_t>(C::Float) && t.bits == 32) return DType::kF32;
  if (t.lanes == 1 && t.code == static_cast<uint8_t>(C::Float) && t.bits == 16) return DType::kF16;
  if (t.lanes == 1 && t.code == static_cast<uint8_t>(C::Bfloat) && t.bits == 16)
    return DType::kBF16;
  type_error(op, "unsupported dtype " + dtype_name(t) + " (float32, float16, bfloat16)");
}

void require_dtype(const Array& a, nb::dlpack::dtype want, const char* op, const char* name) {
  if (a.dtype() != want)
    type_error(op, std::string(name) + " has dtype " + dtype_name(a.dtype()) + ", expected " +
                       dtype_name(want));
}

void require_shape(const Array& a, const Array& like, const char* op, const char* name) {
  bool same = a.ndim() == like.ndim();
  for (size_t i = 0; same && i < a.ndim(); ++i)
    same = a.shape(i) == like.shape(i);
  if (!same)
    value_error(op,
                std::string(name) + " has shape " + shape_str(a) + ", expected " + shape_str(like));
}

int64_t count(const Array& a) {
  return static_cast<int64_t>(a.size());
}

// rows x cols view of a: cols = the last dimension (1 for a 0-d array), rows = the product of
// the others (so that cols == 0 keeps its rows).
void rows_cols(const Array& a, int64_t* rows, int64_t* cols) {
  *cols = a.ndim() == 0 ? 1 : static_cast<int64_t>(a.shape(a.ndim() - 1));
  *rows = 1;
  for (size_t i = 0; i + 1 < a.ndim(); ++i)
    *rows *= static_cast<int64_t>(a.shape(i));
}

bool overlap(const Array& a, const Array& b) {
  const auto pa = reinterpret_cast<uintptr_t>(a.data());
  const auto pb = reinterpret_cast<uintptr_t>(b.data());
  return a.nbytes() > 0 && b.nbytes() > 0 && pa < pb + b.nbytes() && pb < pa + a.nbytes();
}

// ValueError when out overlaps in, except (allow_exact) out being exactly in.
void require_no_overlap(const Array& out, const Array& in, const char* op, const char* out_name,
                        const char* in_name, bool allow_exact = false) {
  if (allow_exact && out.data() == in.data() && out.nbytes() == in.nbytes()) return;
  if (overlap(out, in))
    value_error(op, std::string(out_name) + " overlaps " + in_name +
                        (allow_exact ? " (only exact in-place is allowed)" : ""));
}

void require_same_device(const Array& a, const Array& b, const char* op) {
  if (a.device_id() != b.device_id())
    value_error(op, "arrays on different devices (cuda:" + std::to_string(a.device_id()) +
                        " and cuda:" + std::to_string(b.device_id()) + ")");
}

template <typename T>
T* ptr(const Array& a) {
  return static_cast<T*>(const_cast<void*>(a.data()));
}

cudaStream_t stream_of(uintptr_t s) {
  return reinterpret_cast<cudaStream_t>(s);
}

// Makes the array's device current for the call, and restores the caller's device after.
class DeviceGuard {
 public:
  explicit DeviceGuard(const Array& a) {
    int cur = -1;
    const int dev = a.device_id();
    if (cudaGetDevice(&cur) == cudaSuccess && cur != dev && cudaSetDevice(dev) == cudaSuccess)
      prev_ = cur;
  }
  ~DeviceGuard() {
    if (prev_ >= 0) (void)cudaSetDevice(prev_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int prev_ = -1;
};

// The pointer and size of an optional workspace (None: nullptr, 0); ValueError when it is on
// another device than `like` or holds fewer than `need` bytes.
std::pair<void*, size_t> workspace_of(const Array& ws, size_t need, const Array& like,
                                      const char* op) {
  const size_t have = ws.is_valid() ? ws.nbytes() : 0;
  if (have < need)
    value_error(
        op, "workspace holds " + std::to_string(have) + " bytes, needs " + std::to_string(need));
  if (!ws.is_valid()) return {nullptr, 0};
  require_same_device(like, ws, op);
  return {ptr<void>(ws), have};
}

DType dtype_from_name(const std::string& name, const char* op) {
  if (name == "float32") return DType::kF32;
  if (name == "float16") return DType::kF16;
  if (name == "bfloat16") return DType::kBF16;
  type_error(op, "unsupported dtype " + name + " (float32, float16, bfloat16)");
}

template <typename E>
E enum_arg(int v, int count, const char* op, const char* name) {
  if (v < 0 || v >= count)
    value_error(op, std::string("unknown ") + name + " " + std::to_string(v));
  return static_cast<E>(v);
}

// ---- ops ------------------------------------------------------------------------------

void py_softmax(const Array& x, const Array& out, bool log, uintptr_t stream) {
  const char* op = log ? "log_softmax" : "softmax";
  const DType t = float_dtype(x, op);
  require_dtype(out, x.dtype(), op, "out");
  require_shape(out, x, op, "out");
  require_same_device(x, out, op);
  require_no_overlap(out, x, op, "out", "x", /*allow_exact=*/true);
  int64_t rows, cols;
  rows_cols(x, &rows, &cols);
  DeviceGuard g(x);
  check(softmax(t, log, x.data(), ptr<void>(out), rows, cols, stream_of(stream)), op);
}

constexpr const char* kReduceNames[] = {"sum", "max", "min"};
constexpr const char* kRowReduceNames[] = {"row_sum", "row_max", "row_min"};

size_t py_row_reduce_workspace_bytes(const std::string& dtype, int64_t rows, int64_t cols) {
  if (rows < 0 || cols < 0)
    value_error("row_reduce_workspace_bytes",
                "rows = " + std::to_string(rows) + ", cols = " + std::to_string(cols));
  return row_reduce_workspace_bytes(dtype_from_name(dtype, "row_reduce_workspace_bytes"), rows,
                                    cols);
}

void py_row_reduce(const Array& x, const Array& out, const Array& workspace, int which,
                   uintptr_t stream) {
  const Reduce r = enum_arg<Reduce>(which, 3, "row_reduce", "reduction");
  const char* op = kRowReduceNames[which];
  const DType t = float_dtype(x, op);
  require_dtype(out, nb::dtype<float>(), op, "out");
  int64_t rows, cols;
  rows_cols(x, &rows, &cols);
  if (count(out) != rows)
    value_error(op, "out has " + std::to_string(count(out)) + " elements, expected " +
                        std::to_string(rows) + " (one per row of x " + shape_str(x) + ")");
  require_same_device(x, out, op);
  require_no_overlap(out, x, op, "out", "x");
  const auto ws = workspace_of(workspace, row_reduce_workspace_bytes(t, rows, cols), x, op);
  DeviceGuard g(x);
  check(row_reduce(t, r, x.data(), rows, cols, ptr<float>(out), ws.first, ws.second,
                   stream_of(stream)),
        op);
}

size_t py_reduce_workspace_bytes(const std::string& dtype, int64_t n) {
  if (n < 0) value_error("reduce_workspace_bytes", "n = " + std::to_string(n) + " < 0");
  return reduce_workspace_bytes(dtype_from_name(dtype, "reduce_workspace_bytes"), n);
}

void py_reduce(const Array& x, const Array& out, const Array& workspace, int which,
               uintptr_t stream) {
  const Reduce r = enum_arg<Reduce>(which, 3, "reduce", "reduction");
  const char* op = kReduceNames[which];
  const DType t = float_dtype(x, op);
  require_dtype(out, nb::dtype<float>(), op, "out");
  if (count(out) != 1)
    value_error(op, "out has " + std::to_string(count(out)) + " elements, expected 1");
  require_same_device(x, out, op);
  require_no_overlap(out, x, op, "out", "x");
  if (workspace.is_valid()) {
    require_no_overlap(workspace, x, op, "workspace", "x");
    require_no_overlap(workspace, out, op, "workspace", "out");
  }
  const auto ws = workspace_of(workspace, reduce_workspace_bytes(t, count(x)), x, op);
  DeviceGuard g(x);
  check(reduce(t, r, x.data(), count(x), ptr<float>(out), ws.first, ws.second, stream_of(stream)),
        op);
}

void py_transpose(const Array& x, const Array& out, uintptr_t stream) {
  const char* op = "transpose";
  if (x.ndim() != 2) value_error(op, "x must be 2-D, got shape " + shape_str(x));
  const nb::dlpack::dtype t = x.dtype();
  if (t.lanes != 1 || (t.bits != 8 && t.bits != 16 && t.bits != 32 && t.bits != 64))
    type_error(op, "unsupported dtype " + dtype_name(t) + " (elements of 1, 2, 4 or 8 bytes)");
  require_dtype(out, t, op, "out");
  const auto rows = static_cast<int64_t>(x.shape(0));
  const auto cols = static_cast<int64_t>(x.shape(1));
  if (out.ndim() != 2 || static_cast<int64_t>(out.shape(0)) != cols ||
      static_cast<int64_t>(out.shape(1)) != rows)
    value_error(op, "out has shape " + shape_str(out) + ", expected (" + std::to_string(cols) +
                        ", " + std::to_string(rows) + ")");
  require_same_device(x, out, op);
  require_no_overlap(out, x, op, "out", "x");
  DeviceGuard g(x);
  check(transpose(t.bits / 8, x.data(), ptr<void>(out), rows, cols, stream_of(stream)), op);
}

void py_gemv(const Array& A, const Array& x, const Array& y, const Array& workspace, bool trans,
             float alpha, float beta, uintptr_t stream) {
  const char* op = "gemv";
  for (const Array* a : {&A, &x, &y})
    require_dtype(*a, nb::dtype<float>(), op, a == &A ? "A" : a == &x ? "x" : "y");
  if (A.ndim() != 2) value_error(op, "A must be 2-D, got shape " + shape_str(A));
  const auto m = static_cast<int64_t>(A.shape(0));
  const auto n = static_cast<int64_t>(A.shape(1));
  const int64_t x_len = trans ? m : n, y_len = trans ? n : m;
  if (x.ndim() != 1 || count(x) != x_len)
    value_error(op, "x has shape " + shape_str(x) + ", expected (" + std::to_string(x_len) + ",)");
  if (y.ndim() != 1 || count(y) != y_len)
    value_error(op, "y has shape " + shape_str(y) + ", expected (" + std::to_string(y_len) + ",)");
  require_same_device(A, x, op);
  require_same_device(A, y, op);
  require_no_overlap(y, A, op, "y", "A");
  require_no_overlap(y, x, op, "y", "x");
  const auto ws = workspace_of(workspace, gemv_workspace_bytes(trans, m, n), A, op);
  DeviceGuard g(A);
  check(gemv(trans, m, n, alpha, ptr<const float>(A), n > 0 ? n : 1, ptr<const float>(x), beta,
             ptr<float>(y), ws.first, ws.second, stream_of(stream)),
        op);
}

void py_sgemm(const Array& A, const Array& B, const Array& C, const Array& workspace, bool trans_a,
              bool trans_b, float alpha, float beta, uintptr_t stream) {
  const char* op = "sgemm";
  for (const Array* a : {&A, &B, &C})
    require_dtype(*a, nb::dtype<float>(), op, a == &A ? "A" : a == &B ? "B" : "C");
  for (const Array* a : {&A, &B, &C})
    if (a->ndim() != 2)
      value_error(op, std::string(a == &A   ? "A"
                                  : a == &B ? "B"
                                            : "C") +
                          " must be 2-D, got shape " + shape_str(*a));
  const auto m = static_cast<int64_t>(A.shape(trans_a ? 1 : 0));
  const auto k = static_cast<int64_t>(A.shape(trans_a ? 0 : 1));
  const auto kb = static_cast<int64_t>(B.shape(trans_b ? 1 : 0));
  const auto n = static_cast<int64_t>(B.shape(trans_b ? 0 : 1));
  if (kb != k)
    value_error(op, "inner dimensions differ: op(A) is " + std::to_string(m) + " x " +
                        std::to_string(k) + ", op(B) is " + std::to_string(kb) + " x " +
                        std::to_string(n));
  if (static_cast<int64_t>(C.shape(0)) != m || static_cast<int64_t>(C.shape(1)) != n)
    value_error(op, "C has shape " + shape_str(C) + ", expected (" + std::to_string(m) + ", " +
                        std::to_string(n) + ")");
  require_same_device(A, B, op);
  require_same_device(A, C, op);
  require_no_overlap(C, A, op, "C", "A");
  require_no_overlap(C, B, op, "C", "B");
  const auto ld = [](const Array& a) { return std::max<int64_t>(1, a.shape(1)); };
  const auto ws = workspace_of(workspace, sgemm_workspace_bytes(trans_a, trans_b, m, n, k), A, op);
  DeviceGuard g(A);
  check(sgemm(trans_a, trans_b, m, n, k, alpha, ptr<const float>(A), ld(A), ptr<const float>(B),
              ld(B), beta, ptr<float>(C), ld(C), ws.first, ws.second, stream_of(stream)),
        op);
}

constexpr const char* kUnaryNames[] = {"relu", "gelu", "gelu", "sigmoid"};
constexpr const char* kBinaryNames[] = {"add", "mul"};

void py_unary(int which, const Array& x, const Array& out, uintptr_t stream) {
  const Unary f = enum_arg<Unary>(which, 4, "unary", "function");
  const char* op = kUnaryNames[which];
  const DType t = float_dtype(x, op);
  require_dtype(out, x.dtype(), op, "out");
  require_shape(out, x, op, "out");
  require_same_device(x, out, op);
  require_no_overlap(out, x, op, "out", "x", /*allow_exact=*/true);
  DeviceGuard g(x);
  check(unary(f, t, count(x), ptr<void>(out), x.data(), stream_of(stream)), op);
}

void py_binary(int which, const Array& a, const Array& b, const Array& out, uintptr_t stream) {
  const Binary f = enum_arg<Binary>(which, 2, "binary", "function");
  const char* op = kBinaryNames[which];
  const DType t = float_dtype(a, op);
  require_dtype(b, a.dtype(), op, "b");
  require_dtype(out, a.dtype(), op, "out");
  require_shape(b, a, op, "b");
  require_shape(out, a, op, "out");
  require_same_device(a, b, op);
  require_same_device(a, out, op);
  require_no_overlap(out, a, op, "out", "a", /*allow_exact=*/true);
  require_no_overlap(out, b, op, "out", "b", /*allow_exact=*/true);
  DeviceGuard g(a);
  check(binary(f, t, count(a), ptr<void>(out), a.data(), b.data(), stream_of(stream)), op);
}

void py_cast(const Array& x, const Array& out, uintptr_t stream) {
  const char* op = "cast";
  const DType from = float_dtype(x, op);
  const DType to = float_dtype(out, op);
  require_shape(out, x, op, "out");
  require_same_device(x, out, op);
  // exact in-place is only meaningful between types of one size
  require_no_overlap(out, x, op, "out", "x", /*allow_exact=*/x.dtype().bits == out.dtype().bits);
  DeviceGuard g(x);
  check(cast(from, to, count(x), ptr<void>(out), x.data(), stream_of(stream)), op);
}

int py_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();  // no driver / no device: our own failed query, not a user error
    return 0;
  }
  return n;
}

void py_synchronize(uintptr_t stream) {
  check(cudaStreamSynchronize(stream_of(stream)), "synchronize");
}

// Raises what a kernelkit call returning `code` raises (tests the mapping without a GPU).
void py_raise_for(int code, const std::string& op) {
  check(static_cast<cudaError_t>(code), op.c_str());
}

}  // namespace
}  // namespace kkpy

NB_MODULE(_C, m) {
  using namespace kkpy;
  m.doc() = "kernelkit CUDA ops (low level: use the kernelkit package's functions)";
  m.attr("__version__") = KERNELKIT_VERSION_STRING;  // kernelkit.__version__
  const auto a = [](const char* name) { return nb::arg(name).noconvert(); };
  m.def("softmax", &py_softmax, a("x"), a("out"), nb::arg("log"), nb::arg("stream"));
  // workspaces: None, or *_workspace_bytes(...) bytes (the Python layer allocates them)
  const auto ws = nb::arg("workspace").noconvert().none();
  m.def("row_reduce_workspace_bytes", &py_row_reduce_workspace_bytes, nb::arg("dtype"),
        nb::arg("rows"), nb::arg("cols"));
  m.def("row_reduce", &py_row_reduce, a("x"), a("out"), ws, nb::arg("op"), nb::arg("stream"));
  m.def("reduce_workspace_bytes", &py_reduce_workspace_bytes, nb::arg("dtype"), nb::arg("n"));
  m.def("reduce", &py_reduce, a("x"), a("out"), ws, nb::arg("op"), nb::arg("stream"));
  m.def("transpose", &py_transpose, a("x"), a("out"), nb::arg("stream"));
  m.def("gemv_workspace_bytes", &gemv_workspace_bytes, nb::arg("trans"), nb::arg("m"),
        nb::arg("n"));
  m.def("gemv", &py_gemv, a("A"), a("x"), a("y"), ws, nb::arg("trans"), nb::arg("alpha"),
        nb::arg("beta"), nb::arg("stream"));
  m.def("sgemm_workspace_bytes", &sgemm_workspace_bytes, nb::arg("trans_a"), nb::arg("trans_b"),
        nb::arg("m"), nb::arg("n"), nb::arg("k"));
  m.def("sgemm", &py_sgemm, a("A"), a("B"), a("C"), ws, nb::arg("trans_a"), nb::arg("trans_b"),
        nb::arg("alpha"), nb::arg("beta"), nb::arg("stream"));
  m.def("unary", &py_unary, nb::arg("op"), a("x"), a("out"), nb::arg("stream"));
  m.def("binary", &py_binary, nb::arg("op"), a("a"), a("b"), a("out"), nb::arg("stream"));
  m.def("cast", &py_cast, a("x"), a("out"), nb::arg("stream"));
  m.def("device_count", &py_device_count);
  m.def("synchronize", &py_synchronize, nb::arg("stream"));
  m.def("_raise_for", &py_raise_for, nb::arg("code"), nb::arg("op"));
  m.attr("REDUCE_SUM") = 0;
  m.attr("REDUCE_MAX") = 1;
  m.attr("REDUCE_MIN") = 2;
  m.attr("UNARY_RELU") = 0;
  m.attr("UNARY_GELU") = 1;
  m.attr("UNARY_GELU_TANH") = 2;
  m.attr("UNARY_SIGMOID") = 3;
  m.attr("BINARY_ADD") = 0;
  m.attr("BINARY_MUL") = 1;
}

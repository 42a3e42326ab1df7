// SPDX-License-Identifier: Apache-2.0
// kernelkit._C: the nanobind extension, a thin binding of the functions of ops.h. Every
// function takes what kernelkit's own C++ call takes: device addresses as integers, sizes,
// dtype names, the device to run on and the stream to launch on as an integer handle; it
// allocates nothing and converts nothing.
//
// It checks no argument: the Python layer (kernelkit/_ops.py, kernelkit/_arrays.py) is the
// one place arguments are checked, and it raises the TypeError / ValueError that names the
// argument and its value before anything reaches this module. Like the C++ API, a call here
// trusts its addresses and sizes (the package's functions never pass others than their
// arrays'). What it does is translate kernelkit's answer: cudaErrorInvalidValue (kernelkit's
// own argument check, see ops.h) -> ValueError, any other CUDA error -> RuntimeError, both
// with cudaGetErrorString's text.
#include <cuda_runtime.h>
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "kernelkit/version.cuh"
#include "ops.h"

namespace nb = nanobind;

namespace kkpy {
namespace {

// ---- kernelkit's answer ---------------------------------------------------------------

[[noreturn]] void raise_cuda(cudaError_t e, const char* op) {
  const std::string msg =
      std::string("kernelkit.") + op + ": " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e);
  if (e == cudaErrorInvalidValue) throw nb::value_error(msg.c_str());
  throw std::runtime_error(msg);
}

void check(cudaError_t e, const char* op) {
  if (e != cudaSuccess) raise_cuda(e, op);
}

// ---- arguments ------------------------------------------------------------------------

// A dtype name as ops.h's DType; a name no op takes is DType::kOther, which every function
// of ops.h answers with cudaErrorInvalidValue (and 0 workspace bytes).
DType dtype(const std::string& name) {
  if (name == "float32") return DType::kF32;
  if (name == "float16") return DType::kF16;
  if (name == "bfloat16") return DType::kBF16;
  if (name == "int32") return DType::kI32;
  if (name == "int64") return DType::kI64;
  return DType::kOther;
}

template <typename T = void>
T* ptr(uintptr_t address) {
  return reinterpret_cast<T*>(address);
}

cudaStream_t stream_of(uintptr_t s) {
  return reinterpret_cast<cudaStream_t>(s);
}

// The name an error message gives a variant `which` of an op family (names[which], or the
// family's name for a variant it does not have: ops.h answers that with cudaErrorInvalidValue).
template <size_t N>
const char* name_of(const char* const (&names)[N], int which, const char* family) {
  return which >= 0 && static_cast<size_t>(which) < N ? names[which] : family;
}

// Makes `device` current for the call, and restores the caller's device after.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    int cur = -1;
    if (cudaGetDevice(&cur) == cudaSuccess && cur != device && cudaSetDevice(device) == cudaSuccess)
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

// ---- ops ------------------------------------------------------------------------------

constexpr const char* kReduceNames[] = {"sum", "max", "min"};
constexpr const char* kRowReduceNames[] = {"row_sum", "row_max", "row_min"};
constexpr const char* kUnaryNames[] = {"relu", "gelu", "gelu", "sigmoid"};
constexpr const char* kBinaryNames[] = {"add", "mul"};

void py_softmax(const std::string& t, bool log, uintptr_t in, int64_t ld, uintptr_t out,
                int64_t rows, int64_t cols, int device, uintptr_t stream) {
  DeviceGuard g(device);
  check(softmax(dtype(t), log, ptr(in), ld, ptr(out), cols, rows, cols, stream_of(stream)),
        log ? "log_softmax" : "softmax");
}

void py_softmax_backward(const std::string& t, bool log, uintptr_t y, int64_t ld_y, uintptr_t dy,
                         int64_t ld_dy, uintptr_t dx, int64_t rows, int64_t cols, int device,
                         uintptr_t stream) {
  DeviceGuard g(device);
  check(softmax_backward(dtype(t), log, ptr(y), ld_y, ptr(dy), ld_dy, ptr(dx), cols, rows, cols,
                         stream_of(stream)),
        log ? "log_softmax_backward" : "softmax_backward");
}

size_t py_softmax_inner_workspace_bytes(const std::string& t, int64_t outer, int64_t n,
                                        int64_t inner) {
  return softmax_inner_workspace_bytes(dtype(t), outer, n, inner);
}

void py_softmax_inner(const std::string& t, bool log, uintptr_t in, uintptr_t out, int64_t outer,
                      int64_t n, int64_t inner, uintptr_t workspace, size_t workspace_bytes,
                      int device, uintptr_t stream) {
  DeviceGuard g(device);
  check(softmax_inner(dtype(t), log, ptr(in), ptr(out), outer, n, inner, ptr(workspace),
                      workspace_bytes, stream_of(stream)),
        log ? "log_softmax" : "softmax");
}

void py_softmax_inner_backward(const std::string& t, bool log, uintptr_t y, uintptr_t dy,
                               uintptr_t dx, int64_t outer, int64_t n, int64_t inner,
                               uintptr_t workspace, size_t workspace_bytes, int device,
                               uintptr_t stream) {
  DeviceGuard g(device);
  check(softmax_inner_backward(dtype(t), log, ptr(y), ptr(dy), ptr(dx), outer, n, inner,
                               ptr(workspace), workspace_bytes, stream_of(stream)),
        log ? "log_softmax_backward" : "softmax_backward");
}

size_t py_cross_entropy_workspace_bytes(int64_t rows, int64_t vocab) {
  return cross_entropy_workspace_bytes(rows, vocab);
}

void py_cross_entropy(const std::string& t, const std::string& tgt, uintptr_t logits, int64_t ld,
                      uintptr_t target, int64_t rows, int64_t vocab, int64_t ignore_index,
                      float label_smoothing, int reduction, uintptr_t loss, uintptr_t lse,
                      uintptr_t workspace, size_t workspace_bytes, int device, uintptr_t stream) {
  DeviceGuard g(device);
  check(cross_entropy(dtype(t), dtype(tgt), ptr(logits), ld, ptr(target), rows, vocab, ignore_index,
                      label_smoothing, reduction, ptr<float>(loss), ptr<float>(lse), ptr(workspace),
                      workspace_bytes, stream_of(stream)),
        "cross_entropy");
}

void py_cross_entropy_backward(const std::string& t, const std::string& tgt, uintptr_t logits,
                               int64_t ld, uintptr_t target, uintptr_t lse, uintptr_t dloss,
                               int64_t rows, int64_t vocab, int64_t ignore_index,
                               float label_smoothing, int reduction, uintptr_t dlogits,
                               int64_t ld_dlogits, int device, uintptr_t stream) {
  DeviceGuard g(device);
  check(cross_entropy_backward(dtype(t), dtype(tgt), ptr(logits), ld, ptr(target),
                               ptr<const float>(lse), ptr<const float>(dloss), rows, vocab,
                               ignore_index, label_smoothing, reduction, ptr(dlogits), ld_dlogits,
                               stream_of(stream)),
        "cross_entropy_backward");
}

size_t py_row_reduce_workspace_bytes(const std::string& t, int64_t rows, int64_t cols) {
  return row_reduce_workspace_bytes(dtype(t), rows, cols);
}

void py_row_reduce(const std::string& t, int which, uintptr_t in, int64_t rows, int64_t cols,
                   int64_t ld, uintptr_t out, uintptr_t workspace, size_t workspace_bytes,
                   int device, uintptr_t stream) {
  DeviceGuard g(device);
  check(row_reduce(dtype(t), static_cast<Reduce>(which), ptr(in), rows, cols, ld, ptr<float>(out),
                   ptr(workspace), workspace_bytes, stream_of(stream)),
        name_of(kRowReduceNames, which, "row_reduce"));
}

size_t py_col_reduce_workspace_bytes(const std::string& t, int64_t outer, int64_t n,
                                     int64_t inner) {
  return col_reduce_workspace_bytes(dtype(t), outer, n, inner);
}

void py_col_reduce(const std::string& t, int which, uintptr_t in, int64_t outer, int64_t n,
                   int64_t inner, uintptr_t out, uintptr_t workspace, size_t workspace_bytes,
                   int device, uintptr_t stream) {
  DeviceGuard g(device);
  check(col_reduce(dtype(t), static_cast<Reduce>(which), ptr(in), outer, n, inner, ptr<float>(out),
                   ptr(workspace), workspace_bytes, stream_of(stream)),
        name_of(kRowReduceNames, which, "col_reduce"));
}

size_t py_reduce_workspace_bytes(const std::string& t, int64_t n) {
  return reduce_workspace_bytes(dtype(t), n);
}

void py_reduce(const std::string& t, int which, uintptr_t in, int64_t n, uintptr_t out,
               uintptr_t workspace, size_t workspace_bytes, int device, uintptr_t stream) {
  DeviceGuard g(device);
  check(reduce(dtype(t), static_cast<Reduce>(which), ptr(in), n, ptr<float>(out), ptr(workspace),
               workspace_bytes, stream_of(stream)),
        name_of(kReduceNames, which, "reduce"));
}

void py_transpose(size_t elem_bytes, uintptr_t in, uintptr_t out, int64_t rows, int64_t cols,
                  int device, uintptr_t stream) {
  DeviceGuard g(device);
  check(transpose(elem_bytes, ptr(in), ptr(out), rows, cols, stream_of(stream)), "transpose");
}

void py_gemv(bool trans, int64_t m, int64_t n, float alpha, uintptr_t A, int64_t lda, uintptr_t x,
             float beta, uintptr_t y, uintptr_t workspace, size_t workspace_bytes, int device,
             uintptr_t stream) {
  DeviceGuard g(device);
  check(gemv(trans, m, n, alpha, ptr<const float>(A), lda, ptr<const float>(x), beta, ptr<float>(y),
             ptr(workspace), workspace_bytes, stream_of(stream)),
        "gemv");
}

void py_sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, uintptr_t A,
              int64_t lda, uintptr_t B, int64_t ldb, float beta, uintptr_t C, int64_t ldc,
              uintptr_t workspace, size_t workspace_bytes, int device, uintptr_t stream) {
  DeviceGuard g(device);
  check(sgemm(trans_a, trans_b, m, n, k, alpha, ptr<const float>(A), lda, ptr<const float>(B), ldb,
              beta, ptr<float>(C), ldc, ptr(workspace), workspace_bytes, stream_of(stream)),
        "sgemm");
}

void py_unary(int which, const std::string& t, int64_t n, uintptr_t out, uintptr_t in, int device,
              uintptr_t stream) {
  DeviceGuard g(device);
  check(unary(static_cast<Unary>(which), dtype(t), n, ptr(out), ptr(in), stream_of(stream)),
        name_of(kUnaryNames, which, "unary"));
}

void py_binary(int which, const std::string& t, int64_t n, uintptr_t out, uintptr_t a, uintptr_t b,
               int device, uintptr_t stream) {
  DeviceGuard g(device);
  check(
      binary(static_cast<Binary>(which), dtype(t), n, ptr(out), ptr(a), ptr(b), stream_of(stream)),
      name_of(kBinaryNames, which, "binary"));
}

void py_cast(const std::string& from, const std::string& to, int64_t n, uintptr_t out, uintptr_t in,
             int device, uintptr_t stream) {
  DeviceGuard g(device);
  check(cast(dtype(from), dtype(to), n, ptr(out), ptr(in), stream_of(stream)), "cast");
}

void py_rms_norm(const std::string& t, const std::string& w, uintptr_t x, uintptr_t weight,
                 uintptr_t y, uintptr_t rstd, int64_t rows, int64_t cols, float eps, int device,
                 uintptr_t stream) {
  DeviceGuard g(device);
  check(rms_norm(dtype(t), dtype(w), ptr(x), ptr(weight), ptr(y), ptr<float>(rstd), rows, cols, eps,
                 stream_of(stream)),
        "rms_norm");
}

void py_layer_norm(const std::string& t, const std::string& w, uintptr_t x, uintptr_t weight,
                   uintptr_t bias, uintptr_t y, uintptr_t mean, uintptr_t rstd, int64_t rows,
                   int64_t cols, float eps, int device, uintptr_t stream) {
  DeviceGuard g(device);
  check(layer_norm(dtype(t), dtype(w), ptr(x), ptr(weight), ptr(bias), ptr(y), ptr<float>(mean),
                   ptr<float>(rstd), rows, cols, eps, stream_of(stream)),
        "layer_norm");
}

void py_add_rms_norm(const std::string& t, const std::string& w, uintptr_t x, uintptr_t residual,
                     uintptr_t weight, uintptr_t y, uintptr_t sum, uintptr_t rstd, int64_t rows,
                     int64_t cols, float eps, int device, uintptr_t stream) {
  DeviceGuard g(device);
  check(add_rms_norm(dtype(t), dtype(w), ptr(x), ptr(residual), ptr(weight), ptr(y), ptr(sum),
                     ptr<float>(rstd), rows, cols, eps, stream_of(stream)),
        "add_rms_norm");
}

void py_rms_norm_backward(const std::string& t, const std::string& w, uintptr_t dy, uintptr_t x,
                          uintptr_t weight, uintptr_t rstd, uintptr_t dx, uintptr_t dweight,
                          int64_t rows, int64_t cols, uintptr_t workspace, size_t workspace_bytes,
                          int device, uintptr_t stream) {
  DeviceGuard g(device);
  check(rms_norm_backward(dtype(t), dtype(w), ptr(dy), ptr(x), ptr(weight), ptr<const float>(rstd),
                          ptr(dx), ptr(dweight), rows, cols, ptr(workspace), workspace_bytes,
                          stream_of(stream)),
        "rms_norm_backward");
}

void py_layer_norm_backward(const std::string& t, const std::string& w, uintptr_t dy, uintptr_t x,
                            uintptr_t weight, uintptr_t mean, uintptr_t rstd, uintptr_t dx,
                            uintptr_t dweight, uintptr_t dbias, int64_t rows, int64_t cols,
                            uintptr_t workspace, size_t workspace_bytes, int device,
                            uintptr_t stream) {
  DeviceGuard g(device);
  check(
      layer_norm_backward(dtype(t), dtype(w), ptr(dy), ptr(x), ptr(weight), ptr<const float>(mean),
                          ptr<const float>(rstd), ptr(dx), ptr(dweight), ptr(dbias), rows, cols,
                          ptr(workspace), workspace_bytes, stream_of(stream)),
      "layer_norm_backward");
}

void py_add_rms_norm_backward(const std::string& t, const std::string& w, uintptr_t dy,
                              uintptr_t sum, uintptr_t dsum, uintptr_t weight, uintptr_t rstd,
                              uintptr_t dx, uintptr_t dweight, int64_t rows, int64_t cols,
                              uintptr_t workspace, size_t workspace_bytes, int device,
                              uintptr_t stream) {
  DeviceGuard g(device);
  check(add_rms_norm_backward(dtype(t), dtype(w), ptr(dy), ptr(sum), ptr(dsum), ptr(weight),
                              ptr<const float>(rstd), ptr(dx), ptr(dweight), rows, cols,
                              ptr(workspace), workspace_bytes, stream_of(stream)),
        "add_rms_norm_backward");
}

int py_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();  // no driver / no device: our own failed query, not a user error
    return 0;
  }
  return n;
}

void py_synchronize(int device, uintptr_t stream) {
  DeviceGuard g(device);
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
  using nb::arg;
  m.doc() = "kernelkit CUDA ops (low level, unchecked: use the kernelkit package's functions)";
  m.attr("__version__") = KERNELKIT_VERSION_STRING;  // kernelkit.__version__
  // in / out / A / ...: device addresses; workspace: 0 with workspace_bytes 0, or an address
  // of *_workspace_bytes(...) bytes (the Python layer allocates them); device: the CUDA
  // ordinal the call runs on; stream: a cudaStream_t as an integer (0: the default stream).
  // softmax: row r of x at x + r * ld (ld >= cols), out contiguous; the backward: y and dy
  // at their leading dimensions, dx contiguous
  m.def("softmax", &py_softmax, arg("dtype"), arg("log"), arg("x"), arg("ld"), arg("out"),
        arg("rows"), arg("cols"), arg("device"), arg("stream"));
  m.def("softmax_backward", &py_softmax_backward, arg("dtype"), arg("log"), arg("y"), arg("ld_y"),
        arg("dy"), arg("ld_dy"), arg("dx"), arg("rows"), arg("cols"), arg("device"), arg("stream"));
  // softmax over the middle axis of a contiguous (outer, n, inner) array (in place allowed),
  // and its backward (dx contiguous); the workspace lets tall columns split
  m.def("softmax_inner_workspace_bytes", &py_softmax_inner_workspace_bytes, arg("dtype"),
        arg("outer"), arg("n"), arg("inner"));
  m.def("softmax_inner", &py_softmax_inner, arg("dtype"), arg("log"), arg("x"), arg("out"),
        arg("outer"), arg("n"), arg("inner"), arg("workspace"), arg("workspace_bytes"),
        arg("device"), arg("stream"));
  m.def("softmax_inner_backward", &py_softmax_inner_backward, arg("dtype"), arg("log"), arg("y"),
        arg("dy"), arg("dx"), arg("outer"), arg("n"), arg("inner"), arg("workspace"),
        arg("workspace_bytes"), arg("device"), arg("stream"));
  // cross_entropy: logits row r at logits + r * ld; target int32 / int64 (its dtype name);
  // reduction 0 none, 1 sum, 2 mean; lse 0 or rows float32; the backward's dlogits at
  // ld_dlogits
  m.def("cross_entropy_workspace_bytes", &py_cross_entropy_workspace_bytes, arg("rows"),
        arg("vocab"));
  m.def("cross_entropy", &py_cross_entropy, arg("dtype"), arg("target_dtype"), arg("logits"),
        arg("ld"), arg("target"), arg("rows"), arg("vocab"), arg("ignore_index"),
        arg("label_smoothing"), arg("reduction"), arg("loss"), arg("lse"), arg("workspace"),
        arg("workspace_bytes"), arg("device"), arg("stream"));
  m.def("cross_entropy_backward", &py_cross_entropy_backward, arg("dtype"), arg("target_dtype"),
        arg("logits"), arg("ld"), arg("target"), arg("lse"), arg("dloss"), arg("rows"),
        arg("vocab"), arg("ignore_index"), arg("label_smoothing"), arg("reduction"), arg("dlogits"),
        arg("ld_dlogits"), arg("device"), arg("stream"));
  m.def("row_reduce_workspace_bytes", &py_row_reduce_workspace_bytes, arg("dtype"), arg("rows"),
        arg("cols"));
  m.def("row_reduce", &py_row_reduce, arg("dtype"), arg("op"), arg("x"), arg("rows"), arg("cols"),
        arg("ld"), arg("out"), arg("workspace"), arg("workspace_bytes"), arg("device"),
        arg("stream"));
  m.def("col_reduce_workspace_bytes", &py_col_reduce_workspace_bytes, arg("dtype"), arg("outer"),
        arg("n"), arg("inner"));
  m.def("col_reduce", &py_col_reduce, arg("dtype"), arg("op"), arg("x"), arg("outer"), arg("n"),
        arg("inner"), arg("out"), arg("workspace"), arg("workspace_bytes"), arg("device"),
        arg("stream"));
  m.def("reduce_workspace_bytes", &py_reduce_workspace_bytes, arg("dtype"), arg("n"));
  m.def("reduce", &py_reduce, arg("dtype"), arg("op"), arg("x"), arg("n"), arg("out"),
        arg("workspace"), arg("workspace_bytes"), arg("device"), arg("stream"));
  m.def("transpose", &py_transpose, arg("elem_bytes"), arg("x"), arg("out"), arg("rows"),
        arg("cols"), arg("device"), arg("stream"));
  m.def("gemv_workspace_bytes", &gemv_workspace_bytes, arg("trans"), arg("m"), arg("n"));
  m.def("gemv", &py_gemv, arg("trans"), arg("m"), arg("n"), arg("alpha"), arg("A"), arg("lda"),
        arg("x"), arg("beta"), arg("y"), arg("workspace"), arg("workspace_bytes"), arg("device"),
        arg("stream"));
  m.def("sgemm_workspace_bytes", &sgemm_workspace_bytes, arg("trans_a"), arg("trans_b"), arg("m"),
        arg("n"), arg("k"));
  m.def("sgemm", &py_sgemm, arg("trans_a"), arg("trans_b"), arg("m"), arg("n"), arg("k"),
        arg("alpha"), arg("A"), arg("lda"), arg("B"), arg("ldb"), arg("beta"), arg("C"), arg("ldc"),
        arg("workspace"), arg("workspace_bytes"), arg("device"), arg("stream"));
  m.def("unary", &py_unary, arg("op"), arg("dtype"), arg("n"), arg("out"), arg("x"), arg("device"),
        arg("stream"));
  m.def("binary", &py_binary, arg("op"), arg("dtype"), arg("n"), arg("out"), arg("a"), arg("b"),
        arg("device"), arg("stream"));
  m.def("cast", &py_cast, arg("dtype"), arg("to"), arg("n"), arg("out"), arg("x"), arg("device"),
        arg("stream"));
  // norms: weight / bias / dweight / mean / rstd may be 0 (none); w: their dtype
  m.def("rms_norm", &py_rms_norm, arg("dtype"), arg("weight_dtype"), arg("x"), arg("weight"),
        arg("y"), arg("rstd"), arg("rows"), arg("cols"), arg("eps"), arg("device"), arg("stream"));
  m.def("layer_norm", &py_layer_norm, arg("dtype"), arg("weight_dtype"), arg("x"), arg("weight"),
        arg("bias"), arg("y"), arg("mean"), arg("rstd"), arg("rows"), arg("cols"), arg("eps"),
        arg("device"), arg("stream"));
  m.def("add_rms_norm", &py_add_rms_norm, arg("dtype"), arg("weight_dtype"), arg("x"),
        arg("residual"), arg("weight"), arg("y"), arg("sum"), arg("rstd"), arg("rows"), arg("cols"),
        arg("eps"), arg("device"), arg("stream"));
  m.def("rms_norm_backward_workspace_bytes", &rms_norm_backward_workspace_bytes, arg("rows"),
        arg("cols"));
  m.def("rms_norm_backward", &py_rms_norm_backward, arg("dtype"), arg("weight_dtype"), arg("dy"),
        arg("x"), arg("weight"), arg("rstd"), arg("dx"), arg("dweight"), arg("rows"), arg("cols"),
        arg("workspace"), arg("workspace_bytes"), arg("device"), arg("stream"));
  m.def("layer_norm_backward_workspace_bytes", &layer_norm_backward_workspace_bytes, arg("rows"),
        arg("cols"));
  m.def("layer_norm_backward", &py_layer_norm_backward, arg("dtype"), arg("weight_dtype"),
        arg("dy"), arg("x"), arg("weight"), arg("mean"), arg("rstd"), arg("dx"), arg("dweight"),
        arg("dbias"), arg("rows"), arg("cols"), arg("workspace"), arg("workspace_bytes"),
        arg("device"), arg("stream"));
  m.def("add_rms_norm_backward_workspace_bytes", &add_rms_norm_backward_workspace_bytes,
        arg("rows"), arg("cols"));
  m.def("add_rms_norm_backward", &py_add_rms_norm_backward, arg("dtype"), arg("weight_dtype"),
        arg("dy"), arg("sum"), arg("dsum"), arg("weight"), arg("rstd"), arg("dx"), arg("dweight"),
        arg("rows"), arg("cols"), arg("workspace"), arg("workspace_bytes"), arg("device"),
        arg("stream"));
  m.def("device_count", &py_device_count);
  m.def("synchronize", &py_synchronize, arg("device"), arg("stream"));
  m.def("_raise_for", &py_raise_for, arg("code"), arg("op"));
  m.attr("REDUCE_SUM") = static_cast<int>(Reduce::kSum);
  m.attr("REDUCE_MAX") = static_cast<int>(Reduce::kMax);
  m.attr("REDUCE_MIN") = static_cast<int>(Reduce::kMin);
  m.attr("UNARY_RELU") = static_cast<int>(Unary::kRelu);
  m.attr("UNARY_GELU") = static_cast<int>(Unary::kGelu);
  m.attr("UNARY_GELU_TANH") = static_cast<int>(Unary::kGeluTanh);
  m.attr("UNARY_SIGMOID") = static_cast<int>(Unary::kSigmoid);
  m.attr("BINARY_ADD") = static_cast<int>(Binary::kAdd);
  m.attr("BINARY_MUL") = static_cast<int>(Binary::kMul);
}

// Shared BLAS vocabulary of the blas/ module (gemv, sgemm): the operation applied to a
// row-major matrix operand.
#pragma once

namespace kernelkit {

// Op::N uses the matrix as stored (row-major); Op::T uses its transpose.
enum class Op { N, T };

}  // namespace kernelkit

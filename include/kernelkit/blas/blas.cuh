// SPDX-License-Identifier: Apache-2.0
/// @file
/// Shared BLAS vocabulary of the blas/ module (gemv, sgemm): the operation applied to a
/// row-major matrix operand.
#pragma once

namespace kernelkit {

/// BlasOp::N uses the matrix as stored (row-major); BlasOp::T uses its transpose.
enum class BlasOp { N, T };
/** @var BlasOp::N
    The matrix as stored (row-major). */
/** @var BlasOp::T
    The transpose of the matrix. */

}  // namespace kernelkit

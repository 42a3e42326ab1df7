// SPDX-License-Identifier: Apache-2.0
/// @file
/// Scalar type traits shared by every module: the compute type of each storage type,
/// conversions to and from it, and the reduction operators.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

/// __host__ __device__ __forceinline__: the qualifiers of the small helpers callable from
/// host and device code.
#define KERNELKIT_HD __host__ __device__ __forceinline__

namespace kernelkit {

/// compute_t<T>: the type arithmetic on T is done in. Half and bf16 compute in float,
/// every other type in itself.
template <typename T>
struct compute_type {
  using type = T;  ///< T itself for every type but __half and __nv_bfloat16
};
/// __half computes in float.
template <>
struct compute_type<__half> {
  using type = float;  ///< float
};
/// __nv_bfloat16 computes in float.
template <>
struct compute_type<__nv_bfloat16> {
  using type = float;  ///< float
};
/// The type arithmetic on T is done in (compute_type<T>::type).
template <typename T>
using compute_t = typename compute_type<T>::type;

/// True for __half and __nv_bfloat16, the 16-bit floats that compute in float.
template <typename T>
inline constexpr bool is_half_like_v =
    std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;

/// Converts any supported scalar to To. Half and bf16 go through float; float -> half/bf16
/// rounds to nearest even and overflows to +-inf.
template <typename To, typename From>
KERNELKIT_HD To convert(From x) {
  if constexpr (std::is_same_v<To, From>) {
    return x;
  } else if constexpr (std::is_same_v<From, __half>) {
    return convert<To>(__half2float(x));
  } else if constexpr (std::is_same_v<From, __nv_bfloat16>) {
    return convert<To>(__bfloat162float(x));
  } else if constexpr (std::is_same_v<To, __half>) {
    if constexpr (std::is_same_v<From, double>) {
      return __double2half(x);
    } else {
      return __float2half_rn(static_cast<float>(x));
    }
  } else if constexpr (std::is_same_v<To, __nv_bfloat16>) {
    if constexpr (std::is_same_v<From, double>) {
      return __double2bfloat16(x);
    } else {
      return __float2bfloat16_rn(static_cast<float>(x));
    }
  } else {
    return static_cast<To>(x);
  }
}

/// True for a NaN of any floating type; false for integers.
template <typename T>
KERNELKIT_HD bool is_nan(T x) {
  if constexpr (std::is_integral_v<T>) {
    return false;
  } else if constexpr (is_half_like_v<T>) {
    return is_nan(convert<float>(x));
  } else {
    return x != x;
  }
}

/// Reduction operators. Each is a stateless functor usable on host and device; Max and
/// Min propagate NaN (a NaN operand wins, as torch.amax does). For half and bf16 they
/// compare in float and return one of the operands unchanged.
struct Sum {
  /// a + b; half and bf16 are added in float and rounded back.
  template <typename T>
  KERNELKIT_HD T operator()(T a, T b) const {
    if constexpr (is_half_like_v<T>) {
      return convert<T>(convert<float>(a) + convert<float>(b));
    } else {
      return a + b;
    }
  }
};

/// The larger operand; a NaN operand wins (see Sum).
struct Max {
  /// The larger of a and b, or the NaN one.
  template <typename T>
  KERNELKIT_HD T operator()(T a, T b) const {
    if constexpr (is_half_like_v<T>) {
      const float fa = convert<float>(a), fb = convert<float>(b);
      return (fa > fb || fa != fa) ? a : b;
    } else {
      return (a > b || is_nan(a)) ? a : b;
    }
  }
};

/// The smaller operand; a NaN operand wins (see Sum).
struct Min {
  /// The smaller of a and b, or the NaN one.
  template <typename T>
  KERNELKIT_HD T operator()(T a, T b) const {
    if constexpr (is_half_like_v<T>) {
      const float fa = convert<float>(a), fb = convert<float>(b);
      return (fa < fb || fa != fa) ? a : b;
    } else {
      return (a < b || is_nan(a)) ? a : b;
    }
  }
};

/// The run-time choice of operator taken by the public reductions.
enum class ReduceOp { kSum, kMax, kMin };
/** @var ReduceOp::kSum
    Sum. */
/** @var ReduceOp::kMax
    Max (NaN wins). */
/** @var ReduceOp::kMin
    Min (NaN wins). */

/// Limits and identities, host and device, for every supported type (written without
/// std::numeric_limits so that device code needs no --expt-relaxed-constexpr):
/// highest<T>() is +inf for floating types and the largest value for integers, lowest<T>()
/// -inf / the smallest value; identity<Op, T>() is 0 for Sum, lowest for Max, highest for
/// Min (Max(-inf, NaN) is NaN, so a NaN still propagates).
template <typename T>
KERNELKIT_HD T highest() {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return std::is_signed_v<T> ? static_cast<T>(static_cast<U>(~U{0}) >> 1) : static_cast<T>(~U{0});
  } else if constexpr (std::is_same_v<T, double>) {
    return __builtin_huge_val();
  } else {
    return convert<T>(__builtin_huge_valf());
  }
}

/// The lowest value of T: -inf for floating types, the smallest value for integers (see
/// highest).
template <typename T>
KERNELKIT_HD T lowest() {
  if constexpr (std::is_integral_v<T>) {
    return std::is_signed_v<T> ? static_cast<T>(-highest<T>() - 1) : T(0);
  } else if constexpr (std::is_same_v<T, double>) {
    return -__builtin_huge_val();
  } else {
    return convert<T>(-__builtin_huge_valf());
  }
}

/// The identity of Op (Sum, Max or Min) in T: 0, lowest<T>() or highest<T>() (see
/// highest).
template <typename Op, typename T>
KERNELKIT_HD T identity() {
  if constexpr (std::is_same_v<Op, Sum>) {
    return convert<T>(0.0f);
  } else if constexpr (std::is_same_v<Op, Max>) {
    return lowest<T>();
  } else {
    static_assert(std::is_same_v<Op, Min>, "identity: Op must be Sum, Max or Min");
    return highest<T>();
  }
}

/// The unsigned integer of Bytes bytes (1, 2, 4, 8): moves elements as bits.
template <int Bytes>
struct BitsOfSize;
template <>
/// 1 byte: uint8_t.
struct BitsOfSize<1> {
  using type = uint8_t;  ///< uint8_t
};
template <>
/// 2 bytes: uint16_t.
struct BitsOfSize<2> {
  using type = uint16_t;  ///< uint16_t
};
template <>
/// 4 bytes: uint32_t.
struct BitsOfSize<4> {
  using type = uint32_t;  ///< uint32_t
};
template <>
/// 8 bytes: uint64_t.
struct BitsOfSize<8> {
  using type = uint64_t;  ///< uint64_t
};
/// BitsOfSize<Bytes>::type.
template <int Bytes>
using bits_t = typename BitsOfSize<Bytes>::type;

/// The short name of a type, as in benchmark case names and test names: f32, f64, f16,
/// bf16, i8, i32, i64, u8, u32, u64.
template <typename T>
constexpr const char* type_name() {
  if constexpr (std::is_same_v<T, float>)
    return "f32";
  else if constexpr (std::is_same_v<T, double>)
    return "f64";
  else if constexpr (std::is_same_v<T, __half>)
    return "f16";
  else if constexpr (std::is_same_v<T, __nv_bfloat16>)
    return "bf16";
  else if constexpr (std::is_same_v<T, int8_t>)
    return "i8";
  else if constexpr (std::is_same_v<T, int16_t>)
    return "i16";
  else if constexpr (std::is_same_v<T, int32_t>)
    return "i32";
  else if constexpr (std::is_same_v<T, int64_t>)
    return "i64";
  else if constexpr (std::is_same_v<T, uint8_t>)
    return "u8";
  else if constexpr (std::is_same_v<T, uint16_t>)
    return "u16";
  else if constexpr (std::is_same_v<T, uint32_t>)
    return "u32";
  else if constexpr (std::is_same_v<T, uint64_t>)
    return "u64";
  else
    return "?";
}

}  // namespace kernelkit

#ifndef LOOM_BACKENDS_COMMON_C_SCALAR_H_
#define LOOM_BACKENDS_COMMON_C_SCALAR_H_

// The C spellings of loom's scalar operations (ir/loop_ir.h: ScalarFn,
// ReduceKind, casts and literals), shared by the backends that print C-family
// code (C++ for CPUs, CUDA C++). One place fixes the semantics generated code
// must have: integer division and remainders are total, float-to-integer
// casts saturate, max and min propagate NaN, and arg reductions break ties
// as the interpreter does. The text does not depend on the backend except
// for the qualifier of the helper functions ("static inline" for C++,
// "static __device__ __forceinline__" for CUDA).

#include <bitset>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "ir/dtype.h"
#include "ir/loop_ir.h"

namespace loom::cscalar {

// Helpers that only some kernels need: a printer collects the ones its
// expressions call and emits them after the prelude.
enum Helper : int {
  kIntMod,
  kIntFmod,
  kFloatMod,
  kDoubleMod,
  kFloatFmod,      // loom_fmodf (FloatExp)
  kFloatFloorMod,  // loom_floor_modf: loom_modf on loom_fmodf's steps
  kUIntDiv,        // loom_udiv, loom_umod, loom_upow: unsigned, in uint64_t
  kUIntMod,
  kUIntPow,
  kFloatExp,
  kFloatTanh,
  kFloatErf,
  kFloatLog,
  kCheckIndex,  // loom_check_index, which calls the backend's loom_index_error
  kFloatBits,   // loom_bitcast_f32_u32, loom_bitcast_f64_u64 and back
  kNumHelpers
};
using HelperSet = std::bitset<kNumHelpers>;

// The libm functions CallExpr's expressions may call that glibc's libmvec
// has vector variants of (on x86-64). A printer collects the ones its
// kernels call, by precision, so that a backend can declare those
// variants: a loop calling an undeclared one calls libm once per element
// and does not vectorise.
enum LibmFn : int {
  kLibmExp,
  kLibmLog,
  kLibmTanh,
  kLibmErf,
  kLibmSin,
  kLibmCos,
  kLibmPow,
  kNumLibmFns
};
struct LibmCalls {
  std::bitset<kNumLibmFns> f32, f64;
};

// The C prototype of `fn` for `dtype` (kF32 or kF64), as <math.h> has it
// (without its exception specification): "float powf(float, float)".
std::string LibmPrototype(LibmFn fn, DType dtype);
// Its name: "powf".
std::string LibmName(LibmFn fn, DType dtype);
// Its number of arguments: 1, or 2 for pow.
inline int LibmArity(LibmFn fn) { return fn == kLibmPow ? 2 : 1; }

// The C declarations, for f32 and f64, of every C math function the
// expressions here may call (CallExpr: the LibmFn ones, fabsf, sqrtf,
// floorf, ceilf, rintf, fmodf), so that a unit need not include <math.h>.
std::string CMathDeclarations();

// The helpers every kernel may call: loom_idiv, loom_ipow, loom_f2i32,
// loom_f2i64, each declared with `qualifier`.
std::string CoreHelpers(absl::string_view qualifier);
// The text of one optional helper, declared with `qualifier`.
std::string HelperText(Helper helper, absl::string_view qualifier);

// "float", "double", "int32_t", "int64_t", "bool", "int8_t", "int16_t",
// "uint8_t", "uint16_t", "uint32_t", "uint64_t"; "uint16_t" for f16 and
// bf16 and "uint8_t" for the 8- and 4-bit floats, whose values generated
// code holds as their bits, "int8_t" for i4 and i2 and "uint8_t" for u4 and
// u2, one value a byte (only loads, stores and casts touch the storage
// types: passes/widen_half.h).
const char* CType(DType dtype);
// The type of an element of `dtype` in a buffer: CType's, but uint8_t for
// bool (the same byte, 0 or 1). GCC 12 vectorises no loop that loads a
// bool from memory ("no vectype"), and does vectorise the same loop
// loading a uint8_t into a bool: a conv's masks of positions ran scalar.
const char* StorageCType(DType dtype);

// A literal of `dtype` with exactly the value `v` converted as a cast would
// (for integers: truncated, saturated, NaN as 0).
std::string Literal(double v, DType dtype);

// How single-precision exponentials (exp, sigmoid) are computed: libm's
// expf, or loom_expf (helper kFloatExp), a branch-free polynomial that a C++
// compiler vectorises inside loops (libm's expf stops vectorisation); f32
// tanh likewise: tanhf, or loom_tanhf (helper kFloatTanh, which calls
// loom_expf); erf: erff, or loom_erff (helper kFloatErf); log: logf, or
// loom_logf (helper kFloatLog); and the f32 remainders: fmodf, or the exact
// branch-free loom_fmodf (helper kFloatFmod; kFloatFloorMod for the floor
// mod).
enum class FloatExp { kLibm, kPolynomial };

// The lines of loom_expf that, given `c` (its argument, clamped) and `n`
// (c * log2(e) rounded to an integer), leave exp(c - n ln 2) in `e`, for C
// type `type` (float, or a vector of floats); scaling by 2^n is the
// caller's. One text for the scalar and the vector exponential, so that
// they give the same bits.
std::string ExpfReduction(absl::string_view type);

// The f32 tanh function `name` for C type `type` (float, or a vector of
// floats: its comparisons select lane by lane) calling the exponential
// `exp` of that type, declared with `qualifier`: loom_tanhf, and the same
// steps in vectors, so that they give the same bits.
std::string TanhfFunction(absl::string_view qualifier, absl::string_view name,
                          absl::string_view type, absl::string_view exp);

// The f32 erf function `name` for C type `type` (float, or a vector of
// floats), declared with `qualifier`: loom_erff, and the same steps in
// vectors.
std::string ErffFunction(absl::string_view qualifier, absl::string_view name,
                         absl::string_view type);

// The expression for `fn` applied to the operand expressions `a` (already
// parenthesised where needed: they are variable names). `type` is the
// result type, `operand_type` the type of the operands. `helpers` collects
// the helpers the expression calls, and `libm_calls` (when not null) its
// calls of the functions LibmFn names.
std::string CallExpr(ScalarFn fn, DType type, DType operand_type, const std::vector<std::string>& a,
                     HelperSet& helpers, FloatExp float_exp = FloatExp::kLibm,
                     LibmCalls* libm_calls = nullptr);

// The expression for step `i` of `node` when it is a constant, a cast or a
// call, whose text needs no memory (CallExpr and CastExpr); the earlier
// steps' values are the variables t<step_base + j>. Empty for the other
// kinds, which each backend prints itself.
std::string ValueStepExpr(const ComputeNode& node, int i, int step_base, HelperSet& helpers,
                          FloatExp float_exp = FloatExp::kLibm, LibmCalls* libm_calls = nullptr);

// The expression for a kCheckIndex step (ir/loop_ir.h) of the integer
// variable `index`: loom_check_index(index, extent, site, errors), with
// `errors` the expression of the index error slot's int64_t pointer. The
// helper wraps a negative index, and one still outside [0, extent) gives 0
// and calls loom_index_error(int64_t* errors, int64_t site, int64_t index),
// which each backend defines before it: it records the first failure of a
// run (an atomic compare-and-swap on errors[0] from 0 to site + 1, then
// errors[1] = index).
std::string CheckIndexExpr(const std::string& index, int64_t extent, int32_t site,
                           const std::string& errors, HelperSet& helpers);

// The conversions of the narrow floats' bits to and from f32 and f64 that
// casts call (loom_f16_to_f32, loom_f16_from_f32, loom_f16_from_f64, and
// the same for each narrow float; c_helpers.inc's kNarrowFloatHelpers),
// declared with `qualifier`: a backend emits them where UsesNarrowFloats.
std::string NarrowFloatHelpers(absl::string_view qualifier);
// Whether any buffer or step of `program` is a narrow float (f16, bf16,
// f8*, f4e2m1).
bool UsesNarrowFloats(const LoopProgram& program);

// The expression that casts the variable `arg` of type `from` to `to`.
std::string CastExpr(DType from, DType to, const std::string& arg);

// The accumulator's first value; `dtype` is the type of the values folded.
std::string ReduceInit(ReduceKind kind, DType dtype);

// A statement folding `value` into the accumulator `acc` (and, for arg
// reductions, `position` into `arg`), visiting elements in order.
std::string ReduceUpdate(ReduceKind kind, DType dtype, const std::string& value,
                         const std::string& position, const std::string& acc,
                         const std::string& arg);

// An expression combining two partial results of a reduction over disjoint
// sets of elements into the result over their union, whatever order the
// sets had: `a` and `b` (and, for arg reductions, their positions `ai` and
// `bi`) name values; yields whether `b` must replace `a`. For sum and prod
// it is never used (they combine with + and *).
std::string ReduceTakesOther(ReduceKind kind, DType dtype, const std::string& a,
                             const std::string& ai, const std::string& b, const std::string& bi);

}  // namespace loom::cscalar

#endif  // LOOM_BACKENDS_COMMON_C_SCALAR_H_

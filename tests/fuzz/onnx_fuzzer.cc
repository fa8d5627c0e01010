// Fuzz target: the ONNX importer, then the compile (no native compiler).
// Whatever bytes parse as an onnx::ModelProto are imported and, when that
// succeeds, compiled with the built-in `cpu` pipeline; every step must
// succeed or fail with a user error (see fuzz::CheckUserError), never
// crash, hang or break the IR.

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"
#include "frontends/onnx/onnx_importer.h"
#include "ir/dtype.h"
#include "tests/fuzz/compile_check.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

// Each initializer and declared input: at most this many elements (as in
// compile_fuzzer.cc: small shapes keep each run fast).
constexpr int64_t kMaxDeclaredElements = 1 << 12;

// Multiplies `elements` by one declared dim (a negative one, the
// importer's to refuse, counts as 1); false once past the limit.
bool Grow(int64_t& elements, int64_t dim) {
  elements = loom::SaturatingMul(elements, std::clamp<int64_t>(dim, 1, kMaxDeclaredElements + 1));
  return elements <= kMaxDeclaredElements;
}

// Whether every initializer and every graph input with static dims is
// small.
bool DeclaresSmallTensors(const onnx::ModelProto& model) {
  for (const onnx::TensorProto& tensor : model.graph().initializer()) {
    int64_t elements = 1;
    for (int64_t dim : tensor.dims()) {
      if (!Grow(elements, dim)) return false;
    }
  }
  for (const onnx::ValueInfoProto& input : model.graph().input()) {
    int64_t elements = 1;
    for (const auto& dim : input.type().tensor_type().shape().dim()) {
      if (dim.has_dim_value() && !Grow(elements, dim.dim_value())) return false;
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  onnx::ModelProto model;
  if (!model.ParseFromArray(data, static_cast<int>(size)) || !DeclaresSmallTensors(model)) {
    return 0;
  }
  absl::StatusOr<loom::Graph> graph = loom::ImportOnnxModel(model);
  loom::fuzz::CheckUserError(graph.status(), "ImportOnnxModel");
  if (!graph.ok()) return 0;

  loom::fuzz::CompileAndCheck(*std::move(graph), "fuzz.onnx");
  return 0;
}

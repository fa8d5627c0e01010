#ifndef LOOM_FRONTENDS_ONNX_ONNX_VERSIONS_H_
#define LOOM_FRONTENDS_ONNX_ONNX_VERSIONS_H_

// The domains and opsets ONNX 1.23 defines, which version of an op of its
// default domain a model's opset selects, and which versions loom's
// converters implement. Internal to
// frontends/onnx.
//
// An op changes version when an opset changes its inputs, attributes,
// semantics or element types. A converter written for one version must
// not read a newer one with the old meaning: the importer refuses a node
// whose version is newer than the one its converter implements, naming
// the op and both versions (ImplementedThroughOpset).

#include <cstdint>

#include "absl/strings/string_view.h"

namespace loom::onnx_import {

// One version of an op, as ONNX's schema defines it.
struct OnnxSchema {
  const char* op;
  int64_t since_version;  // the opset that introduced this version
  int min_inputs;
  int max_inputs;
  int min_outputs;
  int max_outputs;
};

// An operator-set domain ONNX defines, with its opsets.
struct OnnxDomain {
  const char* name;  // "" for the default domain
  int64_t first_opset;
  int64_t last_opset;
};

// The domain named `name` ("" or "ai.onnx" for the default one), or null
// when ONNX defines none of that name.
const OnnxDomain* FindDomain(absl::string_view name);

// The newest opset of the default domain the importer knows.
int64_t NewestOnnxOpset();

// The version of `op` that `opset` selects (the newest one introduced at or
// before it), or null when `op` has none there.
const OnnxSchema* FindSchema(absl::string_view op, int64_t opset);

// The newest opset whose version of `op` loom's converter implements:
// ImplementedVersions' entry, or 17 (ONNX 1.12, which every converter was
// first written against) for an op not listed there.
int64_t ImplementedThroughOpset(absl::string_view op);

}  // namespace loom::onnx_import

#endif  // LOOM_FRONTENDS_ONNX_ONNX_VERSIONS_H_

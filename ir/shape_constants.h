#ifndef LOOM_IR_SHAPE_CONSTANTS_H_
#define LOOM_IR_SHAPE_CONSTANTS_H_

// Shape constants: the integers of emitted source that follow from a
// model's shapes (loop extents, index strides and offsets, a library
// call's sizes) and that the source would also be correct with at run time.
// A backend prints each marked (MarkShapeConstant); the marks are stripped
// from the finished text (StripShapeConstants), which keeps where each
// constant was. Two sources that differ only in such constants are one
// kernel for two shapes: the constants that differ can be read at run time
// instead (backends/cpp/shape_templates.h), and one native compile serves
// both.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace loom {

// `value` (non-negative), marked as a shape constant.
std::string MarkShapeConstant(int64_t value);

// The product of `extents` as a C++ int64_t expression of shape constants,
// e.g. "(int64_t)64 * 256"; "(int64_t)1" for none.
std::string MarkedProduct(absl::Span<const int64_t> extents);

// A shape constant of a finished source text: its digits are
// text[offset, offset + length).
struct ShapeConstant {
  size_t offset = 0;
  size_t length = 0;
  int64_t value = 0;
};

struct StrippedSource {
  std::string text;
  std::vector<ShapeConstant> constants;  // in order of their offsets
};

// The text without its marks, and where the marked constants are in it.
StrippedSource StripShapeConstants(absl::string_view marked);

// `text` (a stripped source) with each of its shape constants' digits a
// '#': the same for two texts that differ only in those (a skeleton).
std::string ShapeSkeleton(absl::string_view text, absl::Span<const ShapeConstant> constants);

// `text` with its marks removed: the constants printed as plain integers.
std::string WithoutShapeConstantMarks(absl::string_view text);

// `marked` with its marked constants replaced by the names
// `<prefix>0`, `<prefix>1`, ... in order, and their values in that order:
// code that takes its shape constants as arguments (a function outlined
// from kernels, whose callers pass them marked).
struct NamedShapeConstants {
  std::string text;
  std::vector<int64_t> values;
};
NamedShapeConstants NameShapeConstants(absl::string_view marked, absl::string_view prefix);

}  // namespace loom

#endif  // LOOM_IR_SHAPE_CONSTANTS_H_

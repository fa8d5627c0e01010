#include "ir/shape_constants.h"

#include <cstdint>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace loom {
namespace {

// ASCII's group and record separators, which loom's emitted source never
// holds otherwise.
constexpr char kOpen = '\x1d';
constexpr char kClose = '\x1e';

}  // namespace

std::string MarkShapeConstant(int64_t value) {
  return absl::StrCat(absl::string_view(&kOpen, 1), value, absl::string_view(&kClose, 1));
}

std::string MarkedProduct(absl::Span<const int64_t> extents) {
  if (extents.empty()) return "(int64_t)1";
  std::string product = "(int64_t)";
  for (size_t i = 0; i < extents.size(); ++i) {
    absl::StrAppend(&product, i == 0 ? "" : " * ", MarkShapeConstant(extents[i]));
  }
  return product;
}

StrippedSource StripShapeConstants(absl::string_view marked) {
  StrippedSource stripped;
  stripped.text.reserve(marked.size());
  size_t from = 0;
  for (size_t open = marked.find(kOpen); open != absl::string_view::npos;
       open = marked.find(kOpen, from)) {
    const size_t close = marked.find(kClose, open);
    absl::StrAppend(&stripped.text, marked.substr(from, open - from));
    const absl::string_view digits = marked.substr(open + 1, close - open - 1);
    ShapeConstant constant{stripped.text.size(), digits.size(), 0};
    // The marks come from MarkShapeConstant only: digits of an int64.
    (void)absl::SimpleAtoi(digits, &constant.value);
    stripped.constants.push_back(constant);
    absl::StrAppend(&stripped.text, digits);
    from = close + 1;
  }
  absl::StrAppend(&stripped.text, marked.substr(from));
  return stripped;
}

std::string ShapeSkeleton(absl::string_view text, absl::Span<const ShapeConstant> constants) {
  std::string skeleton;
  skeleton.reserve(text.size());
  size_t from = 0;
  for (const ShapeConstant& c : constants) {
    absl::StrAppend(&skeleton, text.substr(from, c.offset - from), "#");
    from = c.offset + c.length;
  }
  absl::StrAppend(&skeleton, text.substr(from));
  return skeleton;
}

std::string WithoutShapeConstantMarks(absl::string_view text) {
  return StripShapeConstants(text).text;
}

NamedShapeConstants NameShapeConstants(absl::string_view marked, absl::string_view prefix) {
  const StrippedSource stripped = StripShapeConstants(marked);
  NamedShapeConstants named;
  size_t from = 0;
  for (const ShapeConstant& c : stripped.constants) {
    absl::StrAppend(&named.text, absl::string_view(stripped.text).substr(from, c.offset - from),
                    prefix, named.values.size());
    named.values.push_back(c.value);
    from = c.offset + c.length;
  }
  absl::StrAppend(&named.text, absl::string_view(stripped.text).substr(from));
  return named;
}

}  // namespace loom

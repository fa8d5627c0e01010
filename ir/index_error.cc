#include "ir/index_error.h"

#include "absl/strings/str_cat.h"

namespace loom {

std::string IndexOutOfRangeCause(int64_t index, int64_t axis, int64_t size) {
  return absl::StrCat("index ", index, " is out of range for axis ", axis, " of size ", size);
}

std::string IndexOutOfRangeMessage(absl::string_view node, absl::string_view op, int64_t index,
                                   int64_t axis, int64_t size) {
  return absl::StrCat("node '", node, "' (", op, "): ", IndexOutOfRangeCause(index, axis, size));
}

}  // namespace loom

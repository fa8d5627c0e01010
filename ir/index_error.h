#ifndef LOOM_IR_INDEX_ERROR_H_
#define LOOM_IR_INDEX_ERROR_H_

// The words of a failed index check (an index known only at run time
// outside its dim): one message for the reference interpreter, the C++
// runtime and the CUDA runtime alike, so that a user reads the same error
// whichever ran the model.

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace loom {

// "index 7 is out of range for axis 0 of size 5": an index in
// [-size, size) is in range (a negative one counts from the end).
std::string IndexOutOfRangeCause(int64_t index, int64_t axis, int64_t size);

// The cause at graph node `node` (op `op`): "node 'N' (op): <cause>".
std::string IndexOutOfRangeMessage(absl::string_view node, absl::string_view op, int64_t index,
                                   int64_t axis, int64_t size);

}  // namespace loom

#endif  // LOOM_IR_INDEX_ERROR_H_

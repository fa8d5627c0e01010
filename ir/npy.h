#ifndef LOOM_IR_NPY_H_
#define LOOM_IR_NPY_H_

// NumPy's .npy files (format versions 1 to 3, what numpy.save writes): a
// header giving the element type, the order and the shape, then the
// elements. loom reads and writes C-ordered little-endian arrays of the
// types NumPy and loom share (bool, the integers, float16, float32,
// float64).

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/tensor.h"

namespace loom {

// The type the header of an .npy file's `bytes` gives its array, and where
// its data starts.
struct NpyHeader {
  TensorType type;
  size_t data_offset = 0;
};
// Errors are InvalidArgument and name `what` (the file) and the cause: not
// an .npy file, a truncated header, an element type loom does not read
// (big-endian, a structured or object array, bfloat16 written as raw
// void), Fortran order.
absl::StatusOr<NpyHeader> ParseNpyHeader(absl::string_view bytes, absl::string_view what);

// The array of the .npy file at `path`; a file whose data is shorter or
// longer than its header's shape needs is an error too.
absl::StatusOr<Tensor> ReadNpy(const std::string& path);

// The type of the array in the .npy file at `path`.
absl::StatusOr<TensorType> ReadNpyType(const std::string& path);

// `tensor` as an .npy file's bytes (format version 1).
absl::StatusOr<std::string> NpyBytes(const Tensor& tensor);

}  // namespace loom

#endif  // LOOM_IR_NPY_H_

#ifndef LOOM_FRONTENDS_ONNX_ONNX_TENSOR_H_
#define LOOM_FRONTENDS_ONNX_ONNX_TENSOR_H_

// ONNX element types and tensors (TensorProto) in loom's terms.

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/dtype.h"
#include "ir/lazy_tensor.h"
#include "ir/tensor.h"
#include "onnx/onnx_pb.h"

namespace loom {

// The loom dtype of an ONNX element type (TensorProto.DataType): FLOAT,
// DOUBLE, FLOAT16, BFLOAT16, the FLOAT8 types, FLOAT4E2M1, the integers
// (INT4, UINT4, INT2 and UINT2 too) and BOOL. Anything else (strings,
// complex numbers, FLOAT6) is an InvalidArgument error that names `what`
// and the type.
absl::StatusOr<DType> DTypeFromOnnx(int32_t elem_type, absl::string_view what);

// "FLOAT16", "UINT8", ...: an ONNX element type's name, for messages.
std::string OnnxTypeName(int32_t elem_type);

// The data of an ONNX tensor: raw_data, the typed fields, or external data
// (the 4- and 2-bit types, which ONNX packs, unpacked one a byte)
// (external_data's location, offset and length: a file in `external_dir`,
// the model's folder, as torch.onnx.export writes large weights), with
// every size checked against the dims before anything is allocated.
// Segmented data, element types outside loom's set, and external data
// where there is no folder (empty `external_dir`), outside the folder or
// short of what the dims need are InvalidArgument errors naming `what`.
absl::StatusOr<Tensor> TensorFromOnnx(const onnx::TensorProto& proto, absl::string_view what,
                                      const std::string& external_dir = "");
// The same, external data shared with the other graphs of this process that
// hold it (SharedFileTensor): a model compiled at many shapes reads its
// weights once.
absl::StatusOr<std::shared_ptr<const LazyTensor>> SharedTensorFromOnnx(
    const onnx::TensorProto& proto, absl::string_view what, const std::string& external_dir = "");

// Reads a serialised TensorProto (an ONNX test's input_N.pb / output_N.pb).
absl::StatusOr<onnx::TensorProto> ReadTensorProtoFile(const std::string& path);

}  // namespace loom

#endif  // LOOM_FRONTENDS_ONNX_ONNX_TENSOR_H_

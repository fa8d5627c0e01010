#ifndef LOOM_IR_SHARED_WEIGHTS_H_
#define LOOM_IR_SHARED_WEIGHTS_H_

// Weights that the graphs of one process share while any of them holds
// them (Graph::AddInitializer with a shared tensor): those read from a
// region of a file (an ONNX model's external data, the parameters of a
// torch.compile graph), and those a pass derives from such a weight (a
// GEMM weight's padded rows). A process that compiles one model at many
// shapes (loom.compile with bounds, torch.compile with dynamic sizes)
// then reads and transforms each weight once, and its compiled models
// hold one copy of them.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/lazy_tensor.h"
#include "ir/tensor.h"

namespace loom {

// The tensor of `type` at byte `offset` of the file at `path`: the one a
// graph of this process still holds, read from the same region of the file
// unchanged since (the same device, inode, size and modification time),
// else what `read` returns, kept for the next caller.
absl::StatusOr<std::shared_ptr<const LazyTensor>> SharedFileTensor(
    const std::string& path, int64_t offset, const TensorType& type,
    absl::FunctionRef<absl::StatusOr<Tensor>()> read);

// What `derive` makes of `source`'s data, a tensor of `type`, where
// `transform` names all that the result depends on but the source's data
// (the pass, and any parameter): the one derived before from the same
// source while a graph still holds it, else one that derive() makes where
// it is first read (Derived), kept for the next caller.
std::shared_ptr<const LazyTensor> SharedDerivedTensor(
    const std::shared_ptr<const LazyTensor>& source, absl::string_view transform, TensorType type,
    std::function<Tensor(const Tensor&)> derive);

}  // namespace loom

#endif  // LOOM_IR_SHARED_WEIGHTS_H_

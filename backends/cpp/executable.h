#ifndef LOOM_BACKENDS_CPP_EXECUTABLE_H_
#define LOOM_BACKENDS_CPP_EXECUTABLE_H_

#include <cstddef>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "backends/cpp/runtime.h"
#include "ir/module.h"
#include "ir/tensor.h"

namespace loom::cpp {

// A compiled module, ready to run: the loaded shared object plus storage for
// every buffer of the loop program (weights copied from the graph,
// temporaries and outputs allocated once and reused by every Run). When the
// schedule has a memory plan, the temporaries share one 64-byte-aligned
// arena at the plan's offsets, and internal buffers get no storage (a null
// pointer).
class CppExecutable {
 public:
  // Compiles module.source natively (through the runtime's cache) and binds
  // its buffers. The module must have been through lowering and codegen.
  static absl::StatusOr<CppExecutable> Create(const Module& module,
                                              std::string cache_dir = DefaultCacheDir());

  // Runs the schedule on `inputs` (in the order of the graph's inputs;
  // types are checked) and returns copies of the graph's outputs.
  absl::StatusOr<std::vector<Tensor>> Run(absl::Span<const Tensor> inputs);

  // Runs the schedule and leaves the outputs in the executable's own
  // storage, where Outputs() copies them from: nothing is allocated or
  // copied, so this is what a timing loop calls.
  absl::Status Execute(absl::Span<const Tensor> inputs);
  std::vector<Tensor> Outputs() const;

  bool cache_hit() const { return library_.cache_hit(); }
  double compile_seconds() const { return library_.compile_seconds(); }

 private:
  using KernelFn = void (*)(void* const*);
  explicit CppExecutable(NativeLibrary library) : library_(std::move(library)) {}

  NativeLibrary library_;
  std::vector<KernelFn> functions_;
  LaunchTable launches_;
  std::vector<int64_t> element_bytes_;  // per buffer
  // One per buffer; inputs, and temporaries in the arena, stay empty.
  std::vector<Tensor> storage_;
  std::vector<std::byte> arena_;  // the plan's arena, with slack to align it
  std::vector<void*> pointers_;  // each buffer's storage
  std::vector<void*> arguments_;  // scratch: the addresses one launch receives
  std::vector<BufferId> inputs_;
  std::vector<TensorType> input_types_;
  std::vector<BufferId> outputs_;
};

}  // namespace loom::cpp

#endif  // LOOM_BACKENDS_CPP_EXECUTABLE_H_

#ifndef LOOM_BACKENDS_CPP_EXECUTABLE_H_
#define LOOM_BACKENDS_CPP_EXECUTABLE_H_

#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "backends/cpp/runtime.h"
#include "ir/module.h"
#include "ir/tensor.h"

namespace loom::cpp {

// A compiled module, ready to run: the loaded shared object plus storage for
// every buffer of the loop program (weights copied from the graph,
// temporaries and outputs allocated once and reused by every Run).
class CppExecutable {
 public:
  // Compiles module.source natively (through the runtime's cache) and binds
  // its buffers. The module must have been through lowering and codegen.
  static absl::StatusOr<CppExecutable> Create(const Module& module,
                                              std::string cache_dir = DefaultCacheDir());

  // Runs the schedule on `inputs` (in the order of the graph's inputs;
  // types are checked) and returns the graph's outputs.
  absl::StatusOr<std::vector<Tensor>> Run(absl::Span<const Tensor> inputs);

  bool cache_hit() const { return library_.cache_hit(); }
  double compile_seconds() const { return library_.compile_seconds(); }

 private:
  using Entry = void (*)(void* const*);
  CppExecutable(NativeLibrary library, Entry entry) : library_(std::move(library)), entry_(entry) {}

  NativeLibrary library_;
  Entry entry_;
  std::vector<Tensor> storage_;  // one per buffer; inputs stay empty
  std::vector<void*> pointers_;  // what the entry receives
  std::vector<BufferId> inputs_;
  std::vector<TensorType> input_types_;
  std::vector<BufferId> outputs_;
};

}  // namespace loom::cpp

#endif  // LOOM_BACKENDS_CPP_EXECUTABLE_H_

#ifndef LOOM_IR_MODULE_H_
#define LOOM_IR_MODULE_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "ir/gemm.h"
#include "ir/graph.h"
#include "ir/loop_ir.h"
#include "ir/schedule.h"
#include "ir/shape_constants.h"

namespace loom {

// A kernel argument: a buffer, from an element offset on.
struct BufferRef {
  BufferId buffer = -1;
  int64_t offset = 0;
};

// The kernel launches of a schedule, in order, as a table the runtime walks
// (the emitted source holds only the distinct functions, so its size does
// not grow with the number of launches). Launch i calls functions[function[i]]
// with args[arg_offsets[i] .. arg_offsets[i+1]). A negative function[i] is
// a library call instead, the matrix product gemms[GemmOf(i)] (a backend
// that calls its library from the runtime, as the CUDA one calls cuBLAS;
// the Gemm names its buffers, the launch has no args). Launch i runs the
// schedule's kernels [kernel_offsets[i], kernel_offsets[i+1]): one, or a
// gemm kernel and the next as its epilogue (backends/cpp/library_calls.h).
struct LaunchTable {
  std::vector<int32_t> function;
  std::vector<int32_t> arg_offsets = {0};
  std::vector<int32_t> kernel_offsets = {0};
  std::vector<BufferRef> args;
  std::vector<Gemm> gemms;

  static int32_t GemmFunction(size_t gemm) { return -1 - static_cast<int32_t>(gemm); }
  bool IsGemm(size_t launch) const { return function[launch] < 0; }
  int32_t GemmOf(size_t launch) const { return -1 - function[launch]; }

  size_t size() const { return function.size(); }
  // The launch that runs the schedule's kernel `kernel`, or -1 for none.
  int LaunchOfKernel(int kernel) const;
};

// Source code a backend emitted for a schedule.
struct GeneratedSource {
  std::string language;  // "c++" or "cuda"
  std::string text;
  // The exported kernel functions, by symbol name; each takes the array of
  // its arguments' addresses (void* const*).
  std::vector<std::string> functions;
  LaunchTable launches;
  int kernel_functions = 0;  // distinct kernel functions in `text`
  // The backend's plan of each function, by index, as text for dumps
  // (--dump_after): why it runs as it does (threads, vectors, streaming
  // stores, library calls). Empty where the backend keeps none.
  std::vector<std::string> function_plans;
  // Flags the backend's native compiler must use for `text` (optimisation
  // level, target ISA, OpenMP), chosen by the codegen pass's options.
  std::vector<std::string> native_flags;
  // Whether `text` calls CBLAS (cblas_dgemm) or oneDNN (dnnl_sgemm): the
  // native build must link a BLAS library or oneDNN.
  bool calls_blas = false;
  bool calls_dnnl = false;
  // Whether `text` calls libm functions that loops call in SLEEF's vectors
  // on aarch64 (sin, cos, ...): the native build there links SLEEF where
  // installed (NativeCompileOptions::link_sleef).
  bool calls_sleef = false;
  // Translation units that `text`'s kernels call into, such as the oneDNN
  // convolution of conv calls: each compiles on its own, once per native
  // compiler command, and links into the kernels' library.
  std::vector<std::string> support_sources;
  // The integers of `text` that follow from the shapes and that `text`
  // would be correct with at run time, in order (ir/shape_constants.h).
  // Every launch passes their values to its function, after its arguments:
  // a function compiled for other shapes reads them there.
  std::vector<ShapeConstant> shape_constants;
};

// The source as one translation unit: the support sources, then `text`.
std::string StandaloneText(const GeneratedSource& source);

// Everything a pipeline's passes read and write. Each stage fills in its
// part: graph passes rewrite `graph`, lowering sets `loops`, the scheduler
// `schedule` and a backend's codegen `source`. Lowering consumes the graph's
// nodes: afterwards `graph` holds only the values and the interface (inputs,
// weights and their data, constants, outputs) that the runtime binds.
struct Module {
  Graph graph;
  std::optional<LoopProgram> loops;
  std::optional<Schedule> schedule;
  std::optional<GeneratedSource> source;
  // Whether passes record the decisions that only an explanation reads
  // (LoopProgram::inline_decisions): off by default, as they would hold a
  // name per inlined value, millions in an unrolled recurrence.
  bool record_decisions = false;
};

// The names of the compute nodes that launch `launch` runs (those of the
// schedule's kernels it runs), in order.
std::vector<absl::string_view> LaunchNodes(const LaunchTable& launches, const LoopProgram& program,
                                           const Schedule& schedule, size_t launch);

// The launch table, one line per launch: "loom_f0(buf, buf+64)  # nodes"
// (the nodes of the schedule's kernels that the launch runs); a library call as
// "gemm f32 m=8 n=4 k=16 (a, b^T, c) ld 16 16 4", with "batch [2] strides
// 128 0 32" when it has batch loops.
std::string PrintLaunches(const GeneratedSource& source, const LoopProgram& program,
                          const Schedule& schedule);

// The source text with each function's plan (GeneratedSource::
// function_plans) in a block of // comments before the function's
// definition, for dumps: the emitted source itself holds no plans.
std::string SourceWithPlans(const GeneratedSource& source);

}  // namespace loom

#endif  // LOOM_IR_MODULE_H_

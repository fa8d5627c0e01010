#ifndef LOOM_TESTS_E2E_E2E_TEST_UTIL_H_
#define LOOM_TESTS_E2E_E2E_TEST_UTIL_H_

// The harness of the end-to-end tests: build a small graph, run it through
// the whole CPU path (the built-in cpu pipeline through the compiler's
// driver, then the native compile and a run) and compare every output with
// the reference interpreter.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "ir/module.h"
#include "ir/tensor.h"

namespace loom {

// Builds a graph one op at a time; node names are "<op>_<position>".
class GraphBuilder {
 public:
  ValueId Input(const std::string& name, DType dtype, Shape shape);
  // A weight of `dtype` filled uniformly from [low, high) (integers: the
  // floor) by `seed`.
  ValueId Weight(const std::string& name, Shape shape, uint64_t seed, double low = -1,
                 double high = 1, DType dtype = DType::kF32);
  // A weight or constant holding `data`.
  ValueId Initializer(const std::string& name, ValueKind kind, Tensor data);
  // Adds a node with one output and returns it.
  ValueId Op(const std::string& op, std::vector<ValueId> inputs, Attrs attrs = {});
  // Adds a node with `num_outputs` outputs and returns them.
  std::vector<ValueId> Ops(const std::string& op, std::vector<ValueId> inputs, int num_outputs,
                           Attrs attrs = {});
  void Output(ValueId value) { graph_.AddOutput(value); }
  Graph& graph() { return graph_; }

 private:
  Graph graph_;
};

Attrs IntsAttr(const std::string& name, std::vector<int64_t> values);

struct EndToEndOptions {
  // Graph inputs are uniform in [-2, 2) (floats), integers in [-5, 5] or
  // bools; `fill`, when set, may then change input i.
  std::function<void(size_t i, Tensor& input)> fill;
  // Convs as library calls (DecomposeOptions::conv_calls, as the cpu
  // pipeline has them) rather than gemm calls and loops, which the tests
  // compile by default.
  bool conv_calls = false;
  // Convs as calls on channels-last data (DecomposeOptions::
  // channels_last_conv_calls, as the cpu pipeline has them); the tests
  // compile the NCHW decompositions by default.
  bool channels_last = false;
  // The native code's target (CppOptions.march; empty: this machine).
  std::string march;
  // Recurrences kept as loops (DecomposeOptions rnn: LOOP) rather than
  // unrolled.
  bool rnn_loop = false;
};

// The inputs CompileRunAndCompare feeds `graph` (shapes must be inferred):
// compiler/check.h's MakeInputs in the ranges above, then options.fill.
std::vector<Tensor> MakeInputs(const Graph& graph, const EndToEndOptions& options = {});

// Compiles `graph` with the built-in cpu pipeline up to the emitted C++,
// verifying the IR after every pass, with these of its options replaced:
// the native code is for `march` (CppOptions.march; empty: this machine),
// outputs of at least `streaming_store_min_bytes` are streamed (CppOptions;
// -1: none; by default small ones too, so that the tests run them), and
// `conv_calls`, `channels_last` and `rnn_loop` as in EndToEndOptions.
absl::StatusOr<Module> EmitModule(Graph graph, const std::string& march = "",
                                  int64_t streaming_store_min_bytes = 4096, bool conv_calls = false,
                                  bool channels_last = false, bool rnn_loop = false);

// The kernel cache of the tests: $TEST_TMPDIR/cache (/tmp/cache outside
// bazel test).
std::string TestCacheDir();

// Compiles `graph` as EmitModule does, natively with the cache of
// TestCacheDir, and runs it on `inputs`; for an Arm `march` ("armv8-a"),
// cross-compiled and under QEMU (aarch64_run.h).
absl::StatusOr<std::vector<Tensor>> CompileAndRun(Graph graph, const std::vector<Tensor>& inputs,
                                                  const std::string& march = "",
                                                  int64_t streaming_store_min_bytes = 4096,
                                                  bool conv_calls = false,
                                                  bool channels_last = false,
                                                  bool rnn_loop = false);

// Infers shapes, then checks that the compiled graph's outputs match the
// interpreter's: floats within kCheckAbsTolerance + kCheckRelTolerance *
// |expected| (NaN where NaN is expected, the same infinity where one is),
// everything else exactly; with conv_calls or channels_last, by the
// --check rule.
// For Arm, a graph whose kernels call a library is left out (with a line
// on stdout): the cross toolchain has none.
void CompileRunAndCompare(Graph graph, const EndToEndOptions& options = {});

// Checks `actual` against `expected` (the outputs `names`) as
// CompileRunAndCompare does without conv calls.
void ExpectEqualWithinTolerance(const std::vector<Tensor>& actual,
                                const std::vector<Tensor>& expected,
                                const std::vector<std::string>& names);

// Judges `actual`, the compiled `graph`'s outputs on `inputs`, by `loom run
// --check`'s rule (compiler/check.h), as CompileRunAndCompare does conv calls.
void ExpectPassesCheck(const Graph& graph, const std::vector<Tensor>& inputs,
                       const std::vector<Tensor>& actual);

// The dynamic symbols the shared object at `library` imports, without their
// versions (nm -D).
std::vector<std::string> ImportedSymbols(const std::string& library);

// The instructions of `library`'s code, one per line, as `objdump` (that
// of the library's target) prints them.
std::string Disassembly(const std::string& library, const std::string& objdump = "objdump");

}  // namespace loom

#endif  // LOOM_TESTS_E2E_E2E_TEST_UTIL_H_

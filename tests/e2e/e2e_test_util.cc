#include "tests/e2e/e2e_test_util.h"

#include <cmath>
#include <cstdlib>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "backends/cpp/aarch64_run.h"
#include "backends/cpp/executable.h"
#include "backends/cpp/subprocess.h"
#include "compiler/check.h"
#include "compiler/driver.h"
#include "gtest/gtest.h"
#include "ir/interpreter.h"
#include "ir/op_registry.h"
#include "ir/random.h"
#include "ir/status_macros.h"

namespace loom {
namespace {

// Floats in [-2, 2) and integers in [-5, 5]: negative values, and values
// past 1 in magnitude.
constexpr InputRanges kInputRanges = {-2, 2, -5, 6};
constexpr uint64_t kInputSeed = 100;

// The cpu pipeline's options that EmitModule replaces.
std::vector<PassOptionsOverride> PipelineOverrides(const std::string& march,
                                                   int64_t streaming_store_min_bytes,
                                                   bool conv_calls, bool channels_last,
                                                   bool rnn_loop) {
  std::string cpp = absl::StrCat("cpp { streaming_store_min_bytes: ", streaming_store_min_bytes);
  if (!march.empty()) absl::StrAppend(&cpp, " march: \"", march, "\"");
  absl::StrAppend(&cpp, " }");
  return {{"decompose",
           absl::StrCat("decompose { rnn: ", rnn_loop ? "LOOP" : "UNROLL",
                        " conv_calls: ", conv_calls ? "true" : "false",
                        " channels_last_conv_calls: ", channels_last ? "true" : "false", " }")},
          {"codegen-cpp", cpp}};
}

}  // namespace

ValueId GraphBuilder::Input(const std::string& name, DType dtype, Shape shape) {
  return *graph_.AddInput(name, TensorType{dtype, std::move(shape)});
}

ValueId GraphBuilder::Weight(const std::string& name, Shape shape, uint64_t seed, double low,
                             double high, DType dtype) {
  Tensor data(dtype, std::move(shape));
  FillUniform(data, seed, low, high);
  return Initializer(name, ValueKind::kWeight, std::move(data));
}

ValueId GraphBuilder::Initializer(const std::string& name, ValueKind kind, Tensor data) {
  return *graph_.AddInitializer(name, kind, std::move(data));
}

ValueId GraphBuilder::Op(const std::string& op, std::vector<ValueId> inputs, Attrs attrs) {
  return Ops(op, std::move(inputs), 1, std::move(attrs))[0];
}

std::vector<ValueId> GraphBuilder::Ops(const std::string& op, std::vector<ValueId> inputs,
                                       int num_outputs, Attrs attrs) {
  const std::string name = absl::StrCat(op, "_", graph_.nodes().size());
  std::vector<std::string> outputs;
  for (int i = 0; i < num_outputs; ++i) {
    outputs.push_back(absl::StrCat(name, ".y", i));
  }
  const NodeId id = *graph_.AddNode(name, op, std::move(inputs), outputs, std::move(attrs));
  return graph_.node(id).outputs;
}

Attrs IntsAttr(const std::string& name, std::vector<int64_t> values) {
  Attrs attrs;
  attrs.Set(name, std::move(values));
  return attrs;
}

std::vector<Tensor> MakeInputs(const Graph& graph, const EndToEndOptions& options) {
  // Reads no file: cannot fail.
  std::vector<Tensor> inputs = MakeInputs(graph, /*dir=*/"", kInputSeed, kInputRanges).value();
  if (options.fill) {
    for (size_t i = 0; i < inputs.size(); ++i) options.fill(i, inputs[i]);
  }
  return inputs;
}

absl::StatusOr<Module> EmitModule(Graph graph, const std::string& march,
                                  int64_t streaming_store_min_bytes, bool conv_calls,
                                  bool channels_last, bool rnn_loop) {
  CompileOptions options;
  options.model = graph.name;
  options.pass_options =
      PipelineOverrides(march, streaming_store_min_bytes, conv_calls, channels_last, rnn_loop);
  options.native_compile = false;
  options.verify_each = true;
  LOOM_ASSIGN_OR_RETURN(CompiledModel compiled, CompileGraph(std::move(graph), options));
  return std::move(compiled.module);
}

std::string TestCacheDir() {
  const char* tmpdir = std::getenv("TEST_TMPDIR");  // set by bazel test
  return absl::StrCat(tmpdir != nullptr ? tmpdir : "/tmp", "/cache");
}

absl::StatusOr<std::vector<Tensor>> CompileAndRun(Graph graph, const std::vector<Tensor>& inputs,
                                                  const std::string& march,
                                                  int64_t streaming_store_min_bytes,
                                                  bool conv_calls, bool channels_last,
                                                  bool rnn_loop) {
  LOOM_ASSIGN_OR_RETURN(Module module,
                        EmitModule(std::move(graph), march, streaming_store_min_bytes, conv_calls,
                                   channels_last, rnn_loop));
  if (cpp::IsAarch64March(march)) return cpp::RunOnAarch64(module, {}, inputs, TestCacheDir());
  LOOM_ASSIGN_OR_RETURN(cpp::CppExecutable executable,
                        cpp::CppExecutable::Create(module, TestCacheDir()));
  return executable.Run(inputs);
}

void CompileRunAndCompare(Graph graph, const EndToEndOptions& options) {
  ASSERT_TRUE(InferShapes(graph).ok()) << InferShapes(graph);
  const std::vector<Tensor> inputs = MakeInputs(graph, options);
  absl::StatusOr<std::vector<Tensor>> expected = Interpret(graph, inputs);
  ASSERT_TRUE(expected.ok()) << expected.status();
  std::vector<std::string> names;
  for (ValueId id : graph.outputs()) names.push_back(graph.value(id).name);

  // A conv call sums in oneDNN's order, which on some ISAs (AVX2's direct
  // convolution) differs from the interpreter's by more than the fixed
  // tolerance on 576-term sums: it is judged by `loom run --check`'s rule,
  // against the float64 truth and the error bound of loom's computation.
  std::optional<Graph> checked;
  if (options.conv_calls || options.channels_last) checked = graph;
  absl::StatusOr<std::vector<Tensor>> actual =
      CompileAndRun(std::move(graph), inputs, options.march, 4096, options.conv_calls,
                    options.channels_last, options.rnn_loop);
  if (cpp::IsAarch64March(options.march) && absl::IsUnimplemented(actual.status())) {
    std::printf("not run on %s: %s\n", options.march.c_str(),
                std::string(actual.status().message()).c_str());
    return;
  }
  ASSERT_TRUE(actual.ok()) << actual.status();
  ASSERT_EQ(actual->size(), expected->size());
  if (checked.has_value()) {
    ExpectPassesCheck(*checked, inputs, *actual);
    return;
  }
  ExpectEqualWithinTolerance(*actual, *expected, names);
}

void ExpectPassesCheck(const Graph& graph, const std::vector<Tensor>& inputs,
                       const std::vector<Tensor>& actual) {
  absl::StatusOr<CheckResult> check = CheckOutputs(graph, inputs, actual);
  ASSERT_TRUE(check.ok()) << check.status();
  EXPECT_TRUE(check->pass) << check->worst;
}

void ExpectEqualWithinTolerance(const std::vector<Tensor>& actual,
                                const std::vector<Tensor>& expected,
                                const std::vector<std::string>& names) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t o = 0; o < expected.size(); ++o) {
    const Tensor& e = expected[o];
    const Tensor& a = actual[o];
    const std::string& output = names[o];
    ASSERT_EQ(a.type(), e.type()) << output;
    for (int64_t i = 0; i < e.num_elements(); ++i) {
      if (!IsFloat(e.dtype())) {
        ASSERT_EQ(a.GetInt(i), e.GetInt(i)) << output << " element " << i;
        continue;
      }
      const double want = e.GetDouble(i), got = a.GetDouble(i);
      if (std::isnan(want) || std::isinf(want)) {
        ASSERT_TRUE(std::isnan(want) ? std::isnan(got) : got == want)
            << output << " element " << i << ": got " << got << ", want " << want;
        continue;
      }
      ASSERT_NEAR(got, want, kCheckAbsTolerance + kCheckRelTolerance * std::fabs(want))
          << output << " element " << i;
    }
  }
}

// The dynamic symbols `library` imports, without their versions.
std::vector<std::string> ImportedSymbols(const std::string& library) {
  absl::StatusOr<cpp::ProcessResult> nm = cpp::RunProcess(
      {"nm", "-D", "--undefined-only", "--format=posix", library}, TestCacheDir(), 1 << 20);
  EXPECT_TRUE(nm.ok() && nm->Succeeded()) << (nm.ok() ? nm->output : nm.status().ToString());
  std::vector<std::string> symbols;
  if (!nm.ok()) return symbols;
  for (absl::string_view line : absl::StrSplit(nm->output, '\n', absl::SkipEmpty())) {
    symbols.emplace_back(line.substr(0, line.find_first_of(" @")));
  }
  return symbols;
}

std::string Disassembly(const std::string& library, const std::string& objdump) {
  absl::StatusOr<cpp::ProcessResult> listing =
      cpp::RunProcess({objdump, "-d", "--no-show-raw-insn", library}, TestCacheDir(), 1 << 26);
  EXPECT_TRUE(listing.ok() && listing->Succeeded())
      << (listing.ok() ? listing->output : listing.status().ToString());
  return listing.ok() ? listing->output : "";
}

}  // namespace loom

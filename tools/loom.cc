// The loom command line (docs/usage.md):
//   loom                  compile, run and check the built-in examples
//   loom compile --model=M [--pipeline=P] [--out_dir=D] [--aot=P --aot_class=C] [--report=R.json]
//                [--dump_after=RE --dump_dir=D2]
//   loom run     --model=M [--pipeline=P] [--inputs=DIR] [--check]
//                [--iters=N] [--roofline] [--profile] [--report=R.json]
//   loom gen     --kind=K [--layers= --hidden= --input= --seq= --batch=
//                --groups= --channels= --nodes= --seed=] --out=M
// Exit status: 0 success, 1 a --check mismatch, 2 bad input or usage,
// 3 internal error.

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "compiler/check.h"
#include "compiler/driver.h"
#include "compiler/dynamic_model.h"
#include "ir/file_io.h"
#include "ir/graph_io.h"
#include "tools/aot.h"
#include "tools/gen.h"
#include "tools/graph_dot.h"

// --dims=NAME=N,NAME=LO..HI,...: sizes or bounds of a model's named
// input dims.
struct NamedDims {
  absl::flat_hash_map<std::string, int64_t> sizes;
  absl::flat_hash_map<std::string, loom::DimBounds> bounds;
};

bool AbslParseFlag(absl::string_view text, NamedDims* dims, std::string* error) {
  *dims = {};
  for (absl::string_view item : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    const std::pair<absl::string_view, absl::string_view> name_value = absl::StrSplit(item, '=');
    const std::string name(name_value.first);
    const std::pair<absl::string_view, absl::string_view> range =
        absl::StrSplit(name_value.second, "..");
    int64_t low = 0, high = 0;
    const bool is_range = absl::StrContains(name_value.second, "..");
    if (name.empty() || !absl::SimpleAtoi(range.first, &low) || low < 0 ||
        (is_range && (!absl::SimpleAtoi(range.second, &high) || high < low))) {
      *error = absl::StrCat("'", item,
                            "' is not NAME=SIZE or NAME=MIN..MAX with sizes of 0 or more and "
                            "MIN at most MAX");
      return false;
    }
    if (dims->sizes.contains(name) || dims->bounds.contains(name)) {
      *error = absl::StrCat("the dim '", name, "' is given twice");
      return false;
    }
    if (is_range) {
      dims->bounds[name] = {low, high};
    } else {
      dims->sizes[name] = low;
    }
  }
  return true;
}

std::string AbslUnparseFlag(const NamedDims& dims) {
  std::vector<std::string> items;
  for (const auto& [name, size] : dims.sizes) items.push_back(absl::StrCat(name, "=", size));
  for (const auto& [name, b] : dims.bounds) {
    items.push_back(absl::StrCat(name, "=", b.min, "..", b.max));
  }
  return absl::StrJoin(items, ",");
}

ABSL_FLAG(std::string, model, "",
          "the model: a graph text proto (.pbtxt) or an ONNX model (.onnx)");
ABSL_FLAG(std::string, pipeline, "cpu", "built-in pipeline name or pipeline file");
ABSL_FLAG(NamedDims, dims, {},
          "sizes of the model's named input dims (an ONNX model's dim_param, a graph input's "
          "dim_names), NAME=N,... (e.g. batch=1,sequence=128), "
          "or their bounds, NAME=MIN..MAX, for sizes that run's --inputs=DIR of .npy files "
          "give; compile with bounds and --out_dir: one artifact for every shape within them");
ABSL_FLAG(std::string, out_dir, "",
          "compile: write the emitted source and the artifact (model.loom) here");
ABSL_FLAG(std::string, report, "", "write the report as JSON to this file");
ABSL_FLAG(std::string, aot, "",
          "compile: write the model as C++ to build into a program, <aot>.h and <aot>.cc "
          "(what loom_cc_library runs)");
ABSL_FLAG(std::string, aot_class, "", "compile: the class --aot declares (default: Model)");
ABSL_FLAG(std::string, dump_after, "", "dump the IR after passes matching this re2 pattern");
ABSL_FLAG(std::string, dump_dir, "", "directory for --dump_after");
ABSL_FLAG(
    std::string, graph, "",
    "compile: draw the fused schedule into this .dot file (.svg, .png or .pdf with Graphviz)");
ABSL_FLAG(std::string, explain_fusion, "",
          "compile: print why compute node NODE did or did not fuse with each "
          "candidate neighbour");
ABSL_FLAG(std::string, inputs, "",
          "run: directory of <input>.npy arrays (their shapes bind named dims) or <input>.bin "
          "raw input data");
ABSL_FLAG(bool, check, false, "run: judge outputs against the model evaluated in float64");
ABSL_FLAG(int, iters, 1, "run: how many times to run");
ABSL_FLAG(int, warmup, 0, "run: untimed runs before the timed ones");
ABSL_FLAG(bool, roofline, false, "run: measure copy bandwidth in the same process, after each run");
ABSL_FLAG(bool, profile, false,
          "run: then --iters more runs, each kernel launch timed: each kernel function's time");
ABSL_FLAG(std::string, kind, "", "gen: what to generate");
ABSL_FLAG(int, layers, 1, "gen: layers");
ABSL_FLAG(int, hidden, 64, "gen: hidden size");
ABSL_FLAG(int, input, 32, "gen: input size");
ABSL_FLAG(int, seq, 16, "gen: sequence length");
ABSL_FLAG(int, batch, 2, "gen: batch size");
ABSL_FLAG(int, groups, 2, "gen: groups");
ABSL_FLAG(int, channels, 16, "gen: channels");
ABSL_FLAG(int, nodes, 100, "gen: about how many nodes (random)");
ABSL_FLAG(uint64_t, seed, 1, "gen: random seed; run: seed of random inputs");
ABSL_FLAG(std::string, out, "", "gen: the model file to write");
ABSL_FLAG(bool, help, false, "print the usage and the flags (of a command, after it)");
ABSL_FLAG(bool, quiet, false,
          "no progress line on a terminal (shown once a compile has run a second)");

namespace loom {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitCheckFailed = 1;
constexpr int kExitBadInput = 2;
constexpr int kExitInternal = 3;

constexpr char kUsage[] = R"(usage:
  loom                      compile, run and check the built-in examples
  loom compile --model=M [--dims=NAME=N|NAME=MIN..MAX,...] [--pipeline=P] [--out_dir=D]
               [--report=R.json] [--dump_after=RE --dump_dir=D2] [--graph=G.dot|.svg|.png] [--quiet]
               [--aot=P [--aot_class=C]]
  loom run     --model=M|D/model.loom [--dims=NAME=N|NAME=MIN..MAX,...] [--pipeline=P]
               [--inputs=DIR] [--check] [--iters=N] [--warmup=N] [--roofline] [--profile]
               [--report=R.json]
  loom gen     --kind=K [--layers= --hidden= --input= --seq= --batch=
               --groups= --channels= --nodes= --seed=] --out=M
)";

// Bad input and usage are the user's to fix (2); anything else is loom's (3).
int ExitCodeFor(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kOutOfRange:
    case absl::StatusCode::kUnimplemented:
      return kExitBadInput;
    default:
      return kExitInternal;
  }
}

int Fail(const absl::Status& status) {
  std::cerr << "loom: " << status.message() << "\n";
  return ExitCodeFor(status);
}

int UsageError(absl::string_view message) {
  std::cerr << "loom: " << message << "\n" << kUsage;
  return kExitBadInput;
}

// Parses --name=value, --name value-less booleans and --noname; everything
// else is positional. absl::ParseCommandLine would exit(1) on a bad flag,
// but a usage error must exit 2.
absl::StatusOr<std::vector<std::string>> ParseFlags(int argc, char** argv) {
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (!absl::StartsWith(arg, "--")) {
      positional.emplace_back(arg);
      continue;
    }
    arg.remove_prefix(2);
    const size_t eq = arg.find('=');
    std::string name(arg.substr(0, eq));
    std::string value = eq == absl::string_view::npos ? "" : std::string(arg.substr(eq + 1));
    absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    if (flag == nullptr && eq == absl::string_view::npos && absl::StartsWith(name, "no")) {
      flag = absl::FindCommandLineFlag(name.substr(2));
      if (flag != nullptr && flag->IsOfType<bool>())
        value = "false";
      else
        flag = nullptr;
    } else if (flag != nullptr && eq == absl::string_view::npos) {
      if (!flag->IsOfType<bool>()) {
        return absl::InvalidArgumentError(
            absl::StrCat("flag --", name, " needs a value (--", name, "=...)"));
      }
      value = "true";
    }
    if (flag == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag --", name));
    }
    std::string error;
    if (!flag->ParseFrom(value, &error)) {
      return absl::InvalidArgumentError(
          absl::StrCat("bad value for --", flag->Name(), ": ", error));
    }
  }
  return positional;
}

CompileOptions CompileOptionsFromFlags() {
  CompileOptions options;
  options.model = absl::GetFlag(FLAGS_model);
  options.pipeline = absl::GetFlag(FLAGS_pipeline);
  options.dims = absl::GetFlag(FLAGS_dims).sizes;
  options.dim_bounds = absl::GetFlag(FLAGS_dims).bounds;
  options.out_dir = absl::GetFlag(FLAGS_out_dir);
  options.dump_after = absl::GetFlag(FLAGS_dump_after);
  options.dump_dir = absl::GetFlag(FLAGS_dump_dir);
  options.progress = !absl::GetFlag(FLAGS_quiet) && isatty(STDERR_FILENO);
  options.record_decisions = !absl::GetFlag(FLAGS_explain_fusion).empty();
  return options;
}

// How the native compile went, after its seconds: " (cached)", and where
// the kernels are another shape's compile, " (cached, shared with other
// shapes)" or " (shared with other shapes)".
std::string CacheNote(const proto::Report& r) {
  if (!r.shape_template()) return r.cache_hit() ? " (cached)" : "";
  return r.cache_hit() ? " (cached, shared with other shapes)" : " (shared with other shapes)";
}

absl::Status WriteReportIfAsked(const proto::Report& report) {
  const std::string path = absl::GetFlag(FLAGS_report);
  if (path.empty()) return absl::OkStatus();
  return WriteFileBytes(path, ReportToJson(report));
}

// `loom compile` with bounds: one artifact for every shape within them.
int CompileForEveryShape(const CompileOptions& options) {
  absl::StatusOr<proto::Report> report = DynamicModel::Compile(options);
  if (!report.ok()) return Fail(report.status());
  if (absl::Status s = WriteReportIfAsked(*report); !s.ok()) return Fail(s);
  std::cout << absl::StrFormat(
      "%s: compiled for every shape within the bounds, %s/model.loom: %d shapes of the sweep "
      "in %d classes; front end %.2f s, native compile %.2f s\n",
      options.model, options.out_dir, report->shapes(), report->shape_classes_size(),
      report->frontend_seconds(), report->native_compile_seconds());
  return kExitOk;
}

int Compile() {
  if (absl::GetFlag(FLAGS_model).empty()) return UsageError("compile needs --model");
  const std::string aot = absl::GetFlag(FLAGS_aot);
  CompileOptions options = CompileOptionsFromFlags();
  if (!options.dim_bounds.empty()) {
    if (!aot.empty()) return UsageError("--aot compiles for one shape: give each dim a size");
    return CompileForEveryShape(options);
  }
  options.native_compile = aot.empty();  // the program that links it compiles it
  options.runs_here = false;
  absl::StatusOr<CompiledModel> compiled = CompileModel(options);
  if (!compiled.ok()) return Fail(compiled.status());
  if (!aot.empty()) {
    const std::string class_name = absl::GetFlag(FLAGS_aot_class);
    if (absl::Status s = WriteAotLibrary(*compiled, aot, class_name.empty() ? "Model" : class_name);
        !s.ok()) {
      return Fail(s);
    }
  }
  if (absl::Status s = WriteReportIfAsked(compiled->report); !s.ok()) return Fail(s);
  if (const std::string node = absl::GetFlag(FLAGS_explain_fusion); !node.empty()) {
    std::cout << ExplainFusion(compiled->module, node);
  }
  if (const std::string graph = absl::GetFlag(FLAGS_graph); !graph.empty()) {
    if (absl::Status s = WriteScheduleGraph(compiled->module, graph); !s.ok()) return Fail(s);
  }
  const proto::Report& r = compiled->report;
  std::cout << absl::StrFormat(
      "%s: %d nodes, %d buffers, %d kernels (%d functions); front end %.2f ms, "
      "native compile %.2f s%s\n",
      r.model(), r.graph_nodes(), r.buffers(), r.kernels(), r.kernel_functions(),
      r.frontend_seconds() * 1e3, r.native_compile_seconds(), CacheNote(r));
  return kExitOk;
}

// The costliest kernel functions of `loom run --profile`, one a line.
void PrintProfile(const proto::Report& r) {
  constexpr int kShown = 10;
  for (int i = 0; i < std::min(r.kernel_times_size(), kShown); ++i) {
    const proto::Report::KernelTime& k = r.kernel_times(i);
    std::cout << absl::StrFormat("  %5.1f%% %9.3f ms  %s x%d  %s\n", 100 * k.share(),
                                 k.seconds() * 1e3, k.function(), k.launches(), k.label());
  }
  if (r.kernel_times_size() > kShown) {
    std::cout << absl::StrFormat("  (%d more kernel functions in the report)\n",
                                 r.kernel_times_size() - kShown);
  }
}

int Run() {
  const std::string model = absl::GetFlag(FLAGS_model);
  if (model.empty()) return UsageError("run needs --model");
  const bool artifact = absl::EndsWith(model, ".loom");
  std::optional<CompiledModel> compiled;
  if (artifact && !absl::GetFlag(FLAGS_dims).bounds.empty()) {
    return UsageError("an artifact runs at sizes (--dims=NAME=N): its bounds are its compile's");
  }
  if (artifact) {
    compiled.emplace();
  } else {
    CompileOptions compile_options = CompileOptionsFromFlags();
    compile_options.keep_input_graph = absl::GetFlag(FLAGS_check);
    if (const std::string dir = absl::GetFlag(FLAGS_inputs); !dir.empty()) {
      absl::StatusOr<absl::flat_hash_map<std::string, Shape>> shapes = NpyInputShapes(dir);
      if (!shapes.ok()) return Fail(shapes.status());
      compile_options.input_shapes = *std::move(shapes);
    }
    absl::StatusOr<CompiledModel> compiled_now = CompileModel(compile_options);
    if (!compiled_now.ok()) return Fail(compiled_now.status());
    compiled.emplace(*std::move(compiled_now));
  }
  RunModelOptions options;
  options.inputs_dir = absl::GetFlag(FLAGS_inputs);
  options.check = absl::GetFlag(FLAGS_check);
  options.iters = absl::GetFlag(FLAGS_iters);
  options.warmup = absl::GetFlag(FLAGS_warmup);
  options.roofline = absl::GetFlag(FLAGS_roofline);
  options.profile = absl::GetFlag(FLAGS_profile);
  options.seed = absl::GetFlag(FLAGS_seed);
  if (absl::Status s = artifact ? RunAnyArtifact(model,
                                                 DimSizes(absl::GetFlag(FLAGS_dims).sizes.begin(),
                                                          absl::GetFlag(FLAGS_dims).sizes.end()),
                                                 options, compiled->report)
                                : RunModel(*compiled, options);
      !s.ok()) {
    return Fail(s);
  }
  if (absl::Status s = WriteReportIfAsked(compiled->report); !s.ok()) return Fail(s);
  const proto::Report& r = compiled->report;
  std::cout << absl::StrFormat("%s: median %.3f ms over %d runs; check %s", r.model(),
                               r.run_seconds_median() * 1e3, r.iters(), r.check());
  if (r.check() != "skipped") {
    std::cout << absl::StrFormat(
        " (against the float64 truth: max abs error %.3g, max rel error %.3g%s)", r.max_abs_error(),
        r.max_rel_error(),
        r.check_detail().empty() ? "" : absl::StrCat("; worst: ", r.check_detail()));
  }
  if (options.roofline) {
    std::cout << absl::StrFormat("; %.2f GB/s moved of %.2f GB/s copy bandwidth",
                                 r.min_bytes() / r.run_seconds_median() / 1e9, r.stream_gbps());
  }
  std::cout << "\n";
  PrintProfile(r);
  return r.check() == "fail" ? kExitCheckFailed : kExitOk;
}

int Gen() {
  GenOptions options;
  options.kind = absl::GetFlag(FLAGS_kind);
  options.layers = absl::GetFlag(FLAGS_layers);
  options.hidden = absl::GetFlag(FLAGS_hidden);
  options.input = absl::GetFlag(FLAGS_input);
  options.seq = absl::GetFlag(FLAGS_seq);
  options.batch = absl::GetFlag(FLAGS_batch);
  options.groups = absl::GetFlag(FLAGS_groups);
  options.channels = absl::GetFlag(FLAGS_channels);
  options.nodes = absl::GetFlag(FLAGS_nodes);
  options.seed = absl::GetFlag(FLAGS_seed);
  const std::string out = absl::GetFlag(FLAGS_out);
  if (options.kind.empty()) {
    return UsageError(
        absl::StrCat("gen needs --kind (one of ", absl::StrJoin(GeneratorKinds(), ", "), ")"));
  }
  if (out.empty()) return UsageError("gen needs --out");
  absl::StatusOr<proto::Graph> graph = GenerateModel(options);
  if (!graph.ok()) return Fail(graph.status());
  if (absl::Status s = WriteFileBytes(out, GraphProtoToText(*graph)); !s.ok()) {
    return Fail(s);
  }
  std::cout << absl::StrFormat("%s: %d nodes\n", out, graph->node_size());
  return kExitOk;
}

// The examples the demo runs, with the default pipeline; `bazel run
// //tools:loom` starts in the runfiles tree, where they are data
// dependencies.
constexpr const char* kDemoExamples[] = {
    "examples/mlp.pbtxt",
    "examples/softmax.pbtxt",
    "examples/softmax_large.pbtxt",
    "examples/layer_norm.pbtxt",
    "examples/layer_norm_large.pbtxt",
    "examples/group_norm.pbtxt",
    "examples/group_norm_large.pbtxt",
    "examples/lstm_l2_h64.pbtxt",
    "examples/lstm_l6_h256.pbtxt",
    "examples/gru_l2_h64.pbtxt",
};

int Demo() {
  std::cout << "loom demo: compile, run and check each example against the "
               "model evaluated in float64\n";
  int passed = 0, total = 0;
  for (const char* model : kDemoExamples) {
    ++total;
    CompileOptions options;
    options.model = model;
    options.keep_input_graph = true;
    absl::StatusOr<CompiledModel> compiled = CompileModel(options);
    RunModelOptions run_options;
    run_options.check = true;
    run_options.iters = 10;
    absl::Status status = compiled.ok() ? RunModel(*compiled, run_options) : compiled.status();
    if (!status.ok()) {
      std::cout << absl::StrFormat("  %-32s error: %s\n", model, status.message());
      continue;
    }
    const proto::Report& r = compiled->report;
    passed += r.check() == "pass";
    std::cout << absl::StrFormat(
        "  %-32s %3d nodes %3d buffers %3d kernels | front end %6.2f ms | "
        "native %5.2f s%s | run %8.1f us | check %s (max abs error %.2g)\n",
        model, r.graph_nodes(), r.buffers(), r.kernels(), r.frontend_seconds() * 1e3,
        r.native_compile_seconds(), CacheNote(r), r.run_seconds_median() * 1e6, r.check(),
        r.max_abs_error());
  }
  std::cout << absl::StrFormat("loom demo: %d of %d examples pass\n", passed, total);
  return passed == total ? kExitOk : kExitCheckFailed;
}

// The usage, then one line per flag of this file that `command` takes
// (its help starts with "<command>:") or every command takes (no such
// prefix); every flag for no command.
std::string Help(const std::string& command) {
  std::vector<std::string> lines;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (!absl::EndsWith(flag->Filename(), "tools/loom.cc")) continue;
    const std::string help = flag->Help();
    const size_t colon = help.find(": ");
    const bool for_some = colon != std::string::npos && help.find(' ') > colon;
    const bool for_command = absl::StartsWith(help, command + ":") ||
                             absl::StrContains(help, absl::StrCat("; ", command, ":"));
    if (!command.empty() && for_some && !for_command) continue;
    lines.push_back(absl::StrFormat("  --%-15s %s (default: %s)", name, help,
                                    flag->DefaultValue().empty() ? "none" : flag->DefaultValue()));
  }
  std::sort(lines.begin(), lines.end());
  return absl::StrCat(kUsage, "flags", command.empty() ? "" : absl::StrCat(" of ", command), ":\n",
                      absl::StrJoin(lines, "\n"), "\n");
}

int Main(int argc, char** argv) {
  absl::StatusOr<std::vector<std::string>> positional = ParseFlags(argc, argv);
  if (!positional.ok()) return UsageError(positional.status().message());
  if (absl::GetFlag(FLAGS_help)) {
    std::cout << Help(positional->empty() ? "" : (*positional)[0]);
    return kExitOk;
  }
  if (positional->empty()) return Demo();
  if (positional->size() > 1) {
    return UsageError(absl::StrCat("unexpected argument '", (*positional)[1], "'"));
  }
  const std::string& command = (*positional)[0];
  if (command == "compile") return Compile();
  if (command == "run") return Run();
  if (command == "gen") return Gen();
  if (command == "help") {
    std::cout << Help("");
    return kExitOk;
  }
  return UsageError(absl::StrCat("unknown command '", command, "'"));
}

}  // namespace
}  // namespace loom

int main(int argc, char** argv) { return loom::Main(argc, argv); }

// The generated CUDA, run on the CPU through testing/emulation.h (threads as
// OS threads, barriers, shuffles through memory) and compared with the
// reference interpreter: the kernels' thread mapping, reductions, barriers
// and shared memory are checked on machines without a GPU. Grids are capped
// at 3 blocks, so the kernels' loops over outer iterations run too.

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "backends/cuda/codegen.h"
#include "gtest/gtest.h"
#include "ir/graph_io.h"
#include "ir/index_error.h"
#include "ir/interpreter.h"
#include "ir/module.h"
#include "ir/random.h"
#include "ir/status_macros.h"
#include "passes/pass_manager.h"
#include "scheduler/plan_memory.h"
#include "tools/gen.h"

namespace loom {
namespace {

constexpr int kMaxBlocks = 3;

std::string ReadFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

std::string TempDir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir != nullptr ? dir : "/tmp";
}

// Compiles the module's CUDA with the emulation header into a shared object
// and loads it.
absl::StatusOr<void*> CompileEmulated(const GeneratedSource& source, const std::string& name) {
  std::string text = absl::StrReplaceAll(
      source.text, {{"extern __shared__ __align__(16) unsigned char loom_smem[];",
                     "unsigned char* const loom_smem = loom_emu_smem();"}});
  const std::string header = absl::StrCat(
      std::getenv("TEST_SRCDIR") != nullptr
          ? absl::StrCat(std::getenv("TEST_SRCDIR"), "/", std::getenv("TEST_WORKSPACE"), "/")
          : "",
      "backends/cuda/testing/emulation.h");
  text = absl::StrCat("#include \"", header, "\"\n", text);
  for (const std::string& f : source.functions) {
    absl::StrAppend(&text, "extern \"C\" void ", f,
                    "_emu(void* const* a, int grid, int threads, long long "
                    "smem) {\n  LoomEmuLaunch(",
                    f, ", a, grid, threads, smem);\n}\n");
  }
  const std::string base = absl::StrCat(TempDir(), "/", name);
  std::ofstream(base + ".cc") << text;
  const std::string command = absl::StrCat("g++ -std=c++17 -O1 -fPIC -shared -pthread -fwrapv -o ",
                                           base, ".so ", base, ".cc > ", base, ".log 2>&1");
  if (std::system(command.c_str()) != 0) {
    return absl::InternalError(
        absl::StrCat("emulated compile failed: ", command, "\n", ReadFile(base + ".log")));
  }
  void* handle = dlopen((base + ".so").c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return absl::InternalError(dlerror());
  return handle;
}

// What cuBLAS computes for `call` (column-major, cuda::CublasCall), with
// plain loops: checks the row-major to column-major translation too.
template <typename T>
void EmulateCublasCall(const cuda::CublasCall& call, const std::vector<char*>& pointers) {
  auto matrix = [&](const BufferRef& ref) {
    return reinterpret_cast<T*>(pointers[ref.buffer]) + ref.offset;
  };
  for (int p = 0; p < call.batch_count; ++p) {
    const T* a = matrix(call.a) + p * call.stride_a;
    const T* b = matrix(call.b) + p * call.stride_b;
    T* c = matrix(call.c) + p * call.stride_c;
    for (int j = 0; j < call.n; ++j) {
      for (int i = 0; i < call.m; ++i) {
        double sum = 0;
        for (int l = 0; l < call.k; ++l) {
          const T op_a = call.transpose_a ? a[l + i * call.lda] : a[i + l * call.lda];
          const T op_b = call.transpose_b ? b[j + l * call.ldb] : b[l + j * call.ldb];
          sum += static_cast<double>(op_a) * op_b;
        }
        if (call.accumulate) sum += c[i + j * call.ldc];
        c[i + j * call.ldc] = static_cast<T>(sum);
      }
    }
  }
}

// Runs the module like CudaExecutable, with host memory for device memory
// (temporaries and outputs start as 0xff bytes, NaN as floats) and
// EmulateCublasCall for cuBLAS.
absl::StatusOr<std::vector<Tensor>> RunEmulated(const Module& module,
                                                const std::vector<Tensor>& inputs,
                                                const std::string& name) {
  LOOM_ASSIGN_OR_RETURN(void* handle, CompileEmulated(*module.source, name));
  const LoopProgram& program = *module.loops;
  const MemoryPlan* plan =
      module.schedule->memory.has_value() ? &*module.schedule->memory : nullptr;
  std::vector<std::vector<uint64_t>> storage(program.buffers.size());
  std::vector<uint64_t> arena(plan != nullptr ? plan->arena_bytes / 8 + 1 : 0, ~uint64_t{0});
  std::vector<char*> pointers(program.buffers.size(), nullptr);
  for (size_t id = 0; id < program.buffers.size(); ++id) {
    const Buffer& buffer = program.buffers[id];
    const int64_t bytes = NumElements(buffer.sizes) * DTypeSize(buffer.dtype);
    if (plan != nullptr && buffer.kind == BufferKind::kTemp) {
      if (plan->offsets[id] >= 0) {
        pointers[id] = reinterpret_cast<char*>(arena.data()) + plan->offsets[id];
      }
      continue;
    }
    // The index error slot starts clear, as CudaExecutable clears it.
    const uint64_t fill = buffer.kind == BufferKind::kIndexErrors ? 0 : ~uint64_t{0};
    storage[id].assign(bytes / 8 + 1, fill);
    pointers[id] = reinterpret_cast<char*>(storage[id].data());
    if (buffer.kind == BufferKind::kWeight) {
      const Tensor& data = module.graph.initializer(buffer.source);
      std::memcpy(pointers[id], data.data(), data.num_bytes());
    }
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::memcpy(pointers[program.inputs[i]], inputs[i].data(), inputs[i].num_bytes());
  }
  using Launch = void (*)(void* const*, int, int, long long);
  const LaunchTable& launches = module.source->launches;
  for (size_t i = 0; i < launches.size(); ++i) {
    if (launches.IsGemm(i)) {
      for (const cuda::CublasCall& call : cuda::CublasCalls(launches.gemms[launches.GemmOf(i)])) {
        if (call.dtype == DType::kF32) {
          EmulateCublasCall<float>(call, pointers);
        } else {
          EmulateCublasCall<double>(call, pointers);
        }
      }
      continue;
    }
    const std::string& f = module.source->functions[launches.function[i]];
    auto launch = reinterpret_cast<Launch>(dlsym(handle, (f + "_emu").c_str()));
    auto shape = static_cast<const long long*>(dlsym(handle, (f + "_shape").c_str()));
    if (launch == nullptr || shape == nullptr) {
      return absl::InternalError(absl::StrCat("no symbols for ", f));
    }
    std::vector<void*> args;
    for (int a = launches.arg_offsets[i]; a < launches.arg_offsets[i + 1]; ++a) {
      const BufferRef& arg = launches.args[a];
      char* base = pointers[arg.buffer];
      args.push_back(base == nullptr
                         ? nullptr
                         : base + arg.offset * DTypeSize(program.buffers[arg.buffer].dtype));
    }
    launch(args.data(), static_cast<int>(std::min<long long>(shape[0], kMaxBlocks)),
           static_cast<int>(shape[1]), shape[2]);
  }
  if (program.index_errors >= 0) {
    const int64_t* errors = reinterpret_cast<const int64_t*>(pointers[program.index_errors]);
    if (errors[0] != 0) {
      const IndexCheck& check = program.index_checks[errors[0] - 1];
      return absl::InvalidArgumentError(
          IndexOutOfRangeMessage(check.node, check.op, errors[1], check.axis, check.extent));
    }
  }
  std::vector<Tensor> outputs;
  for (BufferId id : program.outputs) {
    Tensor tensor(program.buffers[id].dtype, program.buffers[id].sizes);
    std::memcpy(tensor.data(), pointers[id], tensor.num_bytes());
    outputs.push_back(std::move(tensor));
  }
  return outputs;
}

// `graph` through the cuda pipeline.
absl::StatusOr<Module> CompileForCuda(Graph graph) {
  LOOM_ASSIGN_OR_RETURN(LoadedPipeline pipeline, LoadPipeline("cuda"));
  Module module;
  module.graph = std::move(graph);
  LOOM_RETURN_IF_ERROR(RunPipeline(pipeline, module).status());
  return module;
}

// Compiles `graph` with the cuda pipeline, runs it emulated and compares
// with the interpreter (the tolerances of `loom run --check`).
void CheckEmulated(Graph graph, const std::string& name) {
  SCOPED_TRACE(name);
  std::vector<Tensor> inputs;
  for (ValueId id : graph.inputs()) {
    Tensor tensor(graph.value(id).type);
    const DType dtype = tensor.dtype();
    FillUniform(tensor, SplitMix64(7) + id, IsFloat(dtype) ? -1 : 0,
                IsFloat(dtype)          ? 1
                : dtype == DType::kBool ? 2
                                        : 10);
    inputs.push_back(std::move(tensor));
  }
  absl::StatusOr<std::vector<Tensor>> expected = Interpret(graph, inputs);
  ASSERT_TRUE(expected.ok()) << expected.status();
  absl::StatusOr<Module> module = CompileForCuda(std::move(graph));
  ASSERT_TRUE(module.ok()) << module.status();
  absl::StatusOr<std::vector<Tensor>> actual = RunEmulated(*module, inputs, name);
  ASSERT_TRUE(actual.ok()) << actual.status();
  ASSERT_EQ(actual->size(), expected->size());
  for (size_t o = 0; o < actual->size(); ++o) {
    const Tensor& a = (*actual)[o];
    const Tensor& e = (*expected)[o];
    const bool exact = !IsFloat(e.dtype());
    int mismatches = 0;
    for (int64_t i = 0; i < e.num_elements() && mismatches < 5; ++i) {
      const double x = a.GetDouble(i), y = e.GetDouble(i);
      if (std::isnan(x) && std::isnan(y)) continue;
      if (!(std::fabs(x - y) <= (exact ? 0 : 1e-5 + 1e-4 * std::fabs(y)))) {
        ADD_FAILURE() << "output " << o << " element " << i << ": " << x << ", expected " << y;
        ++mismatches;
      }
    }
  }
}

void CheckExample(const std::string& name) {
  absl::StatusOr<Graph> graph = LoadGraphFile(absl::StrCat("examples/", name, ".pbtxt"));
  ASSERT_TRUE(graph.ok()) << graph.status();
  CheckEmulated(*std::move(graph), name);
}

TEST(EmulationTest, Mlp) { CheckExample("mlp"); }
TEST(EmulationTest, Softmax) { CheckExample("softmax"); }
TEST(EmulationTest, LayerNorm) { CheckExample("layer_norm"); }
TEST(EmulationTest, GroupNorm) { CheckExample("group_norm"); }
// The narrow and unsigned integer types, warp and block reductions of u8
// and u32 among them.
TEST(EmulationTest, SmallIntegers) { CheckExample("small_integers"); }
// Every reduction kind and tie rule, NaN among the values, in thread, warp
// and block teams.
TEST(EmulationTest, Reductions) {
  absl::StatusOr<Graph> graph = LoadGraphFile("backends/cuda/testdata/reductions.pbtxt");
  ASSERT_TRUE(graph.ok()) << graph.status();
  CheckEmulated(*std::move(graph), "reductions");
}

// Matrix products as cuBLAS calls: merged and unmerged batches, transposed
// operands, f64.
TEST(EmulationTest, Gemms) {
  absl::StatusOr<Graph> graph = LoadGraphFile("backends/cuda/testdata/gemms.pbtxt");
  ASSERT_TRUE(graph.ok()) << graph.status();
  CheckEmulated(*std::move(graph), "gemms");
}

// conv (im2col through a cuBLAS call, and direct), pools, fused batch norm.
TEST(EmulationTest, Convs) {
  absl::StatusOr<Graph> graph = LoadGraphFile("backends/cuda/testdata/convs.pbtxt");
  ASSERT_TRUE(graph.ok()) << graph.status();
  CheckEmulated(*std::move(graph), "convs");
}

// conv_transpose (columns through a cuBLAS call, and the conv of the
// interleaved input), reflect and edge pads.
TEST(EmulationTest, ConvTransposes) {
  absl::StatusOr<Graph> graph = LoadGraphFile("backends/cuda/testdata/conv_transposes.pbtxt");
  ASSERT_TRUE(graph.ok()) << graph.status();
  CheckEmulated(*std::move(graph), "conv_transposes");
}

// resize (views, gathers at constant tables, weighted sums, selects) and
// max_pool's indices.
TEST(EmulationTest, Resize) {
  absl::StatusOr<Graph> graph = LoadGraphFile("backends/cuda/testdata/resize.pbtxt");
  ASSERT_TRUE(graph.ok()) << graph.status();
  CheckEmulated(*std::move(graph), "resize");
}

// f16 and bf16: loads and stores of their bits, conversions, casts from
// f64, and reductions over values computed in f32.
TEST(EmulationTest, HalfFloats) {
  absl::StatusOr<Graph> graph = LoadGraphFile("backends/cuda/testdata/half_floats.pbtxt");
  ASSERT_TRUE(graph.ok()) << graph.status();
  CheckEmulated(*std::move(graph), "half_floats");
}

// The 8- and 4-bit floats and the sub-byte integers: loads and stores of
// one byte, conversions, and ops computed in f32 or i32.
TEST(EmulationTest, NarrowTypes) {
  absl::StatusOr<Graph> graph = LoadGraphFile("backends/cuda/testdata/narrow_types.pbtxt");
  ASSERT_TRUE(graph.ok()) << graph.status();
  CheckEmulated(*std::move(graph), "narrow_types");
}

// Gathers and scatters at indices known only at run time, each checked.
TEST(EmulationTest, IndicesKnownOnlyAtRunTime) {
  absl::StatusOr<Graph> graph = LoadGraphFile("backends/cuda/testdata/indices.pbtxt");
  ASSERT_TRUE(graph.ok()) << graph.status();
  CheckEmulated(*std::move(graph), "indices");
}

// The inverse trigonometric and hyperbolic functions, top_k,
// reverse_sequence, lrn and einsum, all decomposed into primitives.
TEST(EmulationTest, MathOps) {
  absl::StatusOr<Graph> graph = LoadGraphFile("backends/cuda/testdata/math.pbtxt");
  ASSERT_TRUE(graph.ok()) << graph.status();
  CheckEmulated(*std::move(graph), "math");
}

// The bitwise ops and shifts of signed and unsigned types, by negative
// amounts and past the width.
TEST(EmulationTest, BitwiseOpsAndShifts) {
  absl::StatusOr<Graph> graph = LoadGraphFile("backends/cuda/testdata/bitwise.pbtxt");
  ASSERT_TRUE(graph.ok()) << graph.status();
  CheckEmulated(*std::move(graph), "bitwise");
}

// An index out of range: the kernel records it (the first of the run) and
// reads a safe element; the run fails naming the node and the index.
// bit_cast between floats, integers, bools and f16.
TEST(EmulationTest, BitCasts) {
  absl::StatusOr<Graph> graph = LoadGraphFile("backends/cuda/testdata/bit_cast.pbtxt");
  ASSERT_TRUE(graph.ok()) << graph.status();
  CheckEmulated(*std::move(graph), "bit_cast");
}

// What the ONNX importer makes of QLinearConv, ConvInteger and
// QLinearMatMul: f64 convs and an i32 matmul, wrapped and requantized.
TEST(EmulationTest, Quantized) {
  absl::StatusOr<Graph> graph = LoadGraphFile("backends/cuda/testdata/quantize.pbtxt");
  ASSERT_TRUE(graph.ok()) << graph.status();
  CheckEmulated(*std::move(graph), "quantize");
}

TEST(EmulationTest, AnIndexOutOfRangeIsRecorded) {
  absl::StatusOr<Graph> graph = LoadGraphFile("backends/cuda/testdata/indices.pbtxt");
  ASSERT_TRUE(graph.ok()) << graph.status();
  std::vector<Tensor> inputs;
  for (ValueId id : graph->inputs()) {
    Tensor tensor(graph->value(id).type);
    FillUniform(tensor, id, 0, 10);
    inputs.push_back(std::move(tensor));
  }
  inputs[1].SetInt(4, -17);  // ids32, which the gather along axis 1 of 16 reads
  absl::StatusOr<Module> module = CompileForCuda(*std::move(graph));
  ASSERT_TRUE(module.ok()) << module.status();
  absl::StatusOr<std::vector<Tensor>> outputs = RunEmulated(*module, inputs, "indices_bad");
  EXPECT_EQ(outputs.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(outputs.status().message(),
            "node 'columns' (gather): index -17 is out of range for axis 1 of size 16");
  inputs[1].SetInt(4, -16);  // the first column, counted from the end
  EXPECT_TRUE(RunEmulated(*module, inputs, "indices_good").ok());
}

// Recurrences, smaller than the examples (emulated barriers are slow).
void CheckGenerated(const std::string& kind) {
  GenOptions options;
  options.kind = kind;
  options.layers = 2;
  options.hidden = 16;
  options.input = 8;
  options.seq = 4;
  absl::StatusOr<proto::Graph> graph_proto = GenerateModel(options);
  ASSERT_TRUE(graph_proto.ok()) << graph_proto.status();
  absl::StatusOr<Graph> graph = GraphFromProto(*graph_proto, kind);
  ASSERT_TRUE(graph.ok()) << graph.status();
  CheckEmulated(*std::move(graph), kind);
}

TEST(EmulationTest, Lstm) { CheckGenerated("lstm"); }
TEST(EmulationTest, Gru) { CheckGenerated("gru"); }
TEST(EmulationTest, Rnn) { CheckGenerated("rnn"); }

// Random DAGs of primitive ops: most scalar functions, dtypes and
// reductions, in kernels of every team size.
TEST(EmulationTest, RandomGraphs) {
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    GenOptions options;
    options.kind = "random";
    options.nodes = 40;
    options.seed = seed;
    absl::StatusOr<proto::Graph> graph_proto = GenerateModel(options);
    ASSERT_TRUE(graph_proto.ok()) << graph_proto.status();
    absl::StatusOr<Graph> graph = GraphFromProto(*graph_proto, "random");
    ASSERT_TRUE(graph.ok()) << graph.status();
    CheckEmulated(*std::move(graph), absl::StrCat("random_", seed));
  }
}

}  // namespace
}  // namespace loom

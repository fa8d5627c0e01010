// loom::Model on artifacts `loom compile --out_dir` writes: the outputs of
// the reference interpreter, every mismatch an error naming the tensor, many
// threads on one model, profiled runs, and damaged files refused.

#include "runtime/model.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "compiler/check.h"
#include "compiler/driver.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/file_io.h"
#include "ir/interpreter.h"
#include "ir/random.h"

namespace loom {
namespace {

using ::testing::HasSubstr;

std::string TempDir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir != nullptr ? dir : "/tmp";
}

// An example compiled into <TEST_TMPDIR>/<name>/model.loom, with random
// inputs and the interpreter's outputs on them.
struct Compiled {
  std::string artifact;
  std::vector<Tensor> inputs;
  std::vector<Tensor> expected;
};

Compiled CompileModelFile(const std::string& path, const std::string& name,
                          const std::string& pipeline = "cpu") {
  CompileOptions options;
  options.model = path;
  options.pipeline = pipeline;
  options.out_dir = absl::StrCat(TempDir(), "/", name);
  options.cache_dir = absl::StrCat(TempDir(), "/cache");
  options.keep_input_graph = true;
  std::system(absl::StrCat("mkdir -p ", options.out_dir).c_str());
  absl::StatusOr<CompiledModel> compiled = CompileModel(options);
  EXPECT_TRUE(compiled.ok()) << compiled.status();
  Compiled result;
  result.artifact = options.out_dir + "/model.loom";
  if (!compiled.ok()) return result;
  for (ValueId id : compiled->input_graph->inputs()) {
    Tensor tensor(compiled->input_graph->value(id).type);
    FillUniform(tensor, 7 + id, -1, 1);
    result.inputs.push_back(std::move(tensor));
  }
  absl::StatusOr<std::vector<Tensor>> expected = Interpret(*compiled->input_graph, result.inputs);
  EXPECT_TRUE(expected.ok()) << expected.status();
  if (expected.ok()) result.expected = *std::move(expected);
  return result;
}

Compiled CompileExample(const std::string& name, const std::string& pipeline = "cpu") {
  return CompileModelFile(absl::StrCat("examples/", name, ".pbtxt"),
                          absl::StrCat(name, "_", pipeline), pipeline);
}

const Compiled& Lstm() {
  static const Compiled* compiled = new Compiled(CompileExample("lstm_l2_h64"));
  return *compiled;
}

// Its steps unrolled, each kernel of steps thousands of compute nodes.
const Compiled& UnrolledLstm() {
  static const Compiled* compiled = new Compiled(CompileExample("lstm_l2_h64", "cpu_unrolled_rnn"));
  return *compiled;
}

std::vector<InputTensor> Views(const Model& model, const std::vector<Tensor>& tensors) {
  std::vector<InputTensor> views;
  for (size_t i = 0; i < tensors.size(); ++i) {
    views.push_back(
        {model.inputs()[i].name, tensors[i].dtype(), tensors[i].shape(), tensors[i].data()});
  }
  return views;
}

void ExpectClose(const float* actual, const Tensor& expected) {
  const float* e = expected.data_as<float>();
  for (int64_t i = 0; i < expected.num_elements(); ++i) {
    ASSERT_LE(std::fabs(actual[i] - e[i]),
              kCheckAbsTolerance + kCheckRelTolerance * std::fabs(e[i]))
        << "element " << i;
  }
}

TEST(ModelTest, RunsAnArtifactAsTheInterpreterDoes) {
  absl::StatusOr<Model> model = Model::Load(Lstm().artifact);
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_EQ(model->inputs().size(), 1u);
  EXPECT_EQ(model->inputs()[0].name, "x");
  EXPECT_EQ(model->inputs()[0].shape, (std::vector<int64_t>{2, 16, 32}));
  ASSERT_EQ(model->outputs().size(), Lstm().expected.size());
  // Outputs in the caller's memory: 64-byte aligned (written in place) and
  // not (through the context's own).
  for (size_t misalign : {0, 4}) {
    std::vector<std::vector<std::byte>> memory;
    std::vector<OutputTensor> outputs;
    for (const TensorInfo& info : model->outputs()) {
      memory.emplace_back(info.bytes() + 128);
      std::byte* base = memory.back().data();
      base += (64 - reinterpret_cast<uintptr_t>(base) % 64) % 64 + misalign;
      outputs.push_back({info.name, info.dtype, info.shape, base});
    }
    ASSERT_TRUE(model->Run(Views(*model, Lstm().inputs), outputs).ok());
    for (size_t o = 0; o < outputs.size(); ++o) {
      ExpectClose(static_cast<const float*>(outputs[o].data), Lstm().expected[o]);
    }
  }
  Model::Session session = model->NewSession();
  ASSERT_TRUE(session.Run(Views(*model, Lstm().inputs)).ok());
  for (size_t o = 0; o < model->outputs().size(); ++o) {
    ExpectClose(static_cast<const float*>(session.output(o)), Lstm().expected[o]);
  }
}

TEST(ModelTest, AProfiledRunTimesEveryLaunchAndComputesTheSame) {
  absl::StatusOr<Model> model = Model::Load(Lstm().artifact);
  ASSERT_TRUE(model.ok()) << model.status();
  Model::Session session = model->NewSession();
  std::vector<double> seconds(model->launches(), 0.0);
  ASSERT_TRUE(session.Run(Views(*model, Lstm().inputs), absl::MakeSpan(seconds)).ok());
  for (size_t o = 0; o < model->outputs().size(); ++o) {
    ExpectClose(static_cast<const float*>(session.output(o)), Lstm().expected[o]);
  }
  double total = 0;
  for (int l = 0; l < model->launches(); ++l) {
    EXPECT_GE(seconds[l], 0) << l;
    total += seconds[l];
    EXPECT_THAT(model->launch_function(l), testing::StartsWith("loom_f")) << l;
    EXPECT_FALSE(model->launch_label(l).empty()) << l;
  }
  EXPECT_GT(total, 0);
  // The unrolled LSTM's fused steps: thousands of compute nodes, a few
  // named.
  absl::StatusOr<Model> unrolled = Model::Load(UnrolledLstm().artifact);
  ASSERT_TRUE(unrolled.ok()) << unrolled.status();
  bool abbreviated = false;
  for (int l = 0; l < unrolled->launches(); ++l) {
    abbreviated |= absl::StrContains(unrolled->launch_label(l), " more");
  }
  EXPECT_TRUE(abbreviated);

  std::vector<double> too_few(model->launches() - 1, 0.0);
  const absl::Status status = session.Run(Views(*model, Lstm().inputs), absl::MakeSpan(too_few));
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("a profile of"));
}

TEST(ModelTest, EveryMismatchIsAnErrorNamingTheTensor) {
  absl::StatusOr<Model> model = Model::Load(Lstm().artifact);
  ASSERT_TRUE(model.ok()) << model.status();
  const Tensor& x = Lstm().inputs[0];
  const std::vector<int64_t> shape = x.shape();
  const std::vector<int64_t> wrong_shape = {2, 16, 33};
  struct Case {
    std::vector<InputTensor> inputs;
    std::vector<OutputTensor> outputs;
    const char* message;
  };
  std::vector<float> out(model->outputs()[0].elements());
  const TensorInfo& y = model->outputs()[0];
  const Case cases[] = {
      {{}, {}, "the model's input 'x' is not given"},
      {{{"y", DType::kF32, shape, x.data()}}, {}, "the model has no input 'y' (its inputs: x)"},
      {{{"x", DType::kF64, shape, x.data()}},
       {},
       "input 'x' is f64[2, 16, 32], the model's is f32[2, 16, 32]"},
      {{{"x", DType::kF32, wrong_shape, x.data()}}, {}, "input 'x' is f32[2, 16, 33]"},
      {{{"x", DType::kF32, shape, nullptr}}, {}, "input 'x' has no data"},
      {{{"x", DType::kF32, shape, x.data()}, {"x", DType::kF32, shape, x.data()}},
       {},
       "input 'x' is given twice"},
      {{{"x", DType::kF32, shape, x.data()}},
       {{"nope", y.dtype, y.shape, out.data()}},
       "the model has no output 'nope'"},
      {{{"x", DType::kF32, shape, x.data()}},
       {{y.name, DType::kI32, y.shape, out.data()}},
       "is i32"},
  };
  for (const Case& c : cases) {
    const absl::Status status = model->Run(c.inputs, c.outputs);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << c.message;
    EXPECT_THAT(std::string(status.message()), HasSubstr(c.message));
  }
}

TEST(ModelTest, EightThreadsShareOneModel) {
  absl::StatusOr<Model> model = Model::Load(Lstm().artifact);
  ASSERT_TRUE(model.ok()) << model.status();
  const TensorInfo& y = model->outputs()[0];
  std::vector<float> first(y.elements());
  ASSERT_TRUE(
      model->Run(Views(*model, Lstm().inputs), {{y.name, y.dtype, y.shape, first.data()}}).ok());
  constexpr int kThreads = 8, kCalls = 1000;
  std::vector<int> mismatches(kThreads, 0), failures(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<float> mine(y.elements());
      const std::vector<InputTensor> inputs = Views(*model, Lstm().inputs);
      for (int call = 0; call < kCalls; ++call) {
        std::fill(mine.begin(), mine.end(), NAN);
        if (!model->Run(inputs, {{y.name, y.dtype, y.shape, mine.data()}}).ok()) ++failures[t];
        if (std::memcmp(mine.data(), first.data(), mine.size() * sizeof(float)) != 0) {
          ++mismatches[t];
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(failures[t], 0) << "thread " << t;
    EXPECT_EQ(mismatches[t], 0) << "thread " << t;
  }
}

// tests/index_range/gather.pbtxt: y = tanh(table[ids]), table [5, 4], ids
// i64 [2, 3] an input.
TEST(ModelTest, AnIndexOutOfRangeFailsThatRunAlone) {
  const Compiled gather = CompileModelFile("tests/index_range/gather.pbtxt", "gather");
  absl::StatusOr<Model> model = Model::Load(gather.artifact);
  ASSERT_TRUE(model.ok()) << model.status();
  const TensorInfo& y = model->outputs()[0];
  const std::vector<int64_t> good = {0, 4, -5, 1, 2, -1}, bad = {0, 4, 5, 1, -6, -1};
  const std::vector<int64_t> shape = {2, 3};
  std::vector<float> out(y.elements());
  auto run = [&](const std::vector<int64_t>& ids) {
    return model->Run({{"ids", DType::kI64, shape, ids.data()}},
                      {{y.name, y.dtype, y.shape, out.data()}});
  };
  ASSERT_TRUE(run(good).ok());
  std::vector<float> expected = out;
  const absl::Status failed = run(bad);
  EXPECT_EQ(failed.code(), absl::StatusCode::kInvalidArgument);
  // The first failure of the run: which one, threads decide.
  EXPECT_THAT(std::string(failed.message()),
              testing::AnyOf("node 'lookup' (gather): index 5 is out of range for axis 0 of size 5",
                             "node 'lookup' (gather): index -6 is out of range for axis 0 of "
                             "size 5"));
  ASSERT_TRUE(run(good).ok());  // the context's error slot starts clean
  EXPECT_EQ(out, expected);

  // Contexts of their own: each run's verdict is its own.
  constexpr int kThreads = 8, kCalls = 200;
  std::vector<int> wrong(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<float> mine(y.elements());
      for (int call = 0; call < kCalls; ++call) {
        const bool fails = (t + call) % 2 == 1;
        const std::vector<int64_t>& ids = fails ? bad : good;
        const absl::Status status = model->Run({{"ids", DType::kI64, shape, ids.data()}},
                                               {{y.name, y.dtype, y.shape, mine.data()}});
        wrong[t] += status.ok() == fails || (!fails && mine != expected);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(wrong[t], 0) << "thread " << t;
}

TEST(ModelTest, DamagedOrForeignFilesAreRefusedNamingTheCause) {
  absl::StatusOr<std::string> read = ReadFileBytes(Lstm().artifact);
  ASSERT_TRUE(read.ok()) << read.status();
  const std::string& good = *read;
  ASSERT_GT(good.size(), 1000u);
  const std::string dir = TempDir();
  std::string flipped = good;
  flipped[good.size() / 2] ^= 0x20;
  runtime::proto::ArtifactFile newer;
  ASSERT_TRUE(newer.ParseFromString(good));
  newer.set_format_version(kDynamicArtifactFormatVersion + 1);
  // A file of the format for every shape whose payload is not one.
  runtime::proto::ArtifactFile mislabelled = newer;
  mislabelled.set_format_version(kDynamicArtifactFormatVersion);
  const struct {
    std::string name, bytes, message;
  } cases[] = {
      {"truncated.loom", good.substr(0, good.size() / 3), "not a loom artifact"},
      {"empty.loom", "", "not a loom artifact"},
      {"text.loom", "name: \"lstm\"\n", "not a loom artifact"},
      {"flipped.loom", flipped, "the artifact is damaged"},
      {"newer.loom", newer.SerializeAsString(),
       absl::StrCat("artifact format ", kDynamicArtifactFormatVersion + 1,
                    ", this loom reads formats ", kArtifactFormatVersion, " and ",
                    kDynamicArtifactFormatVersion)},
      {"mislabelled.loom", mislabelled.SerializeAsString(), "the artifact is damaged"},
  };
  for (const auto& c : cases) {
    const std::string path = absl::StrCat(dir, "/", c.name);
    ASSERT_TRUE(WriteFileBytes(path, c.bytes).ok()) << path;
    absl::StatusOr<Model> model = Model::Load(path);
    ASSERT_FALSE(model.ok()) << c.name;
    EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument) << c.name;
    EXPECT_THAT(std::string(model.status().message()), HasSubstr(c.message)) << c.name;
    EXPECT_THAT(std::string(model.status().message()), HasSubstr(path)) << c.name;
  }
  EXPECT_EQ(Model::Load(dir + "/missing.loom").status().code(), absl::StatusCode::kNotFound);
  EXPECT_FALSE(Model::Load(dir).ok());  // a directory
}

}  // namespace
}  // namespace loom

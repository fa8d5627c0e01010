// The cost of a call through the runtime API: a loaded artifact's
// Model::Run (the caller's outputs) and Session::Run (the session's own)
// against the loop `loom run` times (CppExecutable::Execute), alternated
// in rounds, medians of each. call_cost.sh adds Python's.
//
//   bazel run -c opt //tests/bench:call_cost -- --model=examples/lstm_l2_h64.pbtxt
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "compiler/driver.h"
#include "ir/random.h"
#include "runtime/model.h"

ABSL_FLAG(std::string, model, "examples/lstm_l2_h64.pbtxt", "the model");
ABSL_FLAG(int, calls, 2000, "calls per round and way");
ABSL_FLAG(int, rounds, 5, "rounds");

namespace {

template <typename F>
double MedianSeconds(int calls, F&& call) {
  std::vector<double> seconds;
  for (int i = 0; i < calls; ++i) {
    const auto start = std::chrono::steady_clock::now();
    call();
    seconds.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(seconds.begin(), seconds.end());
  return seconds[seconds.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  if (const char* dir = std::getenv("BUILD_WORKSPACE_DIRECTORY"))
    std::filesystem::current_path(dir);
  loom::CompileOptions options;
  options.model = absl::GetFlag(FLAGS_model);
  options.out_dir = std::filesystem::temp_directory_path() / "loom_call_cost";
  std::filesystem::create_directories(options.out_dir);
  absl::StatusOr<loom::CompiledModel> compiled = loom::CompileModel(options);
  if (!compiled.ok()) {
    std::fprintf(stderr, "%s\n", std::string(compiled.status().message()).c_str());
    return 2;
  }
  absl::StatusOr<loom::Model> model = loom::Model::Load(options.out_dir + "/model.loom");
  if (!model.ok()) {
    std::fprintf(stderr, "%s\n", std::string(model.status().message()).c_str());
    return 2;
  }
  std::vector<loom::Tensor> inputs;
  std::vector<loom::InputTensor> views;
  for (const loom::TensorInfo& info : model->inputs()) {
    loom::Tensor& t = inputs.emplace_back(info.dtype, info.shape);
    loom::FillUniform(t, 1, -1, 1);
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    views.push_back(
        {model->inputs()[i].name, inputs[i].dtype(), inputs[i].shape(), inputs[i].data()});
  }
  std::vector<loom::Tensor> outputs;
  std::vector<loom::OutputTensor> output_views;
  for (const loom::TensorInfo& info : model->outputs()) {
    loom::Tensor& t = outputs.emplace_back(info.dtype, info.shape);
    output_views.push_back({info.name, info.dtype, info.shape, t.data()});
  }
  loom::Model::Session session = model->NewSession();
  const int calls = absl::GetFlag(FLAGS_calls);
  std::vector<double> execute, run, session_run;
  for (int round = 0; round < absl::GetFlag(FLAGS_rounds); ++round) {
    execute.push_back(MedianSeconds(calls, [&] { (void)compiled->executable->Execute(inputs); }));
    run.push_back(MedianSeconds(calls, [&] { (void)model->Run(views, output_views); }));
    session_run.push_back(MedianSeconds(calls, [&] { (void)session.Run(views); }));
  }
  for (auto* v : {&execute, &run, &session_run}) std::sort(v->begin(), v->end());
  const double base = execute[execute.size() / 2];
  std::printf("%s: median of %d rounds x %d calls\n", options.model.c_str(),
              absl::GetFlag(FLAGS_rounds), calls);
  std::printf("  loom run's loop (CppExecutable::Execute)  %8.2f us\n", base * 1e6);
  std::printf("  Model::Run, caller's outputs             %8.2f us  (%.2fx)\n",
              run[run.size() / 2] * 1e6, run[run.size() / 2] / base);
  std::printf("  Session::Run                             %8.2f us  (%.2fx)\n",
              session_run[session_run.size() / 2] * 1e6,
              session_run[session_run.size() / 2] / base);
  return 0;
}

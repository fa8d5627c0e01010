// Compares loom's run time on an unrolled LSTM with its floor: the same
// matrix products alone through OpenBLAS (per layer, the input projection
// of all steps as one product, then one recurrent product per step), timed
// in the same process.
//
//   bazel run //tests/bench:rnn_floor -- [--iters=200] [models...]
// (models default to examples/lstm_l2_h64.pbtxt and lstm_l6_h256.pbtxt).

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/status/statusor.h"
#include "compiler/driver.h"
#include "ir/graph.h"
#include "ir/graph_io.h"

ABSL_FLAG(int, iters, 200, "timed runs of each model and of its floor");

namespace loom {
namespace {

// One product C[m, n] = A[m, k] * B[k, n]^T (B as stored by the LSTM's
// weights: [n, k] row-major).
struct Product {
  int m, n, k;
};

// The products of every lstm node of `graph`: ONNX shapes X [seq, batch,
// input] (or [batch, seq, input] with layout 1), W [dirs, 4H, input],
// R [dirs, 4H, H].
std::vector<Product> LstmProducts(const Graph& graph) {
  std::vector<Product> products;
  for (const Node& node : graph.nodes()) {
    if (node.op != "lstm") continue;
    const Shape& x = graph.value(node.inputs[0]).type.shape;
    const Shape& w = graph.value(node.inputs[1]).type.shape;
    const Shape& r = graph.value(node.inputs[2]).type.shape;
    const bool batch_first = node.attrs.GetInt("layout", 0) == 1;
    const int seq = static_cast<int>(batch_first ? x[1] : x[0]);
    const int batch = static_cast<int>(batch_first ? x[0] : x[1]);
    for (int64_t d = 0; d < w[0]; ++d) {
      products.push_back({seq * batch, static_cast<int>(w[1]), static_cast<int>(w[2])});
      for (int t = 0; t < seq; ++t) {
        products.push_back({batch, static_cast<int>(r[1]), static_cast<int>(r[2])});
      }
    }
  }
  return products;
}

double Median(std::vector<double> seconds) {
  std::sort(seconds.begin(), seconds.end());
  return seconds[seconds.size() / 2];
}

// Median seconds of running every product once, in order.
double FloorSeconds(const std::vector<Product>& products, int iters) {
  std::vector<std::vector<float>> a, b, c;
  for (const Product& p : products) {
    a.emplace_back(static_cast<size_t>(p.m) * p.k, 0.5f);
    b.emplace_back(static_cast<size_t>(p.n) * p.k, 0.25f);
    c.emplace_back(static_cast<size_t>(p.m) * p.n, 0.0f);
  }
  std::vector<double> seconds;
  for (int i = 0; i < iters; ++i) {
    const auto start = std::chrono::steady_clock::now();
    for (size_t j = 0; j < products.size(); ++j) {
      const Product& p = products[j];
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, p.m, p.n, p.k, 1.0f, a[j].data(), p.k,
                  b[j].data(), p.k, 0.0f, c[j].data(), p.n);
    }
    seconds.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return Median(seconds);
}

bool RunModelAndFloor(const std::string& model, int iters) {
  absl::StatusOr<Graph> graph = LoadGraphFile(model);  // before decomposition
  if (!graph.ok()) {
    std::printf("%s: %s\n", model.c_str(), std::string(graph.status().message()).c_str());
    return false;
  }
  CompileOptions options;
  options.model = model;
  options.pipeline = "cpu_unrolled_rnn";
  absl::StatusOr<CompiledModel> compiled = CompileModel(options);
  if (!compiled.ok()) {
    std::printf("%s: %s\n", model.c_str(), std::string(compiled.status().message()).c_str());
    return false;
  }
  RunModelOptions run;
  run.iters = iters;
  if (absl::Status s = RunModel(*compiled, run); !s.ok()) {
    std::printf("%s: %s\n", model.c_str(), std::string(s.message()).c_str());
    return false;
  }
  const std::vector<Product> products = LstmProducts(*graph);
  const double loom_seconds = compiled->report.run_seconds_median();
  const double floor_seconds = FloorSeconds(products, iters);
  std::printf("%-32s %10.3f %10.3f %8zu %7.2f\n", model.c_str(), loom_seconds * 1e3,
              floor_seconds * 1e3, products.size(), loom_seconds / floor_seconds);
  return true;
}

}  // namespace
}  // namespace loom

int main(int argc, char** argv) {
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  std::vector<std::string> models(args.begin() + 1, args.end());
  if (models.empty()) {
    models = {"examples/lstm_l2_h64.pbtxt", "examples/lstm_l6_h256.pbtxt"};
  }
  std::printf("%-32s %10s %10s %8s %7s\n", "model", "loom ms", "blas ms", "gemms", "ratio");
  bool ok = true;
  for (const std::string& model : models) {
    ok &= loom::RunModelAndFloor(model, absl::GetFlag(FLAGS_iters));
  }
  return ok ? 0 : 1;
}

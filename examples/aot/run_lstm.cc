// The 2-layer LSTM of examples/lstm_l2_h64.pbtxt, compiled into this program
// by loom_cc_library: one step of the usual deployment, start to end.
#include <cmath>
#include <cstdio>
#include <vector>

#include "examples/aot/lstm_l2_h64.h"

int main() {
  absl::StatusOr<LstmL2H64> model = LstmL2H64::Create();
  if (!model.ok()) {
    std::fprintf(stderr, "%s\n", std::string(model.status().message()).c_str());
    return 1;
  }
  std::vector<float> x(2 * 16 * 32), y(2 * 16 * 64), h_n(2 * 2 * 64), c_n(2 * 2 * 64);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.01f * i);
  if (absl::Status s = model->Run(x.data(), y.data(), h_n.data(), c_n.data()); !s.ok()) {
    std::fprintf(stderr, "%s\n", std::string(s.message()).c_str());
    return 1;
  }
  std::printf("h_n[0][0][0..3] = %.6f %.6f %.6f %.6f\n", h_n[0], h_n[1], h_n[2], h_n[3]);
  return 0;
}

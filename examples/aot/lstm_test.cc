// The model loom_cc_library built gives the reference interpreter's outputs
// (make_reference.py wrote them), within `loom run --check`'s tolerance.
#include <cmath>
#include <cstdint>
#include <fstream>
#include <vector>

#include "examples/aot/lstm_l2_h64.h"
#include "gtest/gtest.h"

namespace {

TEST(AotLstmTest, MatchesTheReferenceOutputs) {
  absl::StatusOr<LstmL2H64> model = LstmL2H64::Create();
  ASSERT_TRUE(model.ok()) << model.status();
  std::vector<float> x(2 * 16 * 32), outputs(2 * 16 * 64 + 2 * 2 * 64 + 2 * 2 * 64);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 37) % 101 / 50.0 - 1.0);
  float* y = outputs.data();
  float* h_n = y + 2 * 16 * 64;
  float* c_n = h_n + 2 * 2 * 64;
  ASSERT_TRUE(model->Run(x.data(), y, h_n, c_n).ok());

  std::vector<float> reference(outputs.size());
  std::ifstream file("examples/aot/lstm_l2_h64.reference.bin", std::ios::binary);
  ASSERT_TRUE(
      file.read(reinterpret_cast<char*>(reference.data()), reference.size() * sizeof(float)));
  for (size_t i = 0; i < outputs.size(); ++i) {
    ASSERT_LE(std::fabs(outputs[i] - reference[i]), 1e-5 + 1e-4 * std::fabs(reference[i]))
        << "element " << i;
  }
  EXPECT_EQ(model->model().outputs()[1].name, "h_n");
}

}  // namespace

// The 8- and 4-bit floats and the 4- and 2-bit integers in the importer:
// ONNX's packed data unpacked one a byte, and Cast's `saturate` and
// `round_mode`.

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "frontends/onnx/onnx_importer.h"
#include "frontends/onnx/onnx_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/interpreter.h"

namespace loom {
namespace {

using ::testing::HasSubstr;

// ONNX's element types after 1.12 (libonnx-dev's enum lacks them).
constexpr int32_t kFloat8E4M3FN = 17;
constexpr int32_t kFloat8E5M2 = 19;
constexpr int32_t kInt4 = 22;
constexpr int32_t kFloat8E8M0 = 24;
constexpr int32_t kUInt2 = 25;
constexpr int32_t kFloat6E2M3 = 27;

onnx::TensorProto& AddInitializer(ModelBuilder& b, const std::string& name, int32_t elem_type,
                                  int64_t size) {
  onnx::TensorProto* t = b.model_for_test().mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(elem_type);
  t->add_dims(size);
  return *t;
}

onnx::NodeProto& Cast(ModelBuilder& b, const std::string& from, const std::string& to,
                      int32_t elem_type) {
  onnx::NodeProto& cast = b.Node("Cast", {from}, {to}, to);
  SetAttr(cast, "to", int64_t{elem_type});
  return cast;
}

std::vector<double> Values(const Tensor& t) {
  std::vector<double> values;
  for (int64_t i = 0; i < t.num_elements(); ++i) values.push_back(t.GetDouble(i));
  return values;
}

// INT4 in raw_data and UINT2 in int32_data, packed low bits first: -1 and
// -7 in one byte, 7 in the next; 3, 0, 1, 2 in one byte, 3 in the next.
TEST(OnnxNarrowTypesTest, PackedDataUnpacksOneElementAByte) {
  ModelBuilder b(21);
  b.Output("i32").Output("u32");
  AddInitializer(b, "w", kInt4, 3).set_raw_data(std::string("\x9f\x07", 2));
  onnx::TensorProto& u = AddInitializer(b, "u", kUInt2, 5);
  u.add_int32_data(0x93);
  u.add_int32_data(0x03);
  Cast(b, "w", "i32", onnx::TensorProto::INT32);
  Cast(b, "u", "u32", onnx::TensorProto::INT32);
  absl::StatusOr<Graph> graph = ImportOnnxModel(b.model());
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<std::vector<Tensor>> out = Interpret(*graph, {});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Values((*out)[0]), (std::vector<double>{-1, -7, 7}));
  EXPECT_EQ(Values((*out)[1]), (std::vector<double>{3, 0, 1, 2, 3}));

  ModelBuilder short_data(21);
  short_data.Output("i32");
  AddInitializer(short_data, "w", kInt4, 3).set_raw_data(std::string("\x9f", 1));
  Cast(short_data, "w", "i32", onnx::TensorProto::INT32);
  EXPECT_THAT(ImportOnnxModel(short_data.model()).status().message(),
              HasSubstr("raw_data has 1 bytes, shape [3] of i4 needs 2"));
}

// Saturating (the default): out of range and infinities to the largest
// value, NaN kept; with saturate=0, NaN in E4M3FN and infinity in E5M2.
TEST(OnnxNarrowTypesTest, CastSaturatesFloat8ByDefault) {
  ModelBuilder b(21);
  b.Input("x", onnx::TensorProto::FLOAT, {4});
  b.Output("sat").Output("nosat").Output("e5m2");
  Cast(b, "x", "sat", kFloat8E4M3FN);
  SetAttr(Cast(b, "x", "nosat", kFloat8E4M3FN), "saturate", int64_t{0});
  SetAttr(Cast(b, "x", "e5m2", kFloat8E5M2), "saturate", int64_t{0});
  absl::StatusOr<Graph> graph = ImportOnnxModel(b.model());
  ASSERT_TRUE(graph.ok()) << graph.status();
  constexpr double kInf = std::numeric_limits<double>::infinity();
  Tensor x(DType::kF32, {4});
  for (int i = 0; i < 4; ++i) x.SetDouble(i, std::vector<double>{1e5, -kInf, NAN, 0.3}[i]);
  absl::StatusOr<std::vector<Tensor>> out = Interpret(*graph, {x});
  ASSERT_TRUE(out.ok()) << out.status();
  const Tensor &sat = (*out)[0], &nosat = (*out)[1], &e5m2 = (*out)[2];
  EXPECT_EQ(sat.dtype(), DType::kF8E4M3FN);
  EXPECT_EQ(sat.GetDouble(0), 448);
  EXPECT_EQ(sat.GetDouble(1), -448);
  EXPECT_TRUE(std::isnan(sat.GetDouble(2)));
  EXPECT_EQ(sat.GetDouble(3), 0.3125);
  EXPECT_TRUE(std::isnan(nosat.GetDouble(0)) && std::isnan(nosat.GetDouble(1)));
  EXPECT_EQ(e5m2.GetDouble(0), kInf);
  EXPECT_EQ(e5m2.GetDouble(1), -kInf);
}

TEST(OnnxNarrowTypesTest, RefusalsNameTheNodeAndTheCause) {
  auto error = [](int32_t to, int64_t saturate, const std::string& round_mode) {
    ModelBuilder b(24);
    b.Input("x", onnx::TensorProto::FLOAT, {2}).Output("y");
    onnx::NodeProto& cast = Cast(b, "x", "y", to);
    SetAttr(cast, "saturate", saturate);
    SetString(cast, "round_mode", round_mode);
    return std::string(ImportOnnxModel(b.model()).status().message());
  };
  EXPECT_EQ(error(kFloat8E8M0, 1, "up"), "");
  EXPECT_THAT(error(kFloat8E8M0, 1, "nearest"),
              HasSubstr("node 'y' (Cast): a cast to FLOAT8E8M0 with round_mode \"nearest\" and "
                        "saturate 1 is not supported"));
  EXPECT_THAT(error(kFloat8E8M0, 0, "up"), HasSubstr("saturate 0 is not supported"));
  EXPECT_THAT(error(kFloat8E4M3FN, 2, "up"),
              HasSubstr("node 'y' (Cast): attribute 'saturate' must be 0 or 1, got 2"));
  EXPECT_THAT(error(kFloat8E4M3FN, 1, "sideways"),
              HasSubstr("attribute 'round_mode' must be \"up\", \"down\" or \"nearest\", got "
                        "\"sideways\""));
  EXPECT_THAT(error(kFloat6E2M3, 1, "up"), HasSubstr("FLOAT6E2M3"));
}

}  // namespace
}  // namespace loom

// Every decomposition of the activation, norm, tensor-op, softmax and
// convolution families and resize against the reference interpreter: the graph before and after
// `decompose` must compute the same values (in f64, tightly), and what
// `decompose` leaves must lower.
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/gemm.h"
#include "ir/graph.h"
#include "ir/interpreter.h"
#include "ir/op_registry.h"
#include "ir/random.h"
#include "passes/decompose.h"
#include "passes/lower.h"

namespace loom {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

struct Case {
  std::string op;
  std::vector<TensorType> inputs;
  Attrs attrs = {};
  int outputs = 1;
  // Input values: uniform in [-3, 3), or in [0.5, 3) when positive (logs,
  // variances); `specials` overwrites the first elements of input 0 with
  // NaN, +-inf, +-0 and large values.
  bool positive = false;
  bool specials = false;
};

std::string Describe(const Case& c) {
  std::string text = c.op;
  for (const TensorType& type : c.inputs) {
    absl::StrAppend(&text, " ", TypeToString(type));
  }
  for (const auto& [name, value] : c.attrs.entries()) {
    absl::StrAppend(&text, " ", name);
  }
  return text;
}

Attrs Make(std::vector<std::pair<std::string, AttrValue>> entries) {
  Attrs attrs;
  for (auto& [name, value] : entries) attrs.Set(name, value);
  return attrs;
}

TensorType F64(Shape shape) { return {DType::kF64, std::move(shape)}; }

Graph BuildGraph(const Case& c) {
  Graph graph;
  std::vector<ValueId> inputs;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    inputs.push_back(*graph.AddInput(absl::StrCat("in", i), c.inputs[i]));
  }
  std::vector<std::string> outputs;
  for (int i = 0; i < c.outputs; ++i) outputs.push_back(absl::StrCat("y", i));
  const NodeId node = *graph.AddNode("node", c.op, std::move(inputs), outputs, c.attrs);
  for (ValueId out : graph.node(node).outputs) graph.AddOutput(out);
  return graph;
}

std::vector<Tensor> Inputs(const Case& c) {
  std::vector<Tensor> tensors;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    Tensor t(c.inputs[i]);
    FillUniform(t, 7 + i, c.positive ? 0.5 : -3, 3);
    tensors.push_back(std::move(t));
  }
  if (c.specials) {
    const double specials[] = {kNan, kInf, -kInf, 0.0, -0.0, 80.0, -80.0};
    Tensor& x = tensors[0];
    for (int64_t i = 0; i < x.num_elements() && i < 7; ++i) {
      x.SetDouble(i, specials[i]);
    }
  }
  return tensors;
}

void ExpectSameValues(const Tensor& got, const Tensor& want, const std::string& where) {
  ASSERT_EQ(got.type(), want.type()) << where;
  for (int64_t i = 0; i < want.num_elements(); ++i) {
    if (!IsFloat(want.dtype())) {
      ASSERT_EQ(got.GetInt(i), want.GetInt(i)) << where << " element " << i;
      continue;
    }
    const double w = want.GetDouble(i), g = got.GetDouble(i);
    if (std::isnan(w) || std::isinf(w)) {
      ASSERT_TRUE(std::isnan(w) ? std::isnan(g) : g == w)
          << where << " element " << i << ": got " << g << ", want " << w;
      continue;
    }
    ASSERT_NEAR(g, w, 1e-9 + 1e-9 * std::fabs(w)) << where << " element " << i;
  }
}

void CheckDecomposition(const Case& c) {
  const std::string where = Describe(c);
  Module module;
  module.graph = BuildGraph(c);
  ASSERT_TRUE(InferShapes(module.graph).ok()) << where << ": " << InferShapes(module.graph);
  const Graph original = module.graph;

  proto::DecomposeOptions options;
  options.add_ops(c.op);
  absl::StatusOr<bool> changed = DecomposePass::Create(options).value()->Run(module);
  ASSERT_TRUE(changed.ok()) << where << ": " << changed.status();
  ASSERT_TRUE(*changed) << where;
  for (const Node& node : module.graph.nodes()) {
    EXPECT_NE(node.op, c.op) << where;
  }
  absl::StatusOr<LoopProgram> lowered = LowerGraph(module.graph);
  EXPECT_TRUE(lowered.ok()) << where << ": " << lowered.status();

  const std::vector<Tensor> inputs = Inputs(c);
  absl::StatusOr<std::vector<Tensor>> want = Interpret(original, inputs);
  absl::StatusOr<std::vector<Tensor>> got = Interpret(module.graph, inputs);
  ASSERT_TRUE(want.ok()) << where << ": " << want.status();
  ASSERT_TRUE(got.ok()) << where << ": " << got.status();
  ASSERT_EQ(got->size(), want->size());
  for (size_t o = 0; o < want->size(); ++o) {
    ExpectSameValues((*got)[o], (*want)[o], absl::StrCat(where, " output ", o));
  }
}

TEST(DecompositionsTest, Activations) {
  const TensorType x = F64({3, 7});
  const std::vector<Case> cases = {
      {"gelu", {x}, {}, 1, false, true},
      {"gelu", {x}, Make({{"approximate", std::string("tanh")}}), 1, false, true},
      {"silu", {x}, {}, 1, false, true},
      {"clip", {x}, Make({{"min", -1.5}, {"max", 2.0}}), 1, false, true},
      {"clip", {x}, Make({{"min", 0.25}}), 1, false, true},
      {"clip", {x}, Make({{"max", -0.5}}), 1, false, true},
      {"clip", {x}, Make({{"min", 1.0}, {"max", -1.0}}), 1},  // min > max
      {"clip", {x}, Make({{"min", kNan}}), 1},
      {"clip", {x}},
      {"clip", {{DType::kI32, {4, 5}}}, Make({{"min", -2.5}, {"max", 1.5}})},
      {"clip", {{DType::kI64, {9}}}, Make({{"max", 1e30}, {"min", -0.5}})},
      {"leaky_relu", {x}, Make({{"alpha", 0.1}}), 1, false, true},
      {"elu", {x}, Make({{"alpha", 0.5}}), 1, false, true},
      {"selu", {x}, {}, 1, false, true},
      {"softplus", {x}, {}, 1, false, true},
      {"hard_sigmoid", {x}, {}, 1, false, true},
      {"hard_sigmoid", {x}, Make({{"alpha", 0.5}, {"beta", 0.25}})},
      {"hard_swish", {x}, {}, 1, false, true},
      {"prelu", {F64({2, 3, 4}), F64({3, 1})}, {}, 1, false, true},
      {"prelu", {F64({2, 3, 4}), F64({4})}},
  };
  for (const Case& c : cases) CheckDecomposition(c);
}

// Over [-3, 3) and the specials (NaN outside the domains, as the C
// library gives); the f32 forms' accuracy: //tests/e2e:math_end_to_end_test.
TEST(DecompositionsTest, InverseTrig) {
  for (const char* op : {"atan", "asin", "acos", "asinh", "acosh", "atanh"}) {
    CheckDecomposition({op, {F64({5, 9})}, {}, 1, false, true});
  }
}

// Integers from [-3, 3) tie often; the specials put NaN and infinities
// among floats. reverse_sequence: //tests/e2e:math_end_to_end_test
// (its lengths must lie in [0, T]).
TEST(DecompositionsTest, TopKAndLrn) {
  const std::vector<Case> cases = {
      {"top_k", {F64({4, 7})}, Make({{"k", int64_t{7}}}), 2, false, true},
      {"top_k", {F64({4, 7})}, Make({{"k", int64_t{3}}, {"largest", int64_t{0}}}), 2, false, true},
      {"top_k", {F64({7, 2, 3})}, Make({{"k", int64_t{2}}, {"axis", int64_t{0}}}), 2, false, true},
      {"top_k", {{DType::kI64, {3, 9}}}, Make({{"k", int64_t{9}}}), 2},
      {"top_k",
       {{DType::kI32, {3, 9, 2}}},
       Make({{"k", int64_t{4}}, {"axis", int64_t{1}}, {"largest", int64_t{0}}}),
       2},
      {"top_k", {F64({3, 5})}, Make({{"k", int64_t{0}}}), 2},
      {"top_k", {F64({4, 7})}, Make({{"k", int64_t{7}}, {"largest", int64_t{0}}}), 2, false, true},
      // k > 16: by ranks.
      {"top_k", {F64({3, 20})}, Make({{"k", int64_t{17}}}), 2, false, true},
      {"top_k",
       {F64({20, 2})},
       Make({{"k", int64_t{18}}, {"axis", int64_t{0}}, {"largest", int64_t{0}}}),
       2,
       false,
       true},
      {"top_k", {{DType::kI64, {2, 30}}}, Make({{"k", int64_t{30}}, {"largest", int64_t{0}}}), 2},
      {"lrn", {F64({2, 5, 3, 2})}, Make({{"size", int64_t{3}}}), 1, false, true},
      {"lrn",
       {F64({2, 6, 4})},
       Make({{"size", int64_t{4}}, {"alpha", 0.3}, {"beta", 1.5}, {"bias", 0.25}})},
      {"lrn", {F64({1, 3})}, Make({{"size", int64_t{1}}, {"bias", 1e-30}})},
      // Windows wider than the channels, up to absurdly: only 2C - 1 slices.
      {"lrn", {F64({2, 3, 2})}, Make({{"size", int64_t{8}}, {"alpha", 0.5}})},
      {"lrn", {F64({1, 4})}, Make({{"size", int64_t{1} << 40}, {"bias", 2.0}})},
  };
  for (const Case& c : cases) CheckDecomposition(c);
}

TEST(DecompositionsTest, Einsum) {
  struct Equation {
    const char* text;
    std::vector<Shape> shapes;
    DType dtype = DType::kF64;
  };
  const std::vector<Equation> equations = {
      {"ij,jk->ik", {{3, 4}, {4, 5}}},
      {"bij,bjk->bik", {{2, 3, 4}, {2, 4, 5}}},
      {"i,i", {{6}, {6}}},
      {"ij->i", {{3, 4}}},
      {"ij->ji", {{3, 4}}},
      {"...ii->...i", {{2, 3, 4, 4}}},
      {"ii", {{5, 5}}},
      {"iji->j", {{3, 2, 3}}},
      {"ij,jk,kl->il", {{2, 3}, {3, 4}, {4, 2}}},
      {"abc,cd,bd->da", {{2, 3, 4}, {4, 5}, {3, 5}}},
      {"i,j->ij", {{3}, {4}}},
      {"ba,ab", {{3, 2}, {2, 3}}},
      {"...j,j...->...", {{1, 3, 4}, {4, 2, 1}}},
      {"bij,jk->bki", {{1, 3, 4}, {4, 5}}},
      {"ij,jk->ik", {{3, 4}, {4, 5}}, DType::kI64},
      {"ii,i->", {{4, 4}, {4}}, DType::kI32},
  };
  for (const Equation& e : equations) {
    Case c{"einsum", {}, Make({{"equation", std::string(e.text)}})};
    for (const Shape& shape : e.shapes) c.inputs.push_back({e.dtype, shape});
    CheckDecomposition(c);
  }
}

TEST(DecompositionsTest, LinearAlgebra) {
  const std::vector<Case> cases = {
      {"linear", {F64({2, 3, 5}), F64({4, 5}), F64({4})}},
      {"linear", {F64({3, 5}), F64({4, 5})}},
      {"linear", {F64({5}), F64({1, 5}), F64({1})}},
      {"gemm", {F64({3, 5}), F64({5, 4}), F64({4})}},
      {"gemm",
       {F64({5, 3}), F64({4, 5}), F64({3, 1})},
       Make({{"trans_a", int64_t{1}}, {"trans_b", int64_t{1}}, {"alpha", 0.5}, {"beta", 2.0}})},
      {"gemm", {F64({3, 5}), F64({5, 4})}, Make({{"alpha", -1.0}})},
      {"gemm", {F64({1, 5}), F64({5, 1}), F64({1, 1})}},
  };
  for (const Case& c : cases) CheckDecomposition(c);
}

TEST(DecompositionsTest, Reductions) {
  std::vector<Case> cases;
  for (const char* op :
       {"reduce_l1", "reduce_l2", "reduce_log_sum", "reduce_log_sum_exp", "reduce_sum_square"}) {
    const bool positive = std::string(op) == "reduce_log_sum";
    cases.push_back(
        {op, {F64({2, 3, 4})}, Make({{"axes", std::vector<int64_t>{-1}}}), 1, positive});
    cases.push_back({op,
                     {F64({2, 3, 4})},
                     Make({{"axes", std::vector<int64_t>{0, 2}}, {"keepdims", int64_t{1}}}),
                     1,
                     positive});
    cases.push_back({op, {F64({3, 1, 5})}, {}, 1, positive});
  }
  cases.push_back(
      {"reduce_l1", {{DType::kI32, {3, 4}}}, Make({{"axes", std::vector<int64_t>{1}}})});
  cases.push_back({"reduce_sum_square", {{DType::kI64, {3, 4}}}, {}});
  // Infinite maxima: the result is the max itself.
  cases.push_back({"reduce_log_sum_exp",
                   {F64({7, 1})},
                   Make({{"axes", std::vector<int64_t>{1}}}),
                   1,
                   false,
                   true});
  for (const Case& c : cases) CheckDecomposition(c);
}

TEST(DecompositionsTest, ShapeOps) {
  const std::vector<Case> cases = {
      {"flatten", {F64({2, 3, 4})}},
      {"flatten", {F64({2, 3, 4})}, Make({{"axis", int64_t{0}}})},
      {"flatten", {F64({2, 3, 4})}, Make({{"axis", int64_t{-1}}})},
      {"flatten", {F64({2, 3, 4})}, Make({{"axis", int64_t{3}}})},
      {"dropout", {F64({2, 3})}, Make({{"ratio", 0.25}})},
  };
  for (const Case& c : cases) CheckDecomposition(c);
}

TEST(DecompositionsTest, LogSoftmax) {
  for (int64_t axis : {0, 1, -1}) {
    Case c{"log_softmax", {F64({3, 5})}, Make({{"axis", axis}})};
    CheckDecomposition(c);
  }
  CheckDecomposition({"log_softmax", {F64({4, 1})}});
}

TEST(DecompositionsTest, Normalisations) {
  const std::vector<Case> cases = {
      {"layer_norm", {F64({2, 3, 5}), F64({5}), F64({5})}},
      {"layer_norm",
       {F64({2, 3, 5}), F64({3, 5})},
       Make({{"axis", int64_t{1}}, {"epsilon", 1e-3}})},
      {"layer_norm", {F64({4, 1})}},
      {"group_norm", {F64({2, 6, 3, 2}), F64({6}), F64({6})}, Make({{"num_groups", int64_t{3}}})},
      {"group_norm", {F64({2, 4}), F64({4}), F64({4})}, Make({{"num_groups", int64_t{1}}})},
      {"group_norm",
       {F64({1, 4, 5}), F64({4}), F64({4})},
       Make({{"num_groups", int64_t{4}}, {"epsilon", 0.1}})},
      {"instance_norm", {F64({2, 3, 4, 5}), F64({3}), F64({3})}},
      {"instance_norm", {F64({2, 3}), F64({3}), F64({3})}},
  };
  for (const Case& c : cases) CheckDecomposition(c);
  // Variances must be positive: every input from [0.5, 3).
  CheckDecomposition({"batch_norm",
                      {F64({2, 3, 4}), F64({3}), F64({3}), F64({3}), F64({3})},
                      Make({{"epsilon", 1e-3}}),
                      1,
                      /*positive=*/true});
  CheckDecomposition({"batch_norm",
                      {F64({4, 2}), F64({2}), F64({2}), F64({2}), F64({2})},
                      {},
                      1,
                      /*positive=*/true});
}

using Ints = std::vector<int64_t>;

// im2col and direct (grouped, small groups) convs.
TEST(DecompositionsTest, Convolutions) {
  const std::vector<Case> cases = {
      // im2col: asymmetric pads, strides, bias.
      {"conv",
       {F64({2, 4, 6, 7}), F64({6, 4, 3, 3}), F64({6})},
       Make({{"pads", Ints{1, 0, 2, 1}}, {"strides", Ints{2, 1}}})},
      // im2col, batched over two groups.
      {"conv", {F64({1, 8, 5, 5}), F64({10, 4, 3, 3})}, Make({{"group", int64_t{2}}})},
      // im2col, 1-D, dilated.
      {"conv",
       {F64({2, 6, 9}), F64({8, 6, 3}), F64({8})},
       Make({{"dilations", Ints{2}}, {"pads", Ints{2, 2}}})},
      // im2col, 3-D.
      {"conv",
       {F64({1, 3, 4, 4, 4}), F64({5, 3, 2, 2, 2})},
       Make({{"strides", Ints{2, 2, 2}}, {"pads", Ints{1, 1, 1, 1, 1, 1}}})},
      // im2col with one kernel position: the strided input is the column.
      {"conv", {F64({2, 32, 3, 3}), F64({8, 32, 1, 1})}, Make({{"strides", Ints{2, 2}}})},
      {"conv", {F64({1, 32, 3, 3}), F64({8, 32, 1, 1}), F64({8})}},
      // direct: depthwise, with a multiplier, 3-D.
      {"conv",
       {F64({2, 4, 5, 5}), F64({4, 1, 3, 3}), F64({4})},
       Make({{"group", int64_t{4}}, {"pads", Ints{1, 1, 1, 1}}})},
      {"conv",
       {F64({1, 3, 6}), F64({6, 1, 3})},
       Make({{"group", int64_t{3}}, {"strides", Ints{2}}})},
      {"conv", {F64({1, 2, 3, 3, 3}), F64({2, 1, 2, 2, 2})}, Make({{"group", int64_t{2}}})},
      // im2col: one input channel; few channels.
      {"conv", {F64({1, 1, 5, 5}), F64({8, 1, 3, 3})}},
      {"conv", {F64({1, 2, 4, 4}), F64({3, 2, 2, 2}), F64({3})}},
      // direct: two input channels per group.
      {"conv",
       {F64({1, 4, 4, 4}), F64({6, 2, 2, 2})},
       Make({{"group", int64_t{2}}, {"dilations", Ints{1, 2}}})},
  };
  for (const Case& c : cases) CheckDecomposition(c);
}

// Both ways of conv_transpose: columns (groups of several input channels)
// and the conv of the zero-interleaved input (one input channel a group).
TEST(DecompositionsTest, ConvTransposes) {
  const std::vector<Case> cases = {
      // columns: strides, pads, output_padding, bias; unstrided; grouped.
      {"conv_transpose",
       {F64({2, 4, 3, 4}), F64({4, 3, 3, 3}), F64({3})},
       Make({{"strides", Ints{2, 2}}, {"pads", Ints{1, 0, 1, 2}}, {"output_padding", Ints{1, 0}}})},
      {"conv_transpose",
       {F64({1, 3, 4, 4}), F64({3, 2, 2, 2})},
       Make({{"pads", Ints{1, 1, 0, 0}}})},
      {"conv_transpose",
       {F64({1, 4, 3, 3}), F64({4, 3, 2, 3})},
       Make({{"group", int64_t{2}}, {"strides", Ints{3, 2}}, {"dilations", Ints{1, 2}}})},
      // columns, 1-D with negative pads; 3-D.
      {"conv_transpose",
       {F64({2, 3, 5}), F64({3, 2, 4}), F64({2})},
       Make({{"strides", Ints{2}}, {"pads", Ints{-2, 3}}})},
      {"conv_transpose",
       {F64({1, 2, 2, 3, 2}), F64({2, 2, 2, 2, 2})},
       Make({{"strides", Ints{2, 1, 2}}, {"pads", Ints{0, 1, 1, 1, 0, 0}}})},
      // conv: depthwise, strided and not; one input channel; pads past the
      // kernel's reach, negative pads.
      {"conv_transpose",
       {F64({1, 3, 4, 4}), F64({3, 1, 3, 3}), F64({3})},
       Make({{"group", int64_t{3}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}})},
      {"conv_transpose",
       {F64({1, 2, 5}), F64({2, 2, 3})},
       Make({{"group", int64_t{2}}, {"dilations", Ints{2}}, {"output_padding", Ints{1}}})},
      {"conv_transpose",
       {F64({2, 1, 4, 3}), F64({1, 3, 2, 2}), F64({3})},
       Make({{"strides", Ints{1, 2}}, {"pads", Ints{2, -1, 1, 0}}})},
      // conv: strides of more phases than the columns way makes.
      {"conv_transpose",
       {F64({1, 2, 2, 2}), F64({2, 1, 2, 1})},
       Make({{"strides", Ints{100, 100}}})},
  };
  for (const Case& c : cases) CheckDecomposition(c);
}

TEST(DecompositionsTest, Pools) {
  const TensorType x = F64({2, 3, 7, 6});
  const std::vector<Case> cases = {
      {"max_pool",
       {x},
       Make({{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}}),
       1,
       false,
       true},
      {"max_pool",
       {x},
       Make({{"kernel_shape", Ints{2, 3}},
             {"dilations", Ints{2, 1}},
             {"ceil_mode", int64_t{1}},
             {"strides", Ints{2, 2}}})},
      {"max_pool", {F64({1, 2, 5})}, Make({{"kernel_shape", Ints{1}}, {"strides", Ints{2}}})},
      {"max_pool", {F64({1, 1, 3, 3, 3})}, Make({{"kernel_shape", Ints{2, 2, 2}}})},
      {"average_pool", {x}, Make({{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}})},
      {"average_pool", {x}, Make({{"kernel_shape", Ints{3, 3}}, {"pads", Ints{1, 0, 1, 2}}})},
      {"average_pool",
       {x},
       Make({{"kernel_shape", Ints{3, 3}},
             {"pads", Ints{1, 0, 1, 2}},
             {"count_include_pad", int64_t{1}}})},
      {"average_pool",
       {x},
       Make({{"kernel_shape", Ints{3, 2}},
             {"strides", Ints{2, 2}},
             {"pads", Ints{1, 1, 0, 0}},
             {"ceil_mode", int64_t{1}},
             {"count_include_pad", int64_t{1}}})},
      {"average_pool", {F64({1, 2, 3, 4, 4})}, Make({{"kernel_shape", Ints{1, 2, 2}}})},
  };
  for (const Case& c : cases) {
    CheckDecomposition(c);
    if (c.op != "max_pool") continue;
    // With indices, row- and column-major.
    Case indices = c;
    indices.outputs = 2;
    CheckDecomposition(indices);
    indices.attrs.Set("storage_order", int64_t{1});
    CheckDecomposition(indices);
  }
}

TEST(DecompositionsTest, Resize) {
  const TensorType x = F64({2, 3, 5, 6});
  using Floats = std::vector<double>;
  auto resize = [](const char* mode, const char* coordinates, AttrValue size, bool scales) {
    return Make({{"mode", std::string(mode)},
                 {"coordinate_transformation_mode", std::string(coordinates)},
                 {scales ? "scales" : "sizes", std::move(size)}});
  };
  std::vector<Case> cases;
  for (const char* mode : {"nearest", "linear", "cubic"}) {
    for (const char* coordinates : {"half_pixel", "pytorch_half_pixel", "align_corners",
                                    "asymmetric", "tf_half_pixel_for_nn"}) {
      cases.push_back(
          {"resize", {x}, resize(mode, coordinates, Floats{1, 1, 2, 3}, true), 1, false, true});
      cases.push_back({"resize", {x}, resize(mode, coordinates, Floats{1, 0.5, 0.6, 1.3}, true)});
      cases.push_back({"resize", {x}, resize(mode, coordinates, Ints{3, 3, 1, 4}, false)});
    }
    Attrs crop = resize(mode, "tf_crop_and_resize", Ints{2, 3, 4, 7}, false);
    crop.Set("roi", Floats{0, 0, -0.2, 0.3, 1, 1, 0.8, 1.4});
    crop.Set("extrapolation_value", 2.5);
    cases.push_back({"resize", {x}, std::move(crop)});
    Attrs excluded = resize(mode, "half_pixel", Floats{1, 1, 1.5, 0.7}, true);
    excluded.Set("exclude_outside", int64_t{1});
    excluded.Set("cubic_coeff_a", -0.5);
    cases.push_back({"resize", {x}, std::move(excluded)});
  }
  for (const char* rounding : {"round_prefer_ceil", "floor", "ceil"}) {
    Attrs attrs = resize("nearest", "asymmetric", Floats{1, 1, 1.5, 0.7}, true);
    attrs.Set("nearest_mode", std::string(rounding));
    cases.push_back({"resize", {x}, std::move(attrs)});
  }
  for (const Case& c : cases) CheckDecomposition(c);
}

// The ops a decomposition of the one node of `c` leaves, counted.
std::map<std::string, int> DecomposedOps(const Case& c) {
  Module module;
  module.graph = BuildGraph(c);
  EXPECT_TRUE(InferShapes(module.graph).ok());
  EXPECT_TRUE(DecomposePass::Create({}).value()->Run(module).ok());
  std::map<std::string, int> ops;
  for (const Node& node : module.graph.nodes()) ++ops[std::string(node.op)];
  return ops;
}

// A 3x3 conv of 8 channels into 16 is one matmul of the column matrix that
// the 9 kernel positions' views fill, and so is one of a single channel; a
// depthwise one sums 9 products.
TEST(DecompositionsTest, ConvChoosesIm2colOrDirect) {
  std::map<std::string, int> im2col = DecomposedOps(
      {"conv", {F64({1, 8, 6, 6}), F64({16, 8, 3, 3})}, Make({{"pads", Ints{1, 1, 1, 1}}})});
  EXPECT_EQ(im2col["matmul"], 1);
  EXPECT_EQ(im2col["pad"], 1);
  EXPECT_EQ(im2col["slice"], 9);
  EXPECT_EQ(im2col["concat"], 1);
  EXPECT_EQ(im2col["mul"], 0);
  EXPECT_EQ(DecomposedOps({"conv", {F64({1, 1, 6, 6}), F64({4, 1, 3, 3})}})["matmul"], 1);
  std::map<std::string, int> direct =
      DecomposedOps({"conv",
                     {F64({1, 8, 6, 6}), F64({8, 1, 3, 3})},
                     Make({{"pads", Ints{1, 1, 1, 1}}, {"group", int64_t{8}}})});
  EXPECT_EQ(direct["matmul"], 0);
  EXPECT_EQ(direct["mul"], 9);
  EXPECT_EQ(direct["add"], 8);
}

// A 3x3 conv of 16 channels with a known weight reads the padded image in
// place: one gemm call per kernel position, each adding to the output
// (lowered as one product node summing over the positions and channels).
TEST(DecompositionsTest, ConvOfManyChannelsIsShiftedGemmCalls) {
  Module module;
  Graph& graph = module.graph;
  const ValueId x = *graph.AddInput("x", F64({2, 16, 6, 20}));
  Tensor w(DType::kF64, {8, 16, 3, 3});
  FillUniform(w, 3, -1, 1);
  const ValueId weight = *graph.AddInitializer("w", ValueKind::kWeight, std::move(w));
  const NodeId conv =
      *graph.AddNode("conv", "conv", {x, weight}, {"y"}, Make({{"pads", Ints{1, 1, 1, 1}}}));
  graph.AddOutput(graph.node(conv).outputs[0]);
  ASSERT_TRUE(InferShapes(graph).ok());
  ASSERT_TRUE(DecomposePass::Create({}).value()->Run(module).ok());
  std::map<std::string, int> ops;
  for (const Node& node : graph.nodes()) ++ops[std::string(node.op)];
  EXPECT_EQ(ops["as_strided"], 1);
  EXPECT_EQ(ops["reduce_sum"], 1);
  EXPECT_EQ(ops["matmul"], 0);
  EXPECT_EQ(ops["concat"], 0);
  absl::StatusOr<LoopProgram> program = LowerGraph(graph);
  ASSERT_TRUE(program.ok()) << program.status();
  int calls = 0;
  for (const ComputeNode& node : program->nodes) {
    if (node.extern_op != ExternOp::kGemm) continue;
    ++calls;
    const std::optional<Gemm> gemm = MatchGemm(node);
    ASSERT_TRUE(gemm.has_value());
    EXPECT_EQ(gemm->batch, Ints{2});
    EXPECT_EQ(gemm->accumulate, (Ints{3, 3}));
    EXPECT_EQ(gemm->m, 8);
    EXPECT_EQ(gemm->n, 6 * 22);  // 6 rows of the padded width, 22
    EXPECT_EQ(gemm->k, 16);
  }
  EXPECT_EQ(calls, 1);
}

// conv_transpose of 8 channels into 4, 3x3, stride 2: one GEMM and 4
// phases (of 4, 2, 2 and 1 kernel positions) concatenated; a depthwise one
// is a conv of the interleaved input.
TEST(DecompositionsTest, ConvTransposeChoosesColumnsOrConv) {
  std::map<std::string, int> columns =
      DecomposedOps({"conv_transpose",
                     {F64({1, 8, 5, 5}), F64({8, 4, 3, 3})},
                     Make({{"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}})});
  EXPECT_EQ(columns["matmul"], 1);
  EXPECT_EQ(columns["slice"], 9 + 1);  // the kernel positions and the crop
  EXPECT_EQ(columns["add"], 5);
  EXPECT_EQ(columns["concat"], 1);
  EXPECT_EQ(columns["mul"], 0);
  std::map<std::string, int> conv =
      DecomposedOps({"conv_transpose",
                     {F64({1, 8, 5, 5}), F64({8, 1, 3, 3})},
                     Make({{"strides", Ints{2, 2}}, {"group", int64_t{8}}})});
  EXPECT_EQ(conv["matmul"], 0);
  EXPECT_EQ(conv["mul"], 9);
}

TEST(DecompositionsTest, EmptyConvTransposeIsRefused) {
  Module module;
  module.graph = BuildGraph({"conv_transpose", {F64({1, 0, 3}), F64({0, 2, 2})}});
  ASSERT_TRUE(InferShapes(module.graph).ok());
  absl::Status status = DecomposePass::Create({}).value()->Run(module).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              testing::HasSubstr("node 'node' (conv_transpose): x [1,0,3] or the weight [0,2,2] "
                                 "is empty"));
}

// Nearest by integer factors is a view (unsqueeze, expand, reshape) and
// by halves a strided slice; bilinear is two gathers and two weighted taps
// per dim.
TEST(DecompositionsTest, ResizeUsesViewsWhereItCan) {
  using Floats = std::vector<double>;
  std::map<std::string, int> repeat =
      DecomposedOps({"resize", {F64({1, 2, 4, 4})}, Make({{"scales", Floats{1, 1, 2, 3}}})});
  EXPECT_EQ(repeat["gather"], 0);
  EXPECT_EQ(repeat["expand"], 2);
  std::map<std::string, int> halves =
      DecomposedOps({"resize",
                     {F64({1, 2, 4, 4})},
                     Make({{"scales", Floats{1, 1, 0.5, 0.5}},
                           {"coordinate_transformation_mode", std::string("asymmetric")}})});
  EXPECT_EQ(halves["gather"], 0);
  EXPECT_EQ(halves["slice"], 2);
  std::map<std::string, int> bilinear =
      DecomposedOps({"resize",
                     {F64({1, 2, 4, 4})},
                     Make({{"mode", std::string("linear")}, {"scales", Floats{1, 1, 2, 2}}})});
  EXPECT_EQ(bilinear["gather"], 4);
  EXPECT_EQ(bilinear["mul"], 4);
  EXPECT_EQ(bilinear["add"], 2);
}

// A window of 2^17 positions would be 2^17 slices: refused by name.
TEST(DecompositionsTest, HugeKernelsAreRefused) {
  Module module;
  module.graph =
      BuildGraph({"max_pool",
                  {F64({1, 1, 1, 1})},
                  Make({{"kernel_shape", Ints{512, 256}}, {"pads", Ints{256, 128, 255, 127}}})});
  ASSERT_TRUE(InferShapes(module.graph).ok());
  absl::Status status = DecomposePass::Create({}).value()->Run(module).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              testing::HasSubstr("node 'node' (max_pool): the kernel has 131072 positions; loom "
                                 "decomposes kernels of at most 2^16 positions"));
}

// Tables of an entry per output position along a dim: a resize to 2^30
// positions, or max_pool's indices over 2^25, are refused by name (the
// tables alone would take gigabytes).
TEST(DecompositionsTest, HugeTablesAreRefused) {
  for (const Case& c :
       {Case{"resize",
             {F64({1, 2})},
             Make({{"sizes", Ints{1, int64_t{1} << 30}}, {"mode", std::string("linear")}})},
        Case{"max_pool", {F64({1, 1, int64_t{1} << 25})}, Make({{"kernel_shape", Ints{2}}}), 2}}) {
    Module module;
    module.graph = BuildGraph(c);
    ASSERT_TRUE(InferShapes(module.graph).ok());
    absl::Status status = DecomposePass::Create({}).value()->Run(module).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(status.message()),
                testing::AllOf(testing::HasSubstr(absl::StrCat("node 'node' (", c.op, ")")),
                               testing::HasSubstr("at most 2^24")));
  }
}

TEST(DecompositionsTest, BadAttributesAreErrorsNamingTheNode) {
  Module module;
  module.graph = BuildGraph(
      {"group_norm", {F64({2, 6}), F64({6}), F64({6})}, Make({{"num_groups", int64_t{4}}})});
  proto::DecomposeOptions options;
  absl::Status status = DecomposePass::Create(options).value()->Run(module).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), testing::HasSubstr("node 'node' (group_norm)"));
}

}  // namespace
}  // namespace loom

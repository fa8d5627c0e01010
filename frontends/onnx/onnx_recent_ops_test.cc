// The ONNX importer's mappings of opsets 24 to 28's new ops: SwiGLU,
// BitCast, TensorScatter, CausalConvWithState (onnx_ops_recent.cc),
// LinearAttention and ai.onnx.preview's FlexAttention
// (onnx_ops_attention.cc), each checked against the ONNX definition
// written out here in plain loops, and their refusals.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "frontends/onnx/onnx_importer.h"
#include "frontends/onnx/onnx_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/interpreter.h"

namespace loom {
namespace {

using ::testing::HasSubstr;

constexpr int32_t kFloat = onnx::TensorProto::FLOAT;
constexpr int32_t kInt64 = onnx::TensorProto::INT64;

void SetFloat(onnx::NodeProto& node, const std::string& name, float value) {
  onnx::AttributeProto* attr = node.add_attribute();
  attr->set_name(name);
  attr->set_type(onnx::AttributeProto::FLOAT);
  attr->set_f(value);
}

// Imports the model and runs it with the reference interpreter.
std::vector<Tensor> ImportAndRun(const ModelBuilder& b, const std::vector<Tensor>& inputs) {
  absl::StatusOr<Graph> graph = ImportOnnxModel(b.model());
  EXPECT_TRUE(graph.ok()) << graph.status();
  if (!graph.ok()) return {};
  absl::StatusOr<std::vector<Tensor>> out = Interpret(*graph, inputs);
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? *out : std::vector<Tensor>{};
}

std::string ImportError(const ModelBuilder& b) {
  absl::StatusOr<Graph> graph = ImportOnnxModel(b.model());
  return graph.ok() ? "imported" : std::string(graph.status().message());
}

double Sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

// --- SwiGLU ------------------------------------------------------------------

TEST(OnnxRecentOpsTest, SwiGluGatesWithAlpha) {
  ModelBuilder b(28);
  b.Input("a", kFloat, {2, 3}).Input("b", kFloat, {2, 3}).Output("y");
  SetFloat(b.Node("SwiGLU", {"a", "b"}, {"y"}), "alpha", 0.5f);
  const Tensor a = Iota({2, 3}), g = Iota({2, 3}, 0.3);
  const std::vector<Tensor> y = ImportAndRun(b, {a, g});
  ASSERT_EQ(y.size(), 1u);
  for (int64_t i = 0; i < 6; ++i) {
    const double x = a.GetDouble(i);
    EXPECT_NEAR(y[0].GetDouble(i), x * Sigmoid(0.5 * x) * g.GetDouble(i), 1e-6);
  }
}

TEST(OnnxRecentOpsTest, SwiGluRefusesBroadcasting) {
  ModelBuilder b(28);
  b.Input("a", kFloat, {2, 3}).Input("b", kFloat, {1, 3}).Output("y");
  b.Node("SwiGLU", {"a", "b"}, {"y"}, "glu");
  EXPECT_THAT(ImportError(b), HasSubstr("node 'glu' (SwiGLU): A f32[2,3] and B f32[1,3]"));
}

// --- BitCast -----------------------------------------------------------------

TEST(OnnxRecentOpsTest, BitCastKeepsTheBits) {
  ModelBuilder b(26);
  b.Input("x", kFloat, {3}).TypedOutput("y", onnx::TensorProto::INT32, {3});
  SetAttr(b.Node("BitCast", {"x"}, {"y"}), "to", int64_t{onnx::TensorProto::INT32});
  Tensor x(DType::kF32, {3});
  const float values[] = {1.0f, -0.0f, 3.5e-41f};  // the last one subnormal
  std::memcpy(x.data(), values, sizeof values);
  const std::vector<Tensor> y = ImportAndRun(b, {x});
  ASSERT_EQ(y.size(), 1u);
  EXPECT_EQ(y[0].GetInt(0), 0x3f800000);
  EXPECT_EQ(y[0].GetInt(1), INT32_MIN);
  int32_t subnormal;
  std::memcpy(&subnormal, &values[2], 4);
  EXPECT_EQ(y[0].GetInt(2), subnormal);
}

TEST(OnnxRecentOpsTest, BitCastRefusesAnotherWidth) {
  ModelBuilder b(26);
  b.Input("x", kFloat, {3}).Output("y");
  SetAttr(b.Node("BitCast", {"x"}, {"y"}, "bits"), "to", int64_t{kInt64});
  EXPECT_THAT(ImportError(b), HasSubstr("node 'bits' (BitCast): cannot reinterpret f32 (32 bits) "
                                        "as INT64 (64 bits)"));
  ModelBuilder strings(26);
  strings.Input("x", kFloat, {3}).Output("y");
  SetAttr(strings.Node("BitCast", {"x"}, {"y"}, "bits"), "to", int64_t{onnx::TensorProto::STRING});
  EXPECT_THAT(ImportError(strings), HasSubstr("STRING"));
}

// --- TensorScatter -----------------------------------------------------------

// A [2, 5, 2] cache (axis 1) written from write_indices, given at run time.
ModelBuilder TensorScatterModel(const std::string& mode, int64_t update_length) {
  ModelBuilder b(24);
  b.Input("cache", kFloat, {2, 5, 2})
      .Input("update", kFloat, {2, update_length, 2})
      .Input("at", kInt64, {2})
      .Output("present");
  onnx::NodeProto& node = b.Node("TensorScatter", {"cache", "update", "at"}, {"present"}, "kv");
  SetString(node, "mode", mode);
  SetAttr(node, "axis", int64_t{1});
  return b;
}

TEST(OnnxRecentOpsTest, TensorScatterWritesAtEachBatchsIndex) {
  for (const std::string mode : {"linear", "circular"}) {
    SCOPED_TRACE(mode);
    const Tensor cache = Iota({2, 5, 2}), update = Iota({2, 3, 2}, 0.5);
    const std::vector<int64_t> at = {1, mode == "linear" ? 2 : 4};
    const std::vector<Tensor> y =
        ImportAndRun(TensorScatterModel(mode, 3), {cache, update, I64({2}, at)});
    ASSERT_EQ(y.size(), 1u);
    Tensor expected = cache;
    for (int64_t batch = 0; batch < 2; ++batch) {
      for (int64_t s = 0; s < 3; ++s) {
        const int64_t position = (at[batch] + s) % 5;
        for (int64_t d = 0; d < 2; ++d) {
          expected.SetDouble((batch * 5 + position) * 2 + d,
                             update.GetDouble((batch * 3 + s) * 2 + d));
        }
      }
    }
    for (int64_t i = 0; i < 20; ++i) EXPECT_EQ(y[0].GetDouble(i), expected.GetDouble(i)) << i;
  }
}

// Linear mode requires write_indices + sequence_length <= the cache length:
// past it, the run fails as an index out of range does.
TEST(OnnxRecentOpsTest, TensorScatterPastTheEndFailsTheRun) {
  absl::StatusOr<Graph> graph = ImportOnnxModel(TensorScatterModel("linear", 3).model());
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<std::vector<Tensor>> y =
      Interpret(*graph, {Iota({2, 5, 2}), Iota({2, 3, 2}), I64({2}, {0, 3})});
  EXPECT_FALSE(y.ok());
}

TEST(OnnxRecentOpsTest, TensorScatterRefusals) {
  EXPECT_THAT(ImportError(TensorScatterModel("ring", 3)),
              HasSubstr("node 'kv' (TensorScatter): mode 'ring' is not 'linear' or 'circular'"));
  EXPECT_THAT(ImportError(TensorScatterModel("linear", 6)),
              HasSubstr("update [2,6,2] must match past_cache [2,5,2] but along axis 1"));
  ModelBuilder batch_axis = TensorScatterModel("linear", 3);
  batch_axis.model_for_test().mutable_graph()->mutable_node(0)->mutable_attribute(1)->set_i(0);
  EXPECT_THAT(ImportError(batch_axis), HasSubstr("'axis' must not be 0"));
}

// --- CausalConvWithState -----------------------------------------------------

// input [batch, channels, length], weight [channels, 1, k], bias, past
// [batch, channels, k - 1]: the definition, term by term.
std::vector<double> CausalConv(const Tensor& input, const Tensor& weight, const Tensor& bias,
                               const Tensor& past, bool silu) {
  const int64_t batch = input.shape()[0], channels = input.shape()[1], length = input.shape()[2];
  const int64_t k = weight.shape()[2];
  std::vector<double> out;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t c = 0; c < channels; ++c) {
      auto padded = [&](int64_t t) {  // t in [0, length + k - 1)
        return t < k - 1 ? past.GetDouble((b * channels + c) * (k - 1) + t)
                         : input.GetDouble((b * channels + c) * length + t - (k - 1));
      };
      for (int64_t t = 0; t < length; ++t) {
        double sum = bias.GetDouble(c);
        for (int64_t j = 0; j < k; ++j) sum += weight.GetDouble(c * k + j) * padded(t + j);
        out.push_back(silu ? sum * Sigmoid(sum) : sum);
      }
    }
  }
  return out;
}

TEST(OnnxRecentOpsTest, CausalConvWithStateCarriesTheState) {
  ModelBuilder b(27);
  b.Input("x", kFloat, {2, 3, 2})
      .Input("w", kFloat, {3, 1, 4})
      .Input("bias", kFloat, {3})
      .Input("past", kFloat, {2, 3, 3})
      .Output("y")
      .Output("present");
  SetString(b.Node("CausalConvWithState", {"x", "w", "bias", "past"}, {"y", "present"}),
            "activation", "swish");
  const Tensor x = Iota({2, 3, 2}), w = Iota({3, 1, 4}, 0.2), bias = Iota({3}, 0.4);
  const Tensor past = Iota({2, 3, 3}, 0.3);
  const std::vector<Tensor> y = ImportAndRun(b, {x, w, bias, past});
  ASSERT_EQ(y.size(), 2u);
  const std::vector<double> expected = CausalConv(x, w, bias, past, /*silu=*/true);
  for (int64_t i = 0; i < 12; ++i) EXPECT_NEAR(y[0].GetDouble(i), expected[i], 1e-6) << i;
  // The last 3 of past (3) followed by x (2): past's last one, then x.
  ASSERT_EQ(y[1].shape(), (Shape{2, 3, 3}));
  for (int64_t row = 0; row < 6; ++row) {
    EXPECT_EQ(y[1].GetDouble(row * 3), past.GetDouble(row * 3 + 2));
    EXPECT_EQ(y[1].GetDouble(row * 3 + 1), x.GetDouble(row * 2));
    EXPECT_EQ(y[1].GetDouble(row * 3 + 2), x.GetDouble(row * 2 + 1));
  }
}

// k = 1 carries no state: present_state is [batch, channels, 0].
TEST(OnnxRecentOpsTest, CausalConvWithStateOfKernelOne) {
  ModelBuilder b(27);
  b.Input("x", kFloat, {1, 2, 3}).Input("w", kFloat, {2, 1, 1}).Output("y").Output("present");
  b.Node("CausalConvWithState", {"x", "w"}, {"y", "present"});
  const Tensor x = Iota({1, 2, 3}), w = Iota({2, 1, 1}, 0.5);
  const std::vector<Tensor> y = ImportAndRun(b, {x, w});
  ASSERT_EQ(y.size(), 2u);
  for (int64_t i = 0; i < 6; ++i) {
    EXPECT_NEAR(y[0].GetDouble(i), x.GetDouble(i) * w.GetDouble(i / 3), 1e-6);
  }
  EXPECT_EQ(y[1].shape(), (Shape{1, 2, 0}));
}

TEST(OnnxRecentOpsTest, CausalConvWithStateRefusals) {
  ModelBuilder weight(27);
  weight.Input("x", kFloat, {1, 2, 3}).Input("w", kFloat, {2, 2, 3}).Output("y").Output("s");
  weight.Node("CausalConvWithState", {"x", "w"}, {"y", "s"}, "conv");
  EXPECT_THAT(ImportError(weight), HasSubstr("node 'conv' (CausalConvWithState): weight must be "
                                             "[channels, 1, k] with channels 2"));
  ModelBuilder past(27);
  past.Input("x", kFloat, {1, 2, 3})
      .Input("w", kFloat, {2, 1, 3})
      .Input("p", kFloat, {1, 2, 3})
      .Output("y")
      .Output("s");
  past.Node("CausalConvWithState", {"x", "w", "", "p"}, {"y", "s"}, "conv");
  EXPECT_THAT(ImportError(past), HasSubstr("past_state must be [1,2,2], got [1,2,3]"));
  ModelBuilder activation(27);
  activation.Input("x", kFloat, {1, 2, 3}).Input("w", kFloat, {2, 1, 3}).Output("y").Output("s");
  SetString(activation.Node("CausalConvWithState", {"x", "w"}, {"y", "s"}, "conv"), "activation",
            "gelu");
  EXPECT_THAT(ImportError(activation), HasSubstr("activation 'gelu' is not"));
}

// --- LinearAttention ---------------------------------------------------------

// Sizes of the LinearAttention test: 2 query heads per key/value head.
constexpr int64_t kB = 2, kT = 3, kHq = 4, kHkv = 2, kDk = 3, kDv = 2;

// gated_delta with per-head decay and beta, written out per head and step:
// S = exp(g) S; v' = beta (v - S^T k); S += k v'^T; o = scale q^T S.
void LinearAttentionReference(const Tensor& q, const Tensor& k, const Tensor& v,
                              const Tensor& decay, const Tensor& beta, double scale,
                              std::vector<double>& out, std::vector<double>& state) {
  out.assign(kB * kT * kHq * kDv, 0);
  state.assign(kB * kHkv * kDk * kDv, 0);
  for (int64_t b = 0; b < kB; ++b) {
    for (int64_t h = 0; h < kHkv; ++h) {
      double* s = &state[(b * kHkv + h) * kDk * kDv];
      for (int64_t t = 0; t < kT; ++t) {
        const int64_t row = b * kT + t;
        const double g = std::exp(decay.GetDouble(row * kHkv + h));
        for (int64_t i = 0; i < kDk * kDv; ++i) s[i] *= g;
        for (int64_t m = 0; m < kDv; ++m) {
          double retrieved = 0;
          for (int64_t d = 0; d < kDk; ++d) {
            retrieved += s[d * kDv + m] * k.GetDouble((row * kHkv + h) * kDk + d);
          }
          const double written = beta.GetDouble(row * kHkv + h) *
                                 (v.GetDouble((row * kHkv + h) * kDv + m) - retrieved);
          for (int64_t d = 0; d < kDk; ++d) {
            s[d * kDv + m] += k.GetDouble((row * kHkv + h) * kDk + d) * written;
          }
        }
        for (int64_t qh = h * (kHq / kHkv); qh < (h + 1) * (kHq / kHkv); ++qh) {
          for (int64_t m = 0; m < kDv; ++m) {
            double sum = 0;
            for (int64_t d = 0; d < kDk; ++d) {
              sum += q.GetDouble((row * kHq + qh) * kDk + d) * s[d * kDv + m];
            }
            out[(row * kHq + qh) * kDv + m] = scale * sum;
          }
        }
      }
    }
  }
}

ModelBuilder LinearAttentionModel(const std::string& rule) {
  ModelBuilder b(27);
  b.Input("q", kFloat, {kB, kT, kHq * kDk})
      .Input("k", kFloat, {kB, kT, kHkv * kDk})
      .Input("v", kFloat, {kB, kT, kHkv * kDv})
      .Input("decay", kFloat, {kB, kT, kHkv})
      .Input("beta", kFloat, {kB, kT, kHkv})
      .Output("y")
      .Output("state");
  onnx::NodeProto& node =
      b.Node("LinearAttention", {"q", "k", "v", "", "decay", "beta"}, {"y", "state"}, "la");
  SetAttr(node, "q_num_heads", kHq);
  SetAttr(node, "kv_num_heads", kHkv);
  SetString(node, "update_rule", rule);
  return b;
}

TEST(OnnxRecentOpsTest, LinearAttentionGatedDeltaWithGroupedHeads) {
  const Tensor q = Iota({kB, kT, kHq * kDk}), k = Iota({kB, kT, kHkv * kDk}, 0.2);
  const Tensor v = Iota({kB, kT, kHkv * kDv}, 0.3), decay = Iota({kB, kT, kHkv}, 0.05);
  const Tensor beta = Iota({kB, kT, kHkv}, 0.15);
  const std::vector<Tensor> y =
      ImportAndRun(LinearAttentionModel("gated_delta"), {q, k, v, decay, beta});
  ASSERT_EQ(y.size(), 2u);
  std::vector<double> out, state;
  LinearAttentionReference(q, k, v, decay, beta, 1 / std::sqrt(3.0), out, state);
  ASSERT_EQ(y[0].num_elements(), static_cast<int64_t>(out.size()));
  for (size_t i = 0; i < out.size(); ++i) EXPECT_NEAR(y[0].GetDouble(i), out[i], 1e-6) << i;
  ASSERT_EQ(y[1].shape(), (Shape{kB, kHkv, kDk, kDv}));
  for (size_t i = 0; i < state.size(); ++i) EXPECT_NEAR(y[1].GetDouble(i), state[i], 1e-6) << i;
}

TEST(OnnxRecentOpsTest, LinearAttentionRefusals) {
  EXPECT_THAT(ImportError(LinearAttentionModel("linear")),
              HasSubstr("node 'la' (LinearAttention): update_rule 'linear' takes no input decay"));
  EXPECT_THAT(ImportError(LinearAttentionModel("retention")),
              HasSubstr("update_rule 'retention' is not"));
  ModelBuilder heads = LinearAttentionModel("gated_delta");
  heads.model_for_test().mutable_graph()->mutable_node(0)->mutable_attribute(0)->set_i(3);
  EXPECT_THAT(ImportError(heads), HasSubstr("q_num_heads 3 must be a positive multiple of "
                                            "kv_num_heads 2"));
  ModelBuilder missing(27);
  missing.Input("q", kFloat, {1, 1, 4}).Input("k", kFloat, {1, 1, 4});
  missing.Input("v", kFloat, {1, 1, 4}).Output("y").Output("s");
  onnx::NodeProto& linear = missing.Node("LinearAttention", {"q", "k", "v"}, {"y", "s"}, "la");
  SetAttr(linear, "q_num_heads", 1);
  SetString(linear, "update_rule", "linear");
  EXPECT_THAT(ImportError(missing), HasSubstr("'kv_num_heads' are required"));
}

// --- FlexAttention -----------------------------------------------------------

// A graph attribute (scores) -> scores + 0.5, for score_mod.
onnx::AttributeProto AddHalf(const std::string& name) {
  onnx::AttributeProto attr;
  attr.set_name(name);
  attr.set_type(onnx::AttributeProto::GRAPH);
  onnx::GraphProto* g = attr.mutable_g();
  g->set_name("add_half");
  g->add_input()->set_name("s");
  g->add_output()->set_name("s_out");
  *g->add_initializer() = ModelBuilder::FloatTensor({}, {0.5f});
  g->mutable_initializer(0)->set_name("half");
  onnx::NodeProto* add = g->add_node();
  add->set_op_type("Add");
  add->add_input("s");
  add->add_input("half");
  add->add_output("s_out");
  return attr;
}

ModelBuilder FlexAttentionModel(const Shape& q, const Shape& k, const Shape& v) {
  ModelBuilder b(26);
  onnx::OperatorSetIdProto* preview = b.model_for_test().add_opset_import();
  preview->set_domain("ai.onnx.preview");
  preview->set_version(1);
  b.Input("q", kFloat, q).Input("k", kFloat, k).Input("v", kFloat, v).Output("y");
  b.Node("FlexAttention", {"q", "k", "v"}, {"y"}, "flex").set_domain("ai.onnx.preview");
  return b;
}

// Two query heads share each key/value head; score_mod adds 0.5 to every
// score (which the softmax cancels), so the result is plain attention.
TEST(OnnxRecentOpsTest, FlexAttentionWithScoreModAndGroupedHeads) {
  ModelBuilder b = FlexAttentionModel({1, 2, 2, 3}, {1, 1, 4, 3}, {1, 1, 4, 2});
  onnx::NodeProto* node = b.model_for_test().mutable_graph()->mutable_node(0);
  *node->add_attribute() = AddHalf("score_mod");
  SetFloat(*node, "scale", 0.7f);
  const Tensor q = Iota({1, 2, 2, 3}), k = Iota({1, 1, 4, 3}, 0.3), v = Iota({1, 1, 4, 2}, 0.2);
  const std::vector<Tensor> y = ImportAndRun(b, {q, k, v});
  ASSERT_EQ(y.size(), 1u);
  ASSERT_EQ(y[0].shape(), (Shape{1, 2, 2, 2}));
  for (int64_t row = 0; row < 4; ++row) {  // (head, query)
    std::vector<double> weights(4);
    double total = 0;
    for (int64_t j = 0; j < 4; ++j) {
      double score = 0;
      for (int64_t d = 0; d < 3; ++d) score += q.GetDouble(row * 3 + d) * k.GetDouble(j * 3 + d);
      weights[j] = std::exp(0.7 * score + 0.5);
      total += weights[j];
    }
    for (int64_t m = 0; m < 2; ++m) {
      double sum = 0;
      for (int64_t j = 0; j < 4; ++j) sum += weights[j] / total * v.GetDouble(j * 2 + m);
      EXPECT_NEAR(y[0].GetDouble(row * 2 + m), sum, 1e-6);
    }
  }
}

TEST(OnnxRecentOpsTest, FlexAttentionRefusals) {
  EXPECT_THAT(ImportError(FlexAttentionModel({2, 3, 4}, {2, 3, 4}, {2, 3, 4})),
              HasSubstr("node 'flex' (FlexAttention): Q, K and V must be 4-D"));
  ModelBuilder heads = FlexAttentionModel({1, 3, 2, 4}, {1, 2, 2, 4}, {1, 2, 2, 4});
  EXPECT_THAT(ImportError(heads), HasSubstr("3 query heads are not a multiple of the 2"));
  // prob_mod must keep the probabilities' type: a graph that reduces them
  // is refused.
  ModelBuilder reducing = FlexAttentionModel({1, 1, 2, 4}, {1, 1, 2, 4}, {1, 1, 2, 4});
  onnx::AttributeProto prob_mod = AddHalf("prob_mod");
  onnx::NodeProto* sum = prob_mod.mutable_g()->mutable_node(0);
  sum->set_op_type("ReduceSum");
  sum->mutable_input()->RemoveLast();
  *reducing.model_for_test().mutable_graph()->mutable_node(0)->add_attribute() = prob_mod;
  EXPECT_THAT(ImportError(reducing), HasSubstr("graph attribute 'prob_mod' must give one tensor "
                                               "output of its input's type f32[1,1,2,2]"));
}

// ai.onnx.preview's other ops, and FlexAttention in the default domain,
// are refused by name and domain.
TEST(OnnxRecentOpsTest, PreviewDomainOpsAreLookedUpByDomain) {
  ModelBuilder other = FlexAttentionModel({1, 1, 2, 4}, {1, 1, 2, 4}, {1, 1, 2, 4});
  other.model_for_test().mutable_graph()->mutable_node(0)->set_op_type("Attention");
  EXPECT_THAT(ImportError(other),
              HasSubstr("op Attention of domain 'ai.onnx.preview' is not supported by loom"));
  ModelBuilder default_domain = FlexAttentionModel({1, 1, 2, 4}, {1, 1, 2, 4}, {1, 1, 2, 4});
  default_domain.model_for_test().mutable_graph()->mutable_node(0)->clear_domain();
  EXPECT_THAT(ImportError(default_domain),
              HasSubstr("op FlexAttention (opset 26) is not supported"));
}

}  // namespace
}  // namespace loom

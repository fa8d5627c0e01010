#include "tools/gen.h"

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "ir/status_macros.h"
#include "tools/gen_proto.h"
#include "tools/random_graph.h"

namespace loom {
namespace {

using gen::AddInput;
using gen::AddNode;
using gen::AddRandomWeight;
using gen::DeriveSeed;
using gen::SetIntAttr;
using gen::SetIntsAttr;

// ---------------------------------------------------------------------------
// Hand-written models.

// x @ weight + bias, with weight and bias uniform in +-1/sqrt(in) (PyTorch's
// nn.Linear init). Returns the output's name.
std::string AddLinear(const std::string& prefix, const std::string& x, int64_t in, int64_t out,
                      uint64_t seed, const std::string& out_name, proto::Graph& graph) {
  const double limit = 1.0 / std::sqrt(static_cast<double>(in));
  const std::string weight = absl::StrCat(prefix, "_weight");
  const std::string bias = absl::StrCat(prefix, "_bias");
  AddRandomWeight(weight, {in, out}, DeriveSeed(seed, 0), -limit, limit, graph);
  AddRandomWeight(bias, {out}, DeriveSeed(seed, 1), -limit, limit, graph);
  const std::string product = absl::StrCat(prefix, "_mm");
  AddNode(absl::StrCat(prefix, "_matmul"), "matmul", {x, weight}, product, graph);
  AddNode(absl::StrCat(prefix, "_add"), "add", {product, bias}, out_name, graph);
  return out_name;
}

// x [batch, input] -> `layers` x (linear(hidden), relu) -> linear(input) -> y.
absl::StatusOr<proto::Graph> GenerateMlp(const GenOptions& options) {
  proto::Graph graph;
  graph.set_name("mlp");
  AddInput("x", {options.batch, options.input}, graph);
  std::string x = "x";
  int64_t width = options.input;
  for (int layer = 0; layer < options.layers; ++layer) {
    const std::string prefix = absl::StrCat("fc", layer);
    const std::string linear =
        AddLinear(prefix, x, width, options.hidden, DeriveSeed(options.seed, layer),
                  absl::StrCat(prefix, "_out"), graph);
    x = absl::StrCat("h", layer);
    AddNode(absl::StrCat("relu", layer), "relu", {linear}, x, graph);
    width = options.hidden;
  }
  AddLinear(absl::StrCat("fc", options.layers), x, width, options.input,
            DeriveSeed(options.seed, options.layers), "y", graph);
  graph.add_output("y");
  return graph;
}

// x [batch, seq, hidden] -> softmax over the last axis -> y; with --seq=1
// the seq dim is left out, so x is [batch, hidden].
absl::StatusOr<proto::Graph> GenerateSoftmax(const GenOptions& options) {
  proto::Graph graph;
  graph.set_name("softmax");
  if (options.seq == 1) {
    AddInput("x", {options.batch, options.hidden}, graph);
  } else {
    AddInput("x", {options.batch, options.seq, options.hidden}, graph);
  }
  proto::Node* node = AddNode("softmax", "softmax", {"x"}, "y", graph);
  SetIntAttr("axis", -1, node);
  graph.add_output("y");
  return graph;
}

// x [batch, channels, input, input] -> group_norm(groups) -> y. The affine
// parameters are random (scale in [0.5, 1.5), bias in [-0.5, 0.5)) rather
// than PyTorch's ones and zeros, so that they show in the output.
absl::StatusOr<proto::Graph> GenerateGroupNorm(const GenOptions& options) {
  if (options.channels % options.groups != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "gen: --groups (", options.groups, ") must divide --channels (", options.channels, ")"));
  }
  proto::Graph graph;
  graph.set_name("group_norm");
  AddInput("x", {options.batch, options.channels, options.input, options.input}, graph);
  AddRandomWeight("scale", {options.channels}, DeriveSeed(options.seed, 0), 0.5, 1.5, graph);
  AddRandomWeight("bias", {options.channels}, DeriveSeed(options.seed, 1), -0.5, 0.5, graph);
  proto::Node* node = AddNode("group_norm", "group_norm", {"x", "scale", "bias"}, "y", graph);
  SetIntAttr("num_groups", options.groups, node);
  graph.add_output("y");
  return graph;
}

// x [batch, hidden] -> layer_norm over the last axis -> y, with random
// affine parameters as for group_norm.
absl::StatusOr<proto::Graph> GenerateLayerNorm(const GenOptions& options) {
  proto::Graph graph;
  graph.set_name("layer_norm");
  AddInput("x", {options.batch, options.hidden}, graph);
  AddRandomWeight("scale", {options.hidden}, DeriveSeed(options.seed, 0), 0.5, 1.5, graph);
  AddRandomWeight("bias", {options.hidden}, DeriveSeed(options.seed, 1), -0.5, 0.5, graph);
  proto::Node* node = AddNode("layer_norm", "layer_norm", {"x", "scale", "bias"}, "y", graph);
  SetIntAttr("axis", -1, node);
  graph.add_output("y");
  return graph;
}

// ---------------------------------------------------------------------------
// Recurrent networks.

// The final states of every layer, each [batch, 1, hidden] (layout 1),
// stacked as PyTorch's h_n / c_n: [layers, batch, hidden].
void AddStackedStates(const std::vector<std::string>& states, const std::string& name,
                      proto::Graph& graph) {
  std::string stacked = states[0];
  if (states.size() > 1) {
    stacked = absl::StrCat(name, "_layers");
    proto::Node* concat = AddNode(absl::StrCat(name, "_concat"), "concat", states, stacked, graph);
    SetIntAttr("axis", 1, concat);
  }
  proto::Node* transpose =
      AddNode(absl::StrCat(name, "_transpose"), "transpose", {stacked}, name, graph);
  SetIntsAttr("perm", {1, 0, 2}, transpose);
  graph.add_output(name);
}

// PyTorch's nn.LSTM / nn.GRU / nn.RNN with batch_first=True: x [batch, seq,
// input] through `layers` single-layer `op` nodes (layout 1), each layer's Y
// [batch, seq, 1, hidden] reshaped to [batch, seq, hidden] for the next.
// W, R and B of every layer are uniform in +-1/sqrt(hidden) (PyTorch's
// init). Outputs: y (the last layer's sequence output) and h_n (and c_n for
// lstm), the final states [layers, batch, hidden].
absl::StatusOr<proto::Graph> GenerateRecurrent(const GenOptions& options, absl::string_view op,
                                               int64_t gates) {
  const int64_t batch = options.batch, seq = options.seq;
  const int64_t hidden = options.hidden;
  const double limit = 1.0 / std::sqrt(static_cast<double>(hidden));
  const bool lstm = op == "lstm";
  proto::Graph graph;
  graph.set_name(std::string(op));
  AddInput("x", {batch, seq, options.input}, graph);
  std::string x = "x";
  int64_t width = options.input;
  std::vector<std::string> final_h, final_c;
  for (int layer = 0; layer < options.layers; ++layer) {
    const std::string prefix = absl::StrCat(op, layer);
    const uint64_t seed = DeriveSeed(options.seed, layer);
    const std::string w = absl::StrCat(prefix, "_w");
    const std::string r = absl::StrCat(prefix, "_r");
    const std::string b = absl::StrCat(prefix, "_b");
    AddRandomWeight(w, {1, gates * hidden, width}, DeriveSeed(seed, 0), -limit, limit, graph);
    AddRandomWeight(r, {1, gates * hidden, hidden}, DeriveSeed(seed, 1), -limit, limit, graph);
    AddRandomWeight(b, {1, 2 * gates * hidden}, DeriveSeed(seed, 2), -limit, limit, graph);
    const std::string y = absl::StrCat(prefix, "_y");
    proto::Node* node = AddNode(prefix, std::string(op), {x, w, r, b}, y, graph);
    final_h.push_back(absl::StrCat(prefix, "_h"));
    node->add_output(final_h.back());
    if (lstm) {
      final_c.push_back(absl::StrCat(prefix, "_c"));
      node->add_output(final_c.back());
    }
    SetIntAttr("hidden_size", hidden, node);
    SetIntAttr("layout", 1, node);
    x = layer + 1 == options.layers ? "y" : absl::StrCat(prefix, "_out");
    proto::Node* reshape = AddNode(absl::StrCat(prefix, "_flatten"), "reshape", {y}, x, graph);
    SetIntsAttr("shape", {batch, seq, hidden}, reshape);
    width = hidden;
  }
  graph.add_output("y");
  AddStackedStates(final_h, "h_n", graph);
  if (lstm) AddStackedStates(final_c, "c_n", graph);
  return graph;
}

absl::StatusOr<proto::Graph> GenerateLstm(const GenOptions& options) {
  return GenerateRecurrent(options, "lstm", 4);
}
absl::StatusOr<proto::Graph> GenerateGru(const GenOptions& options) {
  return GenerateRecurrent(options, "gru", 3);
}
absl::StatusOr<proto::Graph> GenerateRnn(const GenOptions& options) {
  return GenerateRecurrent(options, "rnn", 1);
}

// ---------------------------------------------------------------------------
// Random graphs.

absl::StatusOr<proto::Graph> GenerateRandom(const GenOptions& options) {
  return gen::GenerateRandomGraph(options.seed, options.nodes);
}

// ---------------------------------------------------------------------------
// The generator table.

using GeneratorFn = absl::StatusOr<proto::Graph> (*)(const GenOptions&);

struct Generator {
  absl::string_view kind;
  GeneratorFn generate;
};

constexpr Generator kGenerators[] = {
    {"lstm", GenerateLstm},
    {"gru", GenerateGru},
    {"rnn", GenerateRnn},
    {"group_norm", GenerateGroupNorm},
    {"layer_norm", GenerateLayerNorm},
    {"softmax", GenerateSoftmax},
    {"mlp", GenerateMlp},
    {"random", GenerateRandom},
};

absl::Status CheckPositive(absl::string_view option, int64_t value) {
  if (value > 0) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("gen: --", option, " must be positive, got ", value));
}

absl::Status CheckSizes(const GenOptions& options) {
  const std::pair<absl::string_view, int> sizes[] = {
      {"layers", options.layers},     {"hidden", options.hidden}, {"input", options.input},
      {"seq", options.seq},           {"batch", options.batch},   {"groups", options.groups},
      {"channels", options.channels}, {"nodes", options.nodes},
  };
  for (const auto& [option, value] : sizes) {
    LOOM_RETURN_IF_ERROR(CheckPositive(option, value));
  }
  return absl::OkStatus();
}

}  // namespace

std::vector<std::string> GeneratorKinds() {
  std::vector<std::string> kinds;
  for (const Generator& generator : kGenerators) {
    kinds.emplace_back(generator.kind);
  }
  return kinds;
}

absl::StatusOr<proto::Graph> GenerateModel(const GenOptions& options) {
  for (const Generator& generator : kGenerators) {
    if (generator.kind != options.kind) continue;
    LOOM_RETURN_IF_ERROR(CheckSizes(options));
    return generator.generate(options);
  }
  return absl::InvalidArgumentError(absl::StrCat("gen: unknown kind '", options.kind, "' (known: ",
                                                 absl::StrJoin(GeneratorKinds(), ", "), ")"));
}

}  // namespace loom

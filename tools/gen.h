#ifndef LOOM_TOOLS_GEN_H_
#define LOOM_TOOLS_GEN_H_

// The model generators behind `loom gen` (docs/usage.md, gen): each kind
// builds a graph proto from a few size options, deterministically (weights
// are seeded random initializers, so files stay small).

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.pb.h"

namespace loom {

// Sizes for the generators; each kind reads the ones it needs. Every option
// must be positive.
//   lstm, gru, rnn  x [batch, seq, input]; `layers` layers of `hidden`
//   group_norm      x [batch, channels, input, input]; `groups` divides
//                   `channels` (GroupNorm(2, 16) on [2, 16, 32, 32] is the
//                   default; --groups=32 --channels=256 --batch=16
//                   --input=64 is group_norm_large's)
//   layer_norm      x [batch, hidden], normalised over hidden
//   softmax         x [batch, seq, hidden], over hidden
//   mlp             x [batch, input]; `layers` hidden layers of `hidden`
struct GenOptions {
  std::string kind;
  int layers = 1;
  int hidden = 64;
  int input = 32;  // input features; group_norm: the spatial size H = W
  int seq = 16;
  int batch = 2;
  int groups = 2;
  int channels = 16;
  int nodes = 100;  // "random": about how many nodes
  uint64_t seed = 1;
};

// Builds the model `options.kind` describes. Unknown kinds and bad sizes are
// InvalidArgument errors naming the kind or the option.
absl::StatusOr<proto::Graph> GenerateModel(const GenOptions& options);

// The kinds GenerateModel supports, in a stable order.
std::vector<std::string> GeneratorKinds();

}  // namespace loom

#endif  // LOOM_TOOLS_GEN_H_

#ifndef LOOM_IR_OPS_RECURRENT_H_
#define LOOM_IR_OPS_RECURRENT_H_

// The recurrent ops lstm, gru and rnn (ONNX semantics, one layer per node):
// their attributes and input shapes, read and checked in one place for the
// op definitions (recurrent.cc) and the decomposition
// (passes/decompose_rnn.cc).

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ir/dtype.h"
#include "ir/graph.h"

namespace loom {

enum class RecurrentCell { kLstm, kGru, kRnn };
enum class RecurrentActivation { kSigmoid, kTanh, kRelu };

// Input positions, shared by the three ops; initial_c and P are lstm's only.
inline constexpr int kRnnX = 0;
inline constexpr int kRnnW = 1;
inline constexpr int kRnnR = 2;
inline constexpr int kRnnB = 3;
inline constexpr int kRnnSequenceLens = 4;
inline constexpr int kRnnInitialH = 5;
inline constexpr int kRnnInitialC = 6;
inline constexpr int kRnnP = 7;

// Output positions: Y, then the final states Y_h and (lstm) Y_c.
inline constexpr int kRnnY = 0;
inline constexpr int kRnnYH = 1;
inline constexpr int kRnnYC = 2;

// One recurrent node, its attributes resolved to their defaults and its
// sizes read from the input shapes.
struct RecurrentSpec {
  RecurrentCell cell = RecurrentCell::kLstm;
  // Gates per direction, the blocks of W's and R's rows in this order:
  // 4 for lstm (i, o, f, c), 3 for gru (z, r, h), 1 for rnn.
  int64_t gates = 4;
  int64_t hidden = 0;
  int64_t seq = 0;
  int64_t batch = 0;
  int64_t input = 0;
  int64_t num_directions = 1;
  // direction "reverse": the only direction runs from the last step back.
  bool reverse = false;
  // layout 1: X [batch, seq, input], Y [batch, seq, num_dir, hidden] and
  // states [batch, num_dir, hidden]; layout 0 puts seq (for X and Y) and
  // num_dir (for states) first.
  bool batch_first = false;
  // activations[direction]: f, g, h for lstm; f, g for gru; f for rnn.
  std::vector<std::vector<RecurrentActivation>> activations;
  bool has_clip = false;
  double clip = 0;                   // gate pre-activations are clipped to [-clip, clip]
  bool input_forget = false;         // lstm: f = 1 - i
  bool linear_before_reset = false;  // gru
  DType dtype = DType::kF32;         // of X and every float input
  int num_inputs = 3;                // optional inputs are trailing
  int num_outputs = 1;

  bool Has(int input) const { return input < num_inputs; }
  // Whether direction `d` iterates from the last step to the first.
  bool Backward(int64_t d) const { return d == 1 || reverse; }
  // Shape of Y, and of initial_h, initial_c, Y_h and Y_c.
  Shape YShape() const;
  Shape StateShape() const;
};

// Reads and checks a node of op `cell` whose inputs have `inputs` types:
// arity, attributes, dtypes and every input's shape. Errors name the
// offending attribute or input (by its ONNX name) and the shapes involved;
// callers add the node.
absl::StatusOr<RecurrentSpec> ParseRecurrent(RecurrentCell cell, const Node& node,
                                             absl::Span<const TensorType> inputs);

}  // namespace loom

#endif  // LOOM_IR_OPS_RECURRENT_H_

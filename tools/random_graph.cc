#include "tools/random_graph.h"

#include <algorithm>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "ir/dtype.h"
#include "ir/ops/op_util.h"
#include "ir/random.h"
#include "tools/gen_proto.h"

namespace loom::gen {
namespace {

// splitmix64 as a stream. Every draw maps to a range with explicit integer
// arithmetic, so a seed gives the same graph with every standard library.
class Prng {
 public:
  explicit Prng(uint64_t seed) : state_(SplitMix64(seed)) {}

  uint64_t Next() {
    const uint64_t out = SplitMix64(state_);
    state_ += 0x9e3779b97f4a7c15ULL;
    return out;
  }
  // Uniform in [0, n) for n > 0 (the modulo bias is negligible for the
  // small n used here).
  int64_t Below(int64_t n) { return static_cast<int64_t>(Next() % static_cast<uint64_t>(n)); }
  bool Chance(double p) { return static_cast<double>(Next() >> 11) * 0x1.0p-53 < p; }
  template <typename T>
  T Pick(absl::Span<const T> items) {
    return items[Below(static_cast<int64_t>(items.size()))];
  }
  // A random permutation of 0..n-1 (Fisher-Yates).
  std::vector<int64_t> Permutation(int64_t n) {
    std::vector<int64_t> perm(n);
    for (int64_t i = 0; i < n; ++i) perm[i] = i;
    for (int64_t i = n - 1; i > 0; --i) std::swap(perm[i], perm[Below(i + 1)]);
    return perm;
  }

 private:
  uint64_t state_;
};

// Limits that keep random graphs quick to interpret and compile.
constexpr int64_t kMaxElements = 4096;       // per value
constexpr int64_t kMaxInputElements = 1024;  // per graph input
constexpr int64_t kMaxRank = 4;
constexpr int kMaxOutputs = 4;
// An operand whose magnitude bound exceeds this goes through tanh first, so
// that products and sums of products stay far from float overflow.
constexpr double kSquashAbove = 1e3;
constexpr int kPartnerTries = 8;
constexpr int64_t kDims[] = {1, 2, 3, 5, 7, 8, 16};
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();

int64_t Rank(const Shape& shape) { return static_cast<int64_t>(shape.size()); }

std::vector<int64_t> PrimeFactors(int64_t n) {
  std::vector<int64_t> factors;
  for (int64_t p = 2; p * p <= n; ++p) {
    while (n % p == 0) {
      factors.push_back(p);
      n /= p;
    }
  }
  if (n > 1) factors.push_back(n);
  return factors;
}

// Builds a random DAG of primitive ops over float32 values. Every value is
// tracked with its shape and a bound on its magnitude (inputs are assumed in
// [-1, 1]); ops with a restricted domain get operands made safe with other
// ops (log(|x| + 1), x / (|y| + 1), ...), so interpreting the graph on such
// inputs gives finite values.
class RandomGraphBuilder {
 public:
  RandomGraphBuilder(uint64_t seed, int target_nodes)
      : rng_(seed), seed_(seed), target_nodes_(target_nodes) {}

  proto::Graph Build() {
    graph_.set_name("random");
    AddGraphInputs();
    using Emitter = bool (RandomGraphBuilder::*)();
    struct WeightedOp {
      int weight;
      Emitter emit;
    };
    static constexpr WeightedOp kOps[] = {
        {6, &RandomGraphBuilder::EmitUnary},     {4, &RandomGraphBuilder::EmitGuardedUnary},
        {8, &RandomGraphBuilder::EmitBinary},    {2, &RandomGraphBuilder::EmitWhere},
        {4, &RandomGraphBuilder::EmitReduce},    {2, &RandomGraphBuilder::EmitReshape},
        {2, &RandomGraphBuilder::EmitTranspose}, {1, &RandomGraphBuilder::EmitSqueeze},
        {1, &RandomGraphBuilder::EmitUnsqueeze}, {2, &RandomGraphBuilder::EmitExpand},
        {2, &RandomGraphBuilder::EmitSlice},     {2, &RandomGraphBuilder::EmitConcat},
        {2, &RandomGraphBuilder::EmitMatmul},    {1, &RandomGraphBuilder::EmitSoftmax},
        {1, &RandomGraphBuilder::EmitCast},
    };
    int total_weight = 0;
    for (const WeightedOp& op : kOps) total_weight += op.weight;
    while (graph_.node_size() < target_nodes_) {
      int64_t draw = rng_.Below(total_weight);
      for (const WeightedOp& op : kOps) {
        if (draw < op.weight) {
          (this->*op.emit)();
          break;
        }
        draw -= op.weight;
      }
    }
    MergeLeftovers();
    std::vector<int> outputs = unused_;
    std::sort(outputs.begin(), outputs.end());
    for (int id : outputs) graph_.add_output(pool_[id].name);
    return std::move(graph_);
  }

 private:
  // A float32 value the generator can use as an operand.
  struct PoolValue {
    std::string name;
    Shape shape;
    double bound;  // |value| <= bound
    bool is_input;
    int uses = 0;
  };

  // --- Pool bookkeeping -----------------------------------------------------

  int AddValue(std::string name, Shape shape, double bound, bool is_input = false) {
    const int id = static_cast<int>(pool_.size());
    pool_.push_back({std::move(name), std::move(shape), bound, is_input});
    unused_position_.push_back(static_cast<int>(unused_.size()));
    unused_.push_back(id);
    return id;
  }

  // The name of value `id`, now consumed once more.
  std::string Use(int id) {
    if (pool_[id].uses++ == 0) {
      const int position = unused_position_[id];
      const int last = unused_.back();
      unused_[position] = last;
      unused_position_[last] = position;
      unused_.pop_back();
      unused_position_[id] = -1;
    }
    return pool_[id].name;
  }

  const Shape& ShapeOf(int id) const { return pool_[id].shape; }
  double BoundOf(int id) const { return pool_[id].bound; }

  // A pool value, preferring ones nothing consumes yet (so that few are left
  // over as outputs), without side effects.
  int PickCandidate() {
    if (!unused_.empty() && rng_.Chance(0.6)) {
      return unused_[rng_.Below(static_cast<int64_t>(unused_.size()))];
    }
    return static_cast<int>(rng_.Below(static_cast<int64_t>(pool_.size())));
  }

  // The main operand of the next op: each graph input first, then any value,
  // squashed when its bound is large.
  int PickOperand() {
    if (next_input_ < graph_.input_size()) return next_input_++;
    return Squash(PickCandidate());
  }

  int Squash(int id) {
    if (BoundOf(id) <= kSquashAbove) return id;
    return Unary("tanh", id, 1.0);
  }

  // --- Node emission --------------------------------------------------------

  // Adds node "n<N>_<op>" defining "v<N>" and returns it.
  proto::Node* Emit(absl::string_view op, std::vector<std::string> inputs) {
    const int index = graph_.node_size();
    return AddNode(absl::StrCat("n", index, "_", op), std::string(op), std::move(inputs),
                   absl::StrCat("v", index), graph_);
  }

  int EmitValue(absl::string_view op, std::vector<std::string> inputs, Shape shape, double bound,
                proto::Node** node = nullptr) {
    proto::Node* added = Emit(op, std::move(inputs));
    if (node != nullptr) *node = added;
    return AddValue(added->output(0), std::move(shape), bound);
  }

  int Unary(absl::string_view op, int x, double bound) {
    Shape shape = ShapeOf(x);
    return EmitValue(op, {Use(x)}, std::move(shape), bound);
  }

  int Binary(absl::string_view op, int a, int b, double bound) {
    Shape shape = *BroadcastShapes(ShapeOf(a), ShapeOf(b));
    return EmitValue(op, {Use(a), Use(b)}, std::move(shape), bound);
  }

  // The scalar constant 1, added on first use.
  std::string One() {
    if (graph_.constant_size() == 0) {
      proto::Initializer* one = graph_.add_constant();
      one->set_name("one");
      SetF32Type({}, one->mutable_type());
      one->mutable_values()->add_floats(1.0);
    }
    return "one";
  }

  // |x| + 1: at least 1, a safe divisor, log or pow base.
  int AbsPlusOne(int x) {
    const int abs = Unary("abs", x, BoundOf(x));
    Shape shape = ShapeOf(abs);
    return EmitValue("add", {Use(abs), One()}, std::move(shape), BoundOf(abs) + 1);
  }

  // An axis of a rank-`rank` tensor, written negatively now and then.
  int64_t SpellAxis(int64_t axis, int64_t rank) { return rng_.Chance(0.3) ? axis - rank : axis; }

  // --- Graph inputs and random ops -----------------------------------------

  void AddGraphInputs() {
    const int64_t count = 1 + rng_.Below(3);
    for (int64_t i = 0; i < count; ++i) {
      Shape shape;
      do {
        shape.assign(1 + rng_.Below(kMaxRank), 0);
        for (int64_t& dim : shape) dim = rng_.Pick<int64_t>(kDims);
      } while (NumElements(shape) > kMaxInputElements);
      const std::string name = absl::StrCat("x", i);
      AddInput(name, shape, graph_);
      AddValue(name, std::move(shape), 1.0, /*is_input=*/true);
    }
  }

  bool EmitUnary() {
    static constexpr absl::string_view kOps[] = {"neg", "abs", "relu", "tanh", "sigmoid"};
    const int x = PickOperand();
    const absl::string_view op = rng_.Pick<absl::string_view>(kOps);
    const bool bounded = op == "tanh" || op == "sigmoid";
    Unary(op, x, bounded ? 1.0 : BoundOf(x));
    return true;
  }

  // Ops with a restricted domain, applied where they are defined.
  bool EmitGuardedUnary() {
    const int x = PickOperand();
    const double bound = BoundOf(x);
    switch (rng_.Below(6)) {
      case 0:  // exp(tanh(x))
        Unary("exp", Unary("tanh", x, 1.0), std::exp(1.0));
        break;
      case 1:  // log(|x| + 1)
        Unary("log", AbsPlusOne(x), std::log1p(bound));
        break;
      case 2:  // sqrt(|x|)
        Unary("sqrt", Unary("abs", x, bound), std::sqrt(bound));
        break;
      case 3:  // rsqrt(|x| + 1)
        Unary("rsqrt", AbsPlusOne(x), 1.0);
        break;
      case 4:  // reciprocal(|x| + 1)
        Unary("reciprocal", AbsPlusOne(x), 1.0);
        break;
      default: {  // pow(|x| + 1, tanh(x)): base >= 1, exponent in (-1, 1)
        const int base = AbsPlusOne(x);
        const int exponent = Unary("tanh", x, 1.0);
        Binary("pow", base, exponent, bound + 1);
        break;
      }
    }
    return true;
  }

  // A value that broadcasts with `a` within the element limit: another pool
  // value when one fits, else a keepdims reduction of `a`, else `a` itself.
  int BroadcastPartner(int a) {
    for (int t = 0; t < kPartnerTries; ++t) {
      const int c = PickCandidate();
      if (c == a) continue;
      const absl::StatusOr<Shape> shape = BroadcastShapes(ShapeOf(a), ShapeOf(c));
      if (shape.ok() && NumElements(*shape) <= kMaxElements) return Squash(c);
    }
    if (Rank(ShapeOf(a)) > 0 && rng_.Chance(0.5)) {
      static constexpr absl::string_view kOps[] = {"reduce_mean", "reduce_max", "reduce_min"};
      return Reduce(rng_.Pick<absl::string_view>(kOps), a, /*keepdims=*/true);
    }
    return a;
  }

  bool EmitBinary() {
    static constexpr absl::string_view kOps[] = {"add", "sub", "mul", "maximum", "minimum", "div"};
    const int a = PickOperand();
    const int b = BroadcastPartner(a);
    const absl::string_view op = rng_.Pick<absl::string_view>(kOps);
    if (op == "div") {
      Binary("div", a, AbsPlusOne(b), BoundOf(a));
    } else if (op == "mul") {
      Binary(op, a, b, BoundOf(a) * BoundOf(b));
    } else if (op == "add" || op == "sub") {
      Binary(op, a, b, BoundOf(a) + BoundOf(b));
    } else {
      Binary(op, a, b, std::max(BoundOf(a), BoundOf(b)));
    }
    return true;
  }

  // where(compare(a, b), a, b) or with the branches swapped.
  bool EmitWhere() {
    static constexpr absl::string_view kComparisons[] = {
        "less", "less_equal", "greater", "greater_equal", "equal", "not_equal"};
    const int a = PickOperand();
    const int b = BroadcastPartner(a);
    const std::string condition =
        Emit(rng_.Pick<absl::string_view>(kComparisons), {Use(a), Use(b)})->output(0);
    const bool swap = rng_.Chance(0.5);
    Shape shape = *BroadcastShapes(ShapeOf(a), ShapeOf(b));
    EmitValue("where", {condition, Use(swap ? b : a), Use(swap ? a : b)}, std::move(shape),
              std::max(BoundOf(a), BoundOf(b)));
    return true;
  }

  // Reduces `x` (rank >= 1) over a random non-empty set of axes.
  int Reduce(absl::string_view op, int x, bool keepdims) {
    const Shape in = ShapeOf(x);
    const int64_t rank = Rank(in);
    std::vector<int64_t> order = rng_.Permutation(rank);
    order.resize(1 + rng_.Below(rank));
    std::vector<bool> reduced(rank, false);
    std::vector<int64_t> axes;
    for (int64_t axis : order) {
      reduced[axis] = true;
      axes.push_back(SpellAxis(axis, rank));
    }
    Shape out;
    int64_t count = 1;
    for (int64_t d = 0; d < rank; ++d) {
      if (reduced[d]) count = SaturatingMul(count, in[d]);
      if (!reduced[d]) out.push_back(in[d]);
      if (reduced[d] && keepdims) out.push_back(1);
    }
    const double bound = op == "reduce_sum" ? BoundOf(x) * static_cast<double>(count) : BoundOf(x);
    proto::Node* node;
    const int result = EmitValue(op, {Use(x)}, std::move(out), bound, &node);
    SetIntsAttr("axes", axes, node);
    if (keepdims || rng_.Chance(0.5)) SetIntAttr("keepdims", keepdims, node);
    return result;
  }

  bool EmitReduce() {
    static constexpr absl::string_view kOps[] = {"reduce_sum", "reduce_mean", "reduce_max",
                                                 "reduce_min"};
    const int x = PickOperand();
    if (Rank(ShapeOf(x)) == 0) return false;
    Reduce(rng_.Pick<absl::string_view>(kOps), x, rng_.Chance(0.5));
    return true;
  }

  // Reshapes to a random factorisation of the element count.
  bool EmitReshape() {
    const int x = PickOperand();
    Shape out(1 + rng_.Below(kMaxRank), 1);
    for (int64_t prime : PrimeFactors(NumElements(ShapeOf(x)))) {
      int64_t& dim = out[rng_.Below(Rank(out))];
      dim = SaturatingMul(dim, prime);
    }
    std::vector<int64_t> spelled = out;
    if (rng_.Chance(0.2)) spelled[rng_.Below(Rank(out))] = -1;  // inferred
    proto::Node* node;
    EmitValue("reshape", {Use(x)}, std::move(out), BoundOf(x), &node);
    SetIntsAttr("shape", spelled, node);
    return true;
  }

  bool EmitTranspose() {
    const int x = PickOperand();
    const Shape in = ShapeOf(x);
    if (Rank(in) < 2) return false;
    const std::vector<int64_t> perm = rng_.Permutation(Rank(in));
    Shape out;
    for (int64_t axis : perm) out.push_back(in[axis]);
    proto::Node* node;
    EmitValue("transpose", {Use(x)}, std::move(out), BoundOf(x), &node);
    SetIntsAttr("perm", perm, node);
    return true;
  }

  bool EmitSqueeze() {
    const int x = PickOperand();
    const Shape in = ShapeOf(x);
    std::vector<int64_t> ones;
    for (int64_t d = 0; d < Rank(in); ++d) {
      if (in[d] == 1) ones.push_back(d);
    }
    if (ones.empty()) return false;
    std::vector<bool> squeezed(Rank(in), false);
    std::vector<int64_t> axes;
    for (int64_t axis : ones) {
      if (axes.empty() || rng_.Chance(0.5)) {
        squeezed[axis] = true;
        axes.push_back(SpellAxis(axis, Rank(in)));
      }
    }
    Shape out;
    for (int64_t d = 0; d < Rank(in); ++d) {
      if (!squeezed[d]) out.push_back(in[d]);
    }
    proto::Node* node;
    EmitValue("squeeze", {Use(x)}, std::move(out), BoundOf(x), &node);
    SetIntsAttr("axes", axes, node);
    return true;
  }

  // Inserts one or two size-1 dims; `axes` are positions in the output.
  bool EmitUnsqueeze() {
    const int x = PickOperand();
    const Shape in = ShapeOf(x);
    if (Rank(in) >= kMaxRank) return false;
    const int64_t added = 1 + rng_.Below(std::min<int64_t>(2, kMaxRank - Rank(in)));
    const int64_t out_rank = Rank(in) + added;
    std::vector<int64_t> positions = rng_.Permutation(out_rank);
    positions.resize(added);
    std::vector<bool> inserted(out_rank, false);
    std::vector<int64_t> axes;
    for (int64_t position : positions) {
      inserted[position] = true;
      axes.push_back(SpellAxis(position, out_rank));
    }
    Shape out;
    int64_t next = 0;
    for (int64_t d = 0; d < out_rank; ++d) {
      out.push_back(inserted[d] ? 1 : in[next++]);
    }
    proto::Node* node;
    EmitValue("unsqueeze", {Use(x)}, std::move(out), BoundOf(x), &node);
    SetIntsAttr("axes", axes, node);
    return true;
  }

  // Broadcasts size-1 dims (and maybe a new leading dim) to larger sizes.
  bool EmitExpand() {
    const int x = PickOperand();
    const Shape in = ShapeOf(x);
    Shape out;
    if (Rank(in) < kMaxRank && rng_.Chance(0.3)) {
      out.push_back(rng_.Pick<int64_t>(kDims));
    }
    for (int64_t dim : in) {
      out.push_back(dim == 1 && rng_.Chance(0.6) ? rng_.Pick<int64_t>(kDims) : dim);
    }
    if (out == in || NumElements(out) > kMaxElements) return false;
    proto::Node* node;
    EmitValue("expand", {Use(x)}, out, BoundOf(x), &node);
    SetIntsAttr("shape", out, node);
    return true;
  }

  // A random non-empty strided slice along 1..rank axes, ONNX semantics,
  // with negative steps and negatively spelled indices.
  bool EmitSlice() {
    static constexpr int64_t kSteps[] = {1, 1, 2, 3, -1, -2};
    const int x = PickOperand();
    const Shape in = ShapeOf(x);
    const int64_t rank = Rank(in);
    if (rank == 0) return false;
    std::vector<int64_t> order = rng_.Permutation(rank);
    order.resize(1 + rng_.Below(rank));
    std::vector<int64_t> starts, ends, axes, steps;
    Shape out = in;
    for (int64_t axis : order) {
      const int64_t dim = in[axis];
      const int64_t step = rng_.Pick<int64_t>(kSteps);
      const int64_t start = rng_.Below(dim);
      int64_t end;
      int64_t spelled_end;
      if (step > 0) {
        end = start + 1 + rng_.Below(dim - start);  // in (start, dim]
        if (end == dim) {
          spelled_end = rng_.Chance(0.3) ? kInt64Max : end;  // clamps to dim
        } else {
          spelled_end = rng_.Chance(0.3) ? end - dim : end;
        }
        out[axis] = (end - start + step - 1) / step;
      } else {
        end = rng_.Below(start + 1) - 1;  // in [-1, start), -1: past the front
        // An end of -1 would mean dim - 1, so "past the front" is spelled
        // below -dim, which clamps to -1.
        if (end == -1) {
          spelled_end = rng_.Chance(0.5) ? kInt64Min : -dim - 1;
        } else {
          spelled_end = rng_.Chance(0.3) ? end - dim : end;
        }
        out[axis] = (start - end - step - 1) / -step;
      }
      starts.push_back(rng_.Chance(0.3) ? start - dim : start);
      ends.push_back(spelled_end);
      axes.push_back(SpellAxis(axis, rank));
      steps.push_back(step);
    }
    proto::Node* node;
    EmitValue("slice", {Use(x)}, std::move(out), BoundOf(x), &node);
    SetIntsAttr("starts", starts, node);
    SetIntsAttr("ends", ends, node);
    SetIntsAttr("axes", axes, node);
    SetIntsAttr("steps", steps, node);
    return true;
  }

  // The axis along which `a` and `b` concatenate (same rank, all other dims
  // equal), or nullopt.
  std::optional<int64_t> ConcatAxis(const Shape& a, const Shape& b) {
    if (Rank(a) != Rank(b)) return std::nullopt;
    std::optional<int64_t> axis;
    for (int64_t d = 0; d < Rank(a); ++d) {
      if (a[d] == b[d]) continue;
      if (axis) return std::nullopt;
      axis = d;
    }
    return axis ? axis : rng_.Below(Rank(a));
  }

  bool EmitConcat() {
    const int a = PickOperand();
    const int64_t rank = Rank(ShapeOf(a));
    if (rank == 0) return false;
    std::vector<int> parts = {a};
    std::optional<int64_t> axis;
    for (int t = 0; t < kPartnerTries && parts.size() < 2; ++t) {
      const int c = PickCandidate();
      if (c == a) continue;
      axis = ConcatAxis(ShapeOf(a), ShapeOf(c));
      if (axis && NumElements(ShapeOf(a)) + NumElements(ShapeOf(c)) <= kMaxElements) {
        parts.push_back(Squash(c));
      }
    }
    if (parts.size() < 2) {
      axis = rng_.Below(rank);
      parts.push_back(a);
    }
    if (rng_.Chance(0.2)) parts.push_back(a);
    Shape out = ShapeOf(a);
    out[*axis] = 0;
    for (int part : parts) out[*axis] += ShapeOf(part)[*axis];
    if (NumElements(out) > kMaxElements) return false;
    std::vector<std::string> inputs;
    double bound = 0;
    for (int part : parts) {
      inputs.push_back(Use(part));
      bound = std::max(bound, BoundOf(part));
    }
    proto::Node* node;
    EmitValue("concat", std::move(inputs), std::move(out), bound, &node);
    SetIntAttr("axis", SpellAxis(*axis, rank), node);
    return true;
  }

  // x [..., k] @ w [k, n]: w is a rank-2 pool value when one fits, else a
  // new random weight.
  bool EmitMatmul() {
    const int x = PickOperand();
    const Shape in = ShapeOf(x);
    if (Rank(in) < 2) return false;
    const int64_t k = in.back();
    const int64_t rows = NumElements(in) / k;
    for (int t = 0; t < kPartnerTries; ++t) {
      const int c = PickCandidate();
      const Shape& w = ShapeOf(c);
      if (c != x && Rank(w) == 2 && w[0] == k && SaturatingMul(rows, w[1]) <= kMaxElements) {
        const int weight = Squash(c);
        return Matmul(x, Use(weight), ShapeOf(weight)[1], BoundOf(weight));
      }
    }
    std::vector<int64_t> widths;
    for (int64_t n : kDims) {
      if (SaturatingMul(std::max(rows, k), n) <= kMaxElements) widths.push_back(n);
    }
    if (widths.empty()) return false;
    const int64_t n = rng_.Pick<int64_t>(widths);
    const std::string weight = absl::StrCat("w", graph_.weight_size());
    const double limit = 1.0 / std::sqrt(static_cast<double>(k));
    AddRandomWeight(weight, {k, n}, DeriveSeed(seed_, graph_.weight_size()), -limit, limit, graph_);
    return Matmul(x, weight, n, limit);
  }

  bool Matmul(int x, const std::string& weight, int64_t n, double weight_bound) {
    Shape out = ShapeOf(x);
    const double k = static_cast<double>(out.back());
    out.back() = n;
    EmitValue("matmul", {Use(x), weight}, std::move(out), BoundOf(x) * weight_bound * k);
    return true;
  }

  bool EmitSoftmax() {
    const int x = PickOperand();
    const int64_t rank = Rank(ShapeOf(x));
    if (rank == 0) return false;
    proto::Node* node;
    Shape shape = ShapeOf(x);
    EmitValue("softmax", {Use(x)}, std::move(shape), 1.0, &node);
    SetIntAttr("axis", SpellAxis(rng_.Below(rank), rank), node);
    return true;
  }

  // cast to f64, maybe a unary op in f64, cast back to f32.
  bool EmitCast() {
    static constexpr absl::string_view kOps[] = {"neg", "abs", "relu", "tanh", "sigmoid"};
    const int x = PickOperand();
    double bound = BoundOf(x);
    proto::Node* to_f64 = Emit("cast", {Use(x)});
    SetStringAttr("to", "f64", to_f64);
    std::string wide = to_f64->output(0);
    if (rng_.Chance(0.5)) {
      const absl::string_view op = rng_.Pick<absl::string_view>(kOps);
      if (op == "tanh" || op == "sigmoid") bound = 1.0;
      wide = Emit(op, {wide})->output(0);
    }
    proto::Node* node;
    Shape shape = ShapeOf(x);
    EmitValue("cast", {wide}, std::move(shape), bound, &node);
    SetStringAttr("to", "f32", node);
    return true;
  }

  // --- Outputs --------------------------------------------------------------

  // a + b, reducing b to a scalar first when the two do not broadcast.
  int Merge(int a, int b) {
    const absl::StatusOr<Shape> shape = BroadcastShapes(ShapeOf(a), ShapeOf(b));
    if (!shape.ok() || NumElements(*shape) > kMaxElements) {
      const int64_t rank = Rank(ShapeOf(b));
      proto::Node* node;
      b = EmitValue("reduce_mean", {Use(b)}, {}, BoundOf(b), &node);
      std::vector<int64_t> axes(rank);
      for (int64_t d = 0; d < rank; ++d) axes[d] = d;
      SetIntsAttr("axes", axes, node);
    }
    return Binary("add", a, b, BoundOf(a) + BoundOf(b));
  }

  // Folds unconsumed values together until at most kMaxOutputs remain and
  // none is a graph input, so every node feeds an output.
  void MergeLeftovers() {
    for (int i = 0; i < graph_.input_size(); ++i) {
      if (pool_[i].uses > 0) continue;
      // The last node's value is never consumed, so `other` always exists.
      int other = -1;
      for (int id : unused_) {
        if (!pool_[id].is_input) other = id;
      }
      Merge(other, i);
    }
    while (static_cast<int>(unused_.size()) > kMaxOutputs) {
      const int a = unused_[unused_.size() - 2];
      const int b = unused_[unused_.size() - 1];
      Merge(a, b);
    }
  }

  Prng rng_;
  uint64_t seed_;
  int target_nodes_;
  proto::Graph graph_;
  std::vector<PoolValue> pool_;       // ids: graph inputs first
  std::vector<int> unused_;           // ids of pool values nothing consumes yet
  std::vector<int> unused_position_;  // index into unused_, or -1
  int next_input_ = 0;
};

}  // namespace

absl::StatusOr<proto::Graph> GenerateRandomGraph(uint64_t seed, int target_nodes) {
  constexpr int kMaxNodes = 10'000'000;
  if (target_nodes > kMaxNodes) {
    return absl::InvalidArgumentError(
        absl::StrCat("gen: --nodes must be at most ", kMaxNodes, ", got ", target_nodes));
  }
  return RandomGraphBuilder(seed, target_nodes).Build();
}

}  // namespace loom::gen

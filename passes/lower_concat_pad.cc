// Lowering rules of concat and pad: data movement that writes one buffer in
// parts, a compute node each.
#include <algorithm>

#include "passes/lower_internal.h"

namespace loom {
namespace lowering {

void Lowering::AddConcatPadRules(RuleTable& rules) {
  rules["concat"] = {&Lowering::LowerConcat};
  rules["pad"] = {&Lowering::LowerPad};
}

void Lowering::FindConcatPrefixes() {
  // A trie of the concats' input lists, a root per axis: a concat ends at
  // the trie node of its last input, and its owner is the concat with the
  // most inputs at or below there (among equals, that of the lowest value
  // id: any fixed choice will do).
  // Children are made after their parents, so one pass from the last trie
  // node back finds every subtree's longest concat: linear in all inputs.
  struct TrieNode {
    absl::flat_hash_map<ValueId, int32_t> children;
    ValueId concat = -1;   // the first concat that ends here
    ValueId longest = -1;  // the concat with the most inputs at or below here
    size_t depth = 0;      // inputs from the root
  };
  std::vector<TrieNode> trie;
  absl::flat_hash_map<int, int32_t> roots;        // by axis
  std::vector<std::pair<ValueId, int32_t>> ends;  // each concat and its trie node
  for (const Node& node : graph_.nodes()) {
    if (node.op != "concat" || node.inputs.empty()) continue;
    const ValueId out = node.outputs[0];
    const int axis = Axis(node.attrs.GetInt("axis", 0), graph_.value(out).type.shape.size());
    auto [root, fresh_root] = roots.try_emplace(axis, static_cast<int32_t>(trie.size()));
    if (fresh_root) trie.emplace_back();
    int32_t at = root->second;
    for (ValueId input : node.inputs) {
      const auto [child, fresh] =
          trie[at].children.try_emplace(input, static_cast<int32_t>(trie.size()));
      const int32_t next = child->second;
      if (fresh) {
        const size_t depth = trie[at].depth + 1;
        trie.emplace_back().depth = depth;  // `child` may dangle from here
      }
      at = next;
    }
    if (trie[at].concat < 0) trie[at].concat = out;
    ends.emplace_back(out, at);
  }
  std::vector<size_t> longest_depth(trie.size(), 0);
  for (int32_t n = static_cast<int32_t>(trie.size()) - 1; n >= 0; --n) {
    TrieNode& here = trie[n];
    if (here.concat >= 0) {
      here.longest = here.concat;
      longest_depth[n] = here.depth;
    }
    for (const auto& [input, child] : here.children) {
      const ValueId candidate = trie[child].longest;
      if (candidate < 0) continue;
      const bool deeper = longest_depth[child] > longest_depth[n];
      const bool earlier = longest_depth[child] == longest_depth[n] && candidate < here.longest;
      if (here.longest < 0 || deeper || earlier) {
        here.longest = candidate;
        longest_depth[n] = longest_depth[child];
      }
    }
  }
  for (const auto& [concat, at] : ends) {
    if (trie[at].longest != concat) concat_owner_[concat] = trie[at].longest;
  }
}

absl::Status Lowering::LowerConcat(const Node& node, const LoweringRule&) {
  // One compute node per input (`<node>.input<i>`), each writing its slab
  // of the buffer of the concat that holds this one (FindConcatPrefixes),
  // unless an earlier concat in that buffer copied it already.
  const ValueId out = node.outputs[0];
  const auto owned = concat_owner_.find(out);
  const ValueId owner = owned == concat_owner_.end() ? out : owned->second;
  const Value& owner_value = graph_.value(owner);
  const int axis = Axis(node.attrs.GetInt("axis", 0), owner_value.type.shape.size());
  ConcatBuffer& target = concat_buffers_[owner];
  if (target.buffer < 0) target.buffer = NewBuffer(owner_value, BufferKind::kTemp, owner);
  const Expr out_offset = ContiguousOffset(owner_value.type.shape);
  std::vector<int64_t> shift(owner_value.type.shape.size(), 0);
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const ValueId input = node.inputs[i];
    if (i >= target.copied) {
      AddNode(
          CopyInto(absl::StrCat(node.name, ".input", i), input, target.buffer, out_offset, shift));
    }
    shift[axis] += graph_.value(input).type.shape[axis];
  }
  target.copied = std::max(target.copied, node.inputs.size());
  lowered_[out] = LoweredValue::Stored(target.buffer, out_offset);
  return absl::OkStatus();
}

// Mode "constant": two compute nodes write the output: one (`<node>.fill`)
// fills it with the pad value, the next (`<node>.interior`) copies the
// input into the interior (the scheduler keeps writes to one buffer in
// program order); a pad of zeros marks the buffer's border
// (Buffer::zero_border), which a conv call takes as its padding. Modes
// "reflect" and "edge": the output is cut, along each padded dim, into the
// begin pad, the interior and the end pad; each of
// those regions is one copy of the input, whose index along a dim is, in a
// begin pad at position v, begin - v (reflect) or 0 (edge), and in an end
// pad at v, size - 2 - v or size - 1: affine, so every region is a plain
// loop. A region's node is named by its pads (`<node>.begin2.end3`: the
// begin pad along dim 2 and the end pad along dim 3, the interior along
// the others; `<node>.interior`).
absl::Status Lowering::LowerPad(const Node& node, const LoweringRule&) {
  const std::string mode = node.attrs.GetString("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge") {
    return NodeError(node, absl::StrCat("pad mode '", mode,
                                        "' is not supported (only 'constant', "
                                        "'reflect', 'edge')"));
  }
  const ValueId in = node.inputs[0], out = node.outputs[0];
  const Value& out_value = graph_.value(out);
  const size_t rank = out_value.type.shape.size();
  const std::vector<int64_t> pads = node.attrs.GetInts("pads");
  if (pads.size() != 2 * rank ||
      std::any_of(pads.begin(), pads.end(), [](int64_t p) { return p < 0; })) {
    return NodeError(node, absl::StrCat("'pads' must be ", 2 * rank, " non-negative values"));
  }
  const BufferId buffer = NewBuffer(out_value, BufferKind::kTemp, out);
  const Expr out_offset = ContiguousOffset(out_value.type.shape);
  if (mode != "constant") {
    LowerMirroredPad(node, buffer, out_offset, mode == "reflect");
    lowered_[out] = LoweredValue::Stored(buffer, out_offset);
    return absl::OkStatus();
  }

  const double value = node.attrs.GetFloat("value", 0);
  if (value == 0) program_.buffers[buffer].zero_border = pads;
  ComputeNode fill = PointwiseNode(node, out);
  fill.name = absl::StrCat(node.name, ".fill");
  fill.output = buffer;
  fill.root = Constant(fill, value, out_value.type.dtype);
  fill.store_index = out_offset;
  AddNode(std::move(fill));
  AddNode(CopyInto(absl::StrCat(node.name, ".interior"), in, buffer, out_offset,
                   std::vector<int64_t>(pads.begin(), pads.begin() + rank)));
  lowered_[out] = LoweredValue::Stored(buffer, out_offset);
  return absl::OkStatus();
}

void Lowering::LowerMirroredPad(const Node& node, BufferId buffer, Expr out_offset, bool reflect) {
  const ValueId in = node.inputs[0];
  const Shape& in_shape = graph_.value(in).type.shape;
  const int rank = static_cast<int>(in_shape.size());
  const std::vector<int64_t> pads = node.attrs.GetInts("pads");
  std::vector<int> padded;  // the dims with a pad
  for (int d = 0; d < rank; ++d) {
    if (pads[d] != 0 || pads[rank + d] != 0) padded.push_back(d);
  }
  // Region r is, along padded dim padded[j], part (r / 3^j) % 3: 0 the
  // begin pad, 1 the interior, 2 the end pad.
  int64_t regions = 1;
  for (size_t j = 0; j < padded.size(); ++j) regions *= 3;
  for (int64_t r = 0; r < regions; ++r) {
    ComputeNode copy;
    copy.ranges = in_shape;
    Indices source = Vars(0, rank);
    Indices target = Vars(0, rank);
    std::string pads_in_region;
    int64_t code = r;
    for (int d : padded) {
      const int part = static_cast<int>(code % 3);
      code /= 3;
      const int64_t begin = pads[d], size = in_shape[d];
      if (part != 1) absl::StrAppend(&pads_in_region, part == 0 ? ".begin" : ".end", d);
      if (part == 0) {
        copy.ranges[d] = begin;
        source[d] = reflect ? ctx_.Add(ctx_.Const(begin), ctx_.Mul(Var(d), -1)) : ctx_.Const(0);
      } else if (part == 1) {
        target[d] = ctx_.Add(Var(d), ctx_.Const(begin));
      } else {
        copy.ranges[d] = pads[rank + d];
        source[d] =
            reflect ? ctx_.Add(ctx_.Const(size - 2), ctx_.Mul(Var(d), -1)) : ctx_.Const(size - 1);
        target[d] = ctx_.Add(Var(d), ctx_.Const(begin + size));
      }
    }
    if (NumElements(copy.ranges) == 0) continue;
    copy.name = absl::StrCat(node.name, pads_in_region.empty() ? ".interior" : pads_in_region);
    copy.root = Load(copy, in, source);
    copy.output = buffer;
    copy.store_index = Reindex(out_offset, target, copy.ranges);
    AddNode(std::move(copy));
  }
}

}  // namespace lowering
}  // namespace loom

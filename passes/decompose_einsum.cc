// einsum (ir/ops/einsum.h) as views, sums and batched matrix products:
// 1. each operand's repeated labels become its diagonal: the two dims made
//    adjacent (a transpose), merged (a reshape) and read with a stride of
//    n + 1 (a slice), all views;
// 2. labels that no other operand and not the output has are summed out
//    (reduce_sum);
// 3. operands combine left to right: the labels both have and a later
//    operand or the output needs are batch dims, those both have and
//    nothing later needs are contracted, the rest are kept from one side;
//    a size-1 dim facing a larger one is expanded (a view). Each side is
//    transposed to [batch, kept, contracted] ([batch, contracted, kept] for
//    the right one), reshaped to 3-D, multiplied (matmul: a GEMM call where
//    large) and reshaped back to [batch..., left kept..., right kept...];
// 4. the result is transposed to the output's order.
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "ir/ops/einsum.h"
#include "ir/status_macros.h"
#include "passes/decomposition.h"

namespace loom {
namespace {

// A value with a label per dim, and its shape.
struct Labelled {
  ValueId value;
  std::vector<int> labels;
  Shape shape;
};

bool Has(const std::vector<int>& labels, int l) {
  return std::find(labels.begin(), labels.end(), l) != labels.end();
}

// `v` transposed to the labels `order` (a permutation of its own).
Labelled Permute(DecompositionBuilder& b, const Labelled& v, const std::vector<int>& order) {
  if (order == v.labels) return v;
  std::vector<int64_t> perm;
  Shape shape;
  for (int l : order) {
    const int64_t d = std::find(v.labels.begin(), v.labels.end(), l) - v.labels.begin();
    perm.push_back(d);
    shape.push_back(v.shape[d]);
  }
  return {b.Add("transpose", "transpose", {v.value}, Ints("perm", std::move(perm))), order,
          std::move(shape)};
}

ValueId Reshape(DecompositionBuilder& b, ValueId v, const Shape& from, Shape to) {
  if (from == to) return v;
  return b.Add("reshape", "reshape", {v}, Ints("shape", std::move(to)));
}

// `v` with the labels `drop` summed out.
Labelled SumOut(DecompositionBuilder& b, const Labelled& v, const std::vector<int>& drop) {
  if (drop.empty()) return v;
  Labelled out;
  std::vector<int64_t> axes;
  for (size_t d = 0; d < v.labels.size(); ++d) {
    if (Has(drop, v.labels[d])) {
      axes.push_back(static_cast<int64_t>(d));
    } else {
      out.labels.push_back(v.labels[d]);
      out.shape.push_back(v.shape[d]);
    }
  }
  Attrs attrs = Ints("axes", std::move(axes));
  attrs.Set("keepdims", int64_t{0});
  out.value = b.Add("sum", "reduce_sum", {v.value}, std::move(attrs));
  return out;
}

// The operand with each repeated label taken along its diagonal.
Labelled Diagonals(DecompositionBuilder& b, Labelled v) {
  for (size_t p = 0; p < v.labels.size(); ++p) {
    for (size_t q = p + 1; q < v.labels.size(); ++q) {
      if (v.labels[q] != v.labels[p]) continue;
      // Dims p and q adjacent, at p and p + 1.
      std::vector<int64_t> perm;
      for (size_t d = 0; d < v.labels.size(); ++d) {
        if (d == q) continue;
        perm.push_back(static_cast<int64_t>(d));
        if (d == p) perm.push_back(static_cast<int64_t>(q));
      }
      Labelled moved;
      for (int64_t d : perm) {
        moved.labels.push_back(v.labels[d]);
        moved.shape.push_back(v.shape[d]);
      }
      moved.value = b.Add("diagonal_transpose", "transpose", {v.value}, Ints("perm", perm));
      const int64_t n = v.shape[p];
      Shape merged = moved.shape;
      merged[p] = n * n;
      merged.erase(merged.begin() + p + 1);
      const ValueId flat = Reshape(b, moved.value, moved.shape, merged);
      Attrs slice = Ints("starts", {0});
      slice.Set("ends", std::vector<int64_t>{n * n});
      slice.Set("axes", std::vector<int64_t>{static_cast<int64_t>(p)});
      slice.Set("steps", std::vector<int64_t>{n + 1});
      v.value = b.Add("diagonal", "slice", {flat}, std::move(slice));
      v.labels = moved.labels;
      v.labels.erase(v.labels.begin() + p + 1);
      v.shape = moved.shape;
      v.shape.erase(v.shape.begin() + p + 1);
      return Diagonals(b, std::move(v));  // any further repeats
    }
  }
  return v;
}

// `v` with its labels `grow` (size 1 there) expanded to `sizes`.
Labelled Broadcast(DecompositionBuilder& b, Labelled v, const std::vector<int64_t>& sizes,
                   const std::vector<int>& grow) {
  bool any = false;
  for (size_t d = 0; d < v.labels.size(); ++d) {
    if (Has(grow, v.labels[d]) && v.shape[d] != sizes[v.labels[d]]) {
      v.shape[d] = sizes[v.labels[d]];
      any = true;
    }
  }
  if (any) v.value = b.Add("broadcast", "expand", {v.value}, Ints("shape", v.shape));
  return v;
}

int64_t Product(const std::vector<int>& labels, const std::vector<int64_t>& sizes) {
  int64_t p = 1;
  for (int l : labels) p *= sizes[l];
  return p;
}

Shape SizesOf(const std::vector<int>& labels, const std::vector<int64_t>& sizes) {
  Shape s;
  for (int l : labels) s.push_back(sizes[l]);
  return s;
}

// x times y, summing the labels in both that `needed` lacks.
Labelled Multiply(DecompositionBuilder& b, Labelled x, Labelled y, const std::vector<int>& needed,
                  const std::vector<int64_t>& sizes) {
  std::vector<int> batch, contracted, x_kept, y_kept, shared;
  for (int l : x.labels) {
    if (Has(y.labels, l)) {
      shared.push_back(l);
      (Has(needed, l) ? batch : contracted).push_back(l);
    } else {
      x_kept.push_back(l);
    }
  }
  for (int l : y.labels) {
    if (!Has(x.labels, l)) y_kept.push_back(l);
  }
  x = Broadcast(b, std::move(x), sizes, shared);
  y = Broadcast(b, std::move(y), sizes, shared);
  auto concat = [](std::vector<int> a, const std::vector<int>& c, const std::vector<int>& d) {
    a.insert(a.end(), c.begin(), c.end());
    a.insert(a.end(), d.begin(), d.end());
    return a;
  };
  const Labelled xt = Permute(b, x, concat(batch, x_kept, contracted));
  const Labelled yt = Permute(b, y, concat(batch, contracted, y_kept));
  const int64_t nb = Product(batch, sizes), m = Product(x_kept, sizes),
                k = Product(contracted, sizes), n = Product(y_kept, sizes);
  const ValueId product = b.Add(
      "matmul", "matmul",
      {Reshape(b, xt.value, xt.shape, {nb, m, k}), Reshape(b, yt.value, yt.shape, {nb, k, n})});
  Labelled out;
  out.labels = concat(batch, x_kept, y_kept);
  out.shape = SizesOf(out.labels, sizes);
  out.value = Reshape(b, product, {nb, m, n}, out.shape);
  return out;
}

absl::Status DecomposeEinsum(const Node& node, DecompositionBuilder& b) {
  LOOM_RETURN_IF_ERROR(CheckInputCount(node, 1, node.inputs.size()));
  std::vector<Shape> shapes;
  for (ValueId v : node.inputs) shapes.push_back(b.type(v).shape);
  LOOM_ASSIGN_OR_RETURN(EinsumSpec spec, ParseEinsum(node.attrs.GetString("equation", ""), shapes));
  const size_t count = node.inputs.size();
  // The labels each operand from i on has, and the output's.
  std::vector<std::vector<int>> later(count + 1, spec.output);
  for (size_t i = count; i-- > 0;) {
    later[i] = later[i + 1];
    for (int l : spec.inputs[i]) {
      if (!Has(later[i], l)) later[i].push_back(l);
    }
  }
  std::vector<Labelled> operands;
  for (size_t i = 0; i < count; ++i) {
    Labelled v = Diagonals(b, {node.inputs[i], spec.inputs[i], shapes[i]});
    // Labels of this operand only (not the output's): summed now.
    std::vector<int> others = spec.output;
    for (size_t j = 0; j < count; ++j) {
      if (j == i) continue;
      others.insert(others.end(), spec.inputs[j].begin(), spec.inputs[j].end());
    }
    std::vector<int> drop;
    for (int l : v.labels) {
      if (!Has(others, l) && !Has(drop, l)) drop.push_back(l);
    }
    operands.push_back(SumOut(b, v, drop));
  }
  Labelled acc = operands[0];
  for (size_t i = 1; i < count; ++i) {
    // Labels of the product so far that neither operand i nor anything
    // later needs are summed first.
    std::vector<int> drop;
    for (int l : acc.labels) {
      if (!Has(later[i], l)) drop.push_back(l);
    }
    acc = Multiply(b, SumOut(b, acc, drop), operands[i], later[i + 1], spec.sizes);
  }
  std::vector<int> drop;
  for (int l : acc.labels) {
    if (!Has(spec.output, l)) drop.push_back(l);
  }
  acc = Permute(b, SumOut(b, acc, drop), spec.output);
  // A same-shape reshape (a view) writes the output.
  b.AddWriting("output", "reshape", {acc.value}, node.outputs[0],
               Ints("shape", SizesOf(spec.output, spec.sizes)));
  return absl::OkStatus();
}

constexpr Decomposition kEinsumDecompositions[] = {
    {"einsum", DecomposeEinsum},
};

}  // namespace

absl::Span<const Decomposition> EinsumDecompositions() { return kEinsumDecompositions; }

}  // namespace loom

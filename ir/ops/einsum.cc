// einsum (see einsum.h), computed straight from its definition: every
// combination of label values, each product of the operands' elements
// added into the output element it names. Floats accumulate in double,
// integers in int64 (wrapping). Any numeric dtype, all operands alike.
#include "ir/ops/einsum.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/ops/error_bound.h"
#include "ir/ops/op_util.h"
#include "ir/ops/ops.h"
#include "ir/status_macros.h"

namespace loom {
namespace {

// One term's letters, with kEllipsis where "..." stands.
constexpr int kEllipsis = -1;

absl::StatusOr<std::vector<int>> ParseTerm(const std::string& term, const std::string& equation) {
  std::vector<int> letters;
  for (size_t i = 0; i < term.size(); ++i) {
    const char c = term[i];
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
      letters.push_back(c);
    } else if (term.compare(i, 3, "...") == 0 &&
               std::find(letters.begin(), letters.end(), kEllipsis) == letters.end()) {
      letters.push_back(kEllipsis);
      i += 2;
    } else {
      return absl::InvalidArgumentError(absl::StrCat("equation \"", equation, "\": term \"", term,
                                                     "\" has '", std::string(1, c),
                                                     "'; expected letters and at most one ..."));
    }
  }
  return letters;
}

absl::Status EinsumError(const std::string& equation, const std::string& cause) {
  return absl::InvalidArgumentError(absl::StrCat("equation \"", equation, "\": ", cause));
}

// The comma-separated input terms of `lhs`.
std::vector<std::string> SplitTerms(const std::string& lhs) {
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma == std::string::npos ? comma : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return terms;
}

// The input terms parsed, each checked against its operand's rank; sets
// `ellipsis_rank` to the most dims any "..." stands for.
absl::StatusOr<std::vector<std::vector<int>>> ParseInputTerms(const std::vector<std::string>& terms,
                                                              absl::Span<const Shape> shapes,
                                                              const std::string& equation,
                                                              int64_t& ellipsis_rank) {
  std::vector<std::vector<int>> parsed;
  ellipsis_rank = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    LOOM_ASSIGN_OR_RETURN(std::vector<int> term, ParseTerm(terms[i], equation));
    const bool has_ellipsis = std::find(term.begin(), term.end(), kEllipsis) != term.end();
    const int64_t named = static_cast<int64_t>(term.size()) - (has_ellipsis ? 1 : 0);
    const int64_t rank = static_cast<int64_t>(shapes[i].size());
    if (has_ellipsis ? rank < named : rank != named) {
      return EinsumError(equation,
                         absl::StrCat("term \"", terms[i], "\" names ", named, " dims of input ", i,
                                      ", which has shape ", ShapeToString(shapes[i])));
    }
    if (has_ellipsis) ellipsis_rank = std::max(ellipsis_rank, rank - named);
    parsed.push_back(std::move(term));
  }
  return parsed;
}

// Numbers the letters and "..." dims (the "..." dims first) and broadcasts
// each label's sizes over the operands into `spec`.
class Labeler {
 public:
  Labeler(const std::string& equation, int64_t ellipsis_rank, EinsumSpec& spec)
      : equation_(equation), first_letter_(static_cast<int>(ellipsis_rank)), spec_(spec) {
    spec_.sizes.assign(first_letter_, 1);
    counts_.assign(first_letter_, 0);
  }

  // Labels operand `i`'s dims (its term `letters`, its shape `shape`).
  absl::Status AddInput(size_t i, const std::vector<int>& letters, const Shape& shape) {
    const int64_t rank = static_cast<int64_t>(shape.size());
    const int64_t own_ellipsis = rank - static_cast<int64_t>(letters.size()) + 1;
    std::vector<int> labels;
    for (int letter : letters) {
      if (letter != kEllipsis) {
        labels.push_back(Label(letter));
        continue;
      }
      for (int64_t e = first_letter_ - own_ellipsis; e < first_letter_; ++e) {
        labels.push_back(static_cast<int>(e));
      }
    }
    for (int64_t d = 0; d < rank; ++d) LOOM_RETURN_IF_ERROR(AddDim(i, shape, labels, d));
    spec_.inputs.push_back(std::move(labels));
    return absl::OkStatus();
  }

  // Without "->": the "..." dims, then the letters that occur once.
  void ImplicitOutput() {
    for (int e = 0; e < first_letter_; ++e) spec_.output.push_back(e);
    for (const auto& [letter, l] : label_of_) {  // in ASCII order
      if (counts_[l] == 1) spec_.output.push_back(l);
    }
  }

  // The output term `out`, each of its letters in some input term, once.
  absl::Status ExplicitOutput(const std::vector<int>& out) {
    bool has_ellipsis = false;
    for (int letter : out) {
      if (letter == kEllipsis) {
        has_ellipsis = true;
        for (int e = 0; e < first_letter_; ++e) spec_.output.push_back(e);
        continue;
      }
      const std::string name(1, static_cast<char>(letter));
      auto it = label_of_.find(letter);
      if (it == label_of_.end()) {
        return EinsumError(equation_,
                           absl::StrCat("output letter '", name, "' is in no input term"));
      }
      if (std::find(spec_.output.begin(), spec_.output.end(), it->second) != spec_.output.end()) {
        return EinsumError(equation_, absl::StrCat("output letter '", name, "' is repeated"));
      }
      spec_.output.push_back(it->second);
    }
    if (first_letter_ > 0 && !has_ellipsis) {
      return EinsumError(equation_, "the inputs have ... dims but the output term has no ...");
    }
    return absl::OkStatus();
  }

 private:
  int Label(int letter) {
    auto [it, added] = label_of_.emplace(letter, static_cast<int>(spec_.sizes.size()));
    if (added) {
      spec_.sizes.push_back(1);
      counts_.push_back(0);
    }
    return it->second;
  }

  // Counts dim `d` of operand `i` and broadcasts its size into its label's.
  absl::Status AddDim(size_t i, const Shape& shape, const std::vector<int>& labels, int64_t d) {
    const int l = labels[d];
    const int64_t size = shape[d];
    ++counts_[l];
    // Within one operand a repeated letter's sizes must agree.
    for (int64_t e = 0; e < d; ++e) {
      if (labels[e] == l && shape[e] != size) {
        return EinsumError(equation_, absl::StrCat("input ", i, " ", ShapeToString(shape),
                                                   " repeats a letter over dims of sizes ",
                                                   shape[e], " and ", size));
      }
    }
    if (spec_.sizes[l] == 1) {
      spec_.sizes[l] = size;
    } else if (size != 1 && size != spec_.sizes[l]) {
      return EinsumError(equation_, absl::StrCat("a letter (or ... dim) has sizes ", spec_.sizes[l],
                                                 " and ", size, ", which do not broadcast"));
    }
    return absl::OkStatus();
  }

  const std::string& equation_;
  const int first_letter_;
  EinsumSpec& spec_;
  std::map<int, int> label_of_;  // letter -> label
  std::vector<int> counts_;      // per label, its occurrences in the inputs
};

}  // namespace

absl::StatusOr<EinsumSpec> ParseEinsum(const std::string& equation,
                                       absl::Span<const Shape> shapes) {
  std::string text;
  for (char c : equation) {
    if (c != ' ') text.push_back(c);
  }
  const size_t arrow = text.find("->");
  const std::vector<std::string> terms = SplitTerms(text.substr(0, arrow));
  if (terms.size() != shapes.size()) {
    return EinsumError(equation, absl::StrCat("has ", terms.size(), " input terms for ",
                                              shapes.size(), " inputs"));
  }
  int64_t ellipsis_rank = 0;
  LOOM_ASSIGN_OR_RETURN(std::vector<std::vector<int>> parsed,
                        ParseInputTerms(terms, shapes, equation, ellipsis_rank));
  EinsumSpec spec;
  Labeler labeler(equation, ellipsis_rank, spec);
  for (size_t i = 0; i < parsed.size(); ++i) {
    LOOM_RETURN_IF_ERROR(labeler.AddInput(i, parsed[i], shapes[i]));
  }
  if (arrow == std::string::npos) {
    labeler.ImplicitOutput();
    return spec;
  }
  LOOM_ASSIGN_OR_RETURN(std::vector<int> out, ParseTerm(text.substr(arrow + 2), equation));
  LOOM_RETURN_IF_ERROR(labeler.ExplicitOutput(out));
  return spec;
}

namespace {

absl::StatusOr<OutputTypes> EinsumShape(const Node& node, absl::Span<const TensorType> in) {
  std::vector<Shape> shapes;
  for (int i = 0; i < static_cast<int>(in.size()); ++i) {
    if (i == 0) {
      LOOM_RETURN_IF_ERROR(CheckDType(in[0].dtype, DTypeClass::kNumeric, 0));
    } else if (absl::Status s = CheckSameDType(in, 0, i); !s.ok()) {
      return s;
    }
    shapes.push_back(in[i].shape);
  }
  LOOM_ASSIGN_OR_RETURN(EinsumSpec spec, ParseEinsum(node.attrs.GetString("equation", ""), shapes));
  Shape shape;
  for (int l : spec.output) shape.push_back(spec.sizes[l]);
  return OneOutput(in[0].dtype, std::move(shape));
}

absl::Status EinsumEval(const Node& node, absl::Span<const Tensor* const> in,
                        absl::Span<Tensor> out) {
  std::vector<Shape> shapes;
  for (const Tensor* t : in) shapes.push_back(t->shape());
  LOOM_ASSIGN_OR_RETURN(EinsumSpec spec, ParseEinsum(node.attrs.GetString("equation", ""), shapes));
  const int labels = static_cast<int>(spec.sizes.size());
  int64_t combinations = 1;
  for (int64_t size : spec.sizes) combinations *= size;
  // Per operand (and the output, last), the element stride of each label.
  std::vector<std::vector<int64_t>> strides;
  auto strides_of = [&](const std::vector<int>& dims, const Shape& shape) {
    std::vector<int64_t> s(labels, 0);
    int64_t stride = 1;
    for (int d = static_cast<int>(dims.size()) - 1; d >= 0; --d) {
      if (shape[d] != 1) s[dims[d]] += stride;  // a size-1 dim broadcasts
      stride *= shape[d];
    }
    return s;
  };
  for (size_t i = 0; i < in.size(); ++i) strides.push_back(strides_of(spec.inputs[i], shapes[i]));
  strides.push_back(strides_of(spec.output, out[0].shape()));
  const bool is_float = IsFloat(out[0].dtype());
  std::vector<double> sums(is_float ? out[0].num_elements() : 0, 0.0);
  std::vector<uint64_t> int_sums(is_float ? 0 : out[0].num_elements(), 0);
  std::vector<int64_t> index(labels, 0);
  for (int64_t c = 0; c < combinations; ++c) {
    int64_t at = 0;
    for (int l = 0; l < labels; ++l) at += index[l] * strides.back()[l];
    double product = 1;
    uint64_t int_product = 1;
    for (size_t i = 0; i < in.size(); ++i) {
      int64_t offset = 0;
      for (int l = 0; l < labels; ++l) offset += index[l] * strides[i][l];
      if (is_float) {
        product *= in[i]->GetDouble(offset);
      } else {
        int_product *= static_cast<uint64_t>(in[i]->GetInt(offset));
      }
    }
    if (is_float) {
      sums[at] += product;
    } else {
      int_sums[at] += int_product;
    }
    for (int l = labels - 1; l >= 0; --l) {
      if (++index[l] < spec.sizes[l]) break;
      index[l] = 0;
    }
  }
  for (int64_t i = 0; i < out[0].num_elements(); ++i) {
    if (is_float) {
      out[0].SetDouble(i, sums[i]);
    } else {
      out[0].SetInt(i, static_cast<int64_t>(int_sums[i]));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status RegisterEinsumOps(OpRegistry& registry) {
  OpDef def =
      FixedArityOp("einsum", 1, {{"equation", AttrType::kString, true}}, EinsumShape, EinsumEval);
  def.max_inputs = -1;
  return RegisterAll(registry, {WithPattern(Composite(std::move(def)), OpPattern::kContraction)});
}

}  // namespace loom

#include "ir/loop_ir.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/conv_call.h"
#include "ir/gemm.h"
#include "ir/status_macros.h"

namespace loom {

int ScalarFnArity(ScalarFn fn) {
  if (fn <= ScalarFn::kBitCast) return 1;  // the unary functions come first
  if (fn == ScalarFn::kSelect) return 3;
  return 2;
}

const char* ScalarFnName(ScalarFn fn) {
  // clang-format off
  switch (fn) {
    case ScalarFn::kNeg: return "neg";
    case ScalarFn::kAbs: return "abs";
    case ScalarFn::kExp: return "exp";
    case ScalarFn::kLog: return "log";
    case ScalarFn::kSqrt: return "sqrt";
    case ScalarFn::kRsqrt: return "rsqrt";
    case ScalarFn::kReciprocal: return "reciprocal";
    case ScalarFn::kTanh: return "tanh";
    case ScalarFn::kSigmoid: return "sigmoid";
    case ScalarFn::kRelu: return "relu";
    case ScalarFn::kErf: return "erf";
    case ScalarFn::kSin: return "sin";
    case ScalarFn::kCos: return "cos";
    case ScalarFn::kFloor: return "floor";
    case ScalarFn::kCeil: return "ceil";
    case ScalarFn::kRound: return "round";
    case ScalarFn::kSign: return "sign";
    case ScalarFn::kNot: return "not";
    case ScalarFn::kBitNot: return "bit_not";
    case ScalarFn::kBitCast: return "bit_cast";
    case ScalarFn::kAdd: return "add";
    case ScalarFn::kSub: return "sub";
    case ScalarFn::kMul: return "mul";
    case ScalarFn::kDiv: return "div";
    case ScalarFn::kPow: return "pow";
    case ScalarFn::kMax: return "max";
    case ScalarFn::kMin: return "min";
    case ScalarFn::kMod: return "mod";
    case ScalarFn::kFmod: return "fmod";
    case ScalarFn::kShl: return "shl";
    case ScalarFn::kShr: return "shr";
    case ScalarFn::kEq: return "eq";
    case ScalarFn::kNe: return "ne";
    case ScalarFn::kLt: return "lt";
    case ScalarFn::kLe: return "le";
    case ScalarFn::kGt: return "gt";
    case ScalarFn::kGe: return "ge";
    case ScalarFn::kAnd: return "and";
    case ScalarFn::kOr: return "or";
    case ScalarFn::kXor: return "xor";
    case ScalarFn::kBitAnd: return "bit_and";
    case ScalarFn::kBitOr: return "bit_or";
    case ScalarFn::kBitXor: return "bit_xor";
    case ScalarFn::kSelect: return "select";
  }
  // clang-format on
  return "?";
}

const char* ReduceKindName(ReduceKind kind) {
  // clang-format off
  switch (kind) {
    case ReduceKind::kNone: return "none";
    case ReduceKind::kSum: return "sum";
    case ReduceKind::kMax: return "max";
    case ReduceKind::kMin: return "min";
    case ReduceKind::kProd: return "prod";
    case ReduceKind::kVar: return "var";
    case ReduceKind::kArgMax: return "argmax";
    case ReduceKind::kArgMin: return "argmin";
    case ReduceKind::kArgMaxLast: return "argmax_last";
    case ReduceKind::kArgMinLast: return "argmin_last";
  }
  // clang-format on
  return "?";
}

bool IsArgReduce(ReduceKind kind) {
  return kind == ReduceKind::kArgMax || kind == ReduceKind::kArgMin ||
         kind == ReduceKind::kArgMaxLast || kind == ReduceKind::kArgMinLast;
}

std::vector<int64_t> ComputeNode::AllRanges() const {
  std::vector<int64_t> all = ranges;
  all.insert(all.end(), reduction_ranges.begin(), reduction_ranges.end());
  return all;
}

namespace {

absl::Status NodeError(const ComputeNode& node, absl::string_view cause) {
  return absl::InternalError(absl::StrCat("compute node '", node.name, "': ", cause));
}

absl::Status VerifyCheckIndex(const LoopProgram& program, const ComputeNode& node, int position) {
  const ScalarOp& op = node.body[position];
  const std::string step = absl::StrCat("index check at step ", position);
  if (op.args.size() != 1 || !IsInteger(node.body[op.args[0]].dtype) || op.dtype != DType::kI64) {
    return NodeError(node, absl::StrCat(step, " needs one integer operand and an i64 result"));
  }
  if (op.site < 0 || op.site >= static_cast<int>(program.index_checks.size())) {
    return NodeError(node, absl::StrCat(step, " names an unknown site"));
  }
  const BufferId errors = program.index_errors;
  if (errors < 0 || errors >= static_cast<int>(program.buffers.size()) ||
      program.buffers[errors].kind != BufferKind::kIndexErrors ||
      program.buffers[errors].dtype != DType::kI64 ||
      NumElements(program.buffers[errors].sizes) != 2) {
    return NodeError(node, absl::StrCat(step, ": the program has no index error slot"));
  }
  if (op.extent < 0) return NodeError(node, absl::StrCat(step, " has a negative extent"));
  return absl::OkStatus();
}

absl::Status VerifyStep(const LoopProgram& program, const ComputeNode& node, int position,
                        int num_vars) {
  const ScalarOp& op = node.body[position];
  for (int arg : op.args) {
    if (arg < 0 || arg >= position) {
      return NodeError(node, absl::StrCat("step ", position, " uses a step that is not before it"));
    }
  }
  switch (op.kind) {
    case ScalarOp::Kind::kLoad: {
      if (op.buffer < 0 || op.buffer >= static_cast<int>(program.buffers.size())) {
        return NodeError(node, absl::StrCat("step ", position, " loads from an unknown buffer"));
      }
      if (op.index == nullptr || MaxVar(op.index) >= num_vars) {
        return NodeError(node, absl::StrCat("step ", position, " has an index over unknown loops"));
      }
      if (program.buffers[op.buffer].dtype != op.dtype) {
        return NodeError(node, absl::StrCat("step ", position, " loads with the wrong dtype"));
      }
      if (op.args.size() > 1 || (op.args.size() == 1 && !IsInteger(node.body[op.args[0]].dtype))) {
        return NodeError(
            node, absl::StrCat("indirect load at step ", position, " needs one integer operand"));
      }
      return absl::OkStatus();
    }
    case ScalarOp::Kind::kIndex:
      if (op.index == nullptr || MaxVar(op.index) >= num_vars) {
        return NodeError(node, absl::StrCat("step ", position, " has an index over unknown loops"));
      }
      if (op.dtype != DType::kI64 || !op.args.empty()) {
        return NodeError(node,
                         absl::StrCat("index step ", position, " must be an i64 with no operands"));
      }
      return absl::OkStatus();
    case ScalarOp::Kind::kCheckIndex:
      return VerifyCheckIndex(program, node, position);
    case ScalarOp::Kind::kConst:
      if (!op.args.empty()) {
        return NodeError(node, absl::StrCat("constant at step ", position, " has operands"));
      }
      return absl::OkStatus();
    case ScalarOp::Kind::kCast:
      if (op.args.size() != 1) {
        return NodeError(node, absl::StrCat("cast at step ", position, " needs one operand"));
      }
      return absl::OkStatus();
    case ScalarOp::Kind::kCall:
      if (static_cast<int>(op.args.size()) != ScalarFnArity(op.fn)) {
        return NodeError(node, absl::StrCat(ScalarFnName(op.fn), " at step ", position, " has ",
                                            op.args.size(), " operands"));
      }
      return absl::OkStatus();
  }
  return NodeError(node, "unknown step kind");
}

// Values of storage types (the narrow floats and the sub-byte integers)
// are only loaded, stored, cast, bit-cast and written as constants: the
// widen-half pass (passes/widen_half.h) moves every op on them to their
// ComputeType before lowering.
absl::Status VerifyStorageTypeStep(const ComputeNode& node, int position) {
  const ScalarOp& op = node.body[position];
  const bool calls = op.kind == ScalarOp::Kind::kCall && op.fn != ScalarFn::kBitCast;
  bool computes = calls && IsStorageType(op.dtype);
  for (int arg : op.args) computes |= calls && IsStorageType(node.body[arg].dtype);
  if (position == node.root && node.reduce != ReduceKind::kNone) {
    computes |= IsStorageType(op.dtype);
  }
  if (!computes) return absl::OkStatus();
  return NodeError(node, absl::StrCat("step ", position,
                                      " computes on a storage type (f16, bf16, f8*, f4e2m1, i4, "
                                      "u4, i2, u2), which only loads, stores and casts may touch "
                                      "(the pipeline needs the widen-half pass)"));
}

}  // namespace

absl::Status VerifyLoopProgram(const LoopProgram& program) {
  const int num_buffers = static_cast<int>(program.buffers.size());
  std::vector<bool> written(num_buffers, false);
  for (BufferId id : program.inputs) written[id] = true;
  for (BufferId id : program.weights) written[id] = true;
  for (const ComputeNode& node : program.nodes) {
    if (node.output < 0 || node.output >= num_buffers) {
      return NodeError(node, "writes an unknown buffer");
    }
    const int num_vars = static_cast<int>(node.ranges.size() + node.reduction_ranges.size());
    if (node.body.empty() || node.root < 0 || node.root >= static_cast<int>(node.body.size())) {
      return NodeError(node, "has no root step");
    }
    if ((node.reduce == ReduceKind::kNone) != node.reduction_ranges.empty()) {
      return NodeError(node, "reduction loops and reduce kind disagree");
    }
    if (node.store_index == nullptr ||
        MaxVar(node.store_index) >= static_cast<int>(node.ranges.size())) {
      return NodeError(node, "store index uses loops it does not have");
    }
    for (int i = 0; i < static_cast<int>(node.body.size()); ++i) {
      LOOM_RETURN_IF_ERROR(VerifyStep(program, node, i, num_vars));
      LOOM_RETURN_IF_ERROR(VerifyStorageTypeStep(node, i));
      const ScalarOp& op = node.body[i];
      if (op.kind == ScalarOp::Kind::kLoad && !written[op.buffer]) {
        return NodeError(node, absl::StrCat("reads buffer '", program.buffers[op.buffer].name,
                                            "' before anything writes it"));
      }
    }
    if (node.extern_op == ExternOp::kGemm && !MatchGemm(node).has_value()) {
      return NodeError(node, "is marked as a gemm but is not a product gemm calls can compute");
    }
    if (node.extern_op == ExternOp::kConv && !MatchConv(node).has_value()) {
      return NodeError(node, "is marked as a conv call but is not a convolution one can compute");
    }
    // An arg reduction folds values of any type into an i64 position.
    const DType stored = IsArgReduce(node.reduce) ? DType::kI64 : node.body[node.root].dtype;
    if (stored != program.buffers[node.output].dtype) {
      return NodeError(node, "stores a value of the wrong dtype");
    }
    if (IsArgReduce(node.reduce) && node.body[node.root].dtype == DType::kBool) {
      return NodeError(node, "arg reduction over bools");
    }
    written[node.output] = true;
  }
  for (BufferId id : program.outputs) {
    if (!written[id]) {
      return absl::InternalError(
          absl::StrCat("output buffer '", program.buffers[id].name, "' is never written"));
    }
  }
  return absl::OkStatus();
}

namespace {

std::string VarNames(int first, int count) {
  std::vector<std::string> names;
  for (int i = first; i < first + count; ++i) {
    names.push_back(absl::StrCat("x", i));
  }
  return absl::StrJoin(names, ",");
}

std::string PrintStep(const LoopProgram& program, const ScalarOp& op) {
  switch (op.kind) {
    case ScalarOp::Kind::kLoad:
      if (!op.args.empty()) {
        return absl::StrCat("load ", program.buffers[op.buffer].name, "[", ToString(op.index),
                            " + ", op.stride, "*t", op.args[0], "]");
      }
      return absl::StrCat("load ", program.buffers[op.buffer].name, "[", ToString(op.index), "]");
    case ScalarOp::Kind::kIndex:
      return absl::StrCat("index ", ToString(op.index));
    case ScalarOp::Kind::kCheckIndex:
      return absl::StrCat("check_index t", op.args[0], " in ", op.extent, " at ", op.site);
    case ScalarOp::Kind::kConst:
      return absl::StrCat("const ", op.constant);
    case ScalarOp::Kind::kCast:
      return absl::StrCat("cast t", op.args[0]);
    case ScalarOp::Kind::kCall: {
      std::vector<std::string> args;
      for (int arg : op.args) args.push_back(absl::StrCat("t", arg));
      return absl::StrCat(ScalarFnName(op.fn), "(", absl::StrJoin(args, ", "), ")");
    }
  }
  return "?";
}

}  // namespace

std::string PrintComputeNode(const LoopProgram& program, const ComputeNode& node) {
  const Buffer& out = program.buffers[node.output];
  const int n = static_cast<int>(node.ranges.size());
  std::string text =
      absl::StrCat("node ", node.name, ": ", out.name, "[", ToString(node.store_index), "] over (",
                   VarNames(0, n), ") in ", ShapeToString(node.ranges));
  if (node.reduce != ReduceKind::kNone) {
    absl::StrAppend(&text, " ", ReduceKindName(node.reduce), " over (",
                    VarNames(n, static_cast<int>(node.reduction_ranges.size())), ") in ",
                    ShapeToString(node.reduction_ranges));
  }
  if (node.extern_op == ExternOp::kGemm) absl::StrAppend(&text, " as gemm");
  if (node.extern_op == ExternOp::kConv) absl::StrAppend(&text, " as conv call");
  absl::StrAppend(&text, "\n");
  for (int i = 0; i < static_cast<int>(node.body.size()); ++i) {
    absl::StrAppend(&text, "  t", i, ": ", DTypeName(node.body[i].dtype), " = ",
                    PrintStep(program, node.body[i]), i == node.root ? "  <- root" : "", "\n");
  }
  return text;
}

const std::string& InlineReaderName(const LoopProgram& program, int32_t reader) {
  return reader >= 0 ? program.nodes[reader].name : program.inline_decisions[-1 - reader].node;
}

std::string PrintLoopProgram(const LoopProgram& program) {
  static constexpr const char* kKindNames[] = {"input", "weight", "output", "temp", "index_errors"};
  std::string text;
  for (int i = 0; i < static_cast<int>(program.buffers.size()); ++i) {
    const Buffer& b = program.buffers[i];
    absl::StrAppend(&text, "buffer ", b.name, ": ", DTypeName(b.dtype), ShapeToString(b.sizes), " ",
                    kKindNames[static_cast<int>(b.kind)], "\n");
  }
  for (size_t i = 0; i < program.index_checks.size(); ++i) {
    const IndexCheck& check = program.index_checks[i];
    absl::StrAppend(&text, "index check ", i, ": node ", check.node, " (", check.op, ") axis ",
                    check.axis, " of size ", check.extent, "\n");
  }
  for (const ComputeNode& node : program.nodes) {
    absl::StrAppend(&text, PrintComputeNode(program, node));
  }
  return text;
}

}  // namespace loom

// loom at its limits: tensor sizes whose element or byte counts would
// overflow int64, graphs far deeper than the stack, and absurd attribute
// values. Each must load and compile or fail with an InvalidArgument that
// names the node; none may crash, overflow or recurse on graph depth.

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "compiler/driver.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/graph_io.h"

namespace loom {
namespace {

using ::testing::HasSubstr;

// Loads `text` and, when it loads, compiles it with the cpu pipeline up to
// emitted source (no native compile), verifying after every pass.
absl::Status LoadAndCompile(absl::string_view text) {
  absl::StatusOr<proto::Graph> graph_proto = ParseGraphText(text, "limits.pbtxt");
  if (!graph_proto.ok()) return graph_proto.status();
  absl::StatusOr<Graph> graph = GraphFromProto(*graph_proto, "limits.pbtxt");
  if (!graph.ok()) return graph.status();
  CompileOptions options;
  options.model = "limits.pbtxt";
  options.native_compile = false;
  options.verify_each = true;
  return CompileGraph(*std::move(graph), options).status();
}

// A model with input x of `shape` (f32), the given nodes and output y.
std::string Model(absl::string_view shape, absl::string_view nodes) {
  return absl::StrCat("input { name: \"x\" type { dtype: F32 shape: [", shape, "] } }\n", nodes,
                      "\noutput: \"y\"\n");
}

struct BadCase {
  const char* what;
  std::string model;
  const char* message;  // a substring of the error: the node and the cause
};

void ExpectRefused(const BadCase& c) {
  SCOPED_TRACE(c.what);
  const absl::Status status = LoadAndCompile(c.model);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr(c.message));
}

constexpr absl::string_view kInt64Min = "-9223372036854775808";
constexpr absl::string_view kInt64Max = "9223372036854775807";

// `attr { name: "NAME" ints { v: [VALUES] } }`
std::string Ints(absl::string_view name, absl::string_view values) {
  return absl::StrCat(" attr { name: \"", name, "\" ints { v: [", values, "] } }");
}

// `attr { name: "NAME" i: VALUE }`
std::string Int(absl::string_view name, absl::string_view value) {
  return absl::StrCat(" attr { name: \"", name, "\" i: ", value, " }");
}

// Node NAME applying OP to x, with output y and `attrs`.
std::string Unary(absl::string_view name, absl::string_view op, absl::string_view attrs) {
  return absl::StrCat("node { name: \"", name, "\" op: \"", op, "\" input: \"x\" output: \"y\"",
                      attrs, " }");
}

TEST(LimitsTest, ShapesThatWouldOverflowAreRefusedAtTheNode) {
  const BadCase cases[] = {
      {"expand past 2^40 elements",
       Model("2, 3", Unary("big", "expand", Ints("shape", "1099511627776, 2, 3"))),
       "node 'big' (expand): output 'y': shape [1099511627776,2,3] is too "
       "large"},
      {"expand whose element count wraps to zero",
       Model("2, 3", Unary("big", "expand",
                           Ints("shape",
                                "4294967296, 4294967296, "
                                "4294967296, 0, 2, 3"))),
       "node 'big' (expand): output 'y': shape"},
      {"tile whose dims multiply past int64",
       Model("4, 3", Unary("big", "tile", Ints("repeats", "4611686018427387904, 1"))),
       "node 'big' (tile): attribute 'repeats'"},
      {"tile past 2^40 elements",
       Model("4, 3", Unary("big", "tile", Ints("repeats", "1048576, 1048576"))),
       "node 'big' (tile): output 'y': shape [4194304,3145728] is too large"},
      {"pad whose sum overflows int64",
       Model("2, 3",
             Unary("big", "pad", Ints("pads", absl::StrCat(kInt64Max, ", 0, ", kInt64Max, ", 0")))),
       "node 'big' (pad): attribute 'pads'"},
      {"pad past 2^40 elements",
       Model("2, 3", Unary("big", "pad", Ints("pads", "1099511627776, 0, 0, 0"))),
       "node 'big' (pad): output 'y'"},
      {"concat whose axis adds up past 2^40", Model("1099511627776", R"(
         node { name: "cat" op: "concat" input: "x" input: "x" output: "y"
                attr { name: "axis" i: 0 } })"),
       "node 'cat' (concat): the inputs' sizes on axis 0 add up to more than "
       "2^40"},
      {"reshape whose listed dims multiply past int64",
       Model("2, 3", Unary("rs", "reshape",
                           Ints("shape",
                                "4294967296, 4294967296, "
                                "4294967296, -1"))),
       "node 'rs' (reshape): attribute 'shape'"},
      {"reshape of an empty tensor to huge dims",
       Model("0, 3", Unary("rs", "reshape", Ints("shape", "0, 4294967296, 4294967296"))),
       "node 'rs' (reshape): output 'y': shape [0,4294967296,4294967296] is "
       "too large"},
      {"matmul whose broadcast batch dims pass 2^40", Model("2, 3", R"(
         node { name: "e1" op: "expand" input: "x" output: "a"
                attr { name: "shape" ints { v: [1048576, 1, 2, 3] } } }
         node { name: "t" op: "transpose" input: "x" output: "xt" }
         node { name: "e2" op: "expand" input: "xt" output: "b"
                attr { name: "shape" ints { v: [1, 1048576, 3, 2] } } }
         node { name: "mm" op: "matmul" input: "a" input: "b" output: "y" })"),
       "node 'mm' (matmul): output 'y': shape [1048576,1048576,2,2] is too "
       "large"},
      {"an empty input whose other dims overflow", Model("2", R"(
         input { name: "z" type { dtype: F32
                 shape: [0, 4611686018427387904, 4611686018427387904] } }
         node { name: "r" op: "relu" input: "z" output: "y" })"),
       "input 'z': shape [0,4611686018427387904,4611686018427387904] is too "
       "large: its element count overflows int64"},
  };
  for (const BadCase& c : cases) ExpectRefused(c);
}

// 2^40 elements: the largest tensor loom accepts.
constexpr absl::string_view kLargestExpand = R"(
  node { name: "big" op: "expand" input: "x" output: "y"
         attr { name: "shape" ints { v: [1048576, 174762, 2, 3] } } })";

TEST(LimitsTest, ShapesAtTheLimitCompile) {
  const absl::Status status = LoadAndCompile(Model("2, 3", kLargestExpand));
  EXPECT_TRUE(status.ok()) << status;
}

TEST(LimitsTest, ANativeCompileRefusesBuffersLargerThanTheMachinesMemory) {
  // 2^40 f32 elements (4 TiB) is a valid shape, but no buffer of the kind
  // fits in memory here: the compile refuses before allocating anything.
  absl::StatusOr<proto::Graph> graph_proto =
      ParseGraphText(Model("2, 3", kLargestExpand), "huge.pbtxt");
  ASSERT_TRUE(graph_proto.ok()) << graph_proto.status();
  absl::StatusOr<Graph> graph = GraphFromProto(*graph_proto, "huge.pbtxt");
  ASSERT_TRUE(graph.ok()) << graph.status();
  CompileOptions options;
  options.model = "huge.pbtxt";
  options.cache_dir = ::testing::TempDir();
  const absl::Status status = CompileGraph(*std::move(graph), options).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr("GB, more than this machine's"));
}

// A recurrent node `op` named "cell" on x [2, 3, 4] with inputs w and r of
// the given shapes and the given hidden_size.
std::string Recurrent(absl::string_view op, absl::string_view w_shape, absl::string_view r_shape,
                      absl::string_view hidden_size) {
  return Model("2, 3, 4", absl::StrCat("input { name: \"w\" type { dtype: F32 shape: [", w_shape,
                                       "] } }\ninput { name: \"r\" type { dtype: F32 shape: [",
                                       r_shape, "] } }\nnode { name: \"cell\" op: \"", op,
                                       "\" input: \"x\" input: \"w\" input: \"r\" output: \"y\"",
                                       Int("hidden_size", hidden_size), " }"));
}

// A group_norm named "gn" on x [2, 4, 3] with the given num_groups.
std::string GroupNorm(absl::string_view num_groups) {
  return Model("2, 4, 3",
               absl::StrCat("weight { name: \"s\" type { dtype: F32 shape: [4] } random {} }\n"
                            "node { name: \"gn\" op: \"group_norm\" input: \"x\" input: \"s\" "
                            "input: \"s\" output: \"y\"",
                            Int("num_groups", num_groups), " }"));
}

// A split named "sp" of x [6] into y and z with the given sizes.
std::string Split(absl::string_view sizes) {
  return Model("6", absl::StrCat("node { name: \"sp\" op: \"split\" "
                                 "input: \"x\" output: \"y\" output: \"z\"",
                                 Ints("split", sizes), " }"));
}

TEST(LimitsTest, AbsurdAttributesAreRefusedAtTheNode) {
  const std::string slice_to_4 = absl::StrCat(Ints("starts", "0"), Ints("ends", "4"));
  const BadCase cases[] = {
      {"reshape to [-5]", Model("2, 3", Unary("rs", "reshape", Ints("shape", "-5"))),
       "node 'rs' (reshape): attribute 'shape' [-5] has invalid entry -5"},
      {"slice axis INT64_MIN",
       Model("8, 3", Unary("sl", "slice", absl::StrCat(slice_to_4, Ints("axes", kInt64Min)))),
       "node 'sl' (slice): attribute 'axes'"},
      {"slice step 0",
       Model("8", Unary("sl", "slice", absl::StrCat(slice_to_4, Ints("steps", "0")))),
       "node 'sl' (slice): attribute 'steps' has a 0 entry"},
      {"split into 10^9 more elements than the axis has", Split("1000000000, 1000000000"),
       "node 'sp' (split): attribute 'split' [1000000000,1000000000] does not "
       "sum to 6"},
      {"split whose sizes overflow int64", Split(absl::StrCat(kInt64Max, ", ", kInt64Max)),
       "node 'sp' (split): attribute 'split'"},
      {"split with a size of -999999994 to make 10^9 add up", Split("1000000000, -999999994"),
       "node 'sp' (split): attribute 'split' [1000000000,-999999994] has a "
       "negative size"},
      {"lstm hidden_size 2^40 + 1", Recurrent("lstm", "1, 4, 4", "1, 4, 1", "1099511627777"),
       "node 'cell' (lstm): attribute 'hidden_size' must be at most 2^40"},
      {"lstm hidden_size 2^62 (4 * hidden_size would wrap to 0)",
       Recurrent("lstm", "1, 0, 4", "1, 0, 1", "4611686018427387904"),
       "node 'cell' (lstm): attribute 'hidden_size' must be at most 2^40"},
      {"gru hidden_size 0", Recurrent("gru", "1, 3, 4", "1, 3, 1", "0"),
       "node 'cell' (gru): attribute 'hidden_size' must be positive, got 0"},
      {"rnn hidden_size INT64_MIN", Recurrent("rnn", "1, 1, 4", "1, 1, 1", kInt64Min),
       "node 'cell' (rnn): attribute 'hidden_size' must be positive"},
      {"group_norm num_groups 0", GroupNorm("0"),
       "node 'gn' (group_norm): attribute 'num_groups' (0) must be positive"},
      {"group_norm num_groups INT64_MIN", GroupNorm(kInt64Min),
       "node 'gn' (group_norm): attribute 'num_groups'"},
      {"softmax axis INT64_MIN", Model("2, 3", Unary("sm", "softmax", Int("axis", kInt64Min))),
       "node 'sm' (softmax): attribute 'axis'"},
      {"transpose perm with INT64_MIN",
       Model("2, 3", Unary("tp", "transpose", Ints("perm", absl::StrCat(kInt64Min, ", 1")))),
       "node 'tp' (transpose): attribute 'perm'"},
      {"unsqueeze at INT64_MAX", Model("2", Unary("u", "unsqueeze", Ints("axes", kInt64Max))),
       "node 'u' (unsqueeze): attribute 'axes'"},
      {"flatten axis INT64_MIN", Model("2, 3", Unary("f", "flatten", Int("axis", kInt64Min))),
       "node 'f' (flatten): attribute 'axis'"},
      {"reduce over axis INT64_MIN",
       Model("2, 3", Unary("rd", "reduce_sum", Ints("axes", kInt64Min))),
       "node 'rd' (reduce_sum): attribute 'axes'"},
      {"cast to a dtype that does not exist",
       Model("2", Unary("c", "cast", " attr { name: \"to\" s: \"f128\" }")),
       "node 'c' (cast): attribute 'to'"},
      {"a random init of integers up to 9.2e19", Model("2", R"(
         weight { name: "w" type { dtype: I64 shape: [2] }
                  random { seed: 1 high: 92233720368547758070.125 } }
         node { name: "a" op: "add" input: "x" input: "w" output: "y" })"),
       "initializer 'w': random init bounds"},
      {"an input with no name",
       Model("2", R"(node { name: "n" op: "relu" input: "" output: "y" })"),
       "node 'n' (relu): input '' is not defined"},
  };
  for (const BadCase& c : cases) ExpectRefused(c);
}

// A slice of x's first axis with one start, end and step.
std::string SliceModel(absl::string_view start, absl::string_view end, absl::string_view step) {
  return Model("8, 3",
               Unary("sl", "slice",
                     absl::StrCat(Ints("starts", start), Ints("ends", end), Ints("steps", step))));
}

TEST(LimitsTest, ExtremeSliceStepsAreValid) {
  // ONNX slice semantics hold for every int64 start, end and non-zero step.
  for (const std::string& model :
       {SliceModel("0", kInt64Min, kInt64Min), SliceModel(kInt64Max, kInt64Min, kInt64Min),
        SliceModel(kInt64Min, kInt64Max, kInt64Max), SliceModel("-1", kInt64Min, "-1")}) {
    const absl::Status status = LoadAndCompile(model);
    EXPECT_TRUE(status.ok()) << status << "\n" << model;
  }
}

constexpr int kDeep = 200000;

enum class Order { kForward, kBackward, kCycle };

// A chain of `length` unary pointwise nodes from input v0 to output
// v<length>, as graph text: listed from input to output, listed backwards
// (so the reader must sort it), or closed into a cycle (node 1 reads the
// last node's output).
std::string ChainModel(int length, Order order) {
  constexpr absl::string_view kOps[] = {"relu", "neg", "tanh", "abs"};
  std::string text = "input { name: \"v0\" type { dtype: F32 shape: [4] } }\n";
  for (int k = 1; k <= length; ++k) {
    const int i = order == Order::kBackward ? length + 1 - k : k;
    const int input = order == Order::kCycle && i == 1 ? length : i - 1;
    absl::StrAppend(&text, "node { name: \"n", i, "\" op: \"", kOps[i % 4], "\" input: \"v", input,
                    "\" output: \"v", i, "\" }\n");
  }
  absl::StrAppend(&text, "output: \"v", length, "\"\n");
  return text;
}

TEST(LimitsTest, AChainOf200000NodesLoadsAndCompilesWithoutRecursingOnDepth) {
  // Far deeper than any stack: a recursion on graph depth would overflow
  // it, and a pass that copies its input per node would run out of memory.
  const absl::Status status = LoadAndCompile(ChainModel(kDeep, Order::kForward));
  EXPECT_TRUE(status.ok()) << status;
}

TEST(LimitsTest, AChainOf200000NodesListedBackwardsLoads) {
  absl::StatusOr<proto::Graph> graph_proto =
      ParseGraphText(ChainModel(kDeep, Order::kBackward), "backwards.pbtxt");
  ASSERT_TRUE(graph_proto.ok()) << graph_proto.status();
  absl::StatusOr<Graph> graph = GraphFromProto(*graph_proto, "backwards.pbtxt");
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(graph->nodes().front().name, "n1");
  EXPECT_EQ(graph->nodes().back().name, absl::StrCat("n", kDeep));
}

TEST(LimitsTest, ACycleOf200000NodesIsRefused) {
  absl::StatusOr<proto::Graph> graph_proto =
      ParseGraphText(ChainModel(kDeep, Order::kCycle), "cycle.pbtxt");
  ASSERT_TRUE(graph_proto.ok()) << graph_proto.status();
  const absl::Status status = GraphFromProto(*graph_proto, "cycle.pbtxt").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("the graph has a cycle: 'n1' -> 'n2' -> "));
}

}  // namespace
}  // namespace loom

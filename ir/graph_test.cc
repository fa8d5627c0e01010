#include "ir/graph.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace loom {
namespace {

TEST(DTypeTest, NamesSizesAndShapes) {
  for (DType dtype : kAllDTypes) {
    EXPECT_EQ(*DTypeFromName(DTypeName(dtype)), dtype);
    EXPECT_EQ(*DTypeFromProto(DTypeToProto(dtype)), dtype);
  }
  EXPECT_FALSE(DTypeFromName("f8").ok());
  EXPECT_FALSE(DTypeFromProto(proto::DTYPE_UNSPECIFIED).ok());
  EXPECT_EQ(DTypeSize(DType::kF64), 8);
  EXPECT_EQ(DTypeSize(DType::kBool), 1);
  EXPECT_EQ(NumElements({}), 1);
  EXPECT_EQ(NumElements({2, 0, 3}), 0);
  EXPECT_EQ(ContiguousStrides({2, 3, 4}), (std::vector<int64_t>{12, 4, 1}));
  EXPECT_EQ(TypeToString(TensorType{DType::kI32, {2, 16}}), "i32[2,16]");
}

TEST(TensorTest, StoresEveryDTypeAndIsAligned) {
  for (DType dtype : kAllDTypes) {
    Tensor tensor(dtype, {3, 5});
    EXPECT_EQ(reinterpret_cast<uintptr_t>(tensor.data()) % 64, 0);
    EXPECT_EQ(tensor.num_bytes(), 15 * DTypeSize(dtype));
    // Zero-initialised bits: 0 but in f8e8m0, which has no 0 (its bits 0
    // are 2^-127).
    EXPECT_EQ(tensor.GetDouble(14), dtype == DType::kF8E8M0 ? 0x1p-127 : 0);
    tensor.SetInt(14, 1);
    EXPECT_EQ(tensor.GetInt(14), 1);
  }
  Tensor f(DType::kF32, {1});
  f.SetDouble(0, 0.1);
  EXPECT_EQ(f.GetDouble(0), static_cast<double>(0.1f));
  Tensor b(DType::kBool, {1});
  b.SetDouble(0, -3);
  EXPECT_EQ(b.GetInt(0), 1);
}

TEST(GraphTest, BuildsSsaValuesInTopologicalOrder) {
  Graph graph;
  const ValueId x = *graph.AddInput("x", TensorType{DType::kF32, {4}});
  const NodeId n = *graph.AddNode("n", "neg", {x}, {"y"});
  graph.AddOutput(graph.node(n).outputs[0]);
  EXPECT_EQ(graph.FindValue("y"), graph.node(n).outputs[0]);
  EXPECT_EQ(graph.value(graph.FindValue("y")).producer, n);
  EXPECT_EQ(graph.value(x).kind, ValueKind::kInput);
  EXPECT_EQ(graph.FindValue("nope"), -1);

  EXPECT_FALSE(graph.AddInput("x", TensorType{}).ok());
  EXPECT_FALSE(graph.AddNode("m", "neg", {x}, {"y"}).ok());
  EXPECT_FALSE(graph.AddNode("m", "neg", {99}, {"z"}).ok());
}

// A node's value ids are kept in place and read as a std::vector too.
TEST(GraphTest, NodeValueIdsConvertToVectors) {
  Graph graph;
  const ValueId x = *graph.AddInput("x", TensorType{DType::kF32, {4}});
  const ValueId y = *graph.AddInput("y", TensorType{DType::kF32, {4}});
  const NodeId n = *graph.AddNode("n", "add", {x, y}, {"z"});
  const std::vector<ValueId> inputs = graph.node(n).inputs;
  EXPECT_EQ(inputs, (std::vector<ValueId>{x, y}));
  graph.mutable_node(n).inputs = {y, x, y};
  EXPECT_EQ(graph.node(n).inputs.size(), 3);
  EXPECT_EQ(graph.node(n).inputs[2], y);
}

TEST(GraphTest, InitializersAndUniqueNames) {
  Graph graph;
  Tensor data(DType::kF32, {2});
  data.SetDouble(1, 3.5);
  const ValueId w = *graph.AddInitializer("w", ValueKind::kWeight, data);
  EXPECT_EQ(graph.initializer(w).GetDouble(1), 3.5);
  EXPECT_EQ(graph.weights(), std::vector<ValueId>{w});
  EXPECT_FALSE(graph.AddInitializer("c", ValueKind::kInput, data).ok());
  const ValueId a = graph.AddIntermediate("w");
  const ValueId b = graph.AddIntermediate("w");
  EXPECT_NE(graph.value(a).name, "w");
  EXPECT_NE(graph.value(a).name, graph.value(b).name);
}

// AddIntermediate's names ("<base>.<n>") are found, and taken, like any
// other, though the name index does not hold them.
TEST(GraphTest, NumberedNamesAreFoundAndTaken) {
  Graph graph;
  const ValueId taken = *graph.AddInput("t.1", TensorType{DType::kF32, {4}});
  const ValueId a = graph.AddIntermediate("t");
  const ValueId b = graph.AddIntermediate("t");  // skips the input's t.1
  EXPECT_EQ(graph.value(a).name, "t.0");
  EXPECT_EQ(graph.value(b).name, "t.2");
  EXPECT_EQ(graph.FindValue("t.0"), a);
  EXPECT_EQ(graph.FindValue("t.1"), taken);
  EXPECT_EQ(graph.FindValue("t.2"), b);
  EXPECT_EQ(graph.FindValue("u.2"), -1);
  EXPECT_EQ(graph.FindValue("t.02"), -1);
  EXPECT_EQ(graph.FindValue("t.3"), -1);
  EXPECT_EQ(graph.FindValue("t."), -1);
  EXPECT_FALSE(graph.AddInput("t.2", TensorType{}).ok());
  EXPECT_FALSE(graph.AddNode("n", "neg", {a}, {"t.0"}).ok());
  EXPECT_EQ(graph.UniqueValueName("t"), "t.3");

  const Graph copy = graph;
  EXPECT_EQ(copy.FindValue("t.0"), a);
  EXPECT_EQ(copy.FindValue("t.1"), taken);
  EXPECT_EQ(copy.FindValue("t.2"), b);
}

// A cache finds each distinct op once, whatever string the name was made
// from, and tells ops apart.
// A copy, or a moved graph, knows the names its index holds that look
// numbered, and still skips them.
TEST(GraphTest, CopiesAndMovesSkipTakenNumberedNames) {
  Graph graph;
  ASSERT_TRUE(graph.AddInput("t.1", TensorType{DType::kF32, {4}}).ok());
  Graph copy = graph;
  EXPECT_EQ(copy.value(copy.AddIntermediate("t")).name, "t.0");
  EXPECT_EQ(copy.value(copy.AddIntermediate("t")).name, "t.2");
  Graph moved = std::move(copy);
  ASSERT_TRUE(moved.AddInput("t.3", TensorType{DType::kF32, {4}}).ok());
  EXPECT_EQ(moved.value(moved.AddIntermediate("t")).name, "t.4");
}

TEST(GraphTest, ReplaceNodesRecomputesProducers) {
  Graph graph;
  const ValueId x = *graph.AddInput("x", TensorType{DType::kF32, {4}});
  const NodeId first = *graph.AddNode("a", "neg", {x}, {"a.y"});
  const NodeId second = *graph.AddNode("b", "relu", {x}, {"b.y"});
  NodeList nodes;
  nodes.push_back(graph.node(second));
  graph.ReplaceNodes(std::move(nodes));
  EXPECT_EQ(graph.nodes().size(), 1);
  EXPECT_EQ(graph.value(graph.FindValue("b.y")).producer, 0);
  EXPECT_EQ(graph.value(graph.FindValue("a.y")).producer, kNoNode);
  (void)first;
}

// Blocks hold NodeList::kBlockNodes nodes: lists across several of them
// index, iterate both ways, shrink and free their consumed blocks.
TEST(NodeListTest, ReadsLikeAVectorAcrossBlocks) {
  const size_t n = 2 * NodeList::kBlockNodes + 5;
  NodeList list;
  for (size_t i = 0; i < n; ++i) list.push_back(Node{absl::StrCat("n", i)});
  ASSERT_EQ(list.size(), n);
  EXPECT_EQ(list[NodeList::kBlockNodes].name, absl::StrCat("n", NodeList::kBlockNodes));
  EXPECT_EQ(list.back().name, absl::StrCat("n", n - 1));
  size_t i = 0;
  for (const Node& node : list) EXPECT_EQ(node.name, absl::StrCat("n", i++));
  EXPECT_EQ(i, n);
  EXPECT_EQ(list.rbegin()->name, absl::StrCat("n", n - 1));
  EXPECT_EQ(std::distance(list.rbegin(), list.rend()), static_cast<ptrdiff_t>(n));

  NodeList copy = list;
  copy.Truncate(NodeList::kBlockNodes + 1);
  EXPECT_EQ(copy.size(), NodeList::kBlockNodes + 1);
  EXPECT_EQ(copy.back().name, absl::StrCat("n", NodeList::kBlockNodes));
  copy.push_back(Node{"again"});
  EXPECT_EQ(copy[NodeList::kBlockNodes + 1].name, "again");
  EXPECT_EQ(list.size(), n);  // the copy is its own
  NodeList moved = std::move(copy);
  EXPECT_EQ(moved.size(), NodeList::kBlockNodes + 2);
  EXPECT_TRUE(copy.empty());  // NOLINT(bugprone-use-after-move): it is

  // Freeing the first block leaves the rest readable.
  list.ReleaseBefore(NodeList::kBlockNodes + 3);
  EXPECT_EQ(list.size(), n);
  EXPECT_EQ(list[NodeList::kBlockNodes + 3].name, absl::StrCat("n", NodeList::kBlockNodes + 3));
}

TEST(GraphTest, RemoveNodesKeepsOrderInPlace) {
  Graph graph;
  const ValueId x = *graph.AddInput("x", TensorType{DType::kF32, {4}});
  graph.AddNode("a", "neg", {x}, {"a.y"}).value();
  graph.AddNode("b", "relu", {x}, {"b.y"}).value();
  graph.AddNode("c", "abs", {x}, {"c.y"}).value();
  graph.RemoveNodes({true, false, true});
  ASSERT_EQ(graph.nodes().size(), 2);
  EXPECT_EQ(graph.node(0).name, "a");
  EXPECT_EQ(graph.node(1).name, "c");
  EXPECT_EQ(graph.value(graph.FindValue("c.y")).producer, 1);
  EXPECT_EQ(graph.value(graph.FindValue("b.y")).producer, kNoNode);
}

// The name index reads names from the graph's own values: copies and moves
// must each find their own.
TEST(GraphTest, CopiesAndMovesFindValuesByName) {
  Graph graph;
  const ValueId x = *graph.AddInput("x", TensorType{DType::kF32, {4}});
  graph.AddNode("n", "neg", {x}, {"y"}).value();

  Graph copy = graph;
  copy.AddIntermediate("t");
  EXPECT_EQ(copy.FindValue("y"), graph.FindValue("y"));
  EXPECT_EQ(copy.values().size(), graph.values().size() + 1);
  EXPECT_FALSE(copy.AddInput("x", TensorType{}).ok());

  Graph moved = std::move(copy);
  EXPECT_EQ(moved.FindValue("x"), x);
  EXPECT_GE(moved.FindValue(moved.values().back().name), 0);
  EXPECT_TRUE(moved.AddInput("z", TensorType{}).ok());
  EXPECT_EQ(moved.FindValue("z"), moved.values().size() - 1);

  // The moved-from graph is empty and usable.
  EXPECT_EQ(copy.FindValue("x"), -1);  // NOLINT(bugprone-use-after-move)
  EXPECT_TRUE(copy.AddInput("x", TensorType{}).ok());
  EXPECT_EQ(copy.FindValue("x"), 0);

  graph = moved;
  EXPECT_EQ(graph.FindValue("z"), moved.FindValue("z"));
  graph = Graph();
  EXPECT_EQ(graph.FindValue("x"), -1);
  EXPECT_EQ(moved.FindValue("x"), x);
}

TEST(GraphTest, OutputNamesTravelWithTheGraph) {
  Graph graph;
  const ValueId x = *graph.AddInput("x", TensorType{DType::kF32, {4}});
  graph.AddNode("n", "neg", {x}, {"n/neg.0"}).value();
  graph.AddOutput(graph.FindValue("n/neg.0"));
  graph.AddOutput(x);
  EXPECT_EQ(graph.output_name(0), "n/neg.0");
  graph.SetOutputName(0, "y");
  EXPECT_EQ(graph.output_name(0), "y");
  EXPECT_EQ(graph.output_name(1), "x");
  const Graph copy = graph;
  EXPECT_EQ(copy.output_name(0), "y");
  const Graph moved = std::move(graph);
  EXPECT_EQ(moved.output_name(0), "y");
}

}  // namespace
}  // namespace loom

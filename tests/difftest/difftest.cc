#include "tests/difftest/difftest.h"

#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "compiler/driver.h"
#include "ir/graph_io.h"

namespace loom {

const char* DiffKindName(DiffOutcome::Kind kind) {
  switch (kind) {
    case DiffOutcome::Kind::kPass:
      return "pass";
    case DiffOutcome::Kind::kInvalidGraph:
      return "invalid graph";
    case DiffOutcome::Kind::kCompileError:
      return "compile error";
    case DiffOutcome::Kind::kRunError:
      return "run error";
    case DiffOutcome::Kind::kMismatch:
      return "mismatch";
    case DiffOutcome::Kind::kCrash:
      return "crash";
  }
  return "?";
}

namespace {

DiffOutcome CheckGraphInProcess(const proto::Graph& graph, const std::string& cache_dir,
                                uint64_t input_seed) {
  using Kind = DiffOutcome::Kind;
  absl::StatusOr<Graph> loaded = GraphFromProto(graph, graph.name());
  if (!loaded.ok()) {
    return {Kind::kInvalidGraph, std::string(loaded.status().message())};
  }
  CompileOptions options;
  options.model = graph.name();
  options.cache_dir = cache_dir;
  options.verify_each = true;
  options.keep_input_graph = true;
  absl::StatusOr<CompiledModel> compiled = CompileGraph(*std::move(loaded), options);
  if (!compiled.ok()) {
    return {Kind::kCompileError, std::string(compiled.status().message())};
  }
  RunModelOptions run;
  run.check = true;
  run.seed = input_seed;
  if (absl::Status s = RunModel(*compiled, run); !s.ok()) {
    return {Kind::kRunError, std::string(s.message())};
  }
  if (compiled->report.check() != "pass") {
    return {Kind::kMismatch,
            absl::StrCat("max abs error ", compiled->report.max_abs_error(), ", max rel error ",
                         compiled->report.max_rel_error(),
                         " (against the float64 truth); worst: ", compiled->report.check_detail())};
  }
  return {};
}

// The child writes its outcome as one byte of kind, then the detail.
void WriteOutcome(int fd, const DiffOutcome& outcome) {
  const std::string message =
      absl::StrCat(std::string(1, static_cast<char>(outcome.kind)), outcome.detail);
  for (size_t done = 0; done < message.size();) {
    const ssize_t n = write(fd, message.data() + done, message.size() - done);
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

}  // namespace

DiffOutcome RunIsolated(const std::function<DiffOutcome()>& check) {
  using Kind = DiffOutcome::Kind;
  int fds[2];
  if (pipe(fds) != 0) return {Kind::kRunError, absl::StrCat("pipe: ", strerror(errno))};
  const pid_t pid = fork();
  if (pid < 0) return {Kind::kRunError, absl::StrCat("fork: ", strerror(errno))};
  if (pid == 0) {
    close(fds[0]);
    WriteOutcome(fds[1], check());
    _exit(0);
  }
  close(fds[1]);
  std::string message;
  char buffer[4096];
  for (ssize_t n; (n = read(fds[0], buffer, sizeof buffer)) > 0;) message.append(buffer, n);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) {
    return {Kind::kCrash, absl::StrCat("killed by signal ", WTERMSIG(status), " (",
                                       strsignal(WTERMSIG(status)), ")")};
  }
  if (message.empty() || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return {Kind::kCrash, absl::StrCat("the child exited with status ", WEXITSTATUS(status))};
  }
  return {static_cast<Kind>(message[0]), message.substr(1)};
}

DiffOutcome CheckGraph(const proto::Graph& graph, const std::string& cache_dir,
                       uint64_t input_seed) {
  return RunIsolated([&] { return CheckGraphInProcess(graph, cache_dir, input_seed); });
}

namespace {

// Drops nodes whose outputs reach no graph output, then inputs and
// initializers nothing reads.
void RemoveDeadCode(proto::Graph& graph) {
  absl::flat_hash_set<std::string> live(graph.output().begin(), graph.output().end());
  std::vector<bool> keep(graph.node_size(), false);
  for (int i = graph.node_size() - 1; i >= 0; --i) {
    for (const std::string& output : graph.node(i).output()) {
      if (live.contains(output)) keep[i] = true;
    }
    if (keep[i]) live.insert(graph.node(i).input().begin(), graph.node(i).input().end());
  }
  proto::Graph pruned = graph;
  pruned.clear_node();
  for (int i = 0; i < graph.node_size(); ++i) {
    if (keep[i]) *pruned.add_node() = graph.node(i);
  }
  pruned.clear_input();
  for (const proto::Input& input : graph.input()) {
    if (live.contains(input.name())) *pruned.add_input() = input;
  }
  pruned.clear_weight();
  for (const proto::Initializer& weight : graph.weight()) {
    if (live.contains(weight.name())) *pruned.add_weight() = weight;
  }
  pruned.clear_constant();
  for (const proto::Initializer& constant : graph.constant()) {
    if (live.contains(constant.name())) *pruned.add_constant() = constant;
  }
  graph = std::move(pruned);
}

// Replaces node `index` by graph inputs holding its outputs.
std::optional<proto::Graph> Cut(const proto::Graph& graph, int index) {
  absl::StatusOr<Graph> typed = GraphFromProto(graph, graph.name());
  if (!typed.ok()) return std::nullopt;
  proto::Graph cut = graph;
  for (const std::string& output : graph.node(index).output()) {
    proto::Input* input = cut.add_input();
    input->set_name(output);
    const TensorType& type = typed->value(typed->FindValue(output)).type;
    input->mutable_type()->set_dtype(DTypeToProto(type.dtype));
    for (int64_t d : type.shape) input->mutable_type()->add_shape(d);
  }
  cut.mutable_node()->DeleteSubrange(index, 1);
  RemoveDeadCode(cut);
  return cut;
}

// `graph` with `value` as its only output, less what that leaves dead.
proto::Graph WithOnlyOutput(const proto::Graph& graph, const std::string& value) {
  proto::Graph one = graph;
  one.clear_output();
  one.add_output(value);
  RemoveDeadCode(one);
  return one;
}

std::optional<proto::Graph> SmallerFailing(
    const proto::Graph& graph, const std::function<bool(const proto::Graph&)>& still_fails) {
  // Any single value as the only output: drops everything downstream.
  for (const proto::Node& node : graph.node()) {
    if (graph.output_size() == 1 && graph.output(0) == node.output(0)) continue;
    proto::Graph one = WithOnlyOutput(graph, node.output(0));
    if (one.node_size() < graph.node_size() && still_fails(one)) return one;
  }
  for (int i = graph.node_size() - 1; i >= 0; --i) {
    std::optional<proto::Graph> cut = Cut(graph, i);
    if (cut.has_value() && still_fails(*cut)) return cut;
  }
  return std::nullopt;
}

}  // namespace

proto::Graph Shrink(const proto::Graph& graph,
                    const std::function<bool(const proto::Graph&)>& still_fails) {
  proto::Graph smallest = graph;
  while (std::optional<proto::Graph> smaller = SmallerFailing(smallest, still_fails)) {
    smallest = *std::move(smaller);
  }
  return smallest;
}

}  // namespace loom

#ifndef LOOM_TOOLS_GRAPH_DOT_H_
#define LOOM_TOOLS_GRAPH_DOT_H_

// A picture of what loom made of a model (`loom compile --graph=PATH`): the
// fused schedule as a Graphviz graph.

#include <string>

#include "absl/status/status.h"
#include "ir/module.h"

namespace loom {

// The schedule of `module` (through code generation) in Graphviz's dot
// language: one box per kernel function, with how many kernels call it (an
// unrolled recurrence's steps share one), its loop nest, what its code does
// (threads, explicit vectors, library calls) and its compute nodes; the
// model's inputs and outputs as ellipses; one edge per buffer that one box
// writes and another reads, with its name, shape and size; one dashed edge
// per refused fusion between two boxes, labelled with the reason.
std::string ScheduleDot(const Module& module);

// Writes ScheduleDot to `path`: as it is for a .dot file, else rendered by
// Graphviz's `dot` in the format the extension names (.svg, .png, .pdf). A
// FailedPreconditionError when `dot` is missing (Debian's graphviz).
absl::Status WriteScheduleGraph(const Module& module, const std::string& path);

}  // namespace loom

#endif  // LOOM_TOOLS_GRAPH_DOT_H_

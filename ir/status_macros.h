#ifndef LOOM_IR_STATUS_MACROS_H_
#define LOOM_IR_STATUS_MACROS_H_

// Status propagation in the style of Abseil, TensorFlow and XLA.
//
//   LOOM_RETURN_IF_ERROR(WriteHeader(out));
//   LOOM_ASSIGN_OR_RETURN(Graph graph, ReadGraph(path));
//   LOOM_ASSIGN_OR_RETURN(auto plan, PlanMemory(module));
//   LOOM_ASSIGN_OR_RETURN(spec.mode, ReadMode(node));  // an existing lvalue
//
// Both return the error as it is: a status that needs context added
// (absl::StrCat(where, s.message())) is still written out by hand. The
// enclosing function returns absl::Status or any absl::StatusOr<U>.

#include <utility>

#include "absl/base/optimization.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"

// Evaluates `expr` (an absl::Status, or anything that converts to one) once
// and returns it from the enclosing function if it is not ok. One statement:
// safe as the body of an if or else without braces.
#define LOOM_RETURN_IF_ERROR(...)                                 \
  do {                                                            \
    if (::absl::Status loom_status_macros_status = (__VA_ARGS__); \
        ABSL_PREDICT_FALSE(!loom_status_macros_status.ok())) {    \
      return loom_status_macros_status;                           \
    }                                                             \
  } while (false)

// Evaluates `expr` (an absl::StatusOr<T>) once into a temporary with a
// unique name. If it is not ok, returns its status from the enclosing
// function; else moves the value into `lhs`, which is a declaration
// ("auto x", "Graph g") or an existing lvalue ("spec.mode", "*out").
//
// The expansion is several statements and declares in the enclosing scope,
// so the macro must be a statement of its own in a block: never the
// unbraced body of an if, else, for or while. A type with a comma outside
// parentheses ("std::pair<int, int> p") splits the macro's arguments: name
// it through an alias or use auto. `expr` may contain commas.
#define LOOM_ASSIGN_OR_RETURN(lhs, ...)      \
  LOOM_STATUS_MACROS_ASSIGN_OR_RETURN_IMPL_( \
      LOOM_STATUS_MACROS_CONCAT_(loom_status_macros_statusor_, __COUNTER__), lhs, __VA_ARGS__)

// Implementation details.
#define LOOM_STATUS_MACROS_CONCAT_INNER_(a, b) a##b
#define LOOM_STATUS_MACROS_CONCAT_(a, b) LOOM_STATUS_MACROS_CONCAT_INNER_(a, b)

#define LOOM_STATUS_MACROS_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, ...) \
  auto statusor = (__VA_ARGS__);                                      \
  if (ABSL_PREDICT_FALSE(!statusor.ok())) {                           \
    return std::move(statusor).status();                              \
  }                                                                   \
  lhs = std::move(statusor).value()

#endif  // LOOM_IR_STATUS_MACROS_H_

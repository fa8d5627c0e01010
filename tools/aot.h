#ifndef LOOM_TOOLS_AOT_H_
#define LOOM_TOOLS_AOT_H_

#include <string>

#include "absl/status/status.h"
#include "compiler/driver.h"

namespace loom {

// `loom compile --aot=P` (what loom_cc_library runs): the compiled model as
// C++ to build into a program, P.h and P.cc. P.h declares class
// `class_name`: Create() binds the model, Run(inputs..., outputs...) takes
// one typed pointer per input and per output in the model's order (each to
// as many elements as its k<Name>Shape holds). P.cc holds the kernels (their
// functions renamed after the class, so that several models link into one
// program) and the artifact without a shared object. Build P.cc with the
// flags of the pipeline's codegen-cpp (loom.bzl passes them).
absl::Status WriteAotLibrary(const CompiledModel& compiled, const std::string& prefix,
                             const std::string& class_name);

}  // namespace loom

#endif  // LOOM_TOOLS_AOT_H_

#ifndef LOOM_BACKENDS_CPP_SHAPE_TEMPLATES_H_
#define LOOM_BACKENDS_CPP_SHAPE_TEMPLATES_H_

// One native compile for the kernels of many shapes. codegen-cpp marks the
// integers of its source that follow from the shapes (loop extents, index
// strides and offsets, a library call's sizes: GeneratedSource::
// shape_constants), and every launch passes their values to its function.
// Two sources that are the same text but for some of those constants (the
// kernels of one model at two sequence lengths) have one skeleton: the
// second compile of a skeleton builds a template, the source with the
// constants that differed read at run time, and every later source of that
// skeleton that agrees with the template's other constants runs the
// template's library without compiling. A source is only ever run as a
// template when its own text is the template's with the constants it reads
// at run time set to this source's values: the same code.

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "backends/cpp/native_compiler.h"
#include "ir/module.h"

namespace loom::cpp {

// `source`'s text without its shape constants' digits (each is '#'): the
// same for two sources whose kernels differ only in those.
std::string Skeleton(const GeneratedSource& source);

// `source`'s text with the shape constants at `at_run_time` (indices into
// source.shape_constants, ascending) read from the values every launch
// passes after its arguments: each kernel function that reads one takes
// them as `loom_n`.
std::string TemplateText(const GeneratedSource& source, absl::Span<const int> at_run_time);

// Compiles and loads `source`'s kernels as CompileAndLoad does, through the
// shape templates of options.cache_dir (above). The result's
// `shape_template` says whether they came from a template.
absl::StatusOr<CompiledLibrary> CompileAndLoadForShapes(const GeneratedSource& source,
                                                        const NativeCompileOptions& options);

}  // namespace loom::cpp

#endif  // LOOM_BACKENDS_CPP_SHAPE_TEMPLATES_H_

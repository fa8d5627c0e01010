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

#include <cstdint>
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

// A class of shapes whose kernels are one template (a compiled model for
// every shape within bounds, compiler/dynamic_model.h): the hash of their
// sources' skeleton, the constants of the first, and those its template
// reads at run time (ascending); the template is TemplateText(first,
// at_run_time).
struct ShapeClass {
  std::string skeleton_hash;
  std::vector<int64_t> values;
  std::vector<int> at_run_time;
};

// The hash of Skeleton(source).
std::string SkeletonHash(const GeneratedSource& source);

// The class of `source` alone, whose skeleton's hash is `skeleton_hash`.
ShapeClass StartShapeClass(const GeneratedSource& source, std::string skeleton_hash);
// Adds `source`, a source of the class's skeleton, to `shape_class`: its
// template then also reads the constants in which `source` differs. False,
// and the class unchanged, where a template cannot read one of those (a
// constant outside the kernel functions).
bool JoinShapeClass(const GeneratedSource& source, ShapeClass& shape_class);
// Whether `source`, whose skeleton's hash is `skeleton_hash`, runs as the
// class's template: the same skeleton, and the same constants but for those
// the template reads at run time.
bool InShapeClass(const GeneratedSource& source, absl::string_view skeleton_hash,
                  const ShapeClass& shape_class);

// Where the cache at options.cache_dir has not met `source`'s skeleton,
// records it as the skeleton's first source with `neighbours` (the same
// model at sizes of its dims next to source's) of that skeleton joined:
// compiling `source` then builds the template reading the constants in
// which they differ. A caller that meets many shapes so compiles each
// skeleton once, where the first shape's own code and then a template were
// two compiles.
void MeetNeighbours(const GeneratedSource& source, absl::Span<const GeneratedSource> neighbours,
                    const NativeCompileOptions& options);
// Whether shape templates are on: LOOM_SHAPE_TEMPLATES=0 turns them off,
// each source then compiling its own code.
bool ShapeTemplatesOn();
// Whether the cache at options.cache_dir has met `source`'s skeleton.
bool SkeletonMet(const GeneratedSource& source, const NativeCompileOptions& options);

// Compiles and loads `source`'s kernels as CompileAndLoad does, through the
// shape templates of options.cache_dir (above). The result's
// `shape_template` says whether they came from a template.
absl::StatusOr<CompiledLibrary> CompileAndLoadForShapes(const GeneratedSource& source,
                                                        const NativeCompileOptions& options);

}  // namespace loom::cpp

#endif  // LOOM_BACKENDS_CPP_SHAPE_TEMPLATES_H_

#include "backends/cpp/shape_templates.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "backends/common/kernel_cache.h"
#include "backends/cpp/outline.h"
#include "ir/file_io.h"
#include "ir/shape_constants.h"
#include "ir/status_macros.h"
#include "runtime/content_hash.h"

namespace loom::cpp {
namespace {

// How codegen-cpp's unit starts a kernel function (UnitText in codegen.cc):
// this, its index, then kKernelParams; and a function that kernel
// functions of one skeleton share (ShareBodiesAcrossShapes, outline.h):
// `extern "C" void ` and kOutlinedName, its index, then kSharedParams and
// ") {\n".
constexpr std::string_view kKernelStart = "\nextern \"C\" void loom_f";
constexpr std::string_view kKernelParams = "(void* const* a) {\n";

// A kernel function of the text, or a function that kernel functions
// share: where its body begins and ends, and how many arguments its
// launches pass before the shape constants.
struct KernelBody {
  size_t begin = 0, end = 0;
  int arguments = -1;  // -1: no launch calls it
};

// The index that follows `start` at the beginning of `piece`, followed by
// `params`, and where the body begins; none if `piece` does not begin so.
std::optional<std::pair<int, size_t>> FunctionStart(std::string_view piece, std::string_view start,
                                                    std::string_view params) {
  if (piece.substr(0, start.size()) != start) return std::nullopt;
  size_t end_digits = start.size();
  while (end_digits < piece.size() && absl::ascii_isdigit(piece[end_digits])) ++end_digits;
  int index = 0;
  if (!absl::SimpleAtoi(absl::string_view(piece.data() + start.size(), end_digits - start.size()),
                        &index) ||
      piece.substr(end_digits, params.size()) != params) {
    return std::nullopt;
  }
  return std::make_pair(index, end_digits + params.size());
}

std::vector<KernelBody> KernelBodies(const GeneratedSource& source) {
  // Each function's count of arguments, from a launch of it.
  absl::flat_hash_map<int, int> arguments;
  const LaunchTable& launches = source.launches;
  for (size_t l = 0; l < launches.size(); ++l) {
    arguments[launches.function[l]] = launches.arg_offsets[l + 1] - launches.arg_offsets[l];
  }
  const std::string shared_start = absl::StrCat("\nextern \"C\" void ", kOutlinedName);
  const std::string shared_params = absl::StrCat("(", kSharedParams, ") {\n");
  // A shared function's callers pass it their own arguments.
  absl::flat_hash_map<int, int> shared_arguments;
  std::vector<std::pair<int, KernelBody>> shared;
  std::vector<KernelBody> bodies;
  const std::string_view text = source.text;
  for (const std::string_view piece : SplitAtFunctions(text)) {
    const size_t at = piece.data() - text.data();
    if (const auto kernel = FunctionStart(piece, kKernelStart, kKernelParams)) {
      const auto launched = arguments.find(kernel->first);
      bodies.push_back({at + kernel->second, at + piece.size(),
                        launched == arguments.end() ? -1 : launched->second});
      if (const std::optional<int> callee = SharedFunctionCalled(
              absl::string_view(piece.data() + kernel->second, piece.size() - kernel->second))) {
        shared_arguments[*callee] = bodies.back().arguments;
      }
    } else if (const auto function = FunctionStart(piece, shared_start, shared_params)) {
      shared.push_back({function->first, {at + function->second, at + piece.size(), -1}});
    }
  }
  for (auto& [function, body] : shared) {
    const auto called = shared_arguments.find(function);
    if (called != shared_arguments.end()) body.arguments = called->second;
    bodies.push_back(body);
  }
  absl::c_sort(bodies, [](const KernelBody& x, const KernelBody& y) { return x.begin < y.begin; });
  return bodies;
}

// The kernel body that holds `offset`, or null.
const KernelBody* BodyAt(const std::vector<KernelBody>& bodies, size_t offset) {
  for (const KernelBody& body : bodies) {
    if (offset >= body.begin && offset < body.end) return &body;
  }
  return nullptr;
}

std::vector<int64_t> Values(const GeneratedSource& source) {
  std::vector<int64_t> values;
  values.reserve(source.shape_constants.size());
  for (const ShapeConstant& c : source.shape_constants) values.push_back(c.value);
  return values;
}

// What the cache knows of a skeleton: the constants of the first source
// compiled with it, and those that its template reads at run time (none
// before a second source of the skeleton; `refused`: the template did not
// compile, so each source compiles on its own).
struct Record {
  std::vector<int64_t> values;
  std::vector<int> at_run_time;
  bool refused = false;
};

std::string RecordPath(const GeneratedSource& source, const NativeCompileOptions& options) {
  ContentHasher hash;
  hash.Add(Skeleton(source));
  hash.Add(options.compiler);
  for (const std::string& flag : options.flags) hash.Add(flag);
  for (const std::string& support : options.support_sources) hash.Add(support);
  return absl::StrCat(options.cache_dir, "/", hash.HexDigest(), ".shapes");
}

template <typename T>
bool ParseInts(absl::string_view line, absl::string_view name, std::vector<T>& out) {
  std::vector<absl::string_view> words = absl::StrSplit(line, ' ', absl::SkipEmpty());
  if (words.empty() || words[0] != name) return false;
  for (size_t i = 1; i < words.size(); ++i) {
    T v;
    if (!absl::SimpleAtoi(words[i], &v)) return false;
    out.push_back(v);
  }
  return true;
}

// The record at `path` for a source of `count` constants; none where there
// is none or it is damaged.
std::optional<Record> ReadRecord(const std::string& path, size_t count) {
  const absl::StatusOr<std::string> text = ReadFileBytes(path);
  if (!text.ok()) return std::nullopt;
  const std::vector<absl::string_view> lines = absl::StrSplit(*text, '\n');
  Record record;
  if (lines.size() < 2 || !ParseInts(lines[0], "values", record.values) ||
      !ParseInts(lines[1], "at_run_time", record.at_run_time) || record.values.size() != count) {
    return std::nullopt;
  }
  for (int i : record.at_run_time) {
    if (i < 0 || static_cast<size_t>(i) >= count) return std::nullopt;
  }
  record.refused = lines.size() > 2 && lines[2] == "refused";
  return record;
}

void WriteRecord(const std::string& path, const Record& record) {
  // A record that is not written only costs a later compile.
  (void)kernel_cache::WriteFileAtomically(
      path, absl::StrCat("values ", absl::StrJoin(record.values, " "), "\nat_run_time ",
                         absl::StrJoin(record.at_run_time, " "), "\n",
                         record.refused ? "refused\n" : ""));
}

// The constants a template for `source` and one for `values` reading
// `at_run_time` reads at run time: those, and those where `source` differs
// from `values`, of those in kernel functions. None where `source` differs
// from `values` where a template cannot read at run time.
std::optional<std::vector<int>> ReadAtRunTime(const GeneratedSource& source,
                                              absl::Span<const int64_t> values,
                                              absl::Span<const int> at_run_time) {
  const std::vector<KernelBody> bodies = KernelBodies(source);
  std::vector<int> read;
  for (size_t i = 0; i < source.shape_constants.size(); ++i) {
    const bool differs = source.shape_constants[i].value != values[i];
    const bool was = absl::c_binary_search(at_run_time, static_cast<int>(i));
    if (!differs && !was) continue;
    const KernelBody* body = BodyAt(bodies, source.shape_constants[i].offset);
    if (body == nullptr || body->arguments < 0) {
      if (differs) return std::nullopt;
      continue;
    }
    read.push_back(static_cast<int>(i));
  }
  return read;
}

// ReadAtRunTime for a source of the record's skeleton: empty where `source`
// differs from the record's first source only where a template cannot read.
std::vector<int> AtRunTime(const GeneratedSource& source, const Record& record) {
  return ReadAtRunTime(source, record.values, record.at_run_time).value_or(std::vector<int>());
}

}  // namespace

std::string Skeleton(const GeneratedSource& source) {
  return ShapeSkeleton(source.text, source.shape_constants);
}

std::string SkeletonHash(const GeneratedSource& source) { return ContentHash(Skeleton(source)); }

ShapeClass StartShapeClass(const GeneratedSource& source, std::string skeleton_hash) {
  return {std::move(skeleton_hash), Values(source), {}};
}

bool JoinShapeClass(const GeneratedSource& source, ShapeClass& shape_class) {
  if (source.shape_constants.size() != shape_class.values.size()) return false;
  std::optional<std::vector<int>> read =
      ReadAtRunTime(source, shape_class.values, shape_class.at_run_time);
  if (!read.has_value()) return false;
  shape_class.at_run_time = *std::move(read);
  return true;
}

bool InShapeClass(const GeneratedSource& source, absl::string_view skeleton_hash,
                  const ShapeClass& shape_class) {
  if (skeleton_hash != shape_class.skeleton_hash ||
      source.shape_constants.size() != shape_class.values.size()) {
    return false;
  }
  for (size_t i = 0; i < source.shape_constants.size(); ++i) {
    if (source.shape_constants[i].value != shape_class.values[i] &&
        !absl::c_binary_search(shape_class.at_run_time, static_cast<int>(i))) {
      return false;
    }
  }
  return true;
}

std::string TemplateText(const GeneratedSource& source, absl::Span<const int> at_run_time) {
  const std::vector<KernelBody> bodies = KernelBodies(source);
  // Each body's constants read at run time, in order.
  std::vector<std::vector<int>> read(bodies.size());
  for (int i : at_run_time) {
    read[BodyAt(bodies, source.shape_constants[i].offset) - bodies.data()].push_back(i);
  }
  const std::string& text = source.text;
  std::string out;
  out.reserve(text.size() + 32 * at_run_time.size());
  size_t from = 0;
  for (size_t b = 0; b < bodies.size(); ++b) {
    if (read[b].empty()) continue;
    // Copied into variables of the function's own: a store through a
    // float* could otherwise alias them (the kernels compile with
    // -fno-strict-aliasing), and they would be loaded again after each.
    out.append(text, from, bodies[b].begin - from);
    absl::StrAppend(&out, "  const int64_t* const loom_n = (const int64_t*)a[", bodies[b].arguments,
                    "];\n");
    for (int i : read[b]) {
      absl::StrAppend(&out, "  const int64_t loom_n", i, " = loom_n[", i, "];\n");
    }
    from = bodies[b].begin;
    for (int i : read[b]) {
      const ShapeConstant& c = source.shape_constants[i];
      out.append(text, from, c.offset - from);
      absl::StrAppend(&out, "loom_n", i);
      from = c.offset + c.length;
    }
  }
  out.append(text, from);
  return out;
}

bool ShapeTemplatesOn() { return kernel_cache::GetEnv("LOOM_SHAPE_TEMPLATES") != "0"; }

bool SkeletonMet(const GeneratedSource& source, const NativeCompileOptions& options) {
  return ReadRecord(RecordPath(source, options), source.shape_constants.size()).has_value();
}

void MeetNeighbours(const GeneratedSource& source, absl::Span<const GeneratedSource> neighbours,
                    const NativeCompileOptions& options) {
  if (!ShapeTemplatesOn() || source.shape_constants.empty() || options.cache_dir.empty() ||
      SkeletonMet(source, options)) {
    return;
  }
  const std::string hash = SkeletonHash(source);
  ShapeClass shape_class = StartShapeClass(source, hash);
  for (const GeneratedSource& neighbour : neighbours) {
    if (SkeletonHash(neighbour) == hash) JoinShapeClass(neighbour, shape_class);
  }
  if (shape_class.at_run_time.empty()) return;
  if (!kernel_cache::MakeDirs(options.cache_dir).ok()) return;
  WriteRecord(RecordPath(source, options), {shape_class.values, shape_class.at_run_time});
}

absl::StatusOr<CompiledLibrary> CompileAndLoadForShapes(const GeneratedSource& source,
                                                        const NativeCompileOptions& options) {
  if (source.shape_constants.empty() || options.cache_dir.empty()) {
    return CompileAndLoad(source.text, options);
  }
  const std::string record_path = RecordPath(source, options);
  const std::optional<Record> record = ReadRecord(record_path, source.shape_constants.size());
  if (record.has_value() && !record->refused) {
    const std::vector<int> at_run_time = AtRunTime(source, *record);
    if (!at_run_time.empty()) {
      absl::StatusOr<CompiledLibrary> shared =
          CompileAndLoad(TemplateText(source, at_run_time), options);
      if (shared.ok()) {
        if (at_run_time != record->at_run_time) {
          WriteRecord(record_path, {record->values, at_run_time});
        }
        shared->shape_template = true;
        return shared;
      }
      // A template that does not compile (a constant where C++ wants one
      // known at compile time): every source of the skeleton on its own.
      WriteRecord(record_path, {record->values, record->at_run_time, /*refused=*/true});
    }
  }
  LOOM_ASSIGN_OR_RETURN(CompiledLibrary own, CompileAndLoad(source.text, options));
  if (!record.has_value()) WriteRecord(record_path, {Values(source), {}});
  return own;
}

}  // namespace loom::cpp

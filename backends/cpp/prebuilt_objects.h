#ifndef LOOM_BACKENDS_CPP_PREBUILT_OBJECTS_H_
#define LOOM_BACKENDS_CPP_PREBUILT_OBJECTS_H_

// Support sources (NativeCompileOptions::support_sources) compiled when
// loom was built, so that a cold kernel cache need not compile them: the
// oneDNN convolution (dnnl_conv.inc) took 0.8 s of the 1.3 s a cold compile
// of ResNet-50 took. Compiled by g++ with the object command the default
// CPU pipeline gives it, -march=native made -march=<level> for each x86-64
// level; the native compile takes one where the command is that one and
// this machine is at the level (prebuild_objects.sh, BUILD).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/types/span.h"

namespace loom::cpp {

// One support source's object, compiled for an x86-64 level.
struct PrebuiltObject {
  std::string_view source;  // the text compiled
  std::string_view compiler;
  absl::Span<const std::string_view> flags;  // with -march=native
  std::string_view level;                    // what -march=native was made
  std::string_view bytes;                    // the object file

  // The command it stands for: the compiler, then the flags.
  std::vector<std::string> Command() const;
};

// Generated: those compiled when loom was built; none off x86-64.
absl::Span<const PrebuiltObject> PrebuiltObjects();

// The object `command` (a compiler, then its arguments: an object's, with
// -c) would make of `source` on a machine whose /proc/cpuinfo flags are
// `cpu_flags` (HostCpuFeatures), where one was compiled when loom was
// built: the compiler is the same, the arguments but defines (-D, which
// are the prelude's: support sources read none) are the same, and the
// machine has every feature of the object's level (the highest such level
// is chosen). Else nullopt.
std::optional<std::string_view> PrebuiltObjectFor(std::string_view source,
                                                  absl::Span<const std::string> command,
                                                  std::string_view cpu_flags);

}  // namespace loom::cpp

#endif  // LOOM_BACKENDS_CPP_PREBUILT_OBJECTS_H_

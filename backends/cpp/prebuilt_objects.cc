#include "backends/cpp/prebuilt_objects.h"

#include <vector>

#include "absl/algorithm/container.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace loom::cpp {
namespace {

// Each x86-64 level's features, as /proc/cpuinfo names them (the x86-64
// psABI; lzcnt is "abm"): v4 has v3's and AVX-512's.
constexpr std::string_view kV3Features[] = {"avx", "avx2", "bmi1",  "bmi2", "f16c",
                                            "fma", "abm",  "movbe", "xsave"};
constexpr std::string_view kV4Features[] = {"avx512f", "avx512bw", "avx512cd", "avx512dq",
                                            "avx512vl"};

bool HasLevel(std::string_view level, std::string_view cpu_flags) {
  const std::vector<absl::string_view> flags =
      absl::StrSplit(absl::string_view(cpu_flags.data(), cpu_flags.size()), ' ', absl::SkipEmpty());
  auto has_all = [&](absl::Span<const std::string_view> features) {
    return absl::c_all_of(features, [&](std::string_view feature) {
      return absl::c_linear_search(flags, absl::string_view(feature.data(), feature.size()));
    });
  };
  if (level == "x86-64-v3") return has_all(kV3Features);
  if (level == "x86-64-v4") return has_all(kV3Features) && has_all(kV4Features);
  return false;
}

bool SameArguments(absl::Span<const std::string> command,
                   absl::Span<const std::string_view> flags) {
  std::vector<std::string_view> arguments;
  for (const std::string& arg : command.subspan(1)) {
    if (!absl::StartsWith(arg, "-D")) arguments.push_back(arg);
  }
  return absl::c_equal(arguments, flags);
}

}  // namespace

std::vector<std::string> PrebuiltObject::Command() const {
  std::vector<std::string> command = {std::string(compiler)};
  command.insert(command.end(), flags.begin(), flags.end());
  return command;
}

std::optional<std::string_view> PrebuiltObjectFor(std::string_view source,
                                                  absl::Span<const std::string> command,
                                                  std::string_view cpu_flags) {
  std::optional<std::string_view> chosen;
  for (const PrebuiltObject& object : PrebuiltObjects()) {
    if (object.source == source && !command.empty() && command[0] == object.compiler &&
        SameArguments(command, object.flags) && HasLevel(object.level, cpu_flags)) {
      chosen = object.bytes;  // the table lists the levels lowest first
    }
  }
  return chosen;
}

}  // namespace loom::cpp

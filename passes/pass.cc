#include "passes/pass.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/descriptor.h"
#include "ir/status_macros.h"

namespace loom {

Pass::~Pass() = default;

const char* StageName(Stage stage) {
  switch (stage) {
    case Stage::kGraph:
      return "the graph";
    case Stage::kLoops:
      return "loop IR";
    case Stage::kScheduled:
      return "a schedule";
    case Stage::kFused:
      return "a fused schedule";
    case Stage::kPlanned:
      return "a memory plan";
    case Stage::kEmitted:
      return "emitted source";
  }
  return "an unknown stage";
}

namespace {

// The options block `spec` carries (a field of PassSpec's `options` oneof),
// or "" when it has none.
std::string OptionsFieldOf(const proto::PassSpec& spec) {
  const google::protobuf::OneofDescriptor* oneof = spec.GetDescriptor()->FindOneofByName("options");
  const google::protobuf::FieldDescriptor* field =
      spec.GetReflection()->GetOneofFieldDescriptor(spec, oneof);
  return field == nullptr ? "" : field->name();
}

// Pass names are stable kebab-case: they appear in pipeline files, flags and
// dump file names.
bool IsKebabCase(absl::string_view name) {
  if (name.empty() || !(name.front() >= 'a' && name.front() <= 'z')) {
    return false;
  }
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
  });
}

bool IsOptionsField(absl::string_view name) {
  const google::protobuf::FieldDescriptor* field =
      proto::PassSpec::descriptor()->FindFieldByName(std::string(name));
  return field != nullptr && field->containing_oneof() != nullptr &&
         field->containing_oneof()->name() == "options";
}

}  // namespace

PassRegistry& PassRegistry::Global() {
  static PassRegistry* registry = new PassRegistry();
  return *registry;
}

absl::Status PassRegistry::Register(PassRegistration registration) {
  if (!IsKebabCase(registration.name)) {
    return absl::InternalError(
        absl::StrCat("pass name '", registration.name, "' is not kebab-case"));
  }
  for (const PassRegistration& existing : registrations_) {
    if (existing.name == registration.name) {
      return absl::InternalError(absl::StrCat("pass '", registration.name, "' registered twice"));
    }
  }
  if (!registration.options_field.empty() && !IsOptionsField(registration.options_field)) {
    return absl::InternalError(
        absl::StrCat("pass '", registration.name, "' registered with options field '",
                     registration.options_field, "', which PassSpec.options does not have"));
  }
  registrations_.push_back(std::move(registration));
  return absl::OkStatus();
}

absl::StatusOr<const PassRegistration*> PassRegistry::Lookup(absl::string_view name) const {
  if (!registration_errors_.empty()) {
    return absl::InternalError(
        absl::StrCat("bad pass registrations: ", absl::StrJoin(registration_errors_, "; ")));
  }
  for (const PassRegistration& registration : registrations_) {
    if (registration.name == name) return &registration;
  }
  const std::string known = absl::StrJoin(Names(), ", ");
  if (name.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("pass has no name; known passes: ", known));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown pass '", name, "'; known passes: ", known));
}

absl::StatusOr<std::unique_ptr<Pass>> PassRegistry::Create(const proto::PassSpec& spec) const {
  LOOM_ASSIGN_OR_RETURN(const PassRegistration* registration, Lookup(spec.name()));
  const std::string given = OptionsFieldOf(spec);
  const std::string& accepted = registration->options_field;
  if (!given.empty() && given != accepted) {
    return absl::InvalidArgumentError(absl::StrCat(
        "pass '", spec.name(), "' does not take '", given, "' options",
        accepted.empty() ? " (it takes none)" : absl::StrCat(" (it takes '", accepted, "')")));
  }
  absl::StatusOr<std::unique_ptr<Pass>> pass = registration->factory(spec);
  if (!pass.ok()) return pass.status();
  if (*pass == nullptr) {
    return absl::InternalError(
        absl::StrCat("the factory of pass '", spec.name(), "' returned null"));
  }
  (*pass)->name_ = spec.name();
  return pass;
}

std::vector<std::string> PassRegistry::Names() const {
  std::vector<std::string> names;
  names.reserve(registrations_.size());
  for (const PassRegistration& registration : registrations_) {
    names.push_back(registration.name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

PassRegistrar::PassRegistrar(std::string name, std::string options_field, PassFactory factory) {
  PassRegistry& registry = PassRegistry::Global();
  absl::Status status = registry.Register(
      PassRegistration{std::move(name), std::move(options_field), std::move(factory)});
  if (!status.ok()) {
    registry.registration_errors_.push_back(std::string(status.message()));
  }
}

}  // namespace loom

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

// An options block's name: a lowercase proto field name other than the
// entry's own `name`.
bool IsOptionsField(absl::string_view field) {
  if (field.empty() || field == "name" || !(field.front() >= 'a' && field.front() <= 'z')) {
    return false;
  }
  return std::all_of(field.begin(), field.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
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
  const bool takes_options = !registration.options_field.empty();
  if (takes_options != (registration.options_type != nullptr) ||
      (takes_options && !IsOptionsField(registration.options_field))) {
    return absl::InternalError(absl::StrCat("pass '", registration.name,
                                            "' registered with a bad options field '",
                                            registration.options_field, "'"));
  }
  for (const PassRegistration& existing : registrations_) {
    if (takes_options && existing.options_field == registration.options_field &&
        existing.options_type != registration.options_type) {
      return absl::InternalError(absl::StrCat(
          "pass '", registration.name, "' registered with options '", registration.options_field,
          "' of type ", registration.options_type->full_name(), ", which pass '", existing.name,
          "' takes as ", existing.options_type->full_name()));
    }
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

absl::StatusOr<std::unique_ptr<Pass>> PassRegistry::Create(const PassSpec& spec) const {
  LOOM_ASSIGN_OR_RETURN(const PassRegistration* registration, Lookup(spec.name));
  const std::string& given = spec.options_field;
  const std::string& accepted = registration->options_field;
  if (!given.empty() && given != accepted) {
    return absl::InvalidArgumentError(absl::StrCat(
        "pass '", spec.name, "' does not take '", given, "' options",
        accepted.empty() ? " (it takes none)" : absl::StrCat(" (it takes '", accepted, "')")));
  }
  const google::protobuf::Message* options = nullptr;
  if (registration->options_type != nullptr) {
    const google::protobuf::Message* defaults =
        google::protobuf::MessageFactory::generated_factory()->GetPrototype(
            registration->options_type);
    options = spec.options != nullptr ? spec.options : defaults;
    // The factory reads its options as the generated class, which shares
    // the defaults' reflection (a dynamic message of the type does not).
    if (options->GetReflection() != defaults->GetReflection()) {
      return absl::InternalError(absl::StrCat("pass '", spec.name, "' given options of type ",
                                              options->GetDescriptor()->full_name(), ", not ",
                                              registration->options_type->full_name()));
    }
  }
  absl::StatusOr<std::unique_ptr<Pass>> pass = registration->factory(options);
  if (!pass.ok()) return pass.status();
  if (*pass == nullptr) {
    return absl::InternalError(absl::StrCat("the factory of pass '", spec.name, "' returned null"));
  }
  (*pass)->name_ = spec.name;
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

std::vector<std::pair<std::string, const google::protobuf::Descriptor*>>
PassRegistry::OptionsFields() const {
  std::vector<std::pair<std::string, const google::protobuf::Descriptor*>> fields;
  for (const PassRegistration& registration : registrations_) {
    if (registration.options_type != nullptr) {
      fields.emplace_back(registration.options_field, registration.options_type);
    }
  }
  std::sort(fields.begin(), fields.end());
  fields.erase(std::unique(fields.begin(), fields.end()), fields.end());
  return fields;
}

PassRegistration PassWithoutOptions(std::string name,
                                    std::function<absl::StatusOr<std::unique_ptr<Pass>>()> make) {
  PassFactory factory = [make = std::move(make)](const google::protobuf::Message*) {
    return make();
  };
  return {std::move(name), "", nullptr, std::move(factory)};
}

PassRegistrar::PassRegistrar(PassRegistration registration) {
  PassRegistry& registry = PassRegistry::Global();
  absl::Status status = registry.Register(std::move(registration));
  if (!status.ok()) {
    registry.registration_errors_.push_back(std::string(status.message()));
  }
}

}  // namespace loom

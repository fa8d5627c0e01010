#include "passes/pass_manager.h"

#include <sys/resource.h>

#include <chrono>
#include <utility>

#include "absl/algorithm/container.h"
#include "absl/memory/memory.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/descriptor.pb.h"
#include "google/protobuf/dynamic_message.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/text_format.h"
#include "ir/file_io.h"
#include "ir/graph_io.h"
#include "ir/loop_ir.h"
#include "ir/schedule.h"
#include "ir/status_macros.h"
#include "ir/verifier.h"
#include "pipelines/builtin_pipelines.h"
#include "re2/re2.h"

namespace loom {
namespace {

using google::protobuf::TextFormat;

namespace pbio = google::protobuf::io;

// Tokenizer errors while re-reading text the parser has already reported on.
class IgnoreErrors : public pbio::ErrorCollector {
 public:
  void AddError(int, pbio::ColumnNumber, const std::string&) override {}
};

// TextFormat reports these errors at the token after the field name or enum
// value they are about, which may be on the next line.
bool ReportedAfterTheCulprit(absl::string_view message) {
  for (absl::string_view fragment : {"has no field named", "Unknown enumeration value",
                                     "is specified multiple times", "another member of oneof"}) {
    if (absl::StrContains(message, fragment)) return true;
  }
  return false;
}

// The 0-based position of the last token of `text` that starts before
// `position`, or `position` when none does.
std::pair<int, int> PreviousToken(const std::string& text, std::pair<int, int> position) {
  pbio::ArrayInputStream input(text.data(), static_cast<int>(text.size()));
  IgnoreErrors ignore;
  pbio::Tokenizer tokenizer(&input, &ignore);
  tokenizer.set_comment_style(pbio::Tokenizer::SH_COMMENT_STYLE);
  std::pair<int, int> previous = position;
  while (tokenizer.Next()) {
    const std::pair<int, int> start(tokenizer.current().line, tokenizer.current().column);
    if (start >= position) break;
    previous = start;
  }
  return previous;
}

// Keeps the first parse error of `text` as "FILE:LINE:COL: message"
// (1-based), placed at the token the message is about.
class FirstErrorCollector : public pbio::ErrorCollector {
 public:
  FirstErrorCollector(const std::string& text, absl::string_view filename)
      : text_(text), filename_(filename) {}

  void AddError(int line, pbio::ColumnNumber column, const std::string& message) override {
    if (!first_error_.empty()) return;
    if (line < 0) {
      first_error_ = absl::StrCat(filename_, ": ", message);
      return;
    }
    std::pair<int, int> position(line, column);
    if (ReportedAfterTheCulprit(message)) {
      position = PreviousToken(text_, position);
    }
    first_error_ = absl::StrFormat("%s:%d:%d: %s", filename_, position.first + 1,
                                   position.second + 1, message);
  }

  const std::string& first_error() const { return first_error_; }

 private:
  const std::string& text_;
  std::string filename_;
  std::string first_error_;
};

// "FILE:LINE: " for the index-th `pass` entry (`pass_field`).
std::string PassPlace(absl::string_view filename, const TextFormat::ParseInfoTree& locations,
                      const google::protobuf::FieldDescriptor* pass_field, int index) {
  const int line = locations.GetLocation(pass_field, index).line;
  return line < 0 ? absl::StrCat(filename, ": ") : absl::StrCat(filename, ":", line + 1, ": ");
}

// The schema of pipeline text, made from the pass registry, so that each
// pass owns its options message and ir/ names none of them:
//
//   message Pipeline { Target target = 1; repeated PassSpec pass = 2; }
//   message PassSpec {
//     string name = 1;
//     oneof options { FuseOptions fuse = 10; CppOptions cpp = 11; ... }
//   }
//
// in package loom.proto, over the generated pool (Target and the options
// messages are the compiled ones, so parsed blocks are their C++ classes).
class PipelineSchema {
 public:
  static absl::StatusOr<std::unique_ptr<PipelineSchema>> Build(const PassRegistry& registry) {
    auto schema = absl::WrapUnique(new PipelineSchema());
    google::protobuf::FileDescriptorProto file;
    file.set_name("loom/pipeline_text.proto");
    file.set_package("loom.proto");
    file.set_syntax("proto3");
    file.add_dependency(proto::Target_descriptor()->file()->name());
    google::protobuf::DescriptorProto* spec = file.add_message_type();
    spec->set_name("PassSpec");
    AddField(*spec, "name", 1, google::protobuf::FieldDescriptorProto::TYPE_STRING, "");
    spec->add_oneof_decl()->set_name("options");
    int number = 10;
    for (const auto& [field, type] : registry.OptionsFields()) {
      if (absl::c_find(file.dependency(), type->file()->name()) == file.dependency().end()) {
        file.add_dependency(type->file()->name());
      }
      AddField(*spec, field, number++, google::protobuf::FieldDescriptorProto::TYPE_MESSAGE,
               absl::StrCat(".", type->full_name()))
          ->set_oneof_index(0);
    }
    google::protobuf::DescriptorProto* pipeline = file.add_message_type();
    pipeline->set_name("Pipeline");
    AddField(*pipeline, "target", 1, google::protobuf::FieldDescriptorProto::TYPE_ENUM,
             absl::StrCat(".", proto::Target_descriptor()->full_name()));
    AddField(*pipeline, "pass", 2, google::protobuf::FieldDescriptorProto::TYPE_MESSAGE,
             ".loom.proto.PassSpec")
        ->set_label(google::protobuf::FieldDescriptorProto::LABEL_REPEATED);
    if (schema->pool_.BuildFile(file) == nullptr) {
      return absl::InternalError("the pass registry's options make no valid pipeline schema");
    }
    schema->pipeline_ = schema->pool_.FindMessageTypeByName("loom.proto.Pipeline");
    schema->factory_.SetDelegateToGeneratedFactory(true);
    return schema;
  }

  std::unique_ptr<google::protobuf::Message> NewPipeline() {
    return absl::WrapUnique(factory_.GetPrototype(pipeline_)->New());
  }
  const google::protobuf::Descriptor* pipeline() const { return pipeline_; }

 private:
  PipelineSchema() : pool_(google::protobuf::DescriptorPool::generated_pool()), factory_(&pool_) {}

  static google::protobuf::FieldDescriptorProto* AddField(
      google::protobuf::DescriptorProto& message, const std::string& name, int number,
      google::protobuf::FieldDescriptorProto::Type type, const std::string& type_name) {
    google::protobuf::FieldDescriptorProto* field = message.add_field();
    field->set_name(name);
    field->set_number(number);
    field->set_label(google::protobuf::FieldDescriptorProto::LABEL_OPTIONAL);
    field->set_type(type);
    if (!type_name.empty()) field->set_type_name(type_name);
    return field;
  }

  google::protobuf::DescriptorPool pool_;
  google::protobuf::DynamicMessageFactory factory_;
  const google::protobuf::Descriptor* pipeline_ = nullptr;
};

// For an error about a pass entry's unknown field (a misspelt options
// block, or one of a pass this binary lacks): the blocks it knows.
std::string KnownOptionsBlocks(absl::string_view error) {
  if (!absl::StrContains(error, "\"loom.proto.PassSpec\" has no field named")) return "";
  std::vector<std::string> fields;
  for (const auto& [field, type] : PassRegistry::Global().OptionsFields()) fields.push_back(field);
  return absl::StrCat(" A pass entry holds its name and at most one options block: ",
                      fields.empty() ? "none is known" : absl::StrJoin(fields, ", "), ".");
}

// The index-th pass entry of a parsed pipeline.
PassSpec EntryOf(const google::protobuf::Message& pipeline, int index) {
  const google::protobuf::Descriptor* type = pipeline.GetDescriptor();
  const google::protobuf::Message& entry =
      pipeline.GetReflection()->GetRepeatedMessage(pipeline, type->FindFieldByName("pass"), index);
  const google::protobuf::Reflection* reflection = entry.GetReflection();
  const google::protobuf::Descriptor* entry_type = entry.GetDescriptor();
  PassSpec spec;
  spec.name = reflection->GetString(entry, entry_type->FindFieldByName("name"));
  const google::protobuf::FieldDescriptor* options =
      reflection->GetOneofFieldDescriptor(entry, entry_type->FindOneofByName("options"));
  if (options != nullptr) {
    spec.options_field = options->name();
    spec.options = &reflection->GetMessage(entry, options);
  }
  return spec;
}

// Merges each override's options block into every entry of its pass in the
// parsed `pipeline`.
absl::Status ApplyOverrides(const std::vector<PassOptionsOverride>& overrides,
                            const google::protobuf::FieldDescriptor* pass_field,
                            google::protobuf::Message& pipeline) {
  const google::protobuf::Reflection* reflection = pipeline.GetReflection();
  const int passes = reflection->FieldSize(pipeline, pass_field);
  for (const PassOptionsOverride& given : overrides) {
    const std::string place = absl::StrCat("override of pass '", given.pass, "'");
    int found = 0;
    for (int i = 0; i < passes; ++i) {
      if (EntryOf(pipeline, i).name != given.pass) continue;
      ++found;
      FirstErrorCollector errors(given.options, place);
      TextFormat::Parser parser;
      parser.RecordErrorsTo(&errors);
      if (!parser.MergeFromString(given.options,
                                  reflection->MutableRepeatedMessage(&pipeline, pass_field, i))) {
        return absl::InvalidArgumentError(errors.first_error().empty()
                                              ? absl::StrCat(place, ": malformed options")
                                              : errors.first_error());
      }
    }
    if (found == 0) {
      return absl::InvalidArgumentError(absl::StrCat(place, ": the pipeline has no such pass"));
    }
  }
  return absl::OkStatus();
}

// The stage a pipeline's module is at, pass after pass, as the passes'
// StageRules say.
class StageTracker {
 public:
  // Whether `pass` may come next in a pipeline for `target`; if so, moves
  // on to the stage it leaves. `place` ("FILE:LINE: ") is the pass's.
  absl::Status Admit(const Pass& pass, proto::Target target, absl::string_view place) {
    const StageRule rule = pass.stages();
    if ((rule.runs_on & StageRule::Bit(stage_)) == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("pass '", pass.name(), "' runs on ", StagesText(rule.runs_on),
                       ", but here the module holds ", StageName(stage_), " (", origin_, ")"));
    }
    if (rule.target != proto::TARGET_UNSPECIFIED && rule.target != target) {
      return absl::InvalidArgumentError(
          absl::StrCat("pass '", pass.name(), "' is for target ", proto::Target_Name(rule.target),
                       ", but the pipeline's target is ", proto::Target_Name(target)));
    }
    if (rule.leaves.has_value() && *rule.leaves != stage_) {
      stage_ = *rule.leaves;
      origin_ = absl::StrCat("after '", pass.name(), "' at ", absl::StripSuffix(place, ": "));
    }
    return absl::OkStatus();
  }

 private:
  static std::string StagesText(uint32_t stages) {
    std::vector<std::string> names;
    for (int s = 0; s < kNumStages; ++s) {
      if (stages & (1u << s)) names.push_back(StageName(static_cast<Stage>(s)));
    }
    return absl::StrJoin(names, " or ");
  }

  Stage stage_ = Stage::kGraph;
  std::string origin_ = "where the pipeline starts";
};

// The module's schedule as text (it names the loop program's nodes).
absl::StatusOr<std::string> ScheduleText(const Module& module) {
  if (!module.loops.has_value()) {
    return absl::InternalError("the module has a schedule but no loops");
  }
  return PrintSchedule(*module.schedule, *module.loops);
}

// The most advanced stage of the module, as text.
absl::StatusOr<std::string> DumpText(const Module& module) {
  if (module.source.has_value()) return SourceWithPlans(*module.source);
  if (module.schedule.has_value()) return ScheduleText(module);
  if (module.loops.has_value()) return PrintLoopProgram(*module.loops);
  return GraphToText(module.graph);
}

absl::Status WriteDump(const Module& module, const std::string& dump_dir, int position,
                       const std::string& pass_name) {
  LOOM_ASSIGN_OR_RETURN(std::string text, DumpText(module));
  LOOM_RETURN_IF_ERROR(CreateDirectories(dump_dir));
  return WriteFileBytes(absl::StrFormat("%s/%02d-%s.txt", dump_dir, position, pass_name), text);
}

// Every stage of the module as text, for ChangedFlagCheck.
absl::StatusOr<std::string> EveryStageText(const Module& module) {
  std::string text = GraphToText(module.graph);
  if (module.loops.has_value()) absl::StrAppend(&text, PrintLoopProgram(*module.loops));
  if (module.schedule.has_value()) {
    LOOM_ASSIGN_OR_RETURN(std::string schedule, ScheduleText(module));
    absl::StrAppend(&text, schedule);
  }
  if (module.source.has_value()) absl::StrAppend(&text, module.source->text);
  return text;
}

// RunOptions::before_pass.
class ProgressCall : public PassInstrumentation {
 public:
  explicit ProgressCall(const std::function<void(absl::string_view)>& call) : call_(call) {}
  absl::Status BeforePass(absl::string_view pass, int, const Module&) override {
    call_(pass);
    return absl::OkStatus();
  }

 private:
  const std::function<void(absl::string_view)>& call_;
};

// RunOptions::verify_each: a pass that changed nothing leaves the module as
// verified after the pass before it.
class Verification : public PassInstrumentation {
 public:
  absl::Status AfterPass(const PassRun& run, int, const Module& module) override {
    if (!run.changed) return absl::OkStatus();
    absl::Status verified = VerifyModule(module);
    if (!verified.ok()) {
      return absl::InternalError(
          absl::StrCat("verification failed after pass '", run.name, "': ", verified.message()));
    }
    return absl::OkStatus();
  }
};

// RunOptions::dump_after and dump_dir.
class Dumps : public PassInstrumentation {
 public:
  // Null when `dump_after` is empty.
  static absl::StatusOr<std::unique_ptr<Dumps>> Create(const std::string& dump_after,
                                                       const std::string& dump_dir) {
    if (dump_after.empty()) return nullptr;
    auto pattern = std::make_unique<RE2>(dump_after, RE2::Quiet);
    if (!pattern->ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("bad dump_after pattern '", dump_after, "': ", pattern->error()));
    }
    if (dump_dir.empty()) {
      return absl::InvalidArgumentError("dump_after is set but dump_dir is not");
    }
    return std::unique_ptr<Dumps>(new Dumps(std::move(pattern), dump_dir));
  }

  absl::Status AfterPass(const PassRun& run, int position, const Module& module) override {
    if (!RE2::FullMatch(run.name, *pattern_)) return absl::OkStatus();
    return WriteDump(module, dump_dir_, position, run.name);
  }

 private:
  Dumps(std::unique_ptr<RE2> pattern, std::string dump_dir)
      : pattern_(std::move(pattern)), dump_dir_(std::move(dump_dir)) {}

  std::unique_ptr<RE2> pattern_;
  std::string dump_dir_;
};

}  // namespace

absl::StatusOr<LoadedPipeline> LoadPipelineText(absl::string_view text, absl::string_view filename,
                                                const std::vector<PassOptionsOverride>& overrides) {
  LoadedPipeline pipeline;
  pipeline.name = std::string(filename);
  pipeline.text = std::string(text);

  LOOM_ASSIGN_OR_RETURN(std::unique_ptr<PipelineSchema> schema,
                        PipelineSchema::Build(PassRegistry::Global()));
  std::unique_ptr<google::protobuf::Message> parsed = schema->NewPipeline();
  const std::string source(text);
  FirstErrorCollector errors(source, filename);
  TextFormat::ParseInfoTree locations;
  TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  parser.WriteLocationsTo(&locations);
  if (!parser.ParseFromString(source, parsed.get())) {
    if (errors.first_error().empty()) {
      return absl::InvalidArgumentError(absl::StrCat(filename, ": malformed pipeline"));
    }
    return absl::InvalidArgumentError(
        absl::StrCat(errors.first_error(), KnownOptionsBlocks(errors.first_error())));
  }

  const google::protobuf::FieldDescriptor* pass_field = schema->pipeline()->FindFieldByName("pass");
  const int passes = parsed->GetReflection()->FieldSize(*parsed, pass_field);
  if (passes == 0) {
    return absl::InvalidArgumentError(absl::StrCat(filename, ": empty pipeline"));
  }
  LOOM_RETURN_IF_ERROR(ApplyOverrides(overrides, pass_field, *parsed));
  pipeline.target = static_cast<proto::Target>(parsed->GetReflection()->GetEnumValue(
      *parsed, schema->pipeline()->FindFieldByName("target")));
  if (pipeline.target == proto::TARGET_UNSPECIFIED) {
    // A missing field has no line of its own; line 1 is where it belongs.
    return absl::InvalidArgumentError(
        absl::StrCat(filename, ":1: the pipeline has no target (e.g. 'target: CPU')"));
  }
  StageTracker stages;
  for (int i = 0; i < passes; ++i) {
    const PassSpec spec = EntryOf(*parsed, i);
    const std::string place = PassPlace(filename, locations, pass_field, i);
    absl::StatusOr<std::unique_ptr<Pass>> pass = PassRegistry::Global().Create(spec);
    absl::Status status = pass.status();
    if (status.ok()) status = stages.Admit(**pass, pipeline.target, place);
    if (!status.ok()) {
      return absl::Status(status.code(), absl::StrCat(place, status.message()));
    }
    LoadedPipeline::Entry& entry = pipeline.passes.emplace_back();
    entry.name = spec.name;
    entry.pass = *std::move(pass);
    if (spec.options != nullptr) {
      // A message of the generated class (the schema's factory delegates
      // to it), so the copy outlives the schema.
      entry.options.reset(spec.options->New());
      entry.options->CopyFrom(*spec.options);
    }
  }
  return pipeline;
}

absl::StatusOr<LoadedPipeline> LoadPipelineFile(const std::string& path,
                                                const std::vector<PassOptionsOverride>& overrides) {
  absl::StatusOr<std::string> text = ReadFileBytes(path);
  if (!text.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("pipeline file ", text.status().message()));
  }
  return LoadPipelineText(*text, path, overrides);
}

absl::StatusOr<LoadedPipeline> LoadPipeline(const std::string& name_or_path,
                                            const std::vector<PassOptionsOverride>& overrides) {
  if (absl::StrContains(name_or_path, '/') || absl::EndsWith(name_or_path, ".pbtxt")) {
    return LoadPipelineFile(name_or_path, overrides);
  }
  std::optional<absl::string_view> text = BuiltinPipelineText(name_or_path);
  if (!text.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown pipeline '", name_or_path,
                     "'; built-in pipelines: ", absl::StrJoin(BuiltinPipelineNames(), ", "),
                     " (a file path needs a '/' or the .pbtxt extension)"));
  }
  absl::StatusOr<LoadedPipeline> pipeline =
      LoadPipelineText(*text, absl::StrCat("pipelines/", name_or_path, ".pbtxt"), overrides);
  if (pipeline.ok()) pipeline->name = name_or_path;
  return pipeline;
}

// getrusage: a cheap call, where reading the current size from /proc would
// cost more than a small pass.
int64_t PeakResidentBytes() {
  rusage usage;
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  return int64_t{usage.ru_maxrss} * 1024;  // Linux reports KiB
}

absl::Status ChangedFlagCheck::BeforePass(absl::string_view, int, const Module& module) {
  LOOM_ASSIGN_OR_RETURN(before_, EveryStageText(module));
  return absl::OkStatus();
}

absl::Status ChangedFlagCheck::AfterPass(const PassRun& run, int, const Module& module) {
  if (run.changed) return absl::OkStatus();
  LOOM_ASSIGN_OR_RETURN(std::string after, EveryStageText(module));
  if (after != before_) {
    return absl::InternalError(
        absl::StrCat("pass '", run.name, "' changed the module but reported no change"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<PassRun>> RunPipeline(LoadedPipeline& pipeline, Module& module,
                                                 const RunOptions& options) {
  ProgressCall progress(options.before_pass);
  Verification verification;
  LOOM_ASSIGN_OR_RETURN(std::unique_ptr<Dumps> dumps,
                        Dumps::Create(options.dump_after, options.dump_dir));
  std::vector<PassInstrumentation*> instrumentations;
  if (options.before_pass) instrumentations.push_back(&progress);
  if (options.verify_each) instrumentations.push_back(&verification);
  if (dumps != nullptr) instrumentations.push_back(dumps.get());
  instrumentations.insert(instrumentations.end(), options.instrumentations.begin(),
                          options.instrumentations.end());

  std::vector<PassRun> runs;
  for (size_t i = 0; i < pipeline.passes.size(); ++i) {
    LoadedPipeline::Entry& entry = pipeline.passes[i];
    const int position = static_cast<int>(i) + 1;
    for (PassInstrumentation* instrumentation : instrumentations) {
      LOOM_RETURN_IF_ERROR(instrumentation->BeforePass(entry.name, position, module));
    }
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<bool> changed = entry.pass->Run(module);
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    if (!changed.ok()) {
      return absl::Status(
          changed.status().code(),
          absl::StrCat("pass '", entry.name, "' failed: ", changed.status().message()));
    }
    runs.push_back({entry.name, elapsed.count(), *changed, PeakResidentBytes()});
    for (PassInstrumentation* instrumentation : instrumentations) {
      LOOM_RETURN_IF_ERROR(instrumentation->AfterPass(runs.back(), position, module));
    }
  }
  return runs;
}

}  // namespace loom

#include "passes/pass_manager.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/graph.h"
#include "ir/graph_io.h"
#include "ir/loop_ir.h"
#include "ir/schedule.h"
#include "passes/pass_manager_test.pb.h"

namespace loom {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// Fake passes, so that these tests depend on no real pass.
class LambdaPass : public Pass {
 public:
  using Fn = std::function<absl::StatusOr<bool>(Module&)>;
  explicit LambdaPass(Fn fn) : fn_(std::move(fn)) {}
  absl::StatusOr<bool> Run(Module& module) override { return fn_(module); }

 private:
  Fn fn_;
};

std::function<absl::StatusOr<std::unique_ptr<Pass>>()> Factory(LambdaPass::Fn fn) {
  return
      [fn]() -> absl::StatusOr<std::unique_ptr<Pass>> { return std::make_unique<LambdaPass>(fn); };
}

// A pass that keeps the options it was made with.
class FakeFusePass : public Pass {
 public:
  explicit FakeFusePass(const test::FakeFuseOptions& options) : options(options) {}
  absl::StatusOr<bool> Run(Module&) override { return false; }
  test::FakeFuseOptions options;
};

LOOM_REGISTER_PASS("fake-noop", Factory([](Module&) { return false; }));
LOOM_REGISTER_PASS("fake-rename", Factory([](Module& module) {
                     module.graph.name = "renamed";
                     return true;
                   }));
LOOM_REGISTER_PASS("fake-sleep", Factory([](Module&) {
                     std::this_thread::sleep_for(std::chrono::milliseconds(20));
                     return false;
                   }));
// Adds a node with an op nobody knows, which the verifier rejects.
LOOM_REGISTER_PASS("fake-break", Factory([](Module& module) {
                     const ValueId x = module.graph.inputs()[0];
                     if (!module.graph.AddNode("broken", "no_such_op", {x}, {"broken_out"}).ok()) {
                       return absl::StatusOr<bool>(absl::InternalError("?"));
                     }
                     return absl::StatusOr<bool>(true);
                   }));
// Renames the graph but says it changed nothing.
LOOM_REGISTER_PASS("fake-silent-rename", Factory([](Module& module) {
                     module.graph.name = "renamed";
                     return false;
                   }));
LOOM_REGISTER_PASS("fake-fail", Factory([](Module&) {
                     return absl::StatusOr<bool>(absl::InvalidArgumentError("boom"));
                   }));
LOOM_REGISTER_PASS("fake-lower", Factory([](Module& module) {
                     module.loops.emplace();
                     return true;
                   }));
LOOM_REGISTER_PASS("fake-schedule", Factory([](Module& module) {
                     module.schedule.emplace();
                     module.schedule->kernels.push_back({"k0", {}});
                     return true;
                   }));
LOOM_REGISTER_PASS("fake-codegen", Factory([](Module& module) {
                     module.source = GeneratedSource{"c++", "void run() {}\n", {"run"}, {}, 1};
                     return true;
                   }));
LOOM_REGISTER_PASS_WITH_OPTIONS("fake-fuse", "fuse", test::FakeFuseOptions,
                                [](const test::FakeFuseOptions& options) {
                                  return absl::StatusOr<std::unique_ptr<Pass>>(
                                      std::make_unique<FakeFusePass>(options));
                                });
LOOM_REGISTER_PASS_WITH_OPTIONS("fake-cpp", "cpp", test::FakeCppOptions,
                                [](const test::FakeCppOptions&) {
                                  return absl::StatusOr<std::unique_ptr<Pass>>(
                                      std::make_unique<LambdaPass>([](Module&) { return false; }));
                                });
// Rejects every op but "softmax", like a pass validating its options.
LOOM_REGISTER_PASS_WITH_OPTIONS(
    "fake-picky", "picky", test::FakePickyOptions,
    [](const test::FakePickyOptions& options) -> absl::StatusOr<std::unique_ptr<Pass>> {
      for (const std::string& op : options.ops()) {
        if (op != "softmax") {
          return absl::InvalidArgumentError(absl::StrCat("fake-picky cannot take '", op, "'"));
        }
      }
      return std::make_unique<LambdaPass>([](Module&) { return false; });
    });

// A pass with a stage rule and nothing to do.
class StagedPass : public Pass {
 public:
  explicit StagedPass(StageRule rule) : rule_(rule) {}
  absl::StatusOr<bool> Run(Module&) override { return false; }
  StageRule stages() const override { return rule_; }

 private:
  StageRule rule_;
};

std::function<absl::StatusOr<std::unique_ptr<Pass>>()> Staged(StageRule rule) {
  return [rule]() -> absl::StatusOr<std::unique_ptr<Pass>> {
    return std::make_unique<StagedPass>(rule);
  };
}

LOOM_REGISTER_PASS("staged-lower", Staged(StageRule::From(Stage::kGraph, Stage::kLoops)));
LOOM_REGISTER_PASS("staged-emit", [] {
  StageRule rule = StageRule::From(Stage::kLoops, Stage::kEmitted);
  rule.target = proto::CUDA;
  return absl::StatusOr<std::unique_ptr<Pass>>(std::make_unique<StagedPass>(rule));
});

std::string ErrorOf(absl::string_view text) {
  return std::string(LoadPipelineText(text, "p.pbtxt").status().message());
}

std::string Pipeline(const std::vector<std::string>& passes) {
  std::string text = "target: CPU\n";
  for (const std::string& pass : passes) {
    absl::StrAppend(&text, "pass { name: \"", pass, "\" }\n");
  }
  return text;
}

absl::StatusOr<LoadedPipeline> Load(const std::vector<std::string>& passes) {
  return LoadPipelineText(Pipeline(passes), "p.pbtxt");
}

// A valid graph with no nodes: y = x.
Module TinyModule() {
  Module module;
  module.graph.name = "tiny";
  const ValueId x = module.graph.AddInput("x", TensorType{DType::kF32, {2, 3}}).value();
  module.graph.AddOutput(x);
  return module;
}

std::string ReadFile(const std::string& path) {
  std::ifstream file(path);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

std::vector<std::string> FilesIn(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string FreshDir(const std::string& name) {
  const std::string dir = testing::TempDir() + "/" + name;
  std::filesystem::remove_all(dir);
  return dir;
}

TEST(LoadPipelineTest, LoadsPassesInOrder) {
  absl::StatusOr<LoadedPipeline> pipeline = LoadPipelineText(
      "# comment\ntarget: CUDA\npass { name: \"fake-noop\" }\n"
      "pass { name: \"fake-fuse\" fuse { outer_loop: true } }\n",
      "p.pbtxt");
  ASSERT_TRUE(pipeline.ok()) << pipeline.status();
  EXPECT_EQ(pipeline->name, "p.pbtxt");
  EXPECT_EQ(pipeline->target, proto::CUDA);
  ASSERT_EQ(pipeline->passes.size(), 2);
  EXPECT_EQ(pipeline->passes[0].name, "fake-noop");
  EXPECT_EQ(pipeline->passes[1].name, "fake-fuse");
  EXPECT_TRUE(static_cast<FakeFusePass&>(*pipeline->passes[1].pass).options.outer_loop());
  EXPECT_EQ(static_cast<FakeFusePass&>(*pipeline->passes[1].pass).options.max_nodes_per_kernel(),
            0);
}

TEST(LoadPipelineTest, UnknownPassNamesItsLine) {
  const std::string error =
      ErrorOf("target: CPU\npass { name: \"fake-noop\" }\n\npass { name: \"nope\" }\n");
  EXPECT_THAT(error, StartsWith("p.pbtxt:4: unknown pass 'nope'; known "
                                "passes: fake-break, fake-codegen, "));
  EXPECT_EQ(ErrorOf("target: CPU\npass { }\n").substr(0, 30), "p.pbtxt:2: pass has no name; k");
}

TEST(LoadPipelineTest, OptionsBlockOfAnotherPassNamesItsLine) {
  EXPECT_EQ(ErrorOf("target: CPU\n\npass {\n  name: \"fake-noop\"\n"
                    "  fuse {}\n}\n"),
            "p.pbtxt:3: pass 'fake-noop' does not take 'fuse' options (it "
            "takes none)");
  EXPECT_EQ(ErrorOf("target: CPU\npass { name: \"fake-fuse\" cpp {} }\n"),
            "p.pbtxt:2: pass 'fake-fuse' does not take 'cpp' options (it "
            "takes 'fuse')");
}

TEST(LoadPipelineTest, UnknownOptionFieldNamesLineAndColumn) {
  EXPECT_EQ(ErrorOf("target: CPU\n"
                    "pass { name: \"fake-fuse\" fuse { outer_loop: true "
                    "bogus: 1 } }\n"),
            "p.pbtxt:2:50: Message type \"loom.test.FakeFuseOptions\" has no "
            "field named \"bogus\".");
}

TEST(LoadPipelineTest, ErrorsPointAtTheNameTheyAreAbout) {
  EXPECT_EQ(ErrorOf("target: CPU\n# comment\npass {\n  name: \"fake-fuse\"\n"
                    "  fuse {\n    outer_loop: true\n    bogus: 1\n  }\n}\n"),
            "p.pbtxt:7:5: Message type \"loom.test.FakeFuseOptions\" has no "
            "field named \"bogus\".");
  EXPECT_EQ(ErrorOf("target: CPU\npass { name: \"a\" name: \"b\" }\n"),
            "p.pbtxt:2:18: Non-repeated field \"name\" is specified multiple "
            "times.");
  EXPECT_THAT(ErrorOf("target: CPU\npass {\n  name: \"x\" fuse {}\n"
                      "  cpp {}\n}\n"),
              StartsWith("p.pbtxt:4:3: Field \"cpp\" is specified along with "
                         "field \"fuse\", another member of oneof"));
}

TEST(LoadPipelineTest, MalformedTextNamesLineAndColumn) {
  EXPECT_EQ(ErrorOf("target: CPU\npass { name: }\n"), "p.pbtxt:2:14: Expected string, got: }");
  EXPECT_EQ(ErrorOf("target: GPU\n"),
            "p.pbtxt:1:9: Unknown enumeration value of \"GPU\" for field "
            "\"target\".");
}

TEST(LoadPipelineTest, BadOptionValueFailsAtLoad) {
  EXPECT_EQ(ErrorOf("target: CPU\npass { name: \"fake-noop\" }\n"
                    "pass { name: \"fake-picky\" picky { ops: [\"lstm\"] } }\n"),
            "p.pbtxt:3: fake-picky cannot take 'lstm'");
}

// Passes out of their stage's order, or for another target, fail at load,
// naming the place and the pass that made the stage.
TEST(LoadPipelineTest, APassOutOfItsStageFailsAtLoad) {
  EXPECT_EQ(ErrorOf("target: CUDA\npass { name: \"staged-lower\" }\n"
                    "pass { name: \"fake-noop\" }\npass { name: \"staged-lower\" }\n"),
            "p.pbtxt:4: pass 'staged-lower' runs on the graph, but here the module holds "
            "loop IR (after 'staged-lower' at p.pbtxt:2)");
  EXPECT_EQ(ErrorOf("target: CUDA\npass { name: \"staged-emit\" }\n"),
            "p.pbtxt:2: pass 'staged-emit' runs on loop IR, but here the module holds the "
            "graph (where the pipeline starts)");
  EXPECT_EQ(ErrorOf("target: CPU\npass { name: \"staged-lower\" }\n"
                    "pass { name: \"staged-emit\" }\n"),
            "p.pbtxt:3: pass 'staged-emit' is for target CUDA, but the pipeline's target is CPU");
  absl::StatusOr<LoadedPipeline> fine = LoadPipelineText(
      "target: CUDA\npass { name: \"staged-lower\" }\npass { name: \"staged-emit\" }\n", "p.pbtxt");
  ASSERT_TRUE(fine.ok()) << fine.status();
  EXPECT_EQ(fine->passes[1].pass->name(), "staged-emit");
}

TEST(LoadPipelineTest, EmptyPipeline) {
  EXPECT_EQ(ErrorOf(""), "p.pbtxt: empty pipeline");
  EXPECT_EQ(ErrorOf("# nothing here\n"), "p.pbtxt: empty pipeline");
  EXPECT_EQ(ErrorOf("target: CPU\n"), "p.pbtxt: empty pipeline");
}

TEST(LoadPipelineTest, MissingTarget) {
  EXPECT_EQ(ErrorOf("pass { name: \"fake-noop\" }\n"),
            "p.pbtxt:1: the pipeline has no target (e.g. 'target: CPU')");
}

TEST(LoadPipelineTest, FilesAndBuiltins) {
  const std::string path = testing::TempDir() + "/mine.pbtxt";
  {
    std::ofstream file(path);
    file << Pipeline({"fake-noop", "fake-rename"});
  }
  absl::StatusOr<LoadedPipeline> from_file = LoadPipeline(path);
  ASSERT_TRUE(from_file.ok()) << from_file.status();
  EXPECT_EQ(from_file->name, path);
  EXPECT_EQ(from_file->passes.size(), 2);

  const std::string missing = testing::TempDir() + "/absent/p.pbtxt";
  absl::Status status = LoadPipeline(missing).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              StartsWith("pipeline file " + missing + ": cannot open"));
  // A .pbtxt name is a file even without a '/'.
  EXPECT_THAT(std::string(LoadPipeline("absent.pbtxt").status().message()),
              StartsWith("pipeline file absent.pbtxt: cannot open"));
  EXPECT_THAT(std::string(LoadPipeline(testing::TempDir() + "/").status().message()),
              HasSubstr(": is a directory"));

  EXPECT_THAT(std::string(LoadPipeline("nope").status().message()),
              StartsWith("unknown pipeline 'nope'; built-in pipelines: cpu"));
  // The built-in cpu pipeline is found; its passes are not linked into this
  // test, so loading stops at the first options block none of them takes,
  // with the built-in's file name.
  EXPECT_THAT(std::string(LoadPipeline("cpu").status().message()),
              StartsWith("pipelines/cpu.pbtxt:10:26: Message type \"loom.proto.PassSpec\" has no "
                         "field named \"decompose\". A pass entry holds its name and at most one "
                         "options block: cpp, fuse, picky."));
}

// Overrides merge into the pipeline's options blocks field by field, or
// add a block where the pipeline gives none.
TEST(LoadPipelineTest, OverridesMergeIntoTheOptionsOfTheirPass) {
  const std::string text =
      "target: CPU\npass { name: \"fake-fuse\" fuse { outer_loop: true } }\n"
      "pass { name: \"fake-picky\" }\n";
  absl::StatusOr<LoadedPipeline> pipeline =
      LoadPipelineText(text, "p.pbtxt",
                       {{"fake-fuse", "fuse { max_nodes_per_kernel: 8 }"},
                        {"fake-picky", "picky { ops: \"softmax\" }"}});
  ASSERT_TRUE(pipeline.ok()) << pipeline.status();
  const auto& fuse = static_cast<FakeFusePass&>(*pipeline->passes[0].pass).options;
  EXPECT_TRUE(fuse.outer_loop());
  EXPECT_EQ(fuse.max_nodes_per_kernel(), 8);

  pipeline = LoadPipelineText(text, "p.pbtxt", {{"fake-fuse", "fuse { outer_loop: false }"}});
  ASSERT_TRUE(pipeline.ok()) << pipeline.status();
  EXPECT_FALSE(static_cast<FakeFusePass&>(*pipeline->passes[0].pass).options.outer_loop());
  // The override's options are checked as the pipeline's are.
  EXPECT_EQ(LoadPipelineText(text, "p.pbtxt", {{"fake-picky", "picky { ops: \"lstm\" }"}})
                .status()
                .message(),
            "p.pbtxt:3: fake-picky cannot take 'lstm'");
}

TEST(LoadPipelineTest, AnOverrideOfNoPassOrOfBadTextNamesThePass) {
  const std::string text = Pipeline({"fake-noop"});
  EXPECT_EQ(LoadPipelineText(text, "p.pbtxt", {{"fake-fuse", "fuse { outer_loop: true }"}})
                .status()
                .message(),
            "override of pass 'fake-fuse': the pipeline has no such pass");
  EXPECT_THAT(std::string(LoadPipelineText(text, "p.pbtxt", {{"fake-noop", "fuse { loops: 1 }"}})
                              .status()
                              .message()),
              StartsWith("override of pass 'fake-noop':1:8: "));
}

TEST(RunPipelineTest, RecordsTimingsMemoryAndChangedFlags) {
  absl::StatusOr<LoadedPipeline> pipeline = Load({"fake-noop", "fake-rename", "fake-sleep"});
  ASSERT_TRUE(pipeline.ok()) << pipeline.status();
  Module module = TinyModule();
  absl::StatusOr<std::vector<PassRun>> runs = RunPipeline(*pipeline, module);
  ASSERT_TRUE(runs.ok()) << runs.status();
  ASSERT_EQ(runs->size(), 3);
  EXPECT_EQ((*runs)[0].name, "fake-noop");
  EXPECT_FALSE((*runs)[0].changed);
  EXPECT_EQ((*runs)[1].name, "fake-rename");
  EXPECT_TRUE((*runs)[1].changed);
  EXPECT_EQ((*runs)[2].name, "fake-sleep");
  EXPECT_FALSE((*runs)[2].changed);
  EXPECT_GE((*runs)[0].seconds, 0);
  EXPECT_GE((*runs)[2].seconds, 0.015);
  EXPECT_EQ(module.graph.name, "renamed");
  // The process's peak memory so far, which never shrinks.
  EXPECT_GT((*runs)[0].peak_resident_bytes, 0);
  EXPECT_GE((*runs)[2].peak_resident_bytes, (*runs)[0].peak_resident_bytes);
}

TEST(RunPipelineTest, PassFailureNamesThePass) {
  absl::StatusOr<LoadedPipeline> pipeline = Load({"fake-noop", "fake-fail", "fake-rename"});
  ASSERT_TRUE(pipeline.ok()) << pipeline.status();
  Module module = TinyModule();
  absl::Status status = RunPipeline(*pipeline, module).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "pass 'fake-fail' failed: boom");
  EXPECT_EQ(module.graph.name, "tiny");  // later passes did not run
}

TEST(RunPipelineTest, VerificationFailureNamesThePass) {
  absl::StatusOr<LoadedPipeline> pipeline = Load({"fake-noop", "fake-break", "fake-rename"});
  ASSERT_TRUE(pipeline.ok()) << pipeline.status();
  Module module = TinyModule();
  absl::Status status = RunPipeline(*pipeline, module).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(std::string(status.message()),
              StartsWith("verification failed after pass 'fake-break': "));
  EXPECT_THAT(std::string(status.message()), HasSubstr("no_such_op"));

  Module unchecked = TinyModule();
  RunOptions options;
  options.verify_each = false;
  EXPECT_TRUE(RunPipeline(*pipeline, unchecked, options).ok());
}

// Sees every pass before and after it, with what the pass reported.
class Recorder : public PassInstrumentation {
 public:
  absl::Status BeforePass(absl::string_view pass, int position, const Module&) override {
    events.push_back(absl::StrCat("before ", position, " ", pass));
    return absl::OkStatus();
  }
  absl::Status AfterPass(const PassRun& run, int position, const Module&) override {
    events.push_back(
        absl::StrCat("after ", position, " ", run.name, run.changed ? " changed" : ""));
    return absl::OkStatus();
  }
  std::vector<std::string> events;
};

TEST(RunPipelineTest, InstrumentationsSeeEveryPass) {
  absl::StatusOr<LoadedPipeline> pipeline = Load({"fake-noop", "fake-rename"});
  ASSERT_TRUE(pipeline.ok()) << pipeline.status();
  Module module = TinyModule();
  Recorder recorder;
  RunOptions options;
  options.instrumentations = {&recorder};
  ASSERT_TRUE(RunPipeline(*pipeline, module, options).ok());
  EXPECT_THAT(recorder.events, ElementsAre("before 1 fake-noop", "after 1 fake-noop",
                                           "before 2 fake-rename", "after 2 fake-rename changed"));
}

TEST(RunPipelineTest, ChangedFlagCheckCatchesAPassThatHidesItsChange) {
  absl::StatusOr<LoadedPipeline> pipeline =
      Load({"fake-noop", "fake-rename", "fake-silent-rename"});
  ASSERT_TRUE(pipeline.ok()) << pipeline.status();
  ChangedFlagCheck check;
  RunOptions options;
  options.instrumentations = {&check};
  Module module = TinyModule();
  // Renaming "renamed" to "renamed" changes nothing: the flag is honest.
  EXPECT_TRUE(RunPipeline(*pipeline, module, options).ok());

  absl::StatusOr<LoadedPipeline> lying = Load({"fake-noop", "fake-silent-rename"});
  ASSERT_TRUE(lying.ok()) << lying.status();
  Module again = TinyModule();
  absl::Status status = RunPipeline(*lying, again, options).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(status.message(),
            "pass 'fake-silent-rename' changed the module but reported no change");
}

TEST(RunPipelineTest, DumpsOnlyPassesThatFullyMatch) {
  absl::StatusOr<LoadedPipeline> pipeline =
      Load({"fake-noop", "fake-rename", "fake-lower", "fake-schedule", "fake-codegen"});
  ASSERT_TRUE(pipeline.ok()) << pipeline.status();
  Module module = TinyModule();
  RunOptions options;
  options.dump_after = "fake-rename|fake-lower";
  options.dump_dir = FreshDir("dumps") + "/nested";
  ASSERT_TRUE(RunPipeline(*pipeline, module, options).ok());

  EXPECT_THAT(FilesIn(options.dump_dir), ElementsAre("02-fake-rename.txt", "03-fake-lower.txt"));
  EXPECT_EQ(ReadFile(options.dump_dir + "/02-fake-rename.txt"), GraphToText(module.graph));
  EXPECT_EQ(ReadFile(options.dump_dir + "/03-fake-lower.txt"), PrintLoopProgram(*module.loops));

  // A partial match is no match: "fake" names no pass in full.
  Module again = TinyModule();
  options.dump_after = "fake";
  options.dump_dir = FreshDir("no_dumps");
  ASSERT_TRUE(RunPipeline(*pipeline, again, options).ok());
  EXPECT_FALSE(std::filesystem::exists(options.dump_dir));
}

TEST(RunPipelineTest, DumpHoldsTheMostAdvancedStage) {
  absl::StatusOr<LoadedPipeline> pipeline = Load({"fake-lower", "fake-schedule", "fake-codegen"});
  ASSERT_TRUE(pipeline.ok()) << pipeline.status();
  Module module = TinyModule();
  RunOptions options;
  options.dump_after = "fake-.*";
  options.dump_dir = FreshDir("stages");
  ASSERT_TRUE(RunPipeline(*pipeline, module, options).ok());

  EXPECT_THAT(FilesIn(options.dump_dir),
              ElementsAre("01-fake-lower.txt", "02-fake-schedule.txt", "03-fake-codegen.txt"));
  EXPECT_EQ(ReadFile(options.dump_dir + "/01-fake-lower.txt"), PrintLoopProgram(*module.loops));
  EXPECT_EQ(ReadFile(options.dump_dir + "/02-fake-schedule.txt"),
            PrintSchedule(*module.schedule, *module.loops));
  EXPECT_EQ(ReadFile(options.dump_dir + "/03-fake-codegen.txt"), "void run() {}\n");
}

TEST(RunPipelineTest, BadDumpPatternFailsBeforeAnyPass) {
  absl::StatusOr<LoadedPipeline> pipeline = Load({"fake-rename"});
  ASSERT_TRUE(pipeline.ok()) << pipeline.status();
  Module module = TinyModule();
  RunOptions options;
  options.dump_after = "fake-(";
  options.dump_dir = FreshDir("bad_pattern");
  absl::Status status = RunPipeline(*pipeline, module, options).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "bad dump_after pattern 'fake-(': missing ): fake-(");
  EXPECT_EQ(module.graph.name, "tiny");

  options.dump_after = "fake-rename";
  options.dump_dir = "";
  EXPECT_EQ(RunPipeline(*pipeline, module, options).status().message(),
            "dump_after is set but dump_dir is not");
}

}  // namespace
}  // namespace loom

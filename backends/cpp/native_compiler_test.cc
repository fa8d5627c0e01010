#include "backends/cpp/native_compiler.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/native_library_test_util.h"

namespace loom::cpp {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;

constexpr char kAddSource[] = "extern \"C\" int add(int a, int b) { return a + b; }\n";

// A directory path (not yet created) private to the running test.
std::string TestDir() {
  const char* tmp = std::getenv("TEST_TMPDIR");
  return absl::StrCat(tmp == nullptr ? "/tmp" : tmp, "/",
                      testing::UnitTest::GetInstance()->current_test_info()->name(), ".", getpid());
}

// Options whose cache dir is fresh for the running test.
NativeCompileOptions FreshCacheOptions(const std::string& subdir = "cache") {
  NativeCompileOptions options;
  options.cache_dir = absl::StrCat(TestDir(), "/", subdir);
  return options;
}

std::vector<std::string> FilesIn(const std::string& dir) {
  std::vector<std::string> names;
  DIR* stream = opendir(dir.c_str());
  if (stream == nullptr) return names;
  while (dirent* entry = readdir(stream)) {
    const std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  closedir(stream);
  return names;
}

bool HasTempFiles(const std::string& dir) {
  for (const std::string& name : FilesIn(dir)) {
    if (absl::StrContains(name, ".tmp.")) return true;
  }
  return false;
}

TEST(CompileAndLoadTest, CompilesCallsAndThenHitsTheCache) {
  const NativeCompileOptions options = FreshCacheOptions();
  absl::StatusOr<CompiledLibrary> first = CompileAndLoad(kAddSource, options);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(CallAdd(first->library), 5);
  EXPECT_FALSE(first->cache_hit);
  EXPECT_GT(first->compile_seconds, 0);
  EXPECT_THAT(first->library.path(),
              MatchesRegex(absl::StrCat(options.cache_dir, "/[0-9a-f]{32}\\.so")));
  const std::string source_path =
      first->library.path().substr(0, first->library.path().size() - 3) + ".cc";
  std::ifstream source(source_path);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(source), {}), kAddSource);

  absl::StatusOr<CompiledLibrary> second = CompileAndLoad(kAddSource, options);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_TRUE(second->cache_hit);
  EXPECT_EQ(second->compile_seconds, 0);
  EXPECT_EQ(second->library.path(), first->library.path());
  EXPECT_EQ(CallAdd(second->library), 5);
  EXPECT_FALSE(HasTempFiles(options.cache_dir));
}

TEST(CompileAndLoadTest, SupportSourcesCompileOnceAndLinkIn) {
  NativeCompileOptions options = FreshCacheOptions();
  options.support_sources = {"extern \"C\" int twice(int a) { return 2 * a; }\n"};
  const char* kernels[] = {
      "extern \"C\" int twice(int); extern \"C\" int add(int a, int b) "
      "{ return twice(a) + b; }\n",
      "extern \"C\" int twice(int); extern \"C\" int add(int a, int b) "
      "{ return a + twice(b); }\n"};
  absl::StatusOr<CompiledLibrary> first = CompileAndLoad(kernels[0], options);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(CallAdd(first->library), 7);
  absl::StatusOr<CompiledLibrary> second = CompileAndLoad(kernels[1], options);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(CallAdd(second->library), 8);
  int objects = 0;
  for (const std::string& name : FilesIn(options.cache_dir)) objects += absl::EndsWith(name, ".o");
  EXPECT_EQ(objects, 1);  // the support source compiled once for both

  // Another support source is another library.
  options.support_sources = {"extern \"C\" int twice(int a) { return a + a + 1; }\n"};
  absl::StatusOr<CompiledLibrary> third = CompileAndLoad(kernels[0], options);
  ASSERT_TRUE(third.ok()) << third.status();
  EXPECT_FALSE(third->cache_hit);
  EXPECT_EQ(CallAdd(third->library), 8);
}

TEST(CompileAndLoadTest, ChangingFlagsOrOpenmpMissesTheCache) {
  NativeCompileOptions options = FreshCacheOptions();
  absl::StatusOr<CompiledLibrary> o2 = CompileAndLoad(kAddSource, options);
  ASSERT_TRUE(o2.ok()) << o2.status();

  options.flags[0] = "-O1";
  absl::StatusOr<CompiledLibrary> o1 = CompileAndLoad(kAddSource, options);
  ASSERT_TRUE(o1.ok()) << o1.status();
  EXPECT_FALSE(o1->cache_hit);
  EXPECT_NE(o1->library.path(), o2->library.path());
  EXPECT_EQ(CallAdd(o1->library), 5);

  options.openmp = true;
  absl::StatusOr<CompiledLibrary> openmp = CompileAndLoad(kAddSource, options);
  ASSERT_TRUE(openmp.ok()) << openmp.status();
  EXPECT_FALSE(openmp->cache_hit);
  EXPECT_NE(openmp->library.path(), o1->library.path());
}

TEST(CompileAndLoadTest, SyntaxErrorCarriesTheCompilersMessage) {
  const NativeCompileOptions options = FreshCacheOptions();
  // Many errors, so the output must be cut to its tail.
  std::string source;
  for (int i = 0; i < 200; ++i) {
    absl::StrAppend(&source, "int broken_", i, " = ;\n");
  }
  absl::StatusOr<CompiledLibrary> library = CompileAndLoad(source, options);
  ASSERT_FALSE(library.ok());
  EXPECT_EQ(library.status().code(), absl::StatusCode::kInternal);
  const std::string message(library.status().message());
  EXPECT_THAT(message, HasSubstr("error:"));
  EXPECT_THAT(message, HasSubstr("exit status 1"));
  EXPECT_THAT(message,
              HasSubstr(absl::StrCat("command: ", options.compiler, " -O2 -march=native")));
  EXPECT_THAT(message, HasSubstr("earlier bytes omitted"));
  EXPECT_LT(message.size(), 6000);
  EXPECT_FALSE(HasTempFiles(options.cache_dir));
}

// A unit as codegen-cpp writes one: a prelude, then kernel functions
// loom_f0, loom_f1, ..., function i storing `values[i]` through its first
// argument.
std::string KernelUnit(const std::vector<std::string>& values) {
  std::string text = "static inline int loom_twice(int x) { return 2 * x; }\n";
  for (size_t i = 0; i < values.size(); ++i) {
    absl::StrAppend(&text, "\nextern \"C\" void loom_f", i, "(void* const* a) {\n",
                    "  *(int*)a[0] = ", values[i], ";\n}\n");
  }
  return text;
}

// What kernel function loom_f<i> of `library` stores through its first
// argument; -1 where it has none.
int CallKernel(const CompiledLibrary& library, int i) {
  absl::StatusOr<void*> function = library.library.Symbol(absl::StrCat("loom_f", i));
  EXPECT_TRUE(function.ok()) << function.status();
  int out = -1;
  void* args[] = {&out};
  if (function.ok()) reinterpret_cast<void (*)(void* const*)> (*function)(args);
  return out;
}

// Its functions compile in a unit per core at once, into one library; only
// the library and its source stay in the cache.
TEST(CompileAndLoadTest, KernelFunctionsCompileInPartsIntoOneLibrary) {
  const NativeCompileOptions options = FreshCacheOptions();
  const std::string source =
      KernelUnit({"loom_twice(0)", "loom_twice(1)", "loom_twice(2)", "loom_twice(3)", "7"});
  absl::StatusOr<CompiledLibrary> library = CompileAndLoad(source, options);
  ASSERT_TRUE(library.ok()) << library.status();
  for (int i = 0; i < 5; ++i) EXPECT_EQ(CallKernel(*library, i), i < 4 ? 2 * i : 7);
  EXPECT_EQ(FilesIn(options.cache_dir).size(), 2u);  // <hash>.cc and <hash>.so
  absl::StatusOr<CompiledLibrary> again = CompileAndLoad(source, options);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->cache_hit);
}

// Functions of repeated members (loom_m<N>, declared in the prelude) are
// pieces of their own too: a kernel function calls one that another part
// defines. A declaration of loom_ in the prelude is not a piece.
TEST(CompileAndLoadTest, KernelFunctionsCallMemberFunctionsOfOtherParts) {
  const NativeCompileOptions options = FreshCacheOptions();
  std::string source =
      "extern \"C\" void loom_m0(int* out, int value);\n"
      "\nextern \"C\" void loom_helper_declared(void);\n";
  for (int i = 0; i < 4; ++i) {
    absl::StrAppend(&source, "\nextern \"C\" void loom_f", i,
                    "(void* const* a) {\n  loom_m0((int*)a[0], ", i, ");\n}\n");
  }
  absl::StrAppend(&source,
                  "\nextern \"C\" void loom_m0(int* out, int value) { *out = 3 * value; }\n");
  absl::StatusOr<CompiledLibrary> library = CompileAndLoad(source, options);
  ASSERT_TRUE(library.ok()) << library.status();
  for (int i = 0; i < 4; ++i) EXPECT_EQ(CallKernel(*library, i), 3 * i);
}

TEST(CompileAndLoadTest, AFailingKernelFunctionIsNamedInTheError) {
  const NativeCompileOptions options = FreshCacheOptions();
  absl::StatusOr<CompiledLibrary> library =
      CompileAndLoad(KernelUnit({"1", "2", "not_declared", "4"}), options);
  ASSERT_FALSE(library.ok());
  EXPECT_EQ(library.status().code(), absl::StatusCode::kInternal);
  const std::string message(library.status().message());
  EXPECT_THAT(message, HasSubstr("loom_f2"));
  EXPECT_THAT(message, HasSubstr("'not_declared' was not declared"));
  EXPECT_FALSE(HasTempFiles(options.cache_dir));
  for (const std::string& name : FilesIn(options.cache_dir)) {
    EXPECT_FALSE(absl::EndsWith(name, ".o")) << name;
  }
}

TEST(CompileAndLoadTest, MissingCompilerIsAClearError) {
  NativeCompileOptions options = FreshCacheOptions();
  options.compiler = "loom-no-such-compiler";
  absl::StatusOr<CompiledLibrary> library = CompileAndLoad(kAddSource, options);
  EXPECT_EQ(library.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(library.status().message(),
              HasSubstr("C++ compiler 'loom-no-such-compiler' could not be run"));
  EXPECT_THAT(library.status().message(), HasSubstr("No such file"));

  options.compiler = "";
  EXPECT_EQ(CompileAndLoad(kAddSource, options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(CompileAndLoadTest, CorruptCacheEntryIsRebuilt) {
  const NativeCompileOptions options = FreshCacheOptions();
  std::string path;
  {
    // The library must be closed first: dlopen would otherwise hand back the
    // copy already loaded instead of reading the file.
    absl::StatusOr<CompiledLibrary> library = CompileAndLoad(kAddSource, options);
    ASSERT_TRUE(library.ok()) << library.status();
    path = library->library.path();
  }
  std::ofstream(path, std::ios::trunc) << "not an ELF file";

  absl::StatusOr<CompiledLibrary> rebuilt = CompileAndLoad(kAddSource, options);
  ASSERT_TRUE(rebuilt.ok()) << rebuilt.status();
  EXPECT_FALSE(rebuilt->cache_hit);
  EXPECT_EQ(rebuilt->library.path(), path);
  EXPECT_EQ(CallAdd(rebuilt->library), 5);
}

TEST(CompileAndLoadTest, CacheDirAndParentsAreCreatedPrivate) {
  const NativeCompileOptions options = FreshCacheOptions("a/b/cache");
  absl::StatusOr<CompiledLibrary> library = CompileAndLoad(kAddSource, options);
  ASSERT_TRUE(library.ok()) << library.status();
  for (const std::string& dir :
       {options.cache_dir,
        options.cache_dir.substr(0, options.cache_dir.size() - strlen("/b/cache"))}) {
    struct stat info;
    ASSERT_EQ(stat(dir.c_str(), &info), 0) << dir;
    EXPECT_TRUE(S_ISDIR(info.st_mode)) << dir;
    EXPECT_EQ(info.st_mode & 0777, 0700) << dir;
  }
}

TEST(CompileAndLoadTest, CacheDirUnderAFileIsAnErrorNamingIt) {
  const std::string dir = TestDir();
  ASSERT_EQ(mkdir(dir.c_str(), 0700), 0);
  const std::string file = dir + "/file";
  std::ofstream(file) << "x";
  NativeCompileOptions options;
  options.cache_dir = file + "/cache";
  absl::StatusOr<CompiledLibrary> library = CompileAndLoad(kAddSource, options);
  EXPECT_FALSE(library.ok());
  EXPECT_THAT(library.status().message(), HasSubstr(file));
}

TEST(CompileAndLoadTest, ConcurrentCompilesOfOneSourceAllSucceed) {
  const NativeCompileOptions options = FreshCacheOptions();
  constexpr int kThreads = 2;
  std::vector<absl::StatusOr<CompiledLibrary>> libraries;
  for (int i = 0; i < kThreads; ++i) {
    libraries.emplace_back(absl::UnknownError("not run"));
  }
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] { libraries[i] = CompileAndLoad(kAddSource, options); });
  }
  for (std::thread& thread : threads) thread.join();
  for (const absl::StatusOr<CompiledLibrary>& library : libraries) {
    ASSERT_TRUE(library.ok()) << library.status();
    EXPECT_EQ(CallAdd(library->library), 5);
    EXPECT_EQ(library->library.path(), libraries[0]->library.path());
  }
  EXPECT_FALSE(HasTempFiles(options.cache_dir));
}

// The OpenMP runtime's worker threads outlive the library that started
// them: unloading that library must not unload the runtime under them,
// whether OpenMP was asked for by the option or by the flag. The option
// comes first: once pinned, the runtime stays for the whole process.
TEST(NativeCompilerTest, UnloadingAnOpenMpLibraryLeavesItsThreadsRunnable) {
  constexpr char kParallelSource[] =
      "extern \"C\" int parallel_sum() {\n"
      "  int sum = 0;\n"
      "  #pragma omp parallel for reduction(+:sum) num_threads(2)\n"
      "  for (int i = 0; i < 1000; ++i) sum += i;\n"
      "  return sum;\n"
      "}\n";
  for (const bool as_flag : {false, true}) {
    NativeCompileOptions options = FreshCacheOptions();
    if (as_flag) {
      options.flags.push_back("-fopenmp");
    } else {
      options.openmp = true;
    }
    absl::StatusOr<CompiledLibrary> library = CompileAndLoad(kParallelSource, options);
    ASSERT_TRUE(library.ok()) << library.status();
    absl::StatusOr<void*> fn = library->library.Symbol("parallel_sum");
    ASSERT_TRUE(fn.ok()) << fn.status();
    EXPECT_EQ(reinterpret_cast<int (*)()>(*fn)(), 499500);
    // The library is closed here.
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // threads idle
}

// A library a user names for the gemm calls must exist; the error names the
// variable and the path.
TEST(NativeCompilerTest, AnUnreadableChosenGemmLibraryIsAnErrorNamingIt) {
  for (auto [variable, link_args] :
       {std::pair{"LOOM_DNNL", &DnnlLinkArgs}, std::pair{"LOOM_BLAS", &BlasLinkArgs}}) {
    setenv(variable, "/nonexistent/libgemm.so", 1);
    absl::StatusOr<std::vector<std::string>> args = link_args();
    unsetenv(variable);
    ASSERT_FALSE(args.ok()) << variable;
    EXPECT_THAT(args.status().message(), HasSubstr(absl::StrCat("$", variable)));
    EXPECT_THAT(args.status().message(), HasSubstr("/nonexistent/libgemm.so"));
  }
}

// A library compiled against oneDNN loads and calls it (Debian's libdnnl2).
TEST(NativeCompilerTest, LinksOneDnnForSgemm) {
  constexpr char kSgemmSource[] =
      "#include <cstdint>\n"
      "extern \"C\" int dnnl_sgemm(char, char, int64_t, int64_t, int64_t, float, const float*,\n"
      "                            int64_t, const float*, int64_t, float, float*, int64_t);\n"
      "extern \"C\" float dot() {\n"
      "  const float a[2] = {1, 2}, b[2] = {3, 4};\n"
      "  float c = 0;\n"
      "  dnnl_sgemm('N', 'N', 1, 1, 2, 1.0f, a, 2, b, 1, 0.0f, &c, 1);\n"
      "  return c;\n"
      "}\n";
  NativeCompileOptions options = FreshCacheOptions();
  options.link_dnnl = true;
  absl::StatusOr<CompiledLibrary> library = CompileAndLoad(kSgemmSource, options);
  ASSERT_TRUE(library.ok()) << library.status();
  absl::StatusOr<void*> fn = library->library.Symbol("dot");
  ASSERT_TRUE(fn.ok()) << fn.status();
  EXPECT_EQ(reinterpret_cast<float (*)()>(*fn)(), 11.0f);
}

}  // namespace
}  // namespace loom::cpp

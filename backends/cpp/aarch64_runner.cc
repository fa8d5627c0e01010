// Runs a model's kernels, cross-compiled for aarch64, under user-mode QEMU
// (aarch64_test.cc builds it with aarch64-linux-gnu-g++; it has no
// dependency but the C++ and C libraries, which that cross toolchain has).
//
//   aarch64_runner PLAN KERNELS.so
//
// PLAN is the model's launch table and buffers as loom::Model lays them out
// (runtime/model.cc), one record per line:
//   arena BYTES
//   buffer KIND BYTES ARENA_OFFSET   (in buffer order; KIND as artifact.proto:
//                                     temp, input, weight, output, arena,
//                                     none, index_errors)
//   load BUFFER PATH                  (an input's or a weight's bytes)
//   function NAME                     (in function order)
//   launch FUNCTION N BUFFER BYTE_OFFSET ...   (N arguments)
//   store BUFFER PATH                 (an output, written after the run)
// A kernel that reports an out-of-range index fails the run: it prints
// "index_error CHECK INDEX" (the index check's number in the artifact, the
// index) and exits 3.
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace {

using KernelFunction = void (*)(void* const*);

constexpr int kIndexError = 3;  // the exit status of a failed index check

[[noreturn]] void Fail(const std::string& message) {
  std::fprintf(stderr, "aarch64_runner: %s\n", message.c_str());
  std::exit(2);
}

struct FreeDeleter {
  void operator()(char* p) const { std::free(p); }
};
using Bytes = std::unique_ptr<char, FreeDeleter>;

// Zeroed, 64-byte aligned, as the runtime's.
Bytes Zeroed(int64_t bytes) {
  const size_t size = (static_cast<size_t>(bytes) + 63) / 64 * 64 + 64;
  char* p = static_cast<char*>(std::aligned_alloc(64, size));
  if (p == nullptr) Fail("out of memory");
  std::memset(p, 0, size);
  return Bytes(p);
}

struct Launch {
  int function = 0;
  std::vector<int> buffers;
  std::vector<int64_t> offsets;
};

struct Plan {
  int64_t arena_bytes = 0;
  std::vector<std::string> kinds;
  std::vector<int64_t> bytes, arena_offsets;
  std::vector<std::pair<int, std::string>> loads, stores;
  std::vector<std::string> functions;
  std::vector<Launch> launches;
};

int BufferIndex(std::istringstream& line, const Plan& plan) {
  int b = -1;
  line >> b;
  if (!line || b < 0 || b >= static_cast<int>(plan.kinds.size())) Fail("no such buffer");
  return b;
}

Plan ReadPlan(const char* path) {
  std::ifstream file(path);
  if (!file) Fail(std::string("cannot open ") + path);
  Plan plan;
  std::string text;
  while (std::getline(file, text)) {
    std::istringstream line(text);
    std::string record;
    line >> record;
    if (record == "arena") {
      line >> plan.arena_bytes;
    } else if (record == "buffer") {
      std::string kind;
      int64_t bytes = 0, offset = 0;
      line >> kind >> bytes >> offset;
      plan.kinds.push_back(kind);
      plan.bytes.push_back(bytes);
      plan.arena_offsets.push_back(offset);
    } else if (record == "load" || record == "store") {
      const int b = BufferIndex(line, plan);
      std::string file_path;
      line >> file_path;
      (record == "load" ? plan.loads : plan.stores).emplace_back(b, file_path);
    } else if (record == "function") {
      std::string name;
      line >> name;
      plan.functions.push_back(name);
    } else if (record == "launch") {
      Launch launch;
      int count = 0;
      line >> launch.function >> count;
      for (int a = 0; a < count; ++a) {
        launch.buffers.push_back(BufferIndex(line, plan));
        int64_t offset = 0;
        line >> offset;
        launch.offsets.push_back(offset);
      }
      plan.launches.push_back(launch);
    } else if (!record.empty()) {
      Fail("unknown record '" + record + "'");
    }
    if (!line && !line.eof()) Fail("malformed line: " + text);
  }
  return plan;
}

void ReadFile(const std::string& path, char* to, int64_t bytes) {
  std::ifstream file(path, std::ios::binary);
  if (!file.read(to, bytes)) Fail("cannot read " + std::to_string(bytes) + " bytes of " + path);
}

void WriteFile(const std::string& path, const char* from, int64_t bytes) {
  std::ofstream file(path, std::ios::binary);
  if (!file.write(from, bytes)) Fail("cannot write " + path);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) Fail("usage: aarch64_runner PLAN KERNELS.so");
  const Plan plan = ReadPlan(argv[1]);
  void* library = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) Fail(dlerror());
  std::vector<KernelFunction> functions;
  for (const std::string& name : plan.functions) {
    auto* function = reinterpret_cast<KernelFunction>(dlsym(library, name.c_str()));
    if (function == nullptr) Fail("no function " + name);
    functions.push_back(function);
  }

  Bytes arena = Zeroed(plan.arena_bytes);
  std::vector<Bytes> own;
  std::vector<char*> pointers;
  int64_t* index_errors = nullptr;
  for (size_t b = 0; b < plan.kinds.size(); ++b) {
    const std::string& kind = plan.kinds[b];
    if (kind == "arena") {
      pointers.push_back(arena.get() + plan.arena_offsets[b]);
    } else if (kind == "none") {
      pointers.push_back(nullptr);
    } else {
      own.push_back(Zeroed(plan.bytes[b]));
      pointers.push_back(own.back().get());
      if (kind == "index_errors") index_errors = reinterpret_cast<int64_t*>(pointers.back());
    }
  }
  for (const auto& [b, path] : plan.loads) ReadFile(path, pointers[b], plan.bytes[b]);

  std::vector<void*> arguments;
  for (const Launch& launch : plan.launches) {
    if (launch.function < 0 || launch.function >= static_cast<int>(functions.size())) {
      Fail("a launch names no function");
    }
    arguments.clear();
    for (size_t a = 0; a < launch.buffers.size(); ++a) {
      char* base = pointers[launch.buffers[a]];
      arguments.push_back(base == nullptr ? nullptr : base + launch.offsets[a]);
    }
    functions[launch.function](arguments.data());
  }
  if (index_errors != nullptr && index_errors[0] != 0) {
    std::printf("index_error %lld %lld\n", static_cast<long long>(index_errors[0] - 1),
                static_cast<long long>(index_errors[1]));
    return kIndexError;
  }
  for (const auto& [b, path] : plan.stores) WriteFile(path, pointers[b], plan.bytes[b]);
  return 0;
}

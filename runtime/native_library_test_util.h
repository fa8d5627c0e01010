#ifndef LOOM_RUNTIME_NATIVE_LIBRARY_TEST_UTIL_H_
#define LOOM_RUNTIME_NATIVE_LIBRARY_TEST_UTIL_H_

// For tests of shared objects that define `int add(int, int)`.

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "runtime/native_library.h"

namespace loom {

// Calls add(2, 3) from `library`; -1 (and a test failure) when it has none.
inline int CallAdd(const NativeLibrary& library) {
  absl::StatusOr<void*> add = library.Symbol("add");
  if (!add.ok()) {
    ADD_FAILURE() << add.status();
    return -1;
  }
  return reinterpret_cast<int (*)(int, int)>(*add)(2, 3);
}

}  // namespace loom

#endif  // LOOM_RUNTIME_NATIVE_LIBRARY_TEST_UTIL_H_

// hide_avx512.c, loaded into this process: CPUID stops reporting AVX-512 and
// nothing else, and a SIGSEGV handler installed through its sigaction still
// gets the faults that are not CPUID's.

#include <cpuid.h>
#include <dlfcn.h>
#include <signal.h>

#include <cstdlib>
#include <string>

#include "gtest/gtest.h"

#if defined(__x86_64__) && defined(__linux__)
#include <asm/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace {

struct Cpuid {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
};

Cpuid Query(unsigned leaf, unsigned subleaf) {
  Cpuid r;
  __cpuid_count(leaf, subleaf, r.eax, r.ebx, r.ecx, r.edx);
  return r;
}

constexpr unsigned kAvx512F = 1u << 16, kAvx2 = 1u << 5;  // leaf 7, EBX

// The shim loaded, CPUID faulting for one test and working again after it.
class HideAvx512Test : public ::testing::Test {
 protected:
  void SetUp() override {
    before_ = Query(7, 0);
    leaf1_ = Query(1, 0);
    const std::string path = std::string(std::getenv("TEST_SRCDIR")) + "/" +
                             std::getenv("TEST_WORKSPACE") + "/tests/bench/peers/libhide_avx512.so";
    shim_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(shim_, nullptr) << dlerror();
    auto active = reinterpret_cast<int (*)()>(dlsym(shim_, "hide_avx512_active"));
    ASSERT_NE(active, nullptr);
    if (!active()) GTEST_SKIP() << "this CPU or kernel has no CPUID faulting";
    // The constructor made CPUID fault when first loaded; again for each test.
    ASSERT_EQ(syscall(SYS_arch_prctl, ARCH_SET_CPUID, 0), 0);
  }
  void TearDown() override {
    syscall(SYS_arch_prctl, ARCH_SET_CPUID, 1);  // the handler stays, unused
  }

  long Calls() { return reinterpret_cast<long (*)()>(dlsym(shim_, "hide_avx512_calls"))(); }

  Cpuid before_, leaf1_;
  void* shim_ = nullptr;
};

TEST_F(HideAvx512Test, CpuidReportsNoAvx512AndTheRestUnchanged) {
  const long calls = Calls();
  const Cpuid after = Query(7, 0);
  EXPECT_EQ(Calls(), calls + 1);
  EXPECT_EQ(after.ebx & kAvx512F, 0u);
  EXPECT_EQ(after.ebx & kAvx2, before_.ebx & kAvx2);
  EXPECT_EQ(after.ebx & ~(0xffffu << 16), before_.ebx & ~(0xffffu << 16));
  const Cpuid leaf1 = Query(1, 0);
  EXPECT_EQ(leaf1.ecx, leaf1_.ecx);
  EXPECT_EQ(leaf1.edx, leaf1_.edx);
}

volatile sig_atomic_t handled_signals = 0;

void CountSignal(int) { handled_signals = handled_signals + 1; }

TEST_F(HideAvx512Test, OwnSigsegvHandlerGetsOtherFaults) {
  using SigactionFn = int (*)(int, const struct sigaction*, struct sigaction*);
  auto shim_sigaction = reinterpret_cast<SigactionFn>(dlsym(shim_, "sigaction"));
  ASSERT_NE(shim_sigaction, nullptr);
  struct sigaction action = {}, old = {};
  action.sa_handler = CountSignal;
  sigemptyset(&action.sa_mask);
  ASSERT_EQ(shim_sigaction(SIGSEGV, &action, &old), 0);
  EXPECT_EQ(Query(7, 0).ebx & kAvx512F, 0u);  // CPUID is still answered
  EXPECT_EQ(handled_signals, 0);
  raise(SIGSEGV);  // not a CPUID: passed on
  EXPECT_EQ(handled_signals, 1);
  ASSERT_EQ(shim_sigaction(SIGSEGV, &old, nullptr), 0);
}

}  // namespace
#endif  // __x86_64__ && __linux__

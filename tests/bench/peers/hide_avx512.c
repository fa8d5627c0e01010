// Hides AVX-512 (and AMX and AVX-VNNI) from every library in a process, so
// that an AVX-512 machine stands in for an AVX2 one such as AMD Zen 3 even
// for libraries that have no switch of their own (ONNX Runtime's MLAS, JAX's
// XLA and YNNPACK). Loaded with LD_PRELOAD: its constructor makes the CPUID
// instruction fault (Linux's ARCH_SET_CPUID, on CPUs with CPUID faulting;
// threads and child processes inherit it, and LD_PRELOAD sets it up again
// after an exec), and answers each fault with the real CPUID's answer less
// those features.
//
// The answer is a SIGSEGV handler, so the process's own SIGSEGV handlers
// (GCC's cc1 has one) are chained behind it: sigaction and signal, for
// SIGSEGV, record theirs rather than replace it.
//
// Only what CPUID reports changes: code that uses AVX-512 without asking
// still could (none of the peers does). hide_avx512_active() says whether
// the CPU allowed it; hide_avx512_calls() counts the answers given.

#if defined(__x86_64__) && defined(__linux__)

#define _GNU_SOURCE
#include <asm/prctl.h>
#include <cpuid.h>
#include <dlfcn.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

static int active;
static atomic_long calls;
static struct sigaction chained;  // the process's own SIGSEGV handler

typedef int (*SigactionFn)(int, const struct sigaction*, struct sigaction*);

static int RealSigaction(int signal, const struct sigaction* action, struct sigaction* old) {
  static SigactionFn real;
  if (real == NULL) real = (SigactionFn)dlsym(RTLD_NEXT, "sigaction");
  return real(signal, action, old);
}

// CPUID leaf 7's feature bits that an AVX2-only CPU (Zen 3) lacks.
// Subleaf 0, EBX: AVX512F, DQ, IFMA, PF, ER, CD, BW, VL.
static const unsigned kLeaf7Ebx =
    1u << 16 | 1u << 17 | 1u << 21 | 1u << 26 | 1u << 27 | 1u << 28 | 1u << 30 | 1u << 31;
// Subleaf 0, ECX: VBMI, VBMI2, VNNI, BITALG, VPOPCNTDQ.
static const unsigned kLeaf7Ecx = 1u << 1 | 1u << 6 | 1u << 11 | 1u << 12 | 1u << 14;
// Subleaf 0, EDX: 4VNNIW, 4FMAPS, VP2INTERSECT, AMX-BF16, FP16, AMX-TILE, AMX-INT8.
static const unsigned kLeaf7Edx =
    1u << 2 | 1u << 3 | 1u << 8 | 1u << 22 | 1u << 23 | 1u << 24 | 1u << 25;
// Subleaf 1, EAX: AVX-VNNI, AVX512_BF16, AMX-FP16, AVX-IFMA.
static const unsigned kLeaf7Sub1Eax = 1u << 4 | 1u << 5 | 1u << 21 | 1u << 23;
// Subleaf 1, EDX: AVX-VNNI-INT8, AVX-NE-CONVERT, AVX-VNNI-INT16, AVX10.
static const unsigned kLeaf7Sub1Edx = 1u << 4 | 1u << 5 | 1u << 10 | 1u << 19;

static long SetCpuid(int enabled) { return syscall(SYS_arch_prctl, ARCH_SET_CPUID, enabled); }

static void HideFeatures(uint32_t leaf, uint32_t subleaf, unsigned* eax, unsigned* ebx,
                         unsigned* ecx, unsigned* edx) {
  if (leaf != 7) return;
  if (subleaf == 0) {
    *ebx &= ~kLeaf7Ebx;
    *ecx &= ~kLeaf7Ecx;
    *edx &= ~kLeaf7Edx;
  } else if (subleaf == 1) {
    *eax &= ~kLeaf7Sub1Eax;
    *edx &= ~kLeaf7Sub1Edx;
  }
}

static void OnSegv(int signal, siginfo_t* info, void* context) {
  ucontext_t* uc = (ucontext_t*)context;
  greg_t* regs = uc->uc_mcontext.gregs;
  const unsigned char* ip = (const unsigned char*)regs[REG_RIP];
  if (info->si_code != SI_KERNEL || ip[0] != 0x0f || ip[1] != 0xa2) {
    // Not a CPUID: whoever handled SIGSEGV before, or the default (a crash).
    if (chained.sa_flags & SA_SIGINFO) {
      chained.sa_sigaction(signal, info, context);
    } else if (chained.sa_handler != SIG_IGN && chained.sa_handler != SIG_DFL) {
      chained.sa_handler(signal);
    } else {
      struct sigaction default_action;
      memset(&default_action, 0, sizeof default_action);
      default_action.sa_handler = SIG_DFL;
      RealSigaction(SIGSEGV, &default_action, NULL);  // the fault recurs, and kills
    }
    return;
  }
  const uint32_t leaf = (uint32_t)regs[REG_RAX], subleaf = (uint32_t)regs[REG_RCX];
  unsigned eax, ebx, ecx, edx;
  SetCpuid(1);
  __cpuid_count(leaf, subleaf, eax, ebx, ecx, edx);
  SetCpuid(0);
  HideFeatures(leaf, subleaf, &eax, &ebx, &ecx, &edx);
  regs[REG_RAX] = eax;
  regs[REG_RBX] = ebx;
  regs[REG_RCX] = ecx;
  regs[REG_RDX] = edx;
  regs[REG_RIP] += 2;
  atomic_fetch_add_explicit(&calls, 1, memory_order_relaxed);
}

__attribute__((constructor)) static void HideAvx512(void) {
  if (syscall(SYS_arch_prctl, ARCH_GET_CPUID, 0) < 0) return;  // no CPUID faulting
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_sigaction = OnSegv;
  // SA_NODEFER: a chained handler that jumps out (longjmp) must not leave
  // SIGSEGV blocked, or the next CPUID would kill the process.
  action.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&action.sa_mask);
  if (RealSigaction(SIGSEGV, &action, &chained) != 0) return;
  if (SetCpuid(0) != 0) {
    RealSigaction(SIGSEGV, &chained, NULL);
    return;
  }
  active = 1;
}

int sigaction(int signal, const struct sigaction* action, struct sigaction* old) {
  if (!active || signal != SIGSEGV) return RealSigaction(signal, action, old);
  if (old != NULL) *old = chained;
  if (action != NULL) chained = *action;
  return 0;
}

sighandler_t signal(int signal, sighandler_t handler) {
  if (!active || signal != SIGSEGV) {
    static sighandler_t (*real)(int, sighandler_t);
    if (real == NULL) real = (sighandler_t(*)(int, sighandler_t))dlsym(RTLD_NEXT, "signal");
    return real(signal, handler);
  }
  const sighandler_t old = chained.sa_handler;
  memset(&chained, 0, sizeof chained);
  chained.sa_handler = handler;
  return old;
}

int hide_avx512_active(void) { return active; }

long hide_avx512_calls(void) { return atomic_load(&calls); }

#endif  // __x86_64__ && __linux__

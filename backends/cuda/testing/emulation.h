// Runs loom's generated CUDA C++ on the CPU, for tests on machines without a
// GPU: each block's threads are OS threads, __syncthreads and __syncwarp are
// barriers, warp shuffles exchange through memory between two barriers.
// Blocks run one after another, so `__shared__` can be `static`. The test
// replaces the dynamic shared memory declaration by loom_emu_smem().
// Test-only: slow, and only the subset of CUDA that loom emits.
#ifndef LOOM_BACKENDS_CUDA_TESTING_EMULATION_H_
#define LOOM_BACKENDS_CUDA_TESTING_EMULATION_H_

#include <math.h>
#include <stdint.h>

#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static
#define __align__(n) alignas(n)

struct loom_emu_dim3 {
  unsigned x = 0, y = 0, z = 0;
};
inline thread_local loom_emu_dim3 threadIdx, blockIdx;
inline loom_emu_dim3 blockDim, gridDim;

class LoomEmuBarrier {
 public:
  explicit LoomEmuBarrier(int count) : count_(count) {}
  void Wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    const long generation = generation_;
    if (++waiting_ == count_) {
      waiting_ = 0;
      ++generation_;
      condition_.notify_all();
    } else {
      condition_.wait(lock, [&] { return generation_ != generation; });
    }
  }

 private:
  std::mutex mutex_;
  std::condition_variable condition_;
  const int count_;
  int waiting_ = 0;
  long generation_ = 0;
};

struct LoomEmuBlock {
  std::unique_ptr<LoomEmuBarrier> block;
  std::vector<std::unique_ptr<LoomEmuBarrier>> warps;
  std::vector<uint64_t> slots;  // 32 per warp, for shuffles
  std::vector<uint64_t> smem;   // dynamic shared memory
};
inline LoomEmuBlock loom_emu_block;

inline unsigned char* loom_emu_smem() {
  return reinterpret_cast<unsigned char*>(loom_emu_block.smem.data());
}
inline void __syncthreads() { loom_emu_block.block->Wait(); }
inline void __syncwarp(unsigned = 0xffffffffu) { loom_emu_block.warps[threadIdx.x / 32]->Wait(); }
template <typename T>
T __shfl_xor_sync(unsigned, T v, int s) {
  static_assert(sizeof(T) <= sizeof(uint64_t), "shuffle of a wide type");
  const unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  uint64_t* slots = &loom_emu_block.slots[warp * 32];
  std::memcpy(&slots[lane], &v, sizeof(T));
  __syncwarp();
  T result;
  std::memcpy(&result, &slots[lane ^ s], sizeof(T));
  __syncwarp();
  return result;
}

inline unsigned long long atomicCAS(unsigned long long* address, unsigned long long compare,
                                    unsigned long long value) {
  __atomic_compare_exchange_n(address, &compare, value, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  return compare;
}

template <typename... P, size_t... I>
void LoomEmuCall(void (*f)(P...), void* const* a, std::index_sequence<I...>) {
  f(static_cast<P>(a[I])...);
}

// Runs `f` on `grid` blocks of `threads` threads, with `smem` bytes of
// dynamic shared memory filled with 0xff (NaN as floats) for every block.
template <typename... P>
void LoomEmuLaunch(void (*f)(P...), void* const* a, int grid, int threads, long long smem) {
  blockDim.x = threads;
  gridDim.x = grid;
  for (int b = 0; b < grid; ++b) {
    LoomEmuBlock& block = loom_emu_block;
    block.block = std::make_unique<LoomEmuBarrier>(threads);
    block.warps.clear();
    for (int w = 0; w < threads / 32; ++w) {
      block.warps.push_back(std::make_unique<LoomEmuBarrier>(32));
    }
    block.slots.assign(threads, 0);
    block.smem.assign((smem + 7) / 8, ~uint64_t{0});
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([=] {
        threadIdx.x = t;
        blockIdx.x = b;
        LoomEmuCall(f, a, std::index_sequence_for<P...>());
      });
    }
    for (std::thread& thread : pool) thread.join();
  }
}

#endif  // LOOM_BACKENDS_CUDA_TESTING_EMULATION_H_

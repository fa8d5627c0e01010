#ifndef LOOM_SCHEDULER_PLAN_MEMORY_H_
#define LOOM_SCHEDULER_PLAN_MEMORY_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "ir/loop_ir.h"
#include "ir/schedule.h"

namespace loom {

// Offsets and block sizes in the arena are multiples of this many bytes.
inline constexpr int64_t kArenaAlignment = 64;

// Places every temporary (BufferKind::kTemp) that is not internal to a kernel
// at a byte offset in one arena (the plan-memory pass).
//
// A temporary is live from the first kernel that touches it (its first
// writer) through the last kernel that touches it (its last reader); a buffer
// may have several writers. Kernels are walked in order: at kernel k the
// buffers first touched there get storage, then those last touched there
// release theirs, so a buffer written by kernel k never shares storage with
// one that kernel k reads, except in place:
//
// A temporary d that dies at kernel k (read there, not written there) hands
// its storage to a temporary n that kernel k starts when n has one writer, a
// pointwise node of kernel k (no reduction) whose store index is injective
// over its loops, n has d's dtype and element count, and every load of d in
// the whole kernel is in that node, direct, at the very expression of the
// store index. Then each element of d is read, in the same loop iteration and
// only there, before the element of n at the same position is written.
//
// The kernels of a chain (Kernel::chain_length), which a backend may run
// interleaved, count as one kernel here, and write nothing in place.
//
// Other storage comes best-fit from freed blocks (ties: lowest offset),
// split on allocation and coalesced with free neighbours on release; a block
// freed at the arena's end shrinks it. Costs O(K + S + T log T) for K
// kernels, S body steps and T temporaries, with O(1) words per buffer.
//
// Errors (InternalError): a kernel naming a node out of range, or an
// internal buffer that is not a temporary or is touched by another kernel.
absl::StatusOr<MemoryPlan> PlanMemory(const LoopProgram& program, const Schedule& schedule);

// Bytes of a buffer's dense storage.
int64_t BufferBytes(const Buffer& buffer);

}  // namespace loom

#endif  // LOOM_SCHEDULER_PLAN_MEMORY_H_

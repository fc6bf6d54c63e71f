#include "host/adapters/daemon_heap.h"

#include <malloc.h>

namespace mesh::adapters {

void PrepareDaemonHeap() {
  mallopt(M_ARENA_MAX, 2);
  // Setting either freezes both (glibc then stops raising them).
  // 32 MiB is glibc's largest on 64-bit; a 32-bit one allows half.
  if (mallopt(M_MMAP_THRESHOLD, 32 << 20) == 0) mallopt(M_MMAP_THRESHOLD, 16 << 20);
  mallopt(M_TRIM_THRESHOLD, 128 << 10);
}

void ReleaseFreedHeap() { malloc_trim(0); }

}  // namespace mesh::adapters

#include "host/adapters/one_shot_heap.h"

#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>

namespace mesh::adapters {

void PrepareOneShotHeap() {
  constexpr uintptr_t kHugePage = uintptr_t{2} << 20;
  // Keep every allocation of the apply in one contiguous heap (a 24 MB
  // declaration text included) and grow it in one 64 MiB step: the advice
  // below covers what is there when it is given. Untouched pages of the
  // step cost nothing.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TOP_PAD, 64 << 20);
  // An allocation larger than what is left at the heap's top makes malloc
  // extend the break by it plus the pad; freed, it stays as the top chunk.
  void* probe = std::malloc(1 << 20);
  if (probe == nullptr) return;
  auto from = reinterpret_cast<uintptr_t>(probe);
  std::free(probe);
  auto to = reinterpret_cast<uintptr_t>(::sbrk(0));
  uintptr_t aligned = (from + kHugePage - 1) & ~(kHugePage - 1);
  // Advice only: a kernel without huge pages answers EINVAL, and the heap
  // works as before.
  if (to > aligned) {
    // NOLINTNEXTLINE(performance-no-int-to-ptr): an address rounded to a page
    ::madvise(reinterpret_cast<void*>(aligned), to - aligned, MADV_HUGEPAGE);
  }
}

}  // namespace mesh::adapters

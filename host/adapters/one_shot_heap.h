// The heap of a process that runs one apply and exits (`mesh-host apply`,
// `mesh-host plan`).
//
// Such a process builds its whole working set once — the record, the
// outcomes — and on a virtual machine each fresh 4 KiB page costs a fault of
// several microseconds: at 10,000 resources, faults were a third of a no-op
// apply (docs/performance.md). Backing the heap with transparent huge pages
// turns ~4,000 faults into a few hundred. The daemon does not call this: it
// lives for months and must stay small, and huge pages would pin up to 2 MiB
// per partly used page.
#pragma once

namespace mesh::adapters {

// Grows the malloc heap by one large step and advises the kernel to back it
// with huge pages (what glibc's `glibc.malloc.hugetlb=1` tunable does, which
// can only be set in the environment before the process starts). Harmless
// where transparent huge pages are off: the advice is ignored.
void PrepareOneShotHeap();

}  // namespace mesh::adapters

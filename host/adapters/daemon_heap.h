// The heap of the long-lived daemon, which is idle most of its life and
// should stay small between applies and between requests.
//
// glibc keeps the pages of freed memory while a live chunk sits above them;
// it never shrinks a second arena's top below its trim threshold, and it
// raises that threshold each time a large block is freed. Each /status or
// /metrics answer builds a document and its text and frees them: without
// the settings below the idle daemon kept their pages (about 1 MiB after a
// few scrapes of 1,000 series, 13 MiB after a burst of /status).
#pragma once

namespace mesh::adapters {

// Before any thread exists: two malloc arenas at most (one per thread would
// keep each thread's freed memory), and fixed mmap and trim thresholds, so
// a large block is always mapped on its own and unmapped when freed, and a
// free top of 128 KiB is always given back.
void PrepareDaemonHeap();

// malloc_trim: every whole free page of every arena is given back (after
// an apply, and when the HTTP side has no connection open).
void ReleaseFreedHeap();

}  // namespace mesh::adapters

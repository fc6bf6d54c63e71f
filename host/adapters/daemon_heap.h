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
// keep each thread's freed memory), and fixed thresholds: a free top of
// 128 KiB is always given back, in the second arena too, and a block is
// mapped on its own only from 32 MiB, so an apply's large vectors come
// from the heap and do not fault in fresh pages at every apply.
void PrepareDaemonHeap();

// malloc_trim: every whole free page of every arena is given back (the
// daemon's after every apply, and when the HTTP side has no connection
// open).
void ReleaseFreedHeap();

}  // namespace mesh::adapters

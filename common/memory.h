#pragma once
// What the server's allocator holds back. mimalloc keeps the pages a thread freed for that
// thread's next allocations: after a call that built a large answer (a read of megabytes), a
// worker keeps megabytes until it allocates as much again.

namespace byd {

// Gives back to the system what this thread's heap freed, where the allocator can (mimalloc,
// linked into the server; nothing under the C library's allocator and the sanitizers). Costs
// a walk of the heap: for threads that have nothing else to do.
void releaseFreedMemory();

}  // namespace byd

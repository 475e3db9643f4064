#include "common/memory.h"

// Weak: resolved when the binary links mimalloc (BYD_ALLOCATOR in CMakeLists.txt), null when not.
extern "C" void mi_collect(bool force) __attribute__((weak));

namespace byd {

void releaseFreedMemory() {
  if (mi_collect != nullptr) mi_collect(true);
}

}  // namespace byd

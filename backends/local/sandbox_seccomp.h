#pragma once
// The seccomp filter of every sandboxed process: system calls a sandboxed program has no
// business making (ptrace, mount, unshare, keyctl, bpf, io_uring, module loading, ...) and the
// terminal-injecting ioctls fail with EPERM.

#include <vector>

#include "common/result.h"

namespace byd {

// The filter as a BPF program (struct sock_filter[]), ready for SECCOMP_SET_MODE_FILTER.
Result<std::vector<char>> compileSeccompFilter();

}  // namespace byd

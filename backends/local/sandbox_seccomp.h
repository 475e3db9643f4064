#pragma once
// The seccomp filter of every sandboxed process: system calls a sandboxed program has no
// business making (ptrace, mount, unshare, keyctl, bpf, io_uring, module loading, ...), the
// terminal-injecting ioctls, and any setuid or setgid bit in a mode (chmod and kin, and the
// mode of a created file, directory or node) fail with EPERM.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace byd {

// The filter as a BPF program (struct sock_filter[]), ready for SECCOMP_SET_MODE_FILTER.
// The names of the system calls the filter refuses outright (for tests and documentation).
std::vector<std::string> refusedSyscalls();

// `refuse_setid` false leaves out the mode refusals (tests only: see SandboxOptions::without).
Result<std::vector<char>> compileSeccompFilter(bool refuse_setid = true);

// The same refusals as a container engine's seccomp profile (JSON, for SecurityOpt
// "seccomp=..."): every system call this libseccomp knows is allowed but the refused ones, the
// setuid/setgid modes and new user namespaces; anything else (clone3, openat2, calls newer than
// the list) is answered ENOSYS, so programs fall back to the calls the rules judge.
nlohmann::json containerSeccompProfile();

}  // namespace byd

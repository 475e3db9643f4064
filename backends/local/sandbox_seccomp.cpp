#include "backends/local/sandbox_seccomp.h"

#include <fcntl.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <iterator>
#include <string>

#include "common/unique_fd.h"

namespace byd {
namespace {

// System calls a sandboxed program has no business making; refused with EPERM.
constexpr const char* kDeniedSyscalls[] = {"ptrace",
                                           "process_vm_readv",
                                           "process_vm_writev",
                                           "pidfd_getfd",  // another process's descriptors
                                           "mount",
                                           "umount2",
                                           "open_tree",
                                           "move_mount",
                                           "fsopen",
                                           "fsconfig",
                                           "fsmount",
                                           "fspick",
                                           "mount_setattr",
                                           "unshare",
                                           "setns",
                                           "keyctl",
                                           "add_key",
                                           "request_key",
                                           "bpf",
                                           "perf_event_open",
                                           "kexec_load",
                                           "kexec_file_load",
                                           "init_module",
                                           "finit_module",
                                           "delete_module",
                                           "io_uring_setup",
                                           "io_uring_enter",
                                           "io_uring_register",
                                           "pivot_root",
                                           "chroot",
                                           "swapon",
                                           "swapoff",
                                           "reboot",
                                           "open_by_handle_at",
                                           "userfaultfd"};

// The calls that set a mode, or create a file, directory or node with one: which argument
// holds the mode and, for open, which holds the flags that say it creates (-1: always).
struct ModeCall {
  const char* name;
  int number;  // for a call newer than this libseccomp's table; else -1
  unsigned mode_arg;
  int flags_arg;
};
constexpr ModeCall kModeCalls[] = {{"chmod", -1, 1, -1},    {"fchmod", -1, 1, -1},
                                   {"fchmodat", -1, 2, -1}, {"fchmodat2", 452, 2, -1},  // Linux 6.6
                                   {"creat", -1, 1, -1},    {"mkdir", -1, 1, -1},
                                   {"mkdirat", -1, 2, -1},  {"mknod", -1, 1, -1},
                                   {"mknodat", -1, 2, -1},  {"open", -1, 2, 1},
                                   {"openat", -1, 3, 2}};
constexpr uint64_t kSetidBits[] = {S_ISUID, S_ISGID};
constexpr uint64_t kTmpfile = 020000000;  // __O_TMPFILE: creates a file as O_CREAT does
constexpr uint64_t kCreateFlags[] = {O_CREAT, kTmpfile};

int resolve(const ModeCall& call) {
  const int nr = seccomp_syscall_resolve_name(call.name);
  return nr == __NR_SCMP_ERROR ? call.number : nr;
}

// Refuses (EPERM) every way a process can give a file the setuid or setgid bit: a changed
// mode, or a created file's or directory's mode. openat2 hides its mode in a struct that
// seccomp cannot read, so it is answered ENOSYS and libc falls back to openat.
int refuseSetidModes(scmp_filter_ctx ctx) {
  const auto deny = SCMP_ACT_ERRNO(EPERM);
  int rc = 0;
  for (const ModeCall& call : kModeCalls) {
    const int nr = resolve(call);
    if (nr < 0) continue;
    for (const uint64_t bit : kSetidBits) {
      const scmp_arg_cmp mode = SCMP_CMP(call.mode_arg, SCMP_CMP_MASKED_EQ, bit, bit);
      if (call.flags_arg < 0) {
        rc |= seccomp_rule_add(ctx, deny, nr, 1, mode);
        continue;
      }
      for (const uint64_t creates : kCreateFlags) {
        const scmp_arg_cmp flags =
            SCMP_CMP(static_cast<unsigned>(call.flags_arg), SCMP_CMP_MASKED_EQ, creates, creates);
        rc |= seccomp_rule_add(ctx, deny, nr, 2, flags, mode);
      }
    }
  }
  rc |= seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(openat2), 0);
  return rc;
}

nlohmann::json argRule(unsigned index, uint64_t mask, uint64_t value) {
  return {{"index", index}, {"value", mask}, {"valueTwo", value}, {"op", "SCMP_CMP_MASKED_EQ"}};
}

nlohmann::json syscallRule(std::vector<std::string> names, int errno_ret,
                           nlohmann::json args = nlohmann::json::array()) {
  nlohmann::json rule = {{"names", std::move(names)},
                         {"action", errno_ret ? "SCMP_ACT_ERRNO" : "SCMP_ACT_ALLOW"},
                         {"args", std::move(args)}};
  if (errno_ret) rule["errnoRet"] = errno_ret;
  return rule;
}

}  // namespace

std::vector<std::string> refusedSyscalls() {
  return {std::begin(kDeniedSyscalls), std::end(kDeniedSyscalls)};
}

Result<std::vector<char>> compileSeccompFilter(bool refuse_setid) {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (ctx == nullptr) return internalError("seccomp_init failed");
  int rc = 0;
  for (const char* name : kDeniedSyscalls) {
    const int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR) continue;  // not on this architecture
    rc |= seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
  }
  // TIOCSTI pushes input into a terminal; TIOCLINUX can do the same on a console.
  for (unsigned long request : {static_cast<unsigned long>(TIOCSTI), 0x541CUL /*TIOCLINUX*/}) {
    rc |= seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
                           SCMP_A1(SCMP_CMP_MASKED_EQ, 0xFFFFFFFFu, request));
  }
  // New user namespaces through clone() would undo the filter's point.
  rc |= seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                         SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER));
  rc |= seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
  if (refuse_setid) rc |= refuseSetidModes(ctx);
  if (rc != 0) {
    seccomp_release(ctx);
    return internalError("building the seccomp filter failed");
  }
  const UniqueFd fd(memfd_create("byd-seccomp", MFD_CLOEXEC));
  std::vector<char> bpf;
  if (fd.valid() && seccomp_export_bpf(ctx, fd.get()) == 0) {
    const off_t size = lseek(fd.get(), 0, SEEK_END);
    bpf.resize(size > 0 ? size : 0);
    if (pread(fd.get(), bpf.data(), bpf.size(), 0) != static_cast<ssize_t>(bpf.size())) {
      bpf.clear();
    }
  }
  seccomp_release(ctx);
  if (bpf.empty()) return internalError("exporting the seccomp filter failed");
  return bpf;
}

nlohmann::json containerSeccompProfile() {
  // Conditional calls are left out of the plain list: each gets rules that allow what is
  // harmless and refuse the rest, with no overlap between the two.
  std::vector<std::string> conditional = {"clone", "clone3", "openat2", "unshare"};
  for (const ModeCall& call : kModeCalls) conditional.push_back(call.name);
  // The container's root mounts the file rules' masks, in a mount namespace of a command's own
  // (backends/docker/enter_masks.h): mount, umount2 and unshare(CLONE_NEWNS) are allowed here.
  // The code has no capability to make them, and its own filter refuses them besides.
  const std::vector<std::string> root_mounts = {"mount", "umount2"};
  auto listed = [](const auto& list, const std::string& name) {
    return std::find(std::begin(list), std::end(list), name) != std::end(list);
  };
  std::vector<std::string> allowed;
  for (int nr = 0; nr < 1024; ++nr) {
    char* name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);
    if (name == nullptr) continue;
    if ((!listed(kDeniedSyscalls, name) || listed(root_mounts, name)) &&
        !listed(conditional, name)) {
      allowed.push_back(name);
    }
    free(name);
  }
  std::vector<std::string> denied;
  for (const char* name : kDeniedSyscalls) {
    if (!listed(root_mounts, name) && !listed(conditional, name)) denied.push_back(name);
  }
  nlohmann::json rules = nlohmann::json::array();
  rules.push_back(syscallRule(std::move(allowed), 0));
  rules.push_back(syscallRule(std::move(denied), EPERM));
  const uint64_t other_than_newns = 0xffffffffULL & ~static_cast<uint64_t>(CLONE_NEWNS);
  rules.push_back(syscallRule({"unshare"}, 0, {argRule(0, other_than_newns, 0)}));
  rules.push_back(syscallRule({"clone"}, 0, {argRule(0, CLONE_NEWUSER, 0)}));
  rules.push_back(syscallRule({"clone"}, EPERM, {argRule(0, CLONE_NEWUSER, CLONE_NEWUSER)}));
  const uint64_t setid = S_ISUID | S_ISGID;
  for (const ModeCall& call : kModeCalls) {
    std::vector<std::string> name = {call.name};
    rules.push_back(syscallRule(name, 0, {argRule(call.mode_arg, setid, 0)}));
    if (call.flags_arg >= 0) {
      const auto flags = static_cast<unsigned>(call.flags_arg);
      rules.push_back(syscallRule(name, 0, {argRule(flags, O_CREAT | kTmpfile, 0)}));
    }
    for (const uint64_t bit : kSetidBits) {
      if (call.flags_arg < 0) {
        rules.push_back(syscallRule(name, EPERM, {argRule(call.mode_arg, bit, bit)}));
        continue;
      }
      for (const uint64_t creates : kCreateFlags) {
        rules.push_back(
            syscallRule(name, EPERM,
                        {argRule(static_cast<unsigned>(call.flags_arg), creates, creates),
                         argRule(call.mode_arg, bit, bit)}));
      }
    }
  }
  const uint32_t arch = seccomp_arch_native();
  const char* arch_name = arch == SCMP_ARCH_AARCH64 ? "SCMP_ARCH_AARCH64" : "SCMP_ARCH_X86_64";
  // What no rule allows (clone3, openat2, calls newer than the list) is answered ENOSYS, so a
  // program falls back to the older call, which the rules judge.
  return {{"defaultAction", "SCMP_ACT_ERRNO"},
          {"defaultErrnoRet", ENOSYS},
          {"architectures", {arch_name}},
          {"syscalls", std::move(rules)}};
}

}  // namespace byd

#include "backends/local/sandbox_seccomp.h"

#include <sched.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>

namespace byd {
namespace {

// System calls a sandboxed program has no business making; refused with EPERM.
constexpr const char* kDeniedSyscalls[] = {"ptrace",
                                           "process_vm_readv",
                                           "process_vm_writev",
                                           "mount",
                                           "umount2",
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

}  // namespace

Result<std::vector<char>> compileSeccompFilter() {
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
  if (rc != 0) {
    seccomp_release(ctx);
    return internalError("building the seccomp filter failed");
  }
  const int fd = memfd_create("byd-seccomp", MFD_CLOEXEC);
  std::vector<char> bpf;
  if (fd >= 0 && seccomp_export_bpf(ctx, fd) == 0) {
    const off_t size = lseek(fd, 0, SEEK_END);
    bpf.resize(size > 0 ? size : 0);
    if (pread(fd, bpf.data(), bpf.size(), 0) != static_cast<ssize_t>(bpf.size())) bpf.clear();
  }
  if (fd >= 0) close(fd);
  seccomp_release(ctx);
  if (bpf.empty()) return internalError("exporting the seccomp filter failed");
  return bpf;
}

}  // namespace byd

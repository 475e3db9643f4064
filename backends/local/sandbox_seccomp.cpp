#include "backends/local/sandbox_seccomp.h"

#include <fcntl.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
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

// Refuses (EPERM) every way a process can give a file the setuid or setgid bit: a changed
// mode, or a created file's or directory's mode. openat2 hides its mode in a struct that
// seccomp cannot read, so it is answered ENOSYS and libc falls back to openat.
int refuseSetidModes(scmp_filter_ctx ctx) {
  constexpr int kFchmodat2 = 452;           // Linux 6.6; newer than this libseccomp's table
  constexpr uint64_t kTmpfile = 020000000;  // __O_TMPFILE: creates a file as O_CREAT does
  const auto deny = SCMP_ACT_ERRNO(EPERM);
  int rc = 0;
  for (const uint64_t bit : {uint64_t{S_ISUID}, uint64_t{S_ISGID}}) {
    auto mode = [bit](unsigned arg) { return SCMP_CMP(arg, SCMP_CMP_MASKED_EQ, bit, bit); };
    // The mode is the argument after the path (or descriptor) and its directory, if any.
    rc |= seccomp_rule_add(ctx, deny, SCMP_SYS(chmod), 1, mode(1));
    rc |= seccomp_rule_add(ctx, deny, SCMP_SYS(fchmod), 1, mode(1));
    rc |= seccomp_rule_add(ctx, deny, SCMP_SYS(fchmodat), 1, mode(2));
    rc |= seccomp_rule_add(ctx, deny, kFchmodat2, 1, mode(2));
    rc |= seccomp_rule_add(ctx, deny, SCMP_SYS(creat), 1, mode(1));
    rc |= seccomp_rule_add(ctx, deny, SCMP_SYS(mkdir), 1, mode(1));
    rc |= seccomp_rule_add(ctx, deny, SCMP_SYS(mkdirat), 1, mode(2));
    rc |= seccomp_rule_add(ctx, deny, SCMP_SYS(mknod), 1, mode(1));
    rc |= seccomp_rule_add(ctx, deny, SCMP_SYS(mknodat), 1, mode(2));
    for (const uint64_t creates : {uint64_t{O_CREAT}, kTmpfile}) {
      auto flags = [creates](unsigned arg) {
        return SCMP_CMP(arg, SCMP_CMP_MASKED_EQ, creates, creates);
      };
      rc |= seccomp_rule_add(ctx, deny, SCMP_SYS(open), 2, flags(1), mode(2));
      rc |= seccomp_rule_add(ctx, deny, SCMP_SYS(openat), 2, flags(2), mode(3));
    }
  }
  rc |= seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(openat2), 0);
  return rc;
}

}  // namespace

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

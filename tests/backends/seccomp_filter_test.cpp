// The seccomp layer alone: each refusal the README promises is made from a child process with
// the filter installed and from one without it. Run as root (as CI does), the unfiltered child
// has every capability, so no other layer stands in: the call must fail in the filter's way with
// it and otherwise without, which shows the filter is what refuses it.

#include "backends/local/sandbox_seccomp.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/test_util.h"

namespace byd {
namespace {

struct Probe {
  std::string name;                                  // the system call (or call and mode) refused
  int refused_errno;                                 // what the filter answers
  std::function<long(const std::string& dir)> call;  // -1 with errno, as syscall() returns
};

const char* kMissing = "/nonexistent-byd-probe";

std::vector<Probe> probes() {
  auto path = [](const std::string& dir, const char* name) { return dir + "/" + name; };
  std::vector<Probe> p = {
      {"ptrace", EPERM, [](auto&) { return syscall(SYS_ptrace, PTRACE_TRACEME, 0, 0, 0); }},
      {"process_vm_readv", EPERM,
       [](auto&) { return syscall(SYS_process_vm_readv, getpid(), nullptr, 0, nullptr, 0, 0); }},
      {"process_vm_writev", EPERM,
       [](auto&) { return syscall(SYS_process_vm_writev, getpid(), nullptr, 0, nullptr, 0, 0); }},
      {"pidfd_getfd", EPERM, [](auto&) { return syscall(SYS_pidfd_getfd, -1, 0, 0); }},
      {"mount", EPERM,
       [](auto&) { return syscall(SYS_mount, nullptr, kMissing, nullptr, MS_REMOUNT, nullptr); }},
      {"umount2", EPERM, [](auto&) { return syscall(SYS_umount2, kMissing, 0); }},
      // The mount API of file descriptors: each given what the kernel refuses otherwise.
      {"open_tree", EPERM, [](auto&) { return syscall(SYS_open_tree, AT_FDCWD, kMissing, 0); }},
      {"move_mount", EPERM,
       [](auto&) { return syscall(SYS_move_mount, -1, kMissing, -1, kMissing, 0); }},
      {"fsopen", EPERM, [](auto&) { return syscall(SYS_fsopen, "no-such-fs", 0); }},
      {"fsconfig", EPERM, [](auto&) { return syscall(SYS_fsconfig, -1, 0, nullptr, nullptr, 0); }},
      {"fsmount", EPERM, [](auto&) { return syscall(SYS_fsmount, -1, 0, 0); }},
      {"fspick", EPERM, [](auto&) { return syscall(SYS_fspick, AT_FDCWD, kMissing, 0); }},
      {"mount_setattr", EPERM,
       [](auto&) { return syscall(SYS_mount_setattr, AT_FDCWD, kMissing, 0, nullptr, 0); }},
      {"unshare", EPERM, [](auto&) { return syscall(SYS_unshare, 0); }},
      {"setns", EPERM, [](auto&) { return syscall(SYS_setns, -1, 0); }},
      {"keyctl", EPERM, [](auto&) { return syscall(SYS_keyctl, 0 /*GET_KEYRING_ID*/, -1, 0); }},
      {"add_key", EPERM,
       [](auto&) { return syscall(SYS_add_key, nullptr, nullptr, nullptr, 0, 0); }},
      {"request_key", EPERM,
       [](auto&) { return syscall(SYS_request_key, nullptr, nullptr, nullptr, 0); }},
      {"bpf", EPERM, [](auto&) { return syscall(SYS_bpf, -1, nullptr, 0); }},
      {"perf_event_open", EPERM,
       [](auto&) { return syscall(SYS_perf_event_open, nullptr, 0, -1, -1, 0); }},
      {"kexec_load", EPERM,
       [](auto&) { return syscall(SYS_kexec_load, 0, 0, nullptr, 0xFFFF0000UL); }},
      {"kexec_file_load", EPERM,
       [](auto&) { return syscall(SYS_kexec_file_load, -1, -1, 0, nullptr, 0xFFFF0000UL); }},
      {"init_module", EPERM, [](auto&) { return syscall(SYS_init_module, nullptr, 0, ""); }},
      {"finit_module", EPERM, [](auto&) { return syscall(SYS_finit_module, -1, "", 0); }},
      {"delete_module", EPERM, [](auto&) { return syscall(SYS_delete_module, nullptr, 0); }},
      {"io_uring_setup", EPERM, [](auto&) { return syscall(SYS_io_uring_setup, 0, nullptr); }},
      {"io_uring_enter", EPERM,
       [](auto&) { return syscall(SYS_io_uring_enter, -1, 0, 0, 0, nullptr, 0); }},
      {"io_uring_register", EPERM,
       [](auto&) { return syscall(SYS_io_uring_register, -1, 0, nullptr, 0); }},
      {"pivot_root", EPERM, [](auto&) { return syscall(SYS_pivot_root, nullptr, nullptr); }},
      {"chroot", EPERM, [](auto&) { return syscall(SYS_chroot, kMissing); }},
      {"swapon", EPERM, [](auto&) { return syscall(SYS_swapon, kMissing, 0); }},
      {"swapoff", EPERM, [](auto&) { return syscall(SYS_swapoff, kMissing); }},
      // A wrong magic number: the kernel refuses it before anything else.
      {"reboot", EPERM, [](auto&) { return syscall(SYS_reboot, 0, 0, 0, nullptr); }},
      {"open_by_handle_at", EPERM,
       [](auto&) { return syscall(SYS_open_by_handle_at, -1, nullptr, 0); }},
      {"userfaultfd", EPERM, [](auto&) { return syscall(SYS_userfaultfd, 0xFFFF); }},
      {"clone(CLONE_NEWUSER)", EPERM,
       [](auto&) {
         const long pid = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
         if (pid == 0) _exit(0);
         if (pid > 0) waitpid(static_cast<pid_t>(pid), nullptr, 0);
         return pid > 0 ? 0L : pid;
       }},
      {"clone3", ENOSYS, [](auto&) { return syscall(SYS_clone3, nullptr, 0); }},
      {"openat2", ENOSYS,
       [](auto&) { return syscall(SYS_openat2, AT_FDCWD, nullptr, nullptr, 0); }},
      {"ioctl(TIOCSTI)", EPERM,
       [](auto&) {
         char c = 'x';
         return syscall(SYS_ioctl, STDIN_FILENO, TIOCSTI, &c);
       }},
      {"ioctl(TIOCLINUX)", EPERM,
       [](auto&) {
         char c = 0;
         return syscall(SYS_ioctl, STDIN_FILENO, 0x541C, &c);
       }},
  };
  // Every way of giving a file the setuid or setgid bit.
  auto with_file = [path](const char* name, std::function<long(const std::string&)> f) {
    return [path, name, f](const std::string& dir) {
      const std::string file = path(dir, name);
      close(open(file.c_str(), O_CREAT | O_WRONLY, 0644));
      return f(file);
    };
  };
  const std::vector<Probe> modes = {
      {"chmod 4755", EPERM,
       with_file("a", [](auto& f) { return syscall(SYS_chmod, f.c_str(), 04755); })},
      {"chmod 2755", EPERM,
       with_file("b", [](auto& f) { return syscall(SYS_chmod, f.c_str(), 02755); })},
      {"fchmod 4755", EPERM,
       with_file("c",
                 [](auto& f) {
                   const int fd = open(f.c_str(), O_RDONLY);
                   const long r = syscall(SYS_fchmod, fd, 04755);
                   const int e = errno;
                   close(fd);
                   errno = e;
                   return r;
                 })},
      {"fchmodat 4755", EPERM,
       with_file("d", [](auto& f) { return syscall(SYS_fchmodat, AT_FDCWD, f.c_str(), 04755); })},
      {"fchmodat2 4755", EPERM,
       with_file("e", [](auto& f) { return syscall(452, AT_FDCWD, f.c_str(), 04755, 0); })},
      {"creat 4755", EPERM,
       [path](auto& dir) { return syscall(SYS_creat, path(dir, "f").c_str(), 04755); }},
      {"open O_CREAT 4755", EPERM,
       [path](auto& dir) {
         return syscall(SYS_open, path(dir, "g").c_str(), O_CREAT | O_WRONLY, 04755);
       }},
      {"openat O_CREAT 2755", EPERM,
       [path](auto& dir) {
         return syscall(SYS_openat, AT_FDCWD, path(dir, "h").c_str(), O_CREAT | O_WRONLY, 02755);
       }},
      {"openat O_TMPFILE 4755", EPERM,
       [](auto& dir) {
         return syscall(SYS_openat, AT_FDCWD, dir.c_str(), O_TMPFILE | O_WRONLY, 04755);
       }},
      {"mkdir 2755", EPERM,
       [path](auto& dir) { return syscall(SYS_mkdir, path(dir, "i").c_str(), 02755); }},
      {"mkdirat 4755", EPERM,
       [path](auto& dir) { return syscall(SYS_mkdirat, AT_FDCWD, path(dir, "j").c_str(), 04755); }},
      {"mknod 4755", EPERM,
       [path](auto& dir) {
         return syscall(SYS_mknod, path(dir, "k").c_str(), S_IFREG | 04755, 0);
       }},
      {"mknodat 2755", EPERM,
       [path](auto& dir) {
         return syscall(SYS_mknodat, AT_FDCWD, path(dir, "l").c_str(), S_IFREG | 02755, 0);
       }},
  };
  p.insert(p.end(), modes.begin(), modes.end());
  return p;
}

// errno of `probe` in a child (0 when the call succeeded), with the filter or without.
int run(const Probe& probe, const std::vector<char>* filter, const std::string& dir) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    if (filter != nullptr) {
      sock_fprog prog{static_cast<unsigned short>(filter->size() / sizeof(sock_filter)),
                      reinterpret_cast<sock_filter*>(const_cast<char*>(filter->data()))};
      if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
          prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
        _exit(2);
      }
    }
    errno = 0;
    const long r = probe.call(dir);
    const int e = r < 0 ? errno : 0;
    [[maybe_unused]] ssize_t n = write(fds[1], &e, sizeof e);
    _exit(0);
  }
  close(fds[1]);
  int e = -1;
  if (read(fds[0], &e, sizeof e) != sizeof e) e = -1;
  close(fds[0]);
  waitpid(pid, nullptr, 0);
  return e;
}

TEST(SeccompFilter, EveryRefusedCallIsProbed) {
  std::set<std::string> probed;
  for (const Probe& p : probes()) probed.insert(p.name);
  for (const std::string& name : refusedSyscalls()) {
    EXPECT_TRUE(probed.count(name)) << name << " is refused but no test makes the call";
  }
}

TEST(SeccompFilter, EachRefusalIsTheFiltersOwn) {
  auto filter = compileSeccompFilter();
  ASSERT_TRUE(filter.ok()) << filter.status().message();
  const bool all_capabilities = geteuid() == 0;
  for (const Probe& probe : probes()) {
    testing::TempDir with_dir, without_dir;
    EXPECT_EQ(run(probe, &*filter, with_dir.str()), probe.refused_errno) << probe.name;
    if (!all_capabilities) continue;  // other layers (no capabilities) would answer alike
    const int unfiltered = run(probe, nullptr, without_dir.str());
    EXPECT_NE(unfiltered, probe.refused_errno)
        << probe.name << ": refused without the filter too, so this test cannot show the filter";
  }
}

TEST(SeccompFilter, WithoutTheModeRefusalsTheModesAreSet) {
  // The test switch "seccomp-setid" takes these rules out: then the same calls succeed.
  auto filter = compileSeccompFilter(/*refuse_setid=*/false);
  ASSERT_TRUE(filter.ok());
  if (geteuid() != 0) GTEST_SKIP() << "mknod of a regular file needs no privilege, but the rest";
  for (const Probe& probe : probes()) {
    if (probe.name.find(' ') == std::string::npos) continue;  // not a mode
    testing::TempDir dir;
    EXPECT_EQ(run(probe, &*filter, dir.str()), 0) << probe.name;
  }
}

}  // namespace
}  // namespace byd

// The profile Docker's containers get: what the container's root needs for the file rules'
// masks is allowed (mount, umount2, and unshare of a mount namespace alone), the rest of what
// the sandbox refuses stays refused.
TEST(ContainerSeccompProfile, AllowsRootsMasksAndNothingMore) {
  const nlohmann::json profile = byd::containerSeccompProfile();
  auto actionsOf = [&](const std::string& name) {
    std::vector<nlohmann::json> found;
    for (const auto& rule : profile["syscalls"]) {
      for (const auto& n : rule["names"]) {
        if (n == name) found.push_back(rule);
      }
    }
    return found;
  };
  for (const char* name : {"mount", "umount2"}) {
    const auto rules = actionsOf(name);
    ASSERT_EQ(rules.size(), 1u) << name;
    EXPECT_EQ(rules[0]["action"], "SCMP_ACT_ALLOW") << name;
    EXPECT_TRUE(rules[0]["args"].empty()) << name;
  }
  const auto unshare = actionsOf("unshare");
  ASSERT_EQ(unshare.size(), 1u);
  EXPECT_EQ(unshare[0]["action"], "SCMP_ACT_ALLOW");
  ASSERT_EQ(unshare[0]["args"].size(), 1u);
  const auto& arg = unshare[0]["args"][0];
  EXPECT_EQ(arg["op"], "SCMP_CMP_MASKED_EQ");
  EXPECT_EQ(arg["valueTwo"], 0u);
  // Every namespace flag but CLONE_NEWNS is in the mask: those fall to the default refusal.
  const uint64_t mask = arg["value"].get<uint64_t>();
  EXPECT_EQ(mask & CLONE_NEWNS, 0u);
  for (uint64_t flag :
       {CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWCGROUP}) {
    EXPECT_EQ(mask & flag, flag) << flag;
  }
  EXPECT_EQ(profile["defaultAction"], "SCMP_ACT_ERRNO");
  for (const char* name : {"ptrace", "keyctl", "open_tree", "move_mount", "setns", "bpf"}) {
    const auto rules = actionsOf(name);
    ASSERT_EQ(rules.size(), 1u) << name;
    EXPECT_EQ(rules[0]["action"], "SCMP_ACT_ERRNO") << name;
    EXPECT_EQ(rules[0]["errnoRet"], EPERM) << name;
  }
}

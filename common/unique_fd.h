#pragma once
// UniqueFd: owns a file descriptor and closes it on destruction, so that no early return leaks
// one. The project's descriptors are held in it everywhere but between fork and exec.

#include <fcntl.h>
#include <unistd.h>

namespace byd {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { reset(); }
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  // Gives the descriptor up without closing it.
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }
  // Closes the descriptor held (close() is not retried on EINTR: on Linux the descriptor is
  // gone either way) and holds `fd`.
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

// A pipe's two ends.
struct PipeFds {
  UniqueFd read, write;
};
// pipe2(2) with `flags` (close-on-exec by default); false, with errno, when it fails.
inline bool makePipe(PipeFds& p, int flags = O_CLOEXEC) {
  int fds[2];
  if (pipe2(fds, flags) != 0) return false;
  p.read.reset(fds[0]);
  p.write.reset(fds[1]);
  return true;
}

}  // namespace byd

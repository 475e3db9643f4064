#pragma once
// Helpers shared by the unit tests: scratch directories that clean up after themselves, and a
// listener that stands for the internet without any packet leaving the machine.

#include <filesystem>
#include <string>

namespace byd::testing {

// A fresh directory under $TMPDIR (or /tmp), removed with its contents on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::string str() const { return path_.string(); }
  // Writes `content` to `rel` below the directory, creating parents.
  void write(const std::string& rel, const std::string& content) const;
  std::string read(const std::string& rel) const;

 private:
  std::filesystem::path path_;
};

// A TCP listener on a loopback alias of the host (127.0.0.2 stands for the internet): a
// sandbox that reaches it has a way out; one that is isolated finds its own loopback there.
class LoopbackListener {
 public:
  explicit LoopbackListener(const char* address = "127.0.0.2");
  ~LoopbackListener();
  LoopbackListener(const LoopbackListener&) = delete;
  LoopbackListener& operator=(const LoopbackListener&) = delete;

  int port() const { return port_; }
  // Whether anyone has connected so far.
  bool reached() const;

 private:
  int fd_ = -1;
  int port_ = 0;
};

}  // namespace byd::testing

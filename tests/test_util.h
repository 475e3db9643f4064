#pragma once
// Helpers shared by the unit tests: scratch directories that clean up after themselves.

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

}  // namespace byd::testing

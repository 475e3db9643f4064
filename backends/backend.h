#pragma once
// The interfaces of a workspace: FileSystem, the file operations the file tools are built from,
// and Executor, which runs commands and Python (execute and run_python). A Backend is a file
// system that may also offer an executor (State does not; Local and Docker do); the tools that
// exist follow from that, in one place (mcp::toolOffered). Paths passed in are the keys
// returned by normalize() ("" is the workspace root, "src/a.py" is
// relative to it, an absolute key names a path inside an extra allowed directory). Backends
// know nothing of MCP, tools or permissions. Implementations are safe to call from several
// threads at once.

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backends/file_view.h"
#include "common/cancel.h"
#include "common/result.h"
#include "common/supervisor.h"

namespace byd {

namespace egress {
class NetworkPolicy;
}

enum class FileType { kFile, kDir, kSymlink, kOther };
std::string_view fileTypeName(FileType type);

struct FileInfo {
  std::string name;  // base name (list) or key (stat)
  FileType type = FileType::kOther;
  uint64_t size = 0;
  int64_t mtime_ns = 0;  // nanoseconds since the Unix epoch
  uint32_t mode = 0;     // permission bits (07777)
  // Which file this is, and how many names it has (hard links); 0 and 1 where the backend has
  // no such notion.
  uint64_t dev = 0, ino = 0;
  uint64_t nlink = 1;
};

enum class WriteMode { kOverwrite, kCreate, kAppend };

struct WriteOutcome {
  bool created = false;  // the file did not exist before
  uint64_t size = 0;     // file size after the write
};

struct MoveOutcome {
  FileType type = FileType::kFile;  // what was moved (a symlink is moved, not followed)
  bool replaced = false;            // something of the destination's name was replaced
};

struct RemoveOutcome {
  FileType type = FileType::kFile;  // what `key` was
  uint64_t files = 0;               // files, symlinks and others removed
  uint64_t dirs = 0;                // directories removed, `key` included
};

// A shell command to run in the workspace.
struct ExecRequest {
  std::string command;
  std::string cwd;                                       // key of a directory
  std::vector<std::pair<std::string, std::string>> env;  // added to a small clean environment
  std::string stdin_data;
  std::chrono::milliseconds timeout{120000};
  size_t max_output = 100 * 1024;  // per stream
  // Called about once a second with the latest complete output line.
  std::function<void(std::string_view line)> on_progress;
  // What the command may do to the workspace's files, enforced where it runs.
  FileView view;
  // What it may reach over the network (null: nothing).
  std::shared_ptr<egress::NetworkPolicy> network;
};

struct ExecResult {
  // Each stream whole, or when it was cut, its head here and its end in *_end (see Captured).
  std::string stdout_data, stderr_data;
  std::string stdout_end, stderr_end;
  uint64_t stdout_bytes = 0, stderr_bytes = 0;  // all the command wrote
  bool stdout_truncated = false, stderr_truncated = false;
  int exit_code = -1;  // as a shell reports it: 128+N when signal N ended the command
  bool timed_out = false;
  bool cancelled = false;
  double duration_ms = 0;
};
// What a supervised command left, as a result.
ExecResult execResultFrom(Captured captured, int exit_code, double duration_ms);

// Code for a stateful Python session.
struct PythonRequest {
  std::string session = "default";
  std::string code;
  bool reset = false;
  // In a fresh interpreter state of its own, forked from a template kernel: no session, and
  // nothing left behind (see PythonSessions::runIsolated). Then `stdin_data` is its stdin and
  // `memory_bytes` (0: none) caps its address space.
  bool isolated = false;
  // Non-empty: `session` starts as a fork of this session, its state a copy of that one's now
  // (see PythonSessions::fork), and then runs `code`.
  std::string fork_from;
  std::string stdin_data;
  uint64_t memory_bytes = 0;
  std::chrono::milliseconds timeout{30000};
  size_t max_output = 100 * 1024;
  // Called with a line about what is being made ready before the cell can run (an image
  // being built), at most once a second; empty when the client did not ask for progress.
  std::function<void(std::string_view line)> on_progress;
  // What the cell may do to the workspace's files, enforced where it runs.
  FileView view;
  // What it may reach over the network (null: nothing).
  std::shared_ptr<egress::NetworkPolicy> network;
};

struct PythonResult {
  std::string stdout_data, stderr_data;
  std::optional<std::string> result;  // repr of a trailing expression
  bool has_error = false;
  std::string error_type, error_message, traceback;
  std::vector<std::string> png_images;  // base64
  bool truncated = false;
  bool timed_out = false;
  bool state_lost = false;   // the kernel was killed; the session starts afresh next time
  bool new_session = false;  // this call started (or restarted) the session
  bool revived = false;      // the session's kernel had died since its last call
  std::string forked_from;   // the session this one was forked from, by this call
  double duration_ms = 0;
  // A ModuleNotFoundError's module ("sklearn.svm"), for installing it on demand.
  std::string missing_module;
  // What was installed on demand before the cell ran for this result ("scikit-learn 1.5.2").
  std::vector<std::string> installed;
  // Why the missing module's distribution could not be installed (denied, failed to build).
  std::string install_error;
};

class Executor;

class FileSystem {
 public:
  virtual ~FileSystem() = default;

  // "local" or "state".
  virtual std::string_view kind() const = 0;
  // The workspace root as the user sees it (an absolute path).
  virtual std::string root() const = 0;
  // Maps a user path (workspace-relative, or absolute inside the workspace) to a key. Refuses
  // NUL bytes, overlong paths and anything that leaves the workspace.
  virtual Result<std::string> normalize(std::string_view user_path) const = 0;

  // Follows symlinks that stay inside the workspace.
  virtual Result<FileInfo> stat(const std::string& key) const = 0;
  // The key of what `key` names once symlinks are followed ("notes.txt" -> ".env"), so rules
  // can judge the file really reached. `key` itself when it is no link or does not exist.
  virtual Result<std::string> realKey(const std::string& key) const { return key; }
  // Entries of a directory (symlinks reported as kSymlink, not followed), in no set order.
  virtual Result<std::vector<FileInfo>> list(const std::string& key) const = 0;
  // The same entries one at a time, without holding them all: a directory may have millions.
  // `visit` returns false to stop. The default goes through list().
  virtual Status listEach(const std::string& key,
                          const std::function<bool(const FileInfo&)>& visit) const;
  // The same, but the rest of an entry (size, times, mode, identity) is read only where
  // `detail(name, type)` asks for it; elsewhere those may be 0 (or known already: a listing
  // Local holds in memory has them all). A walk that shows a few entries of many costs a stat
  // for those alone where the backend knows types without one (Local: getdents' d_type). The
  // default reads all of every entry.
  using Detail = std::function<bool(std::string_view name, FileType type)>;
  virtual Status listTyped(const std::string& key, const Detail& detail,
                           const std::function<bool(const FileInfo&)>& visit) const {
    (void)detail;
    return listEach(key, visit);
  }
  // listTyped, provided no symbolic link lies on the way to `key`, checked by the kernel as it
  // opens the directory: the listing is then of the directory its key names, so a caller that
  // judges paths by their names need not follow links first. nullopt, having listed nothing,
  // where a link lies on the way, on any failure to open, or where the backend cannot tell.
  virtual std::optional<Status> listTypedDirect(
      const std::string& key, const Detail& detail,
      const std::function<bool(const FileInfo&)>& visit) const {
    (void)key;
    (void)detail;
    (void)visit;
    return std::nullopt;
  }
  // Up to `max_bytes` bytes of a regular file, starting at byte `offset`.
  virtual Result<std::string> read(const std::string& key, uint64_t offset,
                                   uint64_t max_bytes) const = 0;
  // Feeds a regular file to `sink` in chunks of at most `chunk_bytes`, from the start, until
  // the end of the file or until `sink` returns false. The view is valid only during the call.
  // The default reads chunk by chunk through read(); backends override it to open once.
  virtual Status readStream(const std::string& key, size_t chunk_bytes,
                            const std::function<bool(std::string_view)>& sink) const;
  // Atomically replaces (or creates, or appends to) a regular file; creates parent directories;
  // keeps an existing file's permission bits.
  virtual Result<WriteOutcome> write(const std::string& key, std::string_view data,
                                     WriteMode mode) = 0;
  // Makes directory `key` and any missing parents: true when it made it, false when it was a
  // directory already; an error when something else has its name.
  virtual Result<bool> makeDir(const std::string& key) = 0;
  // Renames `from` to `to` in one step, creating `to`'s missing parents; a symlink is moved,
  // not what it points at. Without `replace` it fails when `to` exists; with it, a file
  // replaces a file and a directory an empty directory, never one kind the other.
  virtual Result<MoveOutcome> move(const std::string& from, const std::string& to,
                                   bool replace) = 0;
  // Deletes a file or a symlink (never what it points at), an empty directory, or with
  // `recursive` a directory and everything below it (never following a symlink out of it).
  virtual Result<RemoveOutcome> remove(const std::string& key, bool recursive) = 0;
};

// Runs code in the workspace.
class Executor {
 public:
  virtual ~Executor() = default;
  // Runs a command; a non-zero exit is a result, not an error. Errors: the command could not
  // be started (no sandbox, bad cwd). Cancellation kills it and sets `cancelled`.
  virtual Result<ExecResult> execute(const ExecRequest& request, const CancelToken& cancel) = 0;
  // Runs Python code in a named, persistent session.
  virtual Result<PythonResult> runPython(const PythonRequest& request,
                                         const CancelToken& cancel) = 0;
  // False when runPython() can only refuse (Local whose sandbox cannot be had): run_python is
  // then not offered.
  virtual bool runsPython() const { return true; }
  // Installs Python distributions (as the package index names them) where run_python and
  // commands import from, and says what was installed ("name version"; nothing when all were
  // there). An error names what could not be installed and why.
  virtual Result<std::vector<std::string>> installPackages(const std::vector<std::string>& names,
                                                           const CancelToken& cancel) {
    (void)names;
    (void)cancel;
    return unimplemented("this backend installs no packages");
  }
  virtual bool installsPackages() const { return false; }
  // Starts now what a session's first command and first run_python would start (the
  // sandbox's helper and a spare kernel; the container, its command runner and a spare
  // kernel), so that they find it ready: a session kept ready ahead (--session-pool). Blocks
  // until the sandbox or container is up; what fails is left for the first call to report.
  virtual void prepare() {}
};

// What a workspace's processes use now, and their ceilings where there are any.
struct ResourceUse {
  uint64_t memory_bytes = 0;  // resident
  std::optional<uint64_t> memory_limit;
  double cpu_seconds = 0;           // since they started
  std::optional<double> cpu_limit;  // in cores
};

// A workspace: its files, and the executor that runs code in it if it has one.
class Backend : public FileSystem {
 public:
  // Null when the backend runs no code (State; Local without a sandbox): execute and
  // run_python are then not offered.
  virtual Executor* executor() { return nullptr; }
  // What its processes use (for the operator's page); none while nothing of it runs. May ask
  // an engine: not for hot paths.
  virtual std::optional<ResourceUse> resourceUse() { return std::nullopt; }
};

// Joins a directory key and an entry name into the entry's key.
std::string joinKey(std::string_view dir, std::string_view name);

// Lexical clean-up shared by the backends: rejects NUL and paths longer than PATH_MAX, drops
// "." and empty components, resolves ".." (an escape above the top is an error). The result
// has no leading or trailing slash; an absolute input keeps its leading slash.
Result<std::string> lexicalNormalize(std::string_view path);

// If `path` (lexically normal, absolute) lies at or below `dir` (lexically normal, absolute),
// returns the remainder ("" for `dir` itself); otherwise false. Compares whole components, so
// /ws_evil is not inside /ws.
bool stripDirPrefix(std::string_view path, std::string_view dir, std::string* rest);

}  // namespace byd

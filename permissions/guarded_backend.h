#pragma once
// GuardedBackend decorates any Backend with a Guard for the duration of one tool call. The
// tool's main target is checked (and, for "ask", approved) where the tool names it: in
// normalize(). Every later access is checked again without asking: listings drop entries
// whose reading is denied (and count them), and reads or writes of a denied path fail. A tool
// holds only this object, so it cannot reach the backend around the rules. One instance per
// call; the counter is atomic because grep lists and reads from several threads.

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "backends/backend.h"
#include "permissions/denied_files.h"
#include "permissions/guard.h"
#include "permissions/network_rules.h"

namespace byd::permissions {

class GuardedBackend : public Backend, private Executor {
 public:
  // `approver` may be null (then "ask" falls back as the Guard says); so may `denied_files`
  // (then a hard link is judged by its own name only).
  GuardedBackend(Backend& inner, const Guard& guard, Operation op, Approver* approver,
                 DeniedFiles* denied_files = nullptr)
      : inner_(inner), guard_(guard), op_(op), approver_(approver), denied_files_(denied_files) {}

  std::string_view kind() const override { return inner_.kind(); }
  std::string root() const override { return inner_.root(); }
  Result<std::string> normalize(std::string_view user_path) const override;
  Result<FileInfo> stat(const std::string& key) const override;
  Result<std::vector<FileInfo>> list(const std::string& key) const override;
  Status listEach(const std::string& key,
                  const std::function<bool(const FileInfo&)>& visit) const override;
  Status listTyped(const std::string& key, const Detail& detail,
                   const std::function<bool(const FileInfo&)>& visit) const override;
  Result<std::string> read(const std::string& key, uint64_t offset,
                           uint64_t max_bytes) const override;
  Status readStream(const std::string& key, size_t chunk_bytes,
                    const std::function<bool(std::string_view)>& sink) const override;
  Result<WriteOutcome> write(const std::string& key, std::string_view data,
                             WriteMode mode) override;
  Result<bool> makeDir(const std::string& key) override;
  // Both paths are judged together (one question when either asks); a directory's entries,
  // where they are and where they would be, must not be ones the rules deny.
  Result<MoveOutcome> move(const std::string& from, const std::string& to, bool replace) override;
  // A directory's entries must not be ones the rules deny.
  Result<RemoveOutcome> remove(const std::string& key, bool recursive) override;
  // An executor when the inner backend has one: its commands and code judged first.
  Executor* executor() override { return inner_.executor() != nullptr ? this : nullptr; }

  // Entries that listings dropped so far.
  size_t hiddenCount() const { return hidden_.load(); }

 private:
  // What normalize() found for its target: the real key, and for read whether the read rules
  // passed it. It serves the next check of that key only (the tool's first read of it, which
  // would ask the same); later checks look again, as the file may be swapped meanwhile.
  struct Look {
    std::string key, real;
    bool read_passed = false;
  };
  // The command line is the target: checked (and asked about) here.
  Result<ExecResult> execute(const ExecRequest& request, const CancelToken& cancel) override;
  // The code is the target.
  Result<PythonResult> runPython(const PythonRequest& request, const CancelToken& cancel) override;
  // Runs a judged call's `request` through `run` with the file view and the network rules
  // of a call that was `approved` (or not); the network rules ask nobody once it has ended.
  template <typename Request, typename Run>
  auto runJudged(const Request& request, bool approved, const char* tool, Run run) {
    if (denied_files_ != nullptr) denied_files_->invalidate();  // it may make links
    Request viewed = request;
    viewed.view = {guard_.fileRules(), approved};
    const auto network = std::make_shared<NetworkRules>(guard_, approver_, tool);
    viewed.network = network;
    auto result = run(viewed);
    network->detach();
    return result;
  }
  std::optional<Look> takeLook(const std::string& key) const;
  Status checkRead(const std::string& key) const;
  // The file `real` reaches must not be another name (a hard link) of one the read rules deny.
  Status checkLinks(const std::string& key, const std::string& real) const;
  // A path other than the approved main target must at least not be denied.
  Status checkNotDenied(const std::string& key) const;
  // Every entry below directory `key` (and, for a move, where it would land below `to`) must
  // not be one the rules deny for this operation, and a move must not bring what the rules
  // keep from reading where it could be read. When an entry's rule asks and the whole was not
  // `asked` about, the user is asked once.
  Status checkTree(const std::string& key, const std::string* to, bool asked) const;

  Backend& inner_;
  const Guard& guard_;
  const Operation op_;
  Approver* const approver_;
  DeniedFiles* const denied_files_;
  mutable std::atomic<size_t> hidden_{0};
  mutable std::mutex look_mu_;
  mutable std::optional<Look> look_;
};

}  // namespace byd::permissions

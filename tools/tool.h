#pragma once
// What a tool is: its spec (name, title, description, annotations, schema files) and a handler
// that turns validated arguments into a ToolOutput using only the Backend. Tools know the shape
// of a tool result but never JSON-RPC, bytes or sockets. Handlers are called concurrently from
// worker threads; they keep no state of their own.

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "backends/backend.h"
#include "common/cancel.h"
#include "common/result.h"

namespace byd {

using nlohmann::json;

// The limits of tool results and commands (settings of settings.cpp's table).
struct Limits {
  uint64_t max_text_bytes = 100 * 1024;        // a text result is cut here, with a note
  uint64_t max_read_bytes = 10 * 1024 * 1024;  // largest file read_file/edit_file will load
  size_t max_results = 1000;                   // glob, grep and ls stop here
  int64_t max_timeout_s = 600;                 // a larger timeout_s is refused
  size_t max_output_bytes = 100 * 1024;        // execute's stdout and stderr are each cut here
  // Where max_timeout_s comes from, as the refusal of a larger timeout_s names it.
  std::string max_timeout_from = "this server's --max-timeout";
};

struct ToolContext {
  Backend& backend;
  const Limits& limits;
  CancelToken cancel;
  // How many entries the permission rules have hidden from listings so far (ls, glob and grep
  // report it); empty when no rules apply.
  std::function<size_t()> hidden = nullptr;
  // Reports progress of a long call (progress so far, a message); empty when the client did
  // not ask for progress.
  std::function<void(double progress, std::string message)> progress = nullptr;
  // Whether the answer carries structuredContent: when not, a tool need not build the lists
  // that only it would hold (the text still says everything).
  bool structured = true;
};

// A backend's progress lines (ExecRequest::on_progress) as the call's progress: the seconds
// since now, and the line. Empty when the client did not ask for progress.
std::function<void(std::string_view line)> lineProgress(ToolContext& ctx);

// The note listings add when the permission rules hid entries ("" when none were).
std::string hiddenNote(const ToolContext& ctx, json& structured);

// A successful tool result: the facts as text, the same facts as structuredContent, and any
// further content blocks (an image, say) that go after the text.
struct ToolOutput {
  std::string text;
  json structured = json::object();
  std::vector<json> extra_content;
  // A result that reports a failure of the user's own work (an exception in run_python) with
  // all its facts: isError is set, structuredContent is kept.
  bool is_error = false;
};

using ToolHandler = Result<ToolOutput> (*)(const json& args, ToolContext& ctx);

// An argument as another tool spells it (Claude Code's `file_path`, ripgrep's `-i`). With
// `ours` set it is taken as that argument of ours; with `ours` empty it is refused with `advice`
// (the spelling means something this tool does not do); `kIgnored` takes it and drops it (it
// asks for what this tool always does).
struct ArgumentAlias {
  std::string_view spelling;
  std::string_view ours;
  std::string_view advice = "";
};
inline constexpr std::string_view kIgnored = "-";

struct ToolSpec {
  std::string_view name;
  // The permission operation: read, write, edit, ls, glob, grep, execute or python.
  std::string_view operation;
  std::string_view title;
  std::string_view description;
  bool read_only;
  bool destructive;
  bool idempotent;
  ToolHandler handler;
  std::span<const ArgumentAlias> aliases = {};
  // With the tasks extension, whether a call may run as a task (execution.taskSupport):
  // "optional" for those that may take long (they run the caller's code), else "forbidden".
  std::string_view task_support = "forbidden";
};

// Typed argument access for handlers. Arguments have passed the tool's inputSchema before a
// handler sees them, so these only supply defaults; they never throw.
std::string argString(const json& args, std::string_view key, std::string_view fallback = "");
int64_t argInt(const json& args, std::string_view key, int64_t fallback);
bool argBool(const json& args, std::string_view key, bool fallback = false);
// A command's timeout_s: `fallback` (at most the server's limit) when absent; a value above
// the limit is refused, naming it, rather than cut without a word.
Result<int64_t> argTimeout(const json& args, int64_t fallback, const Limits& limits);

}  // namespace byd

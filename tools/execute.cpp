// execute: a shell command in the backend's sandbox, with its output, exit code and timing.

#include <cmath>

#include "common/text.h"
#include "tools/tool.h"

namespace byd {
namespace {

// One output stream as shown: whole, or its head and its end with what lies between said, each
// part at most `budget / 2` bytes when the whole does not fit in `budget`.
struct Shown {
  std::string text;  // for the text content, under a "--- name ---" header
  bool cut = false;
};
Shown showStream(std::string_view head, std::string_view end, uint64_t bytes, size_t budget) {
  Shown s;
  if (head.size() + end.size() > budget) {
    if (end.empty()) {  // nothing past the cap came (or it was dropped): the head's own end
      end = head.substr(head.size() > budget / 2 ? head.size() - budget / 2 : 0);
    } else if (end.size() > budget / 2) {
      end.remove_prefix(end.size() - budget / 2);
    }
    head = head.substr(0, std::min(head.size(), budget / 2));
  }
  const uint64_t missing = bytes - std::min<uint64_t>(bytes, head.size() + end.size());
  s.text = repairUtf8(head);
  if (missing > 0 || !end.empty()) {
    if (!s.text.empty() && s.text.back() != '\n') s.text += '\n';
    s.text += "[... " + humanSize(missing) + " not shown ...]\n" + repairUtf8(end);
    s.cut = missing > 0;
  }
  return s;
}

std::string section(std::string_view name, const Shown& shown, uint64_t bytes) {
  std::string out = "--- " + std::string(name);
  if (shown.cut) out += " (" + humanSize(bytes) + "; its beginning and end)";
  out += " ---\n" + shown.text;
  if (!shown.text.empty() && shown.text.back() != '\n') out += '\n';
  return out;
}

std::string summary(const ExecResult& r, int64_t timeout_s) {
  char ms[32];
  snprintf(ms, sizeof ms, "%.0f ms", r.duration_ms);
  std::string s = "exit code " + std::to_string(r.exit_code);
  if (r.exit_code > 128 && r.exit_code < 128 + 65) {
    s += " (signal " + std::to_string(r.exit_code - 128) + ")";
  }
  s += " in " + std::string(ms);
  if (r.timed_out) s += "; timed out after " + std::to_string(timeout_s) + " s and was killed";
  return s + "\n";
}

Result<ToolOutput> runExecute(const json& args, ToolContext& ctx) {
  ExecRequest req;
  req.command = argString(args, "command");
  BYD_ASSIGN_OR_RETURN(const int64_t timeout_s, argTimeout(args, 120, ctx.limits));
  req.timeout = std::chrono::seconds(timeout_s);
  req.max_output = ctx.limits.max_output_bytes;
  req.stdin_data = argString(args, "stdin");
  if (auto env = args.find("env"); env != args.end() && env->is_object()) {
    for (const auto& [name, value] : env->items()) {
      if (name.empty() || name.find_first_of("=\0", 0, 2) != std::string::npos) {
        return invalidArgument("env: '" + name + "' is not a valid variable name");
      }
      req.env.emplace_back(name, value.is_string() ? value.get<std::string>() : "");
    }
  }
  BYD_ASSIGN_OR_RETURN(req.cwd, ctx.backend.normalize(argString(args, "cwd", ".")));
  req.on_progress = lineProgress(ctx);
  Executor* executor = ctx.backend.executor();
  if (executor == nullptr) {  // the server does not offer the tool then; a direct caller learns why
    return failedPrecondition("the " + std::string(ctx.backend.kind()) +
                              " backend runs no commands");
  }
  BYD_ASSIGN_OR_RETURN(ExecResult r, executor->execute(req, ctx.cancel));
  if (r.cancelled) return cancelled("cancelled");

  ToolOutput out;
  // Both streams fit in the text limit together (the rest of the text is small), so the
  // generic cut of a long result never takes stderr away; each may use what the other leaves.
  const size_t budget = ctx.limits.max_text_bytes > 2048 ? ctx.limits.max_text_bytes - 1024
                                                         : ctx.limits.max_text_bytes / 2;
  const size_t out_size = r.stdout_data.size() + r.stdout_end.size();
  const size_t err_size = r.stderr_data.size() + r.stderr_end.size();
  const size_t err_budget = std::max(budget / 2, budget - std::min(budget, out_size));
  const size_t out_budget = std::max(budget / 2, budget - std::min(budget, err_size));
  const Shown shown_out = showStream(r.stdout_data, r.stdout_end, r.stdout_bytes, out_budget);
  const Shown shown_err = showStream(r.stderr_data, r.stderr_end, r.stderr_bytes, err_budget);
  out.text = summary(r, timeout_s) + section("stdout", shown_out, r.stdout_bytes) +
             section("stderr", shown_err, r.stderr_bytes);
  if (shown_out.cut || shown_err.cut) {
    out.text +=
        "[output cut: to see all of it, run the command again with its output sent to a file "
        "(... > out.txt 2>&1) and read_file (offset, a negative offset for the end) or grep it]\n";
  }
  const bool by_signal = r.exit_code > 128 && r.exit_code < 128 + 65;
  out.structured = {{"stdout", shown_out.text},
                    {"stderr", shown_err.text},
                    {"stdout_bytes", r.stdout_bytes},
                    {"stderr_bytes", r.stderr_bytes},
                    {"exit_code", r.exit_code},
                    {"signal", by_signal ? json(r.exit_code - 128) : json(nullptr)},
                    {"timed_out", r.timed_out},
                    {"truncated", shown_out.cut || shown_err.cut},
                    {"duration_ms", std::round(r.duration_ms * 10) / 10}};
  return out;
}

}  // namespace

extern const ToolSpec kExecuteTool = {
    .name = "execute",
    .operation = "execute",
    .title = "Run a shell command",
    .description =
        "Run a shell command line (bash -c) in the workspace, inside a sandbox: no network, the "
        "workspace is the only writable place besides a private /tmp, and the whole process tree "
        "is killed at the timeout. Returns stdout and stderr (each cut at 100 KiB), the exit "
        "code and the duration; a non-zero exit code is a normal result. Use `cwd` for the "
        "working directory, `env` for extra variables and `stdin` for input.",
    .read_only = false,
    .destructive = true,
    .idempotent = false,
    .handler = runExecute,
    .task_support = "optional",
};

}  // namespace byd

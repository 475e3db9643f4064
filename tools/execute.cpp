// execute: a shell command in the backend's sandbox, with its output, exit code and timing.

#include <cmath>

#include "common/text.h"
#include "tools/tool.h"

namespace byd {
namespace {

std::string section(std::string_view name, const std::string& data, bool truncated, size_t limit) {
  std::string out = "--- " + std::string(name) + " ---\n" + repairUtf8(data);
  if (!data.empty() && data.back() != '\n') out += '\n';
  if (truncated) out += "[" + std::string(name) + " cut at " + humanSize(limit) + "]\n";
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
  if (ctx.progress) {
    req.on_progress = [&ctx, start = std::chrono::steady_clock::now()](std::string_view line) {
      const double elapsed =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      ctx.progress(std::floor(elapsed), std::string(line));
    };
  }
  Executor* executor = ctx.backend.executor();
  if (executor == nullptr) {  // the server does not offer the tool then; a direct caller learns why
    return failedPrecondition("the " + std::string(ctx.backend.kind()) +
                              " backend runs no commands");
  }
  BYD_ASSIGN_OR_RETURN(ExecResult r, executor->execute(req, ctx.cancel));
  if (r.cancelled) return cancelled("cancelled");

  ToolOutput out;
  out.text = summary(r, timeout_s) +
             section("stdout", r.stdout_data, r.stdout_truncated, req.max_output) +
             section("stderr", r.stderr_data, r.stderr_truncated, req.max_output);
  const bool by_signal = r.exit_code > 128 && r.exit_code < 128 + 65;
  out.structured = {{"stdout", repairUtf8(r.stdout_data)},
                    {"stderr", repairUtf8(r.stderr_data)},
                    {"exit_code", r.exit_code},
                    {"signal", by_signal ? json(r.exit_code - 128) : json(nullptr)},
                    {"timed_out", r.timed_out},
                    {"truncated", r.stdout_truncated || r.stderr_truncated},
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
};

}  // namespace byd

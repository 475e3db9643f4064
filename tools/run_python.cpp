// run_python: code in a persistent CPython session, like a notebook cell.

#include "tools/python_result.h"
#include "tools/tool.h"

namespace byd {
namespace {

std::string describe(const PythonResult& r, const std::string& session) {
  std::string text;
  if (!r.installed.empty()) {
    std::string names;
    for (const std::string& n : r.installed) names += (names.empty() ? "" : ", ") + n;
    text += "[installed " + names + " on demand, then ran the cell again]\n";
  }
  if (!r.stdout_data.empty()) text += r.stdout_data + (r.stdout_data.back() == '\n' ? "" : "\n");
  if (!r.stderr_data.empty()) {
    text += "--- stderr ---\n" + r.stderr_data + (r.stderr_data.back() == '\n' ? "" : "\n");
  }
  if (r.result) text += "=> " + *r.result + "\n";
  if (r.has_error)
    text += r.traceback.empty() ? r.error_type + ": " + r.error_message + "\n"
                                : r.traceback + (r.traceback.back() == '\n' ? "" : "\n");
  if (!r.install_error.empty()) {
    text += "[" + r.missing_module + " was not installed: " + r.install_error + "]\n";
  }
  if (r.timed_out && !r.state_lost && session.empty()) {
    text += "[stopped at the timeout; the isolated run left nothing behind]\n";
  } else if (r.timed_out && !r.state_lost) {
    text += "[interrupted at the timeout; session '" + session + "' and its variables are kept]\n";
  }
  if (r.state_lost && session.empty()) {
    text +=
        "[the run did not stop at the timeout: it was killed with its template kernel, "
        "leaving nothing behind]\n";
  } else if (r.state_lost) {
    text += "[the code did not stop at the timeout and the session was killed: session '" +
            session + "' lost its state and starts afresh on the next call]\n";
  }
  if (!r.forked_from.empty()) {
    text = "[session '" + session + "' forked from '" + r.forked_from + "']\n" + text;
  }
  if (r.revived) {
    text += "[session '" + session +
            "' had ended since its last call (its Python process was gone) and started afresh: "
            "earlier variables are lost]\n";
  }
  if (!r.png_images.empty()) text += "[" + std::to_string(r.png_images.size()) + " figure(s)]\n";
  if (r.truncated) text += "[output cut at the output limit]\n";
  if (text.empty()) text = "(no output)\n";
  return text;
}

Result<ToolOutput> runRunPython(const json& args, ToolContext& ctx) {
  PythonRequest req;
  req.code = argString(args, "code");
  req.session = argString(args, "session", "default");
  req.reset = argBool(args, "reset");
  req.isolated = argBool(args, "isolated");
  if (req.isolated && (args.contains("session") || req.reset)) {
    return invalidArgument(
        "an isolated run has no session: give `isolated` without `session` "
        "and `reset`");
  }
  if (req.isolated) req.session = "";
  req.fork_from = argString(args, "fork_from");
  if (!req.fork_from.empty() && (req.isolated || req.reset)) {
    return invalidArgument(
        "`fork_from` starts `session` as a fork: not with `isolated` or `reset`");
  }
  if (!req.fork_from.empty() && req.fork_from == req.session) {
    return invalidArgument(
        "`fork_from` names the session itself: give the new session's name "
        "as `session`");
  }
  BYD_ASSIGN_OR_RETURN(const int64_t timeout_s, argTimeout(args, 30, ctx.limits));
  req.timeout = std::chrono::seconds(timeout_s);
  req.max_output = ctx.limits.max_output_bytes;
  req.on_progress = lineProgress(ctx);
  Executor* executor = ctx.backend.executor();
  if (executor == nullptr) {  // the server does not offer the tool then; a direct caller learns why
    return failedPrecondition("the " + std::string(ctx.backend.kind()) + " backend runs no Python");
  }
  BYD_ASSIGN_OR_RETURN(PythonResult r, executor->runPython(req, ctx.cancel));
  if (ctx.cancel.cancelled()) return cancelled("cancelled");

  ToolOutput out;
  out.text = describe(r, req.session);
  out.structured = pythonRunJson(r, req.isolated);
  out.structured["session"] = req.session;
  out.structured["state_lost"] = r.state_lost;
  out.structured["new_session"] = r.new_session;
  out.structured["forked_from"] = r.forked_from.empty() ? json(nullptr) : json(r.forked_from);
  out.structured["installed"] = r.installed;
  for (const std::string& png : r.png_images) {
    out.extra_content.push_back({{"type", "image"}, {"data", png}, {"mimeType", "image/png"}});
  }
  // An exception in user code is a result the model must see as a failure.
  out.is_error = r.has_error || r.state_lost;
  return out;
}

}  // namespace

extern const ToolSpec kRunPythonTool = {
    .name = "run_python",
    .operation = "python",
    .title = "Run Python",
    .description =
        "Run Python 3 code in a persistent session, like a notebook cell: variables, imports "
        "and functions stay from one call to the next (per `session`, default \"default\"; "
        "`reset` starts it afresh). Returns stdout, stderr, the repr of a trailing expression "
        "as `result`, and an exception's type, message and traceback. Open matplotlib figures "
        "come back as images. Runs in the sandbox (no network; the workspace is the current "
        "directory); at the timeout the cell gets KeyboardInterrupt, then the session is "
        "killed if it does not stop. A module that is not installed is installed from the "
        "package index when the rules allow it, and the cell runs again (`installed` says "
        "what). `isolated`: a fresh interpreter of its own instead of a session, forked from "
        "a warm template in about a millisecond, that leaves nothing behind. `fork_from`: start "
        "`session` as a copy of another session's state (branch rollouts from one prepared "
        "state).",
    .read_only = false,
    .destructive = true,
    .idempotent = false,
    .handler = runRunPython,
    .task_support = "optional",
};

}  // namespace byd

#include "backends/local/python_sessions.h"

#include <vector>

#include <spdlog/spdlog.h>

#include "common/text.h"

namespace byd {

PythonSessions::PythonSessions(Starter start, PythonOptions options, Starter start_template)
    : start_(std::move(start)),
      start_template_(std::move(start_template)),
      options_(std::move(options)) {}

void PythonSessions::warm(bool ahead) {
  std::lock_guard lock(mu_);
  if (ahead) ahead_ = true;
  if (!spare_.valid()) startSpare();
}

PythonSessions::PythonSessions(const Sandbox& sandbox, std::string cwd, PythonOptions options)
    : PythonSessions(
          [&sandbox, cwd = std::move(cwd), python = options.python,
           packages = options.packages_dir] {
            return PythonKernel::start(sandbox, python, cwd, packages);
          },
          options) {}

PythonSessions::~PythonSessions() {
  std::lock_guard lock(mu_);
  if (spare_.valid()) spare_.wait();
  sessions_.clear();
  templates_.clear();
  sessions_template_.reset();
}

void PythonSessions::startSpare() {
  spare_ = std::async(std::launch::async, [this] { return start_(); });
}

Result<std::shared_ptr<PythonSessions::Session>> PythonSessions::named(const std::string& name) {
  auto it = sessions_.find(name);
  if (it == sessions_.end()) {
    if (sessions_.size() >= options_.max_sessions) {
      return resourceExhausted("there are already " + std::to_string(sessions_.size()) +
                               " Python sessions (the limit); reuse one of them");
    }
    it = sessions_.emplace(name, std::make_shared<Session>()).first;
  }
  return it->second;
}

Result<std::unique_ptr<PythonKernel>> PythonSessions::spareOrStart() {
  std::future<Result<std::unique_ptr<PythonKernel>>> spare;
  {
    std::lock_guard lock(mu_);
    spare = std::move(spare_);
    // The next kernel is started ahead once a spare was asked for (warm()), or once this
    // connection needs a second kernel (another session, a restart): a connection that runs
    // one session, as most of an HTTP server's many do, starts one kernel, not two.
    if (++kernels_taken_ > 1) ahead_ = true;
    if (ahead_) startSpare();
  }
  // Started outside the lock, so that the connection's other sessions run meanwhile. A spare
  // can fail to start or die while it waits (its container went away, the engine was
  // unreachable for a moment): start one now instead.
  Result<std::unique_ptr<PythonKernel>> kernel = spare.valid() ? spare.get() : start_();
  if (!kernel.ok() || (*kernel)->exited()) kernel = start_();
  return kernel;
}

Result<std::unique_ptr<PythonKernel>> PythonSessions::newSessionKernel() {
  if (options_.fork_sessions) {
    std::lock_guard lock(sessions_template_mu_);
    for (int attempt = 0; attempt < 2 && !sessions_unforkable_; ++attempt) {
      if (!sessions_template_ || !sessions_template_->alive() || sessions_template_->exited()) {
        sessions_template_.reset();
        BYD_ASSIGN_OR_RETURN(sessions_template_,
                             start_template_ ? start_template_() : spareOrStart());
      }
      auto forked = sessions_template_->fork();
      if (forked.ok()) return forked;
      spdlog::warn("python: a new session could not be forked: {}", forked.status().message());
      sessions_template_.reset();
      if (forked.status().code() == Code::kUnimplemented) {
        spdlog::warn("python: new sessions start in sandboxes of their own instead");
        sessions_unforkable_ = true;
      }
    }
  }
  return spareOrStart();
}

void PythonSessions::reapIdle() {
  const auto now = std::chrono::steady_clock::now();
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    std::unique_lock busy(it->second->busy, std::try_to_lock);
    if (busy.owns_lock() && now - it->second->last_used > options_.idle) {
      busy.unlock();
      it = sessions_.erase(it);
    } else {
      ++it;
    }
  }
}

Result<PythonSessions::Run> PythonSessions::run(const std::string& name, const std::string& code,
                                                bool reset, std::chrono::milliseconds timeout,
                                                size_t max_output, const CancelToken& cancel,
                                                std::shared_ptr<const FileMasks> masks) {
  std::shared_ptr<Session> session;
  {
    std::lock_guard lock(mu_);
    reapIdle();
    BYD_ASSIGN_OR_RETURN(session, named(name));
  }
  std::lock_guard busy(session->busy);
  Run run;
  // A kernel that died while idle (its container went away, say) is replaced, and the call
  // says that its state is gone.
  const bool died = session->kernel && (!session->kernel->alive() || session->kernel->exited());
  if (reset || !session->kernel || died) {
    run.revived = died && !reset;
    session->kernel.reset();
    BYD_ASSIGN_OR_RETURN(session->kernel, newSessionKernel());
    run.new_session = true;
  }
  SharedMasks::Hold view;
  if (masks) {
    auto held =
        session->kernel->holdMasks(*masks, &cancel, std::chrono::steady_clock::now() + timeout);
    if (!held.ok()) {
      if (!session->kernel->alive()) session->kernel.reset();  // the next call starts afresh
      return held.status();
    }
    view = std::move(*held);
  }
  BYD_ASSIGN_OR_RETURN(run.outcome, session->kernel->exec(code, timeout, max_output, cancel));
  session->last_used = std::chrono::steady_clock::now();
  return run;
}

Status PythonSessions::fork(const std::string& from, const std::string& name,
                            std::chrono::milliseconds wait) {
  if (from == name) return invalidArgument("a session cannot be forked into itself");
  std::shared_ptr<Session> parent, child;
  {
    std::lock_guard lock(mu_);
    reapIdle();
    auto it = sessions_.find(from);
    if (it == sessions_.end()) {
      return notFound("there is no Python session '" + from + "' to fork");
    }
    parent = it->second;
    BYD_ASSIGN_OR_RETURN(child, named(name));
  }
  std::unique_ptr<PythonKernel> kernel;
  {
    std::unique_lock busy(parent->busy, std::defer_lock);
    if (!busy.try_lock_for(wait)) {
      return failedPrecondition("session '" + from + "' is still running a cell; fork it when " +
                                "that has ended");
    }
    if (!parent->kernel || !parent->kernel->alive() || parent->kernel->exited()) {
      return failedPrecondition("session '" + from +
                                "' has no state to fork (its kernel is not running)");
    }
    BYD_ASSIGN_OR_RETURN(kernel, parent->kernel->fork());
    parent->last_used = std::chrono::steady_clock::now();
  }
  // The parent is free again before the fork's name is waited for: two forks the other way
  // round cannot hold each other up.
  std::lock_guard busy(child->busy);
  child->kernel = std::move(kernel);
  child->last_used = std::chrono::steady_clock::now();
  return okStatus();
}

Result<std::unique_ptr<PythonKernel>> PythonSessions::takeTemplate() {
  {
    std::lock_guard lock(mu_);
    while (!templates_.empty()) {
      std::unique_ptr<PythonKernel> kernel = std::move(templates_.back());
      templates_.pop_back();
      if (kernel->alive() && !kernel->exited()) return kernel;
    }
  }
  BYD_ASSIGN_OR_RETURN(std::unique_ptr<PythonKernel> kernel, spareOrStart());
  BYD_ASSIGN_OR_RETURN(std::vector<std::string> failed,
                       kernel->preload(splitList(options_.preload, ',')));
  for (const std::string& why : failed) spdlog::warn("python preload: {}", why);
  return kernel;
}

Result<PythonSessions::Run> PythonSessions::runIsolated(const PythonKernel::Isolated& isolated,
                                                        const CancelToken& cancel,
                                                        std::shared_ptr<const FileMasks> masks) {
  BYD_ASSIGN_OR_RETURN(std::unique_ptr<PythonKernel> kernel, takeTemplate());
  SharedMasks::Hold view;
  if (masks) {
    BYD_ASSIGN_OR_RETURN(
        view,
        kernel->holdMasks(*masks, &cancel, std::chrono::steady_clock::now() + isolated.timeout));
  }
  Run run;
  BYD_ASSIGN_OR_RETURN(run.outcome, kernel->runIsolated(isolated, cancel));
  // A run cannot change its template, but it can end it (kill its parent), or leave what the
  // template could not remove: then it goes.
  if (!run.outcome.reply.value("retire", false) && kernel->alive() && !kernel->exited()) {
    std::lock_guard lock(mu_);
    if (templates_.size() < options_.max_sessions) templates_.push_back(std::move(kernel));
  }
  return run;
}

Result<PythonSessions::Run> runPythonIn(PythonSessions& sessions, const PythonRequest& request,
                                        const CancelToken& cancel,
                                        std::shared_ptr<const FileMasks> masks) {
  if (!request.fork_from.empty()) {
    BYD_RETURN_IF_ERROR(sessions.fork(request.fork_from, request.session, request.timeout));
    BYD_ASSIGN_OR_RETURN(PythonSessions::Run run,
                         sessions.run(request.session, request.code, false, request.timeout,
                                      request.max_output, cancel, std::move(masks)));
    run.new_session = true;
    run.forked_from = request.fork_from;
    return run;
  }
  if (!request.isolated) {
    return sessions.run(request.session, request.code, request.reset, request.timeout,
                        request.max_output, cancel, std::move(masks));
  }
  PythonKernel::Isolated run;
  run.code = request.code;
  run.stdin_data = request.stdin_data;
  run.timeout = request.timeout;
  run.max_output = request.max_output;
  run.memory_bytes = request.memory_bytes;
  return sessions.runIsolated(run, cancel, std::move(masks));
}

PythonResult pythonResult(const PythonSessions::Run& run) {
  PythonResult out;
  const nlohmann::json& r = run.outcome.reply;
  out.stdout_data = r.value("stdout", "");
  out.stderr_data = r.value("stderr", "");
  if (auto v = r.find("result"); v != r.end() && v->is_string()) out.result = v->get<std::string>();
  if (auto e = r.find("error"); e != r.end() && e->is_object()) {
    out.has_error = true;
    out.error_type = e->value("type", "");
    out.error_message = e->value("message", "");
    out.traceback = e->value("traceback", "");
    out.missing_module = e->value("module", "");
  }
  if (auto images = r.find("images"); images != r.end() && images->is_array()) {
    for (const auto& image : *images) {
      if (image.is_object() && image.value("mime", "") == "image/png") {
        out.png_images.push_back(image.value("data", ""));
      }
    }
  }
  out.truncated = r.value("truncated", false);
  out.duration_ms = r.value("duration_ms", 0.0);
  out.timed_out = run.outcome.timed_out;
  out.state_lost = run.outcome.state_lost;
  out.new_session = run.new_session;
  out.revived = run.revived;
  out.forked_from = run.forked_from;
  return out;
}

}  // namespace byd

#include "backends/local/python_sessions.h"

#include <vector>

namespace byd {

PythonSessions::PythonSessions(const Sandbox& sandbox, std::string cwd, PythonOptions options)
    : sandbox_(sandbox), cwd_(std::move(cwd)), options_(std::move(options)) {
  std::lock_guard lock(mu_);
  if (options_.spare_at_start) startSpare();
}

PythonSessions::~PythonSessions() {
  std::lock_guard lock(mu_);
  if (spare_.valid()) spare_.wait();
  sessions_.clear();
}

void PythonSessions::startSpare() {
  spare_ = std::async(std::launch::async,
                      [this] { return PythonKernel::start(sandbox_, options_.python, cwd_); });
}

Result<std::unique_ptr<PythonKernel>> PythonSessions::takeSpare() {
  Result<std::unique_ptr<PythonKernel>> kernel =
      spare_.valid() ? spare_.get() : PythonKernel::start(sandbox_, options_.python, cwd_);
  startSpare();
  return kernel;
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
                                                size_t max_output, const CancelToken& cancel) {
  std::shared_ptr<Session> session;
  {
    std::lock_guard lock(mu_);
    reapIdle();
    auto it = sessions_.find(name);
    if (it == sessions_.end()) {
      if (sessions_.size() >= options_.max_sessions) {
        return resourceExhausted("there are already " + std::to_string(sessions_.size()) +
                                 " Python sessions (the limit); reuse one of them");
      }
      it = sessions_.emplace(name, std::make_shared<Session>()).first;
    }
    session = it->second;
  }
  std::lock_guard busy(session->busy);
  Run run;
  if (reset || !session->kernel || !session->kernel->alive()) {
    session->kernel.reset();
    std::unique_ptr<PythonKernel> kernel;
    {
      std::lock_guard lock(mu_);
      BYD_ASSIGN_OR_RETURN(kernel, takeSpare());
    }
    session->kernel = std::move(kernel);
    run.new_session = true;
  }
  BYD_ASSIGN_OR_RETURN(run.outcome, session->kernel->exec(code, timeout, max_output, cancel));
  session->last_used = std::chrono::steady_clock::now();
  return run;
}

}  // namespace byd

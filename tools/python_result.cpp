#include "tools/python_result.h"

#include <cmath>

#include "common/text.h"

namespace byd {

using json = nlohmann::json;

json pythonRunJson(const PythonResult& r, bool isolated) {
  json error = nullptr;
  if (r.has_error) {
    error = {{"type", r.error_type}, {"message", r.error_message}, {"traceback", r.traceback}};
    if (!r.install_error.empty()) error["install_error"] = r.install_error;
  } else if (r.state_lost && isolated) {
    error = {{"type", "RunKilled"},
             {"message", "the run did not stop at the timeout; it was killed with its template"},
             {"traceback", ""}};
  } else if (r.state_lost) {
    error = {{"type", "SessionLost"},
             {"message", "the code did not stop at the timeout; the session was killed"},
             {"traceback", ""}};
  }
  return {{"stdout", repairUtf8(r.stdout_data)},
          {"stderr", repairUtf8(r.stderr_data)},
          {"result", r.result ? json(repairUtf8(*r.result)) : json(nullptr)},
          {"error", error},
          {"timed_out", r.timed_out},
          {"truncated", r.truncated},
          {"duration_ms", std::round(r.duration_ms * 100) / 100}};
}

}  // namespace byd

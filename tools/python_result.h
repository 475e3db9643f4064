#pragma once
// What run_python's structured result and a batch's result line say alike of a run.

#include <nlohmann/json.hpp>

#include "backends/backend.h"

namespace byd {

// stdout, stderr, result, error (null, the exception, or why the run or session was lost),
// timed_out, truncated and duration_ms. `isolated`: the run was an isolated one (a lost run
// is RunKilled, a lost session SessionLost).
nlohmann::json pythonRunJson(const PythonResult& r, bool isolated);

}  // namespace byd

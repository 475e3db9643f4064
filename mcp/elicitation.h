#pragma once
// Asks the user, through the client's elicitation/create, whether an operation that the rules
// mark "ask" may proceed. Only an explicit accept with approve=true counts as yes; decline and
// cancel are no; a client without elicitation, an error or no answer in time leave it to the
// ask fallback. One instance per tool call.

#include <chrono>

#include "mcp/client_requests.h"
#include "permissions/guard.h"

namespace byd::mcp {

class ElicitingApprover : public permissions::Approver {
 public:
  ElicitingApprover(ClientRequests& requests, bool client_supports_elicitation,
                    std::chrono::milliseconds timeout, CancelToken cancel)
      : requests_(requests),
        supported_(client_supports_elicitation),
        timeout_(timeout),
        cancel_(std::move(cancel)) {}

  Result<bool> approve(permissions::Operation op, std::string_view target,
                       const permissions::Decision& why) override;

 private:
  ClientRequests& requests_;
  const bool supported_;
  const std::chrono::milliseconds timeout_;
  const CancelToken cancel_;
};

// The elicitation/create params for one question (exposed for tests).
nlohmann::json elicitationParams(permissions::Operation op, std::string_view target,
                                 const permissions::Decision& why);

}  // namespace byd::mcp

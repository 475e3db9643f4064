#pragma once
// Asks the user, through the client's elicitation/create, whether an operation that the rules
// mark "ask" may proceed. Only an explicit accept with approve=true counts as yes, and with
// remember=true as yes for the rest of the session (for what the prompt names); decline and
// cancel are no; a client without elicitation, an error or no answer in time leave it to the
// ask fallback. One instance per tool call; the session's grants outlive it.

#include <chrono>

#include "mcp/client_requests.h"
#include "permissions/guard.h"

namespace byd::mcp {

// Why an ask is denied for a client without elicitation, and how to go on.
inline constexpr std::string_view kNoElicitationAdvice =
    "the client does not support elicitation, so it cannot ask the user. To go on, use a client "
    "that supports elicitation, start the server with --ruleset permissive (which allows writes "
    "and commands in the workspace), or with --ask-fallback allow (every 'ask' then runs "
    "without approval)";

class ElicitingApprover : public permissions::Approver {
 public:
  // Whether the client can be asked (it declared elicitation, and the request is not stateless).
  enum class Client { kCanAsk, kCannotAsk };
  ElicitingApprover(ClientRequests& requests, Client client, std::chrono::milliseconds timeout,
                    CancelToken cancel, permissions::SessionGrants& grants)
      : requests_(requests),
        supported_(client == Client::kCanAsk),
        timeout_(timeout),
        cancel_(std::move(cancel)),
        grants_(grants) {}

  Result<permissions::Answer> approve(const permissions::Question& question) override;
  permissions::SessionGrants* grants() override { return supported_ ? &grants_ : nullptr; }

 private:
  ClientRequests& requests_;
  const bool supported_;
  const std::chrono::milliseconds timeout_;
  const CancelToken cancel_;
  permissions::SessionGrants& grants_;
};

// The longest text (a command with its variables, a cell) a prompt shows. Longer ones are not
// asked about: a client may cut a long message, and the user must see all that would run.
inline constexpr size_t kMaxPromptText = 16 * 1024;

// `text` as a prompt shows it: whole, line breaks and tabs kept, every other control
// character, and the invisible characters that reorder or hide text (bidi controls,
// zero-width ones), escaped as \xNN or \u{NNNN}.
std::string promptText(std::string_view text);

// The elicitation/create params for one question, or why it cannot be asked (exposed for
// tests). With something to remember, the form offers "allow for the rest of this session".
Result<nlohmann::json> elicitationParams(const permissions::Question& question);

}  // namespace byd::mcp

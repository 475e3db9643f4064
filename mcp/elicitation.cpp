#include "mcp/elicitation.h"

namespace byd::mcp {

nlohmann::json elicitationParams(permissions::Operation op, std::string_view target,
                                 const permissions::Decision& why) {
  std::string question = "backyard-mcp asks: allow " + std::string(permissions::operationName(op)) +
                         " for " + permissions::displayTarget(target) + "? The rules say ask (" +
                         why.source + (why.description.empty() ? "" : ": " + why.description) +
                         ").";
  return {{"message", std::move(question)},
          {"requestedSchema",
           {{"type", "object"},
            {"properties",
             {{"approve",
               {{"type", "boolean"},
                {"title", "Allow"},
                {"description", "Allow this " + std::string(permissions::operationName(op)) +
                                    " operation once"}}}}},
            {"required", {"approve"}}}}};
}

Result<bool> ElicitingApprover::approve(permissions::Operation op, std::string_view target,
                                        const permissions::Decision& why) {
  if (!supported_) {
    return unimplemented("the client does not support elicitation, so it cannot ask the user");
  }
  BYD_ASSIGN_OR_RETURN(
      nlohmann::json answer,
      requests_.call("elicitation/create", elicitationParams(op, target, why), timeout_, cancel_));
  const auto action = answer.find("action");
  if (action == answer.end() || *action != "accept") return false;
  const auto content = answer.find("content");
  if (content == answer.end() || !content->is_object()) return false;
  const auto approve = content->find("approve");
  return approve != content->end() && *approve == true;
}

}  // namespace byd::mcp

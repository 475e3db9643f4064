#include "mcp/elicitation.h"

namespace byd::mcp {

std::string promptText(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\n' || c == '\t' || (c >= 0x20 && c < 0x7f)) {
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      out += {'\\', 'x', kHex[c >> 4], kHex[c & 15]};
    } else {
      // A three-byte sequence of U+200B-U+200F, U+202A-U+202E, U+2060-U+2069 or U+FEFF.
      const auto b1 = i + 1 < text.size() ? static_cast<unsigned char>(text[i + 1]) : 0;
      const auto b2 = i + 2 < text.size() ? static_cast<unsigned char>(text[i + 2]) : 0;
      const unsigned cp = (c & 0x0f) << 12 | (b1 & 0x3f) << 6 | (b2 & 0x3f);
      const bool hidden =
          c == 0xe2 &&
          ((b1 == 0x80 && ((b2 >= 0x8b && b2 <= 0x8f) || (b2 >= 0xaa && b2 <= 0xae))) ||
           (b1 == 0x81 && b2 >= 0xa0 && b2 <= 0xa9));
      if (hidden || (c == 0xef && b1 == 0xbb && b2 == 0xbf)) {
        out +=
            "\\u{" +
            std::string{kHex[cp >> 12], kHex[(cp >> 8) & 15], kHex[(cp >> 4) & 15], kHex[cp & 15]} +
            "}";
        i += 2;
      } else {
        out += static_cast<char>(c);
      }
    }
  }
  return out;
}

Result<nlohmann::json> elicitationParams(const permissions::Question& q) {
  const std::string name(permissions::operationName(q.op));
  const std::string shown = q.shown.empty() ? std::string(".") : promptText(q.shown);
  if (shown.size() > kMaxPromptText) {
    return failedPrecondition("it is too long to show whole in an approval prompt (" +
                              std::to_string(shown.size()) + " bytes; at most " +
                              std::to_string(kMaxPromptText) +
                              "), so the user is not asked: split it, or add a rule");
  }
  const std::string reason = "The rules say ask (" + q.why.source +
                             (q.why.description.empty() ? "" : ": " + q.why.description) + ").";
  // A command or a cell is shown as a block of its own, below the question.
  const bool block =
      q.op == permissions::Operation::kExecute || q.op == permissions::Operation::kPython;
  std::string question =
      block ? "backyard-mcp asks: allow " + name + "? " + reason + "\n\n" + shown
      : q.op == permissions::Operation::kNetwork || q.op == permissions::Operation::kInstall
          ? "backyard-mcp asks: " + shown + ". Allow? " + reason
          : "backyard-mcp asks: allow " + name + " for '" + shown + "'? " + reason;
  nlohmann::json properties = {{"approve",
                                {{"type", "boolean"},
                                 {"title", "Allow"},
                                 {"description", "Allow this " + name + " operation"}}}};
  if (!q.remember.empty()) {
    std::string covers;
    for (const std::string& grant : q.remember) {
      covers += (covers.empty() ? "" : "; ") + promptText(grant);
    }
    properties["remember"] = {
        {"type", "boolean"},
        {"title", "Allow for the rest of this session"},
        {"description", "With Allow: do not ask again in this session for " + covers},
        {"default", false}};
  }
  nlohmann::json params = {
      {"message", std::move(question)},
      {"requestedSchema",
       {{"type", "object"}, {"properties", std::move(properties)}, {"required", {"approve"}}}}};
  return params;
}

Result<permissions::Answer> ElicitingApprover::approve(const permissions::Question& question) {
  using permissions::Answer;
  if (!supported_) {
    return unimplemented(std::string(kNoElicitationAdvice));
  }
  BYD_ASSIGN_OR_RETURN(nlohmann::json params, elicitationParams(question));
  BYD_ASSIGN_OR_RETURN(nlohmann::json answer,
                       requests_.call("elicitation/create", params, timeout_, cancel_));
  const auto action = answer.find("action");
  if (action == answer.end() || *action != "accept") return Answer::kNo;
  const auto content = answer.find("content");
  if (content == answer.end() || !content->is_object()) return Answer::kNo;
  const auto approve = content->find("approve");
  if (approve == content->end() || *approve != true) return Answer::kNo;
  const auto remember = content->find("remember");
  const bool for_session =
      !question.remember.empty() && remember != content->end() && *remember == true;
  return for_session ? Answer::kYesForSession : Answer::kYes;
}

}  // namespace byd::mcp

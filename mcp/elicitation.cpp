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

Result<nlohmann::json> elicitationParams(permissions::Operation op, std::string_view target,
                                         const permissions::Decision& why) {
  const std::string name(permissions::operationName(op));
  const std::string shown = target.empty() ? std::string(".") : promptText(target);
  if (shown.size() > kMaxPromptText) {
    return failedPrecondition("it is too long to show whole in an approval prompt (" +
                              std::to_string(shown.size()) + " bytes; at most " +
                              std::to_string(kMaxPromptText) +
                              "), so the user is not asked: split it, or add a rule");
  }
  const std::string reason = "The rules say ask (" + why.source +
                             (why.description.empty() ? "" : ": " + why.description) + ").";
  // A command or a cell is shown as a block of its own, below the question.
  const bool block =
      op == permissions::Operation::kExecute || op == permissions::Operation::kPython;
  std::string question =
      block ? "backyard-mcp asks: allow " + name + "? " + reason + "\n\n" + shown
            : "backyard-mcp asks: allow " + name + " for '" + shown + "'? " + reason;
  nlohmann::json params = {{"message", std::move(question)},
                           {"requestedSchema",
                            {{"type", "object"},
                             {"properties",
                              {{"approve",
                                {{"type", "boolean"},
                                 {"title", "Allow"},
                                 {"description", "Allow this " + name + " operation once"}}}}},
                             {"required", {"approve"}}}}};
  return params;
}

Result<bool> ElicitingApprover::approve(permissions::Operation op, std::string_view target,
                                        const permissions::Decision& why) {
  if (!supported_) {
    return unimplemented(std::string(kNoElicitationAdvice));
  }
  BYD_ASSIGN_OR_RETURN(nlohmann::json params, elicitationParams(op, target, why));
  BYD_ASSIGN_OR_RETURN(nlohmann::json answer,
                       requests_.call("elicitation/create", params, timeout_, cancel_));
  const auto action = answer.find("action");
  if (action == answer.end() || *action != "accept") return false;
  const auto content = answer.find("content");
  if (content == answer.end() || !content->is_object()) return false;
  const auto approve = content->find("approve");
  return approve != content->end() && *approve == true;
}

}  // namespace byd::mcp

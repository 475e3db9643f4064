#include "common/result.h"

namespace byd {

std::string_view codeName(Code code) {
  switch (code) {
    case Code::kOk:
      return "OK";
    case Code::kInvalidArgument:
      return "INVALID_ARGUMENT";
    case Code::kNotFound:
      return "NOT_FOUND";
    case Code::kAlreadyExists:
      return "ALREADY_EXISTS";
    case Code::kPermissionDenied:
      return "PERMISSION_DENIED";
    case Code::kFailedPrecondition:
      return "FAILED_PRECONDITION";
    case Code::kOutOfRange:
      return "OUT_OF_RANGE";
    case Code::kDeadlineExceeded:
      return "DEADLINE_EXCEEDED";
    case Code::kCancelled:
      return "CANCELLED";
    case Code::kResourceExhausted:
      return "RESOURCE_EXHAUSTED";
    case Code::kUnimplemented:
      return "UNIMPLEMENTED";
    case Code::kInternal:
      return "INTERNAL";
  }
  return "UNKNOWN";
}

Status Status::withDetail(std::string key, std::string value) && {
  std::erase_if(details_, [&](const auto& d) { return d.first == key; });
  details_.emplace_back(std::move(key), std::move(value));
  return std::move(*this);
}

std::optional<std::string> Status::detail(std::string_view key) const {
  for (const auto& [k, v] : details_) {
    if (k == key) return v;
  }
  return std::nullopt;
}

Status okStatusAsResult() {
  return internalError(
      "internal error: a result was made from an OK status (a bug; please report it)");
}

std::string Status::toString() const {
  if (ok()) return "OK";
  return std::string(codeName(code_)) + ": " + message_;
}

}  // namespace byd

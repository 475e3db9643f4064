#pragma once
// Errors are values: every module boundary returns Status or Result<T>. The code set is
// Abseil's canonical one (prefer the most specific); the message is written for the person or
// model that has to act on it; details carry what a caller acts on as data (the URI a resource
// error is about, the capability a client lacks), never parsed back out of the message. Both
// types are plain values and safe to move across threads.

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace byd {

enum class Code {
  kOk,
  kInvalidArgument,
  kNotFound,
  kAlreadyExists,
  kPermissionDenied,
  kFailedPrecondition,
  kOutOfRange,
  kDeadlineExceeded,
  kCancelled,
  kResourceExhausted,
  kUnimplemented,
  kInternal,
};

std::string_view codeName(Code code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  std::string toString() const;

  // The status with a detail added (a later one of the same key wins).
  Status withDetail(std::string key, std::string value) &&;
  // A detail by key, if the status has it.
  std::optional<std::string> detail(std::string_view key) const;

 private:
  Code code_ = Code::kOk;
  std::string message_;
  std::vector<std::pair<std::string, std::string>> details_;
};

inline Status okStatus() { return Status(); }
inline Status invalidArgument(std::string m) { return {Code::kInvalidArgument, std::move(m)}; }
inline Status notFound(std::string m) { return {Code::kNotFound, std::move(m)}; }
inline Status alreadyExists(std::string m) { return {Code::kAlreadyExists, std::move(m)}; }
inline Status permissionDenied(std::string m) { return {Code::kPermissionDenied, std::move(m)}; }
inline Status failedPrecondition(std::string m) {
  return {Code::kFailedPrecondition, std::move(m)};
}
inline Status outOfRange(std::string m) { return {Code::kOutOfRange, std::move(m)}; }
inline Status cancelled(std::string m) { return {Code::kCancelled, std::move(m)}; }
inline Status resourceExhausted(std::string m) { return {Code::kResourceExhausted, std::move(m)}; }
inline Status unimplemented(std::string m) { return {Code::kUnimplemented, std::move(m)}; }
inline Status internalError(std::string m) { return {Code::kInternal, std::move(m)}; }

// What a Result made from an OK status holds instead: a bug, caught in every build type.
Status okStatusAsResult();

// Result<T> holds either a T or a non-OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status)                      // NOLINT
      : v_(status.ok() ? okStatusAsResult() : std::move(status)) {}

  bool ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return ok(); }

  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace byd

// Returns early from the enclosing function with the error of `expr` (a Status or Result).
#define BYD_RETURN_IF_ERROR(expr)                        \
  do {                                                   \
    if (auto byd_s_ = (expr); !byd_s_.ok()) {            \
      return ::byd::detail::statusOf(std::move(byd_s_)); \
    }                                                    \
  } while (0)

#define BYD_CONCAT_INNER(a, b) a##b
#define BYD_CONCAT(a, b) BYD_CONCAT_INNER(a, b)
// Declares `lhs` from a Result's value, or returns its error.
#define BYD_ASSIGN_OR_RETURN(lhs, expr) \
  BYD_ASSIGN_OR_RETURN_IMPL(BYD_CONCAT(byd_r_, __LINE__), lhs, expr)
#define BYD_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return tmp.status();             \
  lhs = std::move(tmp).value()

namespace byd::detail {
inline Status statusOf(Status s) { return s; }
template <typename T>
Status statusOf(Result<T> r) {
  return r.status();
}
}  // namespace byd::detail

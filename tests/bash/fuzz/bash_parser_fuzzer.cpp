// libFuzzer entry point for the bash parser and the analysis the permission rules make of it
// (tests/bash/fuzz/run.sh builds and runs it under AddressSanitizer and UBSan). Beyond "no
// crash", it checks what must hold for any input: positions lie inside the input, a line that
// parses reports a reason exactly when it is uncertain, and every error has a message.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "permissions/command_split.h"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace byd::permissions;
  const std::string_view line(reinterpret_cast<const char*>(data), size);
  const SplitResult r = splitCommandLine(line);
  if (r.error) {
    check(r.error->offset <= size);
    check(!r.error->message.empty());
    check(!r.certain);
    return 0;
  }
  check(r.certain == r.reason.empty());
  for (const SimpleCommand& c : r.commands) check(c.offset <= size);
  for (const FileAccess& f : r.files) check(f.offset < size && !f.op.empty());
  return 0;
}

#include "common/text.h"

#include <sys/random.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <ctime>
#include <fstream>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace byd {

std::string randomHex(size_t bytes) {
  std::vector<unsigned char> raw(bytes);
  size_t got = 0;
  while (got < bytes) {
    const ssize_t n = getrandom(raw.data() + got, bytes - got, 0);
    if (n > 0) got += static_cast<size_t>(n);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes * 2);
  for (unsigned char b : raw) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

size_t utf8SequenceLength(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) return 1;
  size_t len;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;  // no overlong forms
    if (c == 0xED) hi = 0x9F;  // no surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  if (b(i + 1) < lo || b(i + 1) > hi) return 0;
  for (size_t k = 2; k < len; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
  }
  return len;
}

namespace {

constexpr std::string_view kAlphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

}  // namespace

size_t validUtf8Prefix(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
#if defined(__SSE2__)
    // Sixteen ASCII bytes at a time: nearly all source code is ASCII.
    if (i + 16 <= s.size() &&
        _mm_movemask_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s.data() + i))) == 0) {
      i += 16;
      continue;
    }
#endif
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    const size_t len = utf8SequenceLength(s, i);
    if (len == 0) return i;
    i += len;
  }
  return i;
}

bool isValidUtf8(std::string_view s) { return validUtf8Prefix(s) == s.size(); }

std::string repairUtf8(std::string_view s, bool* replaced) {
  std::string out;
  out.reserve(s.size());
  bool any = false;
  size_t i = 0;
  while (i < s.size()) {
    const size_t good = validUtf8Prefix(s.substr(i));
    out.append(s.substr(i, good));
    i += good;
    if (i < s.size()) {
      out.append("\xEF\xBF\xBD");
      any = true;
      ++i;
    }
  }
  if (replaced) *replaced = any;
  return out;
}

bool repairUtf8InPlace(std::string& s) {
  if (isValidUtf8(s)) return false;
  bool replaced = false;
  s = repairUtf8(s, &replaced);
  return replaced;
}

std::string_view utf8Truncate(std::string_view s, size_t max_bytes) {
  if (s.size() <= max_bytes) return s;
  size_t cut = max_bytes;
  // Step back over continuation bytes so a multi-byte character is not split.
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return s.substr(0, cut);
}

std::string base64Encode(std::string_view data) {
  std::string out;
  out.reserve((data.size() + 2) / 3 * 4);
  size_t i = 0;
  const auto byte = [&](size_t k) { return static_cast<uint32_t>(static_cast<uint8_t>(data[k])); };
  for (; i + 2 < data.size(); i += 3) {
    const uint32_t v = byte(i) << 16 | byte(i + 1) << 8 | byte(i + 2);
    for (int shift = 18; shift >= 0; shift -= 6) out += kAlphabet[(v >> shift) & 63];
  }
  const size_t rest = data.size() - i;
  if (rest > 0) {
    const uint32_t v = byte(i) << 16 | (rest == 2 ? byte(i + 1) << 8 : 0);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += rest == 2 ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

Result<std::string> base64Decode(std::string_view text) {
  std::array<int, 256> value;
  value.fill(-1);
  for (size_t k = 0; k < kAlphabet.size(); ++k) value[static_cast<uint8_t>(kAlphabet[k])] = k;
  std::string out;
  out.reserve(text.size() / 4 * 3);
  uint32_t acc = 0;
  int bits = 0;
  size_t padding = 0;
  for (size_t k = 0; k < text.size(); ++k) {
    const char c = text[k];
    if (c == '=') {
      ++padding;
      continue;
    }
    if (c == '\n' || c == '\r') continue;
    const int v = value[static_cast<uint8_t>(c)];
    if (v < 0 || padding > 0) {
      return invalidArgument("invalid base64 at offset " + std::to_string(k));
    }
    acc = acc << 6 | v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xFF);
    }
  }
  if (padding > 2) return invalidArgument("invalid base64 padding");
  return out;
}

void isoTimeTo(int64_t unix_ns, char (&out)[kIsoTimeChars]) {
  // Whole seconds, rounded down (before 1970 too), then the civil date of the day count
  // (the proleptic Gregorian calendar in eras of 400 years), without gmtime's locks and
  // strftime's parsing: a listing formats one per entry.
  int64_t secs = unix_ns / 1000000000;
  if (unix_ns % 1000000000 < 0) --secs;
  int64_t days = secs / 86400, rem = secs % 86400;
  if (rem < 0) {
    rem += 86400;
    --days;
  }
  days += 719468;  // from 0000-03-01
  const int64_t era = (days >= 0 ? days : days - 146096) / 146097;
  const int64_t doe = days - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  const int64_t day = doy - (153 * mp + 2) / 5 + 1;
  const int64_t month = mp < 10 ? mp + 3 : mp - 9;
  const int64_t year = yoe + era * 400 + (month <= 2);
  // Nanoseconds in 64 bits span 1677 to 2262: the year has four digits.
  std::copy_n("0000-00-00T00:00:00Z", kIsoTimeChars, out);
  auto put = [&out](int at, int64_t value, int digits) {
    for (int i = digits - 1; i >= 0; --i, value /= 10)
      out[at + i] = static_cast<char>('0' + value % 10);
  };
  put(0, year, 4);
  put(5, month, 2);
  put(8, day, 2);
  put(11, rem / 3600, 2);
  put(14, rem / 60 % 60, 2);
  put(17, rem % 60, 2);
}

std::string isoTime(int64_t unix_ns) {
  char buf[kIsoTimeChars];
  isoTimeTo(unix_ns, buf);
  return std::string(buf, kIsoTimeChars);
}

std::string humanSize(uint64_t bytes) {
  // Built in one buffer: a listing formats one per entry.
  char buf[32];
  char* const end = buf + sizeof buf;
  if (bytes < 1024) {
    char* p = std::to_chars(buf, end, bytes).ptr;
    *p++ = ' ';
    *p++ = 'B';
    return std::string(buf, p);
  }
  static constexpr std::string_view kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (u < 3 && bytes >> (10 * (u + 1)) >= 1024) ++u;
  // Tenths of the unit, rounded as printf's "%.1f" rounds the exact quotient: half to even.
  const int shift = 10 * (u + 1);
  const unsigned __int128 num = static_cast<unsigned __int128>(bytes) * 10;
  uint64_t tenths = static_cast<uint64_t>(num >> shift);
  const unsigned __int128 rest = num & ((static_cast<unsigned __int128>(1) << shift) - 1);
  const unsigned __int128 half = static_cast<unsigned __int128>(1) << (shift - 1);
  if (rest > half || (rest == half && (tenths & 1))) ++tenths;
  char* p = std::to_chars(buf, end, tenths / 10).ptr;
  *p++ = '.';
  *p++ = static_cast<char>('0' + tenths % 10);
  *p++ = ' ';
  p = std::copy(kUnits[u].begin(), kUnits[u].end(), p);
  return std::string(buf, p);
}

std::vector<std::string> splitList(std::string_view list, char separator) {
  std::vector<std::string> parts;
  while (!list.empty()) {
    const size_t end = std::min(list.find(separator), list.size());
    if (end > 0) parts.emplace_back(list.substr(0, end));
    list.remove_prefix(std::min(end + 1, list.size()));
  }
  return parts;
}

bool plainName(std::string_view name) {
  if (name.empty() || name.size() > 64 || !std::isalnum(static_cast<unsigned char>(name[0]))) {
    return false;
  }
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
  });
}

std::optional<std::string> firstLineOf(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string line;
  std::getline(in, line);
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
  return line;
}

}  // namespace byd

#include "mcp/json_rpc.h"

#include <algorithm>
#include <array>
#include <charconv>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <simdjson.h>

#include "common/text.h"

namespace byd::mcp {

namespace {

Status tooDeep(int max_depth) {
  return invalidArgument("JSON nested deeper than " + std::to_string(max_depth) + " levels");
}

// simdjson's document as nlohmann's, the same as nlohmann's own parser makes it (a
// non-negative integer unsigned, the last of repeated keys kept); false when it is nested
// deeper than `max_depth`.
bool fromSimd(simdjson::dom::element e, json& out, int depth, int max_depth) {
  switch (e.type()) {
    case simdjson::dom::element_type::ARRAY: {
      if (++depth > max_depth) return false;
      out = json::array();
      auto& items = out.get_ref<json::array_t&>();
      for (simdjson::dom::element child : simdjson::dom::array(e)) {
        if (!fromSimd(child, items.emplace_back(), depth, max_depth)) return false;
      }
      return true;
    }
    case simdjson::dom::element_type::OBJECT: {
      if (++depth > max_depth) return false;
      out = json::object();
      auto& members = out.get_ref<json::object_t&>();
      for (simdjson::dom::key_value_pair member : simdjson::dom::object(e)) {
        if (!fromSimd(member.value, members[std::string(member.key)], depth, max_depth)) {
          return false;
        }
      }
      return true;
    }
    case simdjson::dom::element_type::INT64: {
      const int64_t v = int64_t(e);
      out = v >= 0 ? json(static_cast<uint64_t>(v)) : json(v);
      return true;
    }
    case simdjson::dom::element_type::UINT64:
      out = uint64_t(e);
      return true;
    case simdjson::dom::element_type::DOUBLE:
      out = double(e);
      return true;
    case simdjson::dom::element_type::STRING:
      out = std::string(std::string_view(e));
      return true;
    case simdjson::dom::element_type::BOOL:
      out = bool(e);
      return true;
    case simdjson::dom::element_type::NULL_VALUE:
      out = nullptr;
      return true;
  }
  return false;
}

}  // namespace

Result<json> parseJson(std::string_view text, int max_depth) {
  // simdjson reads a message some ten times faster than nlohmann's parser, whose lexer takes
  // a string a character at a time (a 10 KiB write_file spent a quarter of its time there);
  // what simdjson refuses, nlohmann's parser decides, so errors read as they always have.
  if (text.size() >= kSimdFrom) {
    // A parser keeps the room its largest document took: one per thread for messages up to
    // 64 KiB, a fresh one for larger.
    thread_local simdjson::dom::parser small_parser;
    simdjson::dom::parser large_parser;
    simdjson::dom::parser& parser = text.size() <= (64u << 10) ? small_parser : large_parser;
    simdjson::dom::element root;
    if (parser.parse(text.data(), text.size()).get(root) == simdjson::SUCCESS) {
      json value;
      if (!fromSimd(root, value, 0, max_depth)) return tooDeep(max_depth);
      return value;
    }
  }
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return tooDeep(max_depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  json value = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) return invalidArgument("not valid JSON");
  return value;
}

Message classify(json&& v) {
  Message m;
  if (!v.is_object()) {
    m.problem = "a JSON-RPC message must be an object";
    return m;
  }
  auto id = v.find("id");
  if (id != v.end()) {
    // Ids are strings or integers (MCP forbids null); a valid one is kept for the error reply.
    if (!id->is_string() && !id->is_number_integer()) {
      m.problem = "\"id\" must be a string or an integer";
      return m;
    }
    m.id = *id;
  }
  auto version = v.find("jsonrpc");
  if (version == v.end() || *version != "2.0") {
    m.problem = "missing \"jsonrpc\": \"2.0\"";
    return m;
  }
  auto method = v.find("method");
  if (method == v.end()) {
    if (id != v.end() && (v.contains("result") || v.contains("error"))) {
      m.kind = Kind::kResponse;
      return m;
    }
    m.problem = "missing \"method\"";
    return m;
  }
  if (!method->is_string()) {
    m.problem = "\"method\" must be a string";
    return m;
  }
  m.method = method->get<std::string>();
  auto params = v.find("params");
  if (params != v.end()) {
    if (!params->is_object() && !params->is_array()) {
      m.problem = "\"params\" must be an object or an array";
      return m;
    }
    m.params = std::move(*params);
  }
  m.kind = id == v.end() ? Kind::kNotification : Kind::kRequest;
  return m;
}

namespace {

// {"id": id, "jsonrpc": "2.0"} and one more member, built without the temporary arrays that
// nlohmann makes of a braced list of pairs.
json envelope(std::string_view key, json value, const json* id) {
  json m = json::object();
  auto& members = m.get_ref<json::object_t&>();
  if (id) members.emplace("id", *id);
  members.emplace("jsonrpc", "2.0");
  members.emplace(key, std::move(value));
  return m;
}

}  // namespace

json makeResult(const json& id, json result) { return envelope("result", std::move(result), &id); }

json makeError(const json& id, int code, std::string_view message, const json& data) {
  json error = json::object();
  error.emplace("code", code);
  error.emplace("message", message);
  if (!data.is_null()) error.emplace("data", data);
  return envelope("error", std::move(error), &id);
}

json makeNotification(std::string_view method, json params) {
  json n = envelope("method", method, nullptr);
  if (!params.is_null()) n.emplace("params", std::move(params));
  return n;
}

json errorFromStatus(const json& id, const Status& status) {
  switch (status.code()) {
    case Code::kNotFound:  // only resources/read reports this at the protocol level
      return makeError(id, rpc::kResourceNotFound, status.message());
    case Code::kInvalidArgument:
    case Code::kOutOfRange:
      return makeError(id, rpc::kInvalidParams, status.message());
    case Code::kUnimplemented:
      return makeError(id, rpc::kMethodNotFound, status.message());
    case Code::kFailedPrecondition:
    case Code::kAlreadyExists:
    case Code::kResourceExhausted:
    case Code::kPermissionDenied:
      return makeError(id, rpc::kInvalidRequest, status.message());
    default:
      return makeError(id, rpc::kInternalError, "internal error");
  }
}

namespace {

// What each byte needs inside a JSON string: 0 for nothing, 'u' for \u00XX, 'h' for a check
// that it starts a valid UTF-8 sequence (bytes from 0x80 up), else the letter after the
// backslash.
constexpr std::array<char, 256> kEscape = [] {
  std::array<char, 256> t{};
  for (int c = 0; c < 0x20; ++c) t[c] = 'u';
  for (int c = 0x80; c < 0x100; ++c) t[c] = 'h';
  t['\b'] = 'b';
  t['\t'] = 't';
  t['\n'] = 'n';
  t['\f'] = 'f';
  t['\r'] = 'r';
  t['"'] = '"';
  t['\\'] = '\\';
  return t;
}();

// nlohmann's own text for `v`: the spelling this writer must match, used where it does not
// write a value itself.
void appendDump(const json& v, std::string& out) {
  out += v.dump(-1, ' ', false, json::error_handler_t::replace);
}

// The index of the first byte at or after `i` that kEscape marks, or s.size().
size_t nextMarked(std::string_view s, size_t i) {
#if defined(__SSE2__)
  // Sixteen bytes at a time: a signed compare with 0x20 catches controls and bytes from 0x80.
  const __m128i space = _mm_set1_epi8(0x20), quote = _mm_set1_epi8('"'),
                backslash = _mm_set1_epi8('\\');
  for (; i + 16 <= s.size(); i += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s.data() + i));
    const __m128i marked =
        _mm_or_si128(_mm_cmplt_epi8(v, space),
                     _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)));
    if (const int mask = _mm_movemask_epi8(marked); mask != 0) return i + __builtin_ctz(mask);
  }
#endif
  while (i < s.size() && kEscape[static_cast<unsigned char>(s[i])] == 0) ++i;
  return i;
}

// The inside of the JSON string for `s`, without its quotes.
void writeStringBody(std::string_view s, std::string& out) {
  const size_t start = out.size();
  size_t run = 0;  // start of the bytes not yet copied
  for (size_t i = nextMarked(s, 0); i < s.size(); i = nextMarked(s, i + 1)) {
    const char e = kEscape[static_cast<unsigned char>(s[i])];
    if (e == 'h') {
      const size_t len = utf8SequenceLength(s, i);
      if (len == 0) {
        // Rare (tools repair their text): nlohmann's own replacement, for the same bytes.
        out.resize(start);
        const std::string whole =
            json(std::string(s)).dump(-1, ' ', false, json::error_handler_t::replace);
        out.append(whole, 1, whole.size() - 2);
        return;
      }
      i += len - 1;
      continue;
    }
    out.append(s.data() + run, i - run);
    run = i + 1;
    if (e == 'u') {
      static constexpr char kHex[] = "0123456789abcdef";
      const auto c = static_cast<unsigned char>(s[i]);
      const char code[6] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 15]};
      out.append(code, sizeof code);
    } else {
      out += '\\';
      out += e;
    }
  }
  out.append(s.data() + run, s.size() - run);
}

// Hands the text written so far on, in pieces, for serializeInPieces.
struct Pieces {
  size_t piece;
  const std::function<bool(std::string_view)>& flush;
  bool failed = false;

  // A point where the text may be cut: hands `out` on once it holds a piece.
  void cut(std::string& out) {
    if (out.size() < piece) return;
    if (!failed && !flush(out)) failed = true;
    out.clear();
  }
};

void writeString(std::string_view s, std::string& out, Pieces* pieces) {
  out += '"';
  if (pieces == nullptr || s.size() < pieces->piece) {
    writeStringBody(s, out);
  } else {
    // A long string goes out in parts, each cut before a byte that begins a character (or is
    // no UTF-8 at all). Its text is the same as written whole: a sequence cut short at a
    // part's end is one replacement character either way, and the next part's first byte
    // is read afresh either way.
    const auto continues = [&](size_t i) {
      return i < s.size() && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80;
    };
    while (!s.empty()) {
      const size_t want = std::min(s.size(), pieces->piece);
      size_t n = want;
      while (n > 0 && continues(n)) --n;
      if (n == 0) {  // a piece of continuation bytes alone: cut after them
        n = want;
        while (continues(n)) ++n;
      }
      writeStringBody(s.substr(0, n), out);
      pieces->cut(out);
      s.remove_prefix(n);
    }
  }
  out += '"';
}

template <typename Int>
void writeInteger(Int v, std::string& out) {
  char buf[24];
  const auto end = std::to_chars(buf, buf + sizeof buf, v).ptr;
  out.append(buf, end);
}

// Writes what dump(-1, ' ', false, replace) writes, without its per-character escaping loop:
// runs of plain bytes are copied whole. Numbers with a fraction and binary values (rare here)
// go through nlohmann's own writer, so their spelling is its spelling. With `pieces`, the text
// is handed on as it is written.
void writeValue(const json& v, std::string& out, Pieces* pieces) {
  switch (v.type()) {
    case json::value_t::object: {
      out += '{';
      bool first = true;
      for (const auto& [key, member] : v.get_ref<const json::object_t&>()) {
        if (!first) out += ',';
        first = false;
        writeString(key, out, nullptr);
        out += ':';
        writeValue(member, out, pieces);
        if (pieces) pieces->cut(out);
      }
      out += '}';
      return;
    }
    case json::value_t::array: {
      out += '[';
      bool first = true;
      for (const json& element : v) {
        if (!first) out += ',';
        first = false;
        writeValue(element, out, pieces);
        if (pieces) pieces->cut(out);
      }
      out += ']';
      return;
    }
    case json::value_t::string:
      writeString(v.get_ref<const std::string&>(), out, pieces);
      return;
    case json::value_t::boolean:
      out += v.get<bool>() ? "true" : "false";
      return;
    case json::value_t::null:
      out += "null";
      return;
    case json::value_t::number_integer:
      writeInteger(v.get<json::number_integer_t>(), out);
      return;
    case json::value_t::number_unsigned:
      writeInteger(v.get<json::number_unsigned_t>(), out);
      return;
    default:  // number_float, binary, discarded
      appendDump(v, out);
      return;
  }
}

// About the bytes `value` serializes to, a little over for text that needs no escapes: room
// reserved once, so a large answer is not copied from buffer to doubled buffer as it grows
// (a 2 MB answer would otherwise pass through buffers of 4 MB).
size_t sizeHint(const json& value) {
  switch (value.type()) {
    case json::value_t::string: {
      const size_t n = value.get_ref<const std::string&>().size();
      return n + n / 16 + 2;
    }
    case json::value_t::object: {
      size_t n = 2;
      for (const auto& [key, item] : value.items()) n += key.size() + 4 + sizeHint(item);
      return n;
    }
    case json::value_t::array: {
      size_t n = 2;
      for (const json& item : value) n += 1 + sizeHint(item);
      return n;
    }
    default:
      return 24;
  }
}

}  // namespace

size_t serializedSizeHint(const json& value) { return sizeHint(value); }

void serializeReserved(const json& value, std::string& out) { writeValue(value, out, nullptr); }

void serializeTo(const json& value, std::string& out) {
  const size_t hint = sizeHint(value);
  if (hint > 64 * 1024) out.reserve(out.size() + hint);
  serializeReserved(value, out);
}

std::string serialize(const json& value) {
  std::string out;
  serializeTo(value, out);
  return out;
}

bool serializeInPieces(const json& value, std::string& out, size_t piece,
                       const std::function<bool(std::string_view)>& flush) {
  // Less than a piece, and a string's part of a piece with some escapes.
  out.reserve(out.size() + 2 * piece + piece / 4);
  Pieces pieces{std::max<size_t>(piece, 1), flush};  // a piece of nothing would never end
  writeValue(value, out, &pieces);
  return !pieces.failed;
}

}  // namespace byd::mcp

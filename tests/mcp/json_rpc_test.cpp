#include "mcp/json_rpc.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace byd::mcp {
namespace {

TEST(ParseJson, AcceptsObjects) {
  auto v = parseJson(R"({"a": [1, {"b": "]]]"}]})");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ((*v)["a"][1]["b"], "]]]");
}

TEST(ParseJson, RejectsGarbageWithReason) {
  auto v = parseJson("{\"jsonrpc\": ");
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().message(), "not valid JSON");
}

TEST(ParseJson, RefusesDeepNestingBeforeParsing) {
  // The parser recurses per level; a megabyte of '[' must not reach it.
  std::string deep(1 << 20, '[');
  auto v = parseJson(deep);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().message(), "JSON nested deeper than 256 levels");
  EXPECT_TRUE(parseJson(std::string(200, '[') + std::string(200, ']')).ok());
}

TEST(ParseJson, BracketsInsideStringsDoNotCount) {
  std::string text = "[\"" + std::string(1000, '[') + "\\\"\"]";
  EXPECT_TRUE(parseJson(text).ok());
}

// The same value, node by node, with the same types (unsigned, signed and float apart).
void expectSameJson(const json& a, const json& b, const std::string& where) {
  ASSERT_EQ(a.type(), b.type()) << where << ": " << a.dump() << " vs " << b.dump();
  if (a.is_object()) {
    ASSERT_EQ(a.size(), b.size()) << where;
    for (const auto& [key, value] : a.items()) {
      ASSERT_TRUE(b.contains(key)) << where << "." << key;
      expectSameJson(value, b.at(key), where + "." + key);
    }
  } else if (a.is_array()) {
    ASSERT_EQ(a.size(), b.size()) << where;
    for (size_t i = 0; i < a.size(); ++i) {
      expectSameJson(a[i], b[i], where + "[" + std::to_string(i) + "]");
    }
  } else if (a.is_number_float()) {
    EXPECT_EQ(std::signbit(a.get<double>()), std::signbit(b.get<double>())) << where;
    EXPECT_EQ(a.get<double>(), b.get<double>()) << where;
  } else {
    EXPECT_EQ(a, b) << where;
  }
}

TEST(ParseJson, LargeTextsAreReadAsNlohmannReadsThem) {
  // Each text as parseJson reads it when short (nlohmann) and when padded past kSimdFrom
  // (simdjson first), against nlohmann's own verdict.
  const std::vector<std::string> texts = {
      R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"write_file",)"
      R"("arguments":{"path":"a.txt","content":"line\n\ttab \"q\" \\ \/ \u00e9 \ud83d\ude00"}}})",
      R"([0, -0, 1, -1, 9223372036854775807, 9223372036854775808, 18446744073709551615,)"
      R"( 18446744073709551616, -9223372036854775808, -9223372036854775809, 1.5, -0.0, 0.1,)"
      R"( 1e308, 2.2250738585072014e-308, 4.9e-324, 1E2, 1e-2, 123456789012345678901234567890])",
      R"({"a": 1, "a": 2, "b": {"a": [true, false, null]}, "": ""})",
      R"("\u0000 nul and \u001f" )",
      R"({"x": "\ud800"})",         // a lone surrogate
      R"({"x": "\udc00\ud800"})",   // surrogates the wrong way round
      "{\"x\": \"raw\ncontrol\"}",  // a raw line break inside a string
      "{\"x\": \"\xff\xfe\"}",      // not UTF-8
      "{\"x\": \"\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"}",
      R"({"x": 1,})",
      R"([1 2])",
      R"({"x": 01})",
      R"({"x": 1e400})",
      R"({"x": -})",
      R"({"x": .5})",
      R"({"x": tru})",
      R"({"x": "unterminated)",
      "",
      "   ",
      "nul",
      "[]",
      "{}",
  };
  for (const std::string& text : texts) {
    for (const std::string& given : {text, text + std::string(kSimdFrom, ' ')}) {
      SCOPED_TRACE(text + (given.size() > text.size() ? " (padded)" : ""));
      const json expected = json::parse(given, nullptr, /*allow_exceptions=*/false);
      auto got = parseJson(given);
      if (expected.is_discarded()) {
        ASSERT_FALSE(got.ok()) << got->dump();
        EXPECT_EQ(got.status().message(), "not valid JSON");
      } else {
        ASSERT_TRUE(got.ok()) << got.status().message();
        expectSameJson(*got, expected, "$");
      }
    }
  }
}

TEST(ParseJson, LargeTextsAreHeldToTheSameDepth) {
  for (int levels : {255, 256, 257, 1100}) {
    const std::string text =
        std::string(levels, '[') + std::string(levels, ']') + std::string(kSimdFrom, ' ');
    auto got = parseJson(text);
    EXPECT_EQ(got.ok(), levels <= 256) << levels;
    if (!got.ok()) {
      EXPECT_EQ(got.status().message(), "JSON nested deeper than 256 levels");
    }
  }
  std::string wide = "{\"k\": [";
  for (int i = 0; i < 20000; ++i) wide += std::to_string(i) + ",";
  wide += "{\"deep\": [[[\"" + std::string(100000, 'x') + "\"]]]}]}";
  auto got = parseJson(wide);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)["k"].size(), 20001u);
  EXPECT_EQ((*got)["k"][20000]["deep"][0][0][0].get<std::string>().size(), 100000u);
}

TEST(Classify, Request) {
  Message m = classify(json::parse(R"({"jsonrpc":"2.0","id":7,"method":"ping"})"));
  EXPECT_EQ(m.kind, Kind::kRequest);
  EXPECT_EQ(m.id, 7);
  EXPECT_EQ(m.method, "ping");
}

TEST(Classify, Notification) {
  Message m = classify(json::parse(R"({"jsonrpc":"2.0","method":"notifications/initialized"})"));
  EXPECT_EQ(m.kind, Kind::kNotification);
}

TEST(Classify, Response) {
  Message m = classify(json::parse(R"({"jsonrpc":"2.0","id":"a","result":{}})"));
  EXPECT_EQ(m.kind, Kind::kResponse);
}

struct InvalidCase {
  const char* text;
  const char* problem;
};

class ClassifyInvalid : public ::testing::TestWithParam<InvalidCase> {};

TEST_P(ClassifyInvalid, SaysWhy) {
  Message m = classify(json::parse(GetParam().text));
  EXPECT_EQ(m.kind, Kind::kInvalid);
  EXPECT_EQ(m.problem, GetParam().problem);
}

INSTANTIATE_TEST_SUITE_P(
    All, ClassifyInvalid,
    ::testing::Values(
        InvalidCase{"42", "a JSON-RPC message must be an object"},
        InvalidCase{R"({"id":1,"method":"ping"})", "missing \"jsonrpc\": \"2.0\""},
        InvalidCase{R"({"jsonrpc":"1.0","id":1,"method":"ping"})", "missing \"jsonrpc\": \"2.0\""},
        InvalidCase{R"({"jsonrpc":"2.0","id":1})", "missing \"method\""},
        InvalidCase{R"({"jsonrpc":"2.0","id":1,"method":5})", "\"method\" must be a string"},
        InvalidCase{R"({"jsonrpc":"2.0","id":1.5,"method":"ping"})",
                    "\"id\" must be a string or an integer"},
        InvalidCase{R"({"jsonrpc":"2.0","id":null,"method":"ping"})",
                    "\"id\" must be a string or an integer"},
        InvalidCase{R"({"jsonrpc":"2.0","id":1,"method":"ping","params":3})",
                    "\"params\" must be an object or an array"}));

TEST(ErrorFromStatus, MapsCodes) {
  EXPECT_EQ(errorFromStatus(1, invalidArgument("x"))["error"]["code"], rpc::kInvalidParams);
  EXPECT_EQ(errorFromStatus(1, unimplemented("x"))["error"]["code"], rpc::kMethodNotFound);
  EXPECT_EQ(errorFromStatus(1, failedPrecondition("x"))["error"]["code"], rpc::kInvalidRequest);
}

TEST(ErrorFromStatus, HidesInternalText) {
  json e = errorFromStatus(3, internalError("secret /etc/shadow detail"));
  EXPECT_EQ(e["error"]["code"], rpc::kInternalError);
  EXPECT_EQ(e["error"]["message"], "internal error");
  EXPECT_EQ(e["id"], 3);
}

TEST(Serialize, ReplacesInvalidUtf8InsteadOfThrowing) {
  json v = {{"name", std::string("bad\xff name")}};
  EXPECT_EQ(serialize(v), "{\"name\":\"bad\xEF\xBF\xBD name\"}");
}

std::string reference(const json& v) {
  return v.dump(-1, ' ', false, json::error_handler_t::replace);
}

TEST(Serialize, WritesWhatNlohmannWritesForEveryKindOfValue) {
  const json cases[] = {
      nullptr,
      true,
      false,
      0,
      -1,
      std::numeric_limits<int64_t>::min(),
      std::numeric_limits<int64_t>::max(),
      std::numeric_limits<uint64_t>::max(),
      0.5,
      -1e-300,
      1e300,
      3.0,
      std::numeric_limits<double>::quiet_NaN(),
      std::numeric_limits<double>::infinity(),
      "",
      "plain ascii",
      "quote \" backslash \\ slash / tab \t newline \n cr \r bs \b ff \f",
      std::string("nul \0 and \x01 \x1f \x7f", 15),
      "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80 \xEF\xBF\xBD",
      "bad \xC3 cut, \xED\xA0\x80 surrogate, \xF8 high, \xC0\xAF overlong, end \xE2\x82",
      json::array(),
      json::object(),
      {1, "two", nullptr, {{"k", {true, 2.5}}}},
      {{"b", 1}, {"a", {{"\n", "\"q\""}}}, {"c\xff", json::array()}},
      json::binary({1, 2, 3}),
  };
  for (const json& v : cases) EXPECT_EQ(serialize(v), reference(v)) << reference(v);
}

TEST(Serialize, MatchesNlohmannOnRandomBytes) {
  // Strings of random bytes, weighted toward the ones that need care: controls, quotes,
  // backslashes, and UTF-8 lead and continuation bytes in and out of order.
  std::mt19937 rng(20261201);
  const std::string alphabet =
      std::string("\x00\x01\x1f \"\\az~\x7f", 10) +
      "\x80\xBF\xC2\xC3\xDF\xE0\xE2\xED\xEF\xF0\xF4\xF5\xFF\xA0\x9F\x90\x8F";
  std::uniform_int_distribution<size_t> pick(0, alphabet.size() - 1), len(0, 80);
  for (int round = 0; round < 20000; ++round) {
    std::string s(len(rng), ' ');
    // Mostly plain bytes in some rounds, so runs cross the 16-byte blocks the writer scans.
    const bool sparse = round % 2 == 0;
    for (char& c : s) c = sparse && pick(rng) % 8 != 0 ? 'a' : alphabet[pick(rng)];
    const json v = {{"k" + s, s}, {"list", {s, 1}}};
    ASSERT_EQ(serialize(v), reference(v)) << "round " << round;
  }
}

TEST(Serialize, AppendsToWhatIsThere) {
  std::string out = "data: ";
  serializeTo(json{{"a", 1}}, out);
  EXPECT_EQ(out, "data: {\"a\":1}");
}

// serializeInPieces with small pieces: the pieces and what is left, joined.
std::string inPieces(const json& v, size_t piece, std::vector<size_t>* sizes = nullptr) {
  std::string joined, out;
  const bool ok = serializeInPieces(v, out, piece, [&](std::string_view p) {
    if (sizes) sizes->push_back(p.size());
    joined.append(p);
    return true;
  });
  EXPECT_TRUE(ok);
  return joined + out;
}

TEST(SerializeInPieces, WritesTheSameTextAsWhole) {
  std::mt19937 rng(20261207);
  // Long strings of multi-byte characters, invalid bytes and escapes, so that parts are cut
  // next to and inside every kind of sequence.
  const std::string alphabet =
      std::string("\x00\n\"\\a", 5) + "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\xFF\xC3\xE2\x82\xBF";
  std::uniform_int_distribution<size_t> pick(0, alphabet.size() - 1), len(0, 3000);
  for (int round = 0; round < 2000; ++round) {
    std::string s(len(rng), ' ');
    for (char& c : s) c = round % 3 == 0 && pick(rng) % 4 != 0 ? 'x' : alphabet[pick(rng)];
    const json v = {{"content", {{{"type", "text"}, {"text", s}}}},
                    {"structured", {{"content", s + s}, {"n", round}}}};
    const size_t piece = 1 + round % 97;
    ASSERT_EQ(inPieces(v, piece), reference(v)) << "round " << round << ", piece " << piece;
  }
}

TEST(SerializeInPieces, HandsOnPiecesOfAboutTheSizeAsked) {
  const json v = {{"text", std::string(1 << 20, 'a')}, {"more", std::string(300000, '\n')}};
  std::vector<size_t> sizes;
  EXPECT_EQ(inPieces(v, 64 << 10, &sizes), reference(v));
  ASSERT_GT(sizes.size(), 16u);  // 1 MiB, then 600 KB of escapes, in pieces of 64 KiB or more
  for (size_t n : sizes) {
    EXPECT_GE(n, 64u << 10);
    EXPECT_LE(n,
              3u * (64 << 10));  // less than a piece, then a part of one: 64 KiB of \n is 128 KiB
  }
}

TEST(SerializeInPieces, StopsHandingOnWhenTheSinkFails) {
  const json v = {{"text", std::string(200000, 'a')}};
  int calls = 0;
  std::string out;
  EXPECT_FALSE(serializeInPieces(v, out, 1000, [&](std::string_view) { return ++calls < 3; }));
  EXPECT_EQ(calls, 3);  // no piece after the one that failed
}

TEST(SerializeInPieces, APieceOfNothingIsTakenAsOneByte) {
  const json v = {{"text", "caf\xC3\xA9 \xE2\x82\xAC\n"}};
  EXPECT_EQ(inPieces(v, 0), reference(v));
}

TEST(SerializeInPieces, ASmallValueStaysInTheBuffer) {
  std::string out;
  bool called = false;
  EXPECT_TRUE(serializeInPieces(json{{"a", 1}}, out, 1 << 16, [&](std::string_view) {
    called = true;
    return true;
  }));
  EXPECT_FALSE(called);
  EXPECT_EQ(out, "{\"a\":1}");
}

}  // namespace
}  // namespace byd::mcp

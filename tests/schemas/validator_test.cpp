#include "schemas/validator.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

namespace byd::schemas {
namespace {

using nlohmann::json;

// "" for OK, else the exact InvalidArgument message.
std::string run(const json& schema, const json& instance, std::string_view root_name = "") {
  const Status s = validate(schema, instance, root_name);
  if (s.ok()) return "";
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s.toString();
  return s.message();
}

std::string run(const char* schema, const char* instance, std::string_view root_name = "") {
  return run(json::parse(schema), json::parse(instance), root_name);
}

const char* const kReadFile = R"({
  "type": "object",
  "properties": {
    "path": {"type": "string", "minLength": 1},
    "offset": {"type": "integer", "minimum": 0},
    "limit": {"type": "integer", "minimum": 1, "maximum": 2000}
  },
  "required": ["path"],
  "additionalProperties": false
})";

struct Case {
  const char* name;
  const char* schema;
  const char* instance;
  const char* expected;
};

const Case kCases[] = {
    {"valid", kReadFile, R"({"path": "a.txt", "offset": 3, "limit": 10})", ""},
    {"root type", kReadFile, "[1]", "arguments: must be an object, got array"},
    {"missing required", kReadFile, R"({"limit": 5})", "path: required property is missing"},
    {"unknown property", kReadFile, R"({"path": "a", "colour": 1})",
     "colour: unknown property (allowed: limit, offset, path)"},
    {"minimum", kReadFile, R"({"path": "a", "limit": 0})", "limit: must be >= 1, got 0"},
    {"maximum", kReadFile, R"({"path": "a", "limit": 2001})", "limit: must be <= 2000, got 2001"},
    {"integer given string", kReadFile, R"({"path": "a", "offset": "3"})",
     "offset: must be an integer, got string \"3\""},
    {"integer given fraction", kReadFile, R"({"path": "a", "offset": 2.5})",
     "offset: must be an integer, got number 2.5"},
    {"3.0 is an integer", kReadFile, R"({"path": "a", "offset": 3.0})", ""},
    {"minLength", kReadFile, R"({"path": ""})", "path: must have at least 1 character, got 0"},
    {"enum", R"({"properties": {"mode": {"enum": ["overwrite", "create", "append"]}}})",
     R"({"mode": "move"})", R"(mode: must be one of "overwrite", "create", "append", got "move")"},
    {"enum numbers compare by value", R"({"enum": [1, 2]})", "2.0", ""},
    {"const", R"({"const": {"a": [1, 2]}})", R"({"a": [1, 2.0]})", ""},
    {"const violated", R"({"const": "x"})", R"("y")", R"(arguments: must be "x", got "y")"},
    {"type array", R"({"type": ["string", "null"]})", "5",
     "arguments: must be a string or null, got number 5"},
    {"type three names", R"({"type": ["object", "array", "boolean"]})", "null",
     "arguments: must be an object, an array or a boolean, got null"},
    {"number accepts integer", R"({"type": "number"})", "7", ""},
    {"boolean", R"({"type": "boolean"})", R"("true")",
     "arguments: must be a boolean, got string \"true\""},
    {"null", R"({"type": "null"})", "false", "arguments: must be null, got boolean false"},
    {"exclusiveMinimum", R"({"exclusiveMinimum": 0})", "0", "arguments: must be > 0, got 0"},
    {"exclusiveMaximum", R"({"exclusiveMaximum": 1.5})", "1.5",
     "arguments: must be < 1.5, got 1.5"},
    {"draft4 exclusive", R"({"minimum": 0, "exclusiveMinimum": true})", "0",
     "arguments: must be > 0, got 0"},
    {"maxLength counts code points", R"({"maxLength": 3})", R"("héé")", ""},
    {"maxLength", R"({"maxLength": 3})", R"("abcd")",
     "arguments: must have at most 3 characters, got 4"},
    {"pattern is unanchored", R"({"pattern": "[0-9]+"})", R"("abc123")", ""},
    {"pattern", R"({"pattern": "^[a-z]+$"})", R"("ABC")",
     R"(arguments: must match pattern "^[a-z]+$", got "ABC")"},
    {"bad pattern", R"({"pattern": "(unclosed"})", R"("x")",
     R"(arguments: schema error: invalid pattern "(unclosed": missing ): (unclosed)"},
    {"minItems", R"({"minItems": 1})", "[]", "arguments: must have at least 1 item, got 0"},
    {"maxItems", R"({"maxItems": 2})", "[1, 2, 3]", "arguments: must have at most 2 items, got 3"},
    {"uniqueItems", R"({"uniqueItems": true})", R"([1, {"a": 2}, 3, {"a": 2.0}, 1])",
     "arguments: items must be unique, but [1] and [3] are equal"},
    {"uniqueItems ok", R"({"uniqueItems": true})", R"([1, "1", [1], {"1": 1}])", ""},
    {"nested path", R"({"properties": {"items": {"items": {"properties": {
        "name": {"type": "string"}}}}}})",
     R"({"items": [{"name": "a"}, {"name": "b"}, {"name": 5}]})",
     "items[2].name: must be a string, got number 5"},
    {"root array path", R"({"items": {"type": "integer"}})", R"([1, "x"])",
     "arguments[1]: must be an integer, got string \"x\""},
    {"odd key quoted", R"({"properties": {"a.b": {"type": "string"}}})", R"({"a.b": 1})",
     R"(arguments["a.b"]: must be a string, got number 1)"},
    {"positional items", R"({"items": [{"type": "string"}, {"type": "integer"}]})",
     R"(["a", "b", "anything"])", "arguments[1]: must be an integer, got string \"b\""},
    {"additionalProperties schema",
     R"({"properties": {"a": {}}, "additionalProperties": {"type": "integer"}})",
     R"({"a": "x", "b": 1, "c": "y"})", "c: must be an integer, got string \"y\""},
    {"nothing allowed", R"({"additionalProperties": false})", R"({"x": 1})",
     "x: unknown property (no properties are allowed)"},
    {"anyOf ok", R"({"anyOf": [{"type": "string"}, {"type": "integer"}]})", "3", ""},
    {"anyOf", R"({"anyOf": [{"type": "string"}, {"minimum": 10}]})", "3",
     "arguments: must match at least one of the anyOf schemas (#1: must be a string, got "
     "number 3; #2: must be >= 10, got 3)"},
    {"oneOf none", R"({"oneOf": [{"type": "string"}, {"type": "null"}]})", "[]",
     "arguments: must match exactly one of the oneOf schemas (#1: must be a string, got array; "
     "#2: must be null, got array)"},
    {"oneOf two", R"({"oneOf": [{"type": "integer"}, {"minimum": 0}]})", "4",
     "arguments: must match exactly one of the oneOf schemas, but matches #1 and #2"},
    {"oneOf one", R"({"oneOf": [{"type": "integer"}, {"type": "string"}]})", "4", ""},
    {"allOf", R"({"allOf": [{"type": "integer"}, {"maximum": 3}]})", "4",
     "arguments: must be <= 3, got 4"},
    {"not", R"({"not": {"type": "null"}})", "null",
     R"(arguments: must not match the "not" schema, got null)"},
    {"ref to $defs", R"({"$defs": {"pos": {"type": "integer", "minimum": 1}},
        "properties": {"line": {"$ref": "#/$defs/pos"}}})",
     R"({"line": 0})", "line: must be >= 1, got 0"},
    {"ref to definitions",
     R"({"definitions": {"s": {"type": "string"}}, "$ref": "#/definitions/s"})", "1",
     "arguments: must be a string, got number 1"},
    {"unresolvable ref", R"({"$ref": "#/$defs/missing"})", "1",
     R"(arguments: schema error: cannot resolve $ref "#/$defs/missing")"},
    {"remote ref refused", R"({"$ref": "http://example.com/s.json"})", "1",
     R"(arguments: schema error: cannot resolve $ref "http://example.com/s.json")"},
    {"false schema", R"({"properties": {"x": false}})", R"({"x": 1})",
     "x: no value is allowed here"},
    {"annotations and unknown keywords ignored",
     R"({"title": "t", "description": "d", "default": 1, "format": "uri", "x-foo": [],
        "$schema": "http://json-schema.org/draft-07/schema#", "minProperties": 5})",
     R"({"a": 1})", ""},
    {"malformed keywords ignored",
     R"({"type": 5, "minimum": "1", "required": "path", "properties": [], "enum": {}})", "0", ""},
    {"long values are truncated", R"({"enum": ["a"]})",
     R"("xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx")",
     R"(arguments: must be one of "a", got "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...")"},
    {"required order", R"({"required": ["b", "a"]})", "{}", "b: required property is missing"},
};

TEST(ValidatorTest, Table) {
  for (const Case& c : kCases) {
    EXPECT_EQ(run(c.schema, c.instance), c.expected) << c.name;
  }
}

TEST(ValidatorTest, RootName) {
  EXPECT_EQ(run(R"({"type": "object"})", "1", "params"), "params: must be an object, got number 1");
  EXPECT_EQ(run(kReadFile, R"({"path": 1})", "params"),
            "params.path: must be a string, got number 1");
  EXPECT_EQ(run(R"({"items": {"type": "string"}})", "[1]", "list"),
            "list[0]: must be a string, got number 1");
}

TEST(ValidatorTest, NonUtf8ValuesDoNotThrow) {
  // Built in code, so never checked by the parser; dump() would throw on it.
  const json bad = std::string("caf\xe9");
  EXPECT_EQ(run(json::parse(R"({"type": "integer"})"), bad),
            "arguments: must be an integer, got string \"caf\xEF\xBF\xBD\"");
  EXPECT_EQ(run(json::parse(R"({"additionalProperties": false})"), json{{"k\xff", 1}}),
            "arguments[\"k\xEF\xBF\xBD\"]: unknown property (no properties are allowed)");
}

TEST(ValidatorTest, LongPreviewOfContainers) {
  json big = json::array();
  for (int i = 0; i < 1000; ++i) big.push_back(i);
  const std::string message = run(json::parse(R"({"const": 1})"), big);
  EXPECT_EQ(message,
            "arguments: must be 1, got [0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,"
            "...");
}

std::string nestedArrays(int depth) { return std::string(depth, '[') + std::string(depth, ']'); }

TEST(ValidatorTest, DeepInstanceIsRefusedNotCrashing) {
  const json deep = json::parse(nestedArrays(10000));
  // Recursive schema: follows the instance down until the depth cap.
  std::string path = "arguments";
  for (int i = 0; i < 65; ++i) path += "[0]";
  EXPECT_EQ(run(json::parse(R"({"type": "array", "items": {"$ref": "#"}})"), deep),
            path + ": nested more than 64 levels deep");
  // Schemas that never look inside are fine.
  EXPECT_EQ(run(json::parse(R"({"type": "array"})"), deep), "");
  EXPECT_EQ(run(json::parse(R"({"enum": [[[1]]]})"), deep),
            "arguments: must be one of [[1]], got " + std::string(60, '[') + "...");
  EXPECT_EQ(run(json::parse(R"({"uniqueItems": true})"), deep),
            "arguments: nested more than 64 levels deep");
  EXPECT_EQ(run(json::parse(R"({"not": {"type": "array"}})"), deep),
            "arguments: must not match the \"not\" schema, got " + std::string(60, '[') + "...");
}

TEST(ValidatorTest, RefCyclesStop) {
  EXPECT_EQ(run(R"({"$ref": "#"})", "1"),
            "arguments: schema too deep (more than 256 nested subschemas; is there a $ref cycle?)");
  EXPECT_EQ(run(R"({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"allOf": [{"$ref": "#/$defs/a"}]}},
                   "properties": {"x": {"$ref": "#/$defs/a"}}})",
                R"({"x": 1})"),
            "x: schema too deep (more than 256 nested subschemas; is there a $ref cycle?)");
  // A cycle inside an anyOf branch is not mistaken for a mere mismatch.
  EXPECT_EQ(run(R"({"anyOf": [{"$ref": "#"}, {"type": "integer"}]})", "1"),
            "arguments: schema too deep (more than 256 nested subschemas; is there a $ref cycle?)");
}

TEST(ValidatorTest, ExponentialSchemaIsCut) {
  // Each level tries two branches that both fail at the bottom: 2^40 paths without a budget.
  json schema = {{"$defs", json::object()}};
  for (int i = 0; i < 40; ++i) {
    const std::string next = "#/$defs/d" + std::to_string(i + 1);
    schema["$defs"]["d" + std::to_string(i)] = {{"anyOf", {{{"$ref", next}}, {{"$ref", next}}}}};
  }
  schema["$defs"]["d40"] = {{"type", "string"}};
  schema["$ref"] = "#/$defs/d0";
  EXPECT_EQ(run(schema, json(1)),
            "arguments: schema too complex (anyOf/oneOf/allOf/not took more than 100000 steps)");
}

TEST(ValidatorTest, ConcurrentCallsShareRegexCache) {
  const json schema = json::parse(R"({"items": {"pattern": "^v[0-9]+$"}})");
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        failures[t] += !validate(schema, json{"v1", "v" + std::to_string(i)}).ok();
        failures[t] += validate(schema, json{"x" + std::to_string(i)}).ok();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (int f : failures) EXPECT_EQ(f, 0);
}

}  // namespace
}  // namespace byd::schemas

#pragma once
// Validates untrusted JSON against the JSON Schema subset our tool schemas use, and says what is
// wrong in one line a model can act on ("limit: must be >= 1, got 0"). It never throws and bounds
// its recursion and work on any input; it is stateless apart from a mutex-guarded regex cache,
// so any number of threads may call it concurrently.

#include <string_view>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace byd::schemas {

// Supported keywords: type (a name or an array of: object, array, string, integer, number,
// boolean, null; 3.0 counts as an integer), properties, required, additionalProperties (false or
// a schema), enum, const, minimum, maximum, exclusiveMinimum, exclusiveMaximum (a number, or the
// draft-4 boolean), minLength, maxLength (code points), pattern (RE2, unanchored), items (a
// schema, or an array of positional schemas), minItems, maxItems, uniqueItems, anyOf, oneOf,
// allOf, not, and $ref to a JSON pointer within the root ("#/$defs/x", "#/definitions/x", "#").
// Boolean schemas work. Every other keyword is ignored.
//
// Returns OK or InvalidArgument naming the field by its path ("items[2].name"), or `root_name`
// (default "arguments") for the root. Reports the first violation: required properties in
// `required` order, then unknown properties, then property values in key order (nlohmann::json
// keeps keys sorted, so that is the only stable "schema order" available).
Status validate(const nlohmann::json& schema, const nlohmann::json& instance,
                std::string_view root_name = "");

}  // namespace byd::schemas

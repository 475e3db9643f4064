#pragma once
// The tools, resources, prompts and completions that the official MCP conformance suite
// (@modelcontextprotocol/conformance, `conformance server`) calls by name: test_simple_text,
// test://static-text, test_simple_prompt and the rest, answering exactly what its scenarios
// check. Built on the same mcp/ library as backyard-mcp.

#include <memory>

#include "mcp/catalog.h"

namespace byd::conformance {

std::shared_ptr<const mcp::Catalog> fixtureCatalog();

}  // namespace byd::conformance

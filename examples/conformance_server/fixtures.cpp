#include "examples/conformance_server/fixtures.h"

#include <algorithm>
#include <chrono>
#include <thread>

namespace byd::conformance {
namespace {

using mcp::Catalog;
using mcp::CatalogTool;
using mcp::Peer;
using mcp::Prompt;
using mcp::Resource;
using mcp::ResourceTemplate;
using nlohmann::json;

// A 1x1 red PNG and a 1 ms, 8 kHz, 8-bit silent WAV.
constexpr const char* kPng =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";
constexpr const char* kWav =
    "UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQgAAACAgICAgICAgA==";

json text(const std::string& t) { return {{"type", "text"}, {"text", t}}; }
json image() { return {{"type", "image"}, {"data", kPng}, {"mimeType", "image/png"}}; }
json textResult(const std::string& t) { return {{"content", {text(t)}}}; }
json embedded(const std::string& uri, const std::string& mime, const std::string& body) {
  return {{"type", "resource"}, {"resource", {{"uri", uri}, {"mimeType", mime}, {"text", body}}}};
}

json noArguments() {
  return {{"type", "object"}, {"properties", json::object()}, {"additionalProperties", false}};
}

json stringArgument(const std::string& name, const std::string& description) {
  return {{"type", "object"},
          {"properties", {{name, {{"type", "string"}, {"description", description}}}}},
          {"required", {name}}};
}

CatalogTool tool(const std::string& name, const std::string& description, json input_schema,
                 std::function<Result<json>(const json&, Peer&)> call) {
  return {{{"name", name}, {"description", description}, {"inputSchema", std::move(input_schema)}},
          std::move(call)};
}

// A pause that a cancelled call cuts short.
void pause(Peer& peer, std::chrono::milliseconds span) {
  const auto until = std::chrono::steady_clock::now() + span;
  while (!peer.cancel().cancelled() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// Asks the client to fill in `schema` and reports what it answered.
Result<json> elicit(Peer& peer, const std::string& message, json schema,
                    const std::string& prefix) {
  auto answer = peer.ask("elicitation/create",
                         {{"message", message}, {"requestedSchema", std::move(schema)}});
  if (!answer.ok()) {
    return json{{"content", {text("Elicitation failed: " + answer.status().message())}},
                {"isError", true}};
  }
  return textResult(prefix + "action=" + answer->value("action", "") +
                    ", content=" + answer->value("content", json::object()).dump());
}

json elicitName(const std::string& message) {
  return {{"message", message},
          {"requestedSchema",
           {{"type", "object"},
            {"properties", {{"name", {{"type", "string"}, {"description", "Your name"}}}}},
            {"required", {"name"}}}}};
}

json sampleQuestion(const std::string& text) {
  return {{"messages", {{{"role", "user"}, {"content", {{"type", "text"}, {"text", text}}}}}},
          {"maxTokens", 100}};
}

// The text of a sampling answer, or an elicitation's content.
std::string answerText(const json& answer) {
  if (answer.contains("content") && answer["content"].is_object() &&
      answer["content"].contains("text")) {
    return answer["content"].value("text", "");
  }
  return answer.value("content", json::object()).dump();
}

CatalogTool asking(const std::string& name, const std::string& description, std::string method,
                   json params, std::string key, std::string prefix) {
  return tool(name, description, noArguments(),
              [method, params, key, prefix](const json&, Peer& peer) -> Result<json> {
                BYD_ASSIGN_OR_RETURN(json answer, peer.ask(method, params, key));
                return textResult(prefix + answerText(answer));
              });
}

// Fixtures of the stateless revision (2026-07-28): capabilities, logging, list changes, and
// questions answered through InputRequiredResult (multi round-trip requests).
std::vector<CatalogTool> statelessTools() {
  std::vector<CatalogTool> list;
  list.push_back(asking("test_missing_capability", "Needs the client's sampling capability",
                        "sampling/createMessage", sampleQuestion("Say hello"), "sample",
                        "Sampled: "));
  list.push_back(tool(
      "test_streaming_elicitation", "Reports progress, then asks the user for a name",
      noArguments(), [](const json&, Peer& peer) -> Result<json> {
        peer.progress(0, 1, "asking for a name");
        BYD_ASSIGN_OR_RETURN(
            json answer, peer.ask("elicitation/create", elicitName("What is your name?"), "name"));
        return textResult("Hello, " + answerText(answer));
      }));
  list.push_back(tool("test_logging_tool", "Logs two messages when the client asked for logs",
                      noArguments(), [](const json&, Peer& peer) -> Result<json> {
                        peer.log("info", "logging tool started");
                        peer.log("info", "logging tool finished");
                        return textResult("Logged two messages");
                      }));
  list.push_back(tool("test_trigger_tool_change", "Announces a change of the tool list",
                      noArguments(), [](const json&, Peer& peer) -> Result<json> {
                        peer.listChanged("tools");
                        return textResult("tools/list_changed sent");
                      }));
  list.push_back(tool("test_trigger_prompt_change", "Announces a change of the prompt list",
                      noArguments(), [](const json&, Peer& peer) -> Result<json> {
                        peer.listChanged("prompts");
                        return textResult("prompts/list_changed sent");
                      }));
  list.push_back(asking("test_input_required_result_elicitation", "Asks the user for a name",
                        "elicitation/create", elicitName("What is your name?"), "user_name",
                        "Hello, "));
  list.push_back(asking("test_input_required_result_sampling", "Asks the client's model a question",
                        "sampling/createMessage", sampleQuestion("What is the capital of France?"),
                        "capital", "The model says: "));
  list.push_back(tool("test_input_required_result_list_roots", "Asks the client for its roots",
                      noArguments(), [](const json&, Peer& peer) -> Result<json> {
                        BYD_ASSIGN_OR_RETURN(json answer,
                                             peer.ask("roots/list", json::object(), "roots"));
                        return textResult("Roots: " + answer.value("roots", json::array()).dump());
                      }));
  list.push_back(asking(
      "test_input_required_result_request_state",
      "Asks for a confirmation; the retry carries the request state", "elicitation/create",
      {{"message", "Confirm?"},
       {"requestedSchema", {{"type", "object"}, {"properties", {{"ok", {{"type", "boolean"}}}}}}}},
      "confirm", "state-ok: "));
  list.push_back(tool(
      "test_input_required_result_multiple_inputs",
      "Asks an elicitation, a sampling and a roots question at once", noArguments(),
      [](const json&, Peer& peer) -> Result<json> {
        BYD_ASSIGN_OR_RETURN(
            json answers,
            peer.askAll(
                {{"user_name",
                  {{"method", "elicitation/create"}, {"params", elicitName("What is your name?")}}},
                 {"capital",
                  {{"method", "sampling/createMessage"},
                   {"params", sampleQuestion("What is the capital of France?")}}},
                 {"roots", {{"method", "roots/list"}, {"params", json::object()}}}}));
        return textResult("Got " + std::to_string(answers.size()) + " answers");
      }));
  list.push_back(tool(
      "test_input_required_result_multi_round", "Asks two questions, one round after the other",
      noArguments(), [](const json&, Peer& peer) -> Result<json> {
        BYD_ASSIGN_OR_RETURN(json first, peer.ask("elicitation/create",
                                                  elicitName("What is your name?"), "step_one"));
        BYD_ASSIGN_OR_RETURN(
            json second,
            peer.ask("elicitation/create", elicitName("And your friend's name?"), "step_two"));
        return textResult("Hello, " + answerText(first) + " and " + answerText(second));
      }));
  list.push_back(asking("test_input_required_result_tampered_state",
                        "Asks for a name; a tampered request state is refused",
                        "elicitation/create", elicitName("What is your name?"), "user_name",
                        "Hello, "));
  list.push_back(
      tool("test_input_required_result_capabilities",
           "Asks the user when it can, else the client's model", noArguments(),
           [](const json&, Peer& peer) -> Result<json> {
             const bool user = peer.clientSupports("elicitation");
             BYD_ASSIGN_OR_RETURN(
                 json answer,
                 user ? peer.ask("elicitation/create", elicitName("Your name?"), "user_input")
                      : peer.ask("sampling/createMessage", sampleQuestion("Make up a name"),
                                 "sample_input"));
             return textResult("Got: " + answerText(answer));
           }));
  list.push_back(tool(
      "test_header_param", "Echoes a region sent also as Mcp-Param-Region",
      {{"type", "object"},
       {"properties",
        {{"region",
          {{"type", "string"}, {"description", "A region name"}, {"x-mcp-header", "Region"}}}}},
       {"required", {"region"}}},
      [](const json& args, Peer&) -> Result<json> {
        return textResult("Region: " + args.value("region", ""));
      }));
  return list;
}

// A tool that runs as a task (the tasks extension) when its client declared the extension:
// `support` is its execution.taskSupport.
CatalogTool taskTool(const std::string& name, const std::string& description, json input_schema,
                     const std::string& support,
                     std::function<Result<json>(const json&, Peer&)> call) {
  CatalogTool t = tool(name, description, std::move(input_schema), std::move(call));
  t.definition["execution"] = {{"taskSupport", support}};
  return t;
}

json confirmQuestion(const std::string& message) {
  return {{"method", "elicitation/create"},
          {"params",
           {{"message", message},
            {"requestedSchema",
             {{"type", "object"},
              {"properties", {{"confirm", {{"type", "boolean"}}}}},
              {"required", {"confirm"}}}}}}};
}

// Fixtures of the tasks extension (io.modelcontextprotocol/tasks, 2026-07-28).
std::vector<CatalogTool> taskTools() {
  std::vector<CatalogTool> list;
  list.push_back(tool("greet", "Greets by name, at once (never a task)",
                      stringArgument("name", "Who"), [](const json& args, Peer&) -> Result<json> {
                        return textResult("Hello, " + args.value("name", "") + "!");
                      }));
  list.push_back(taskTool(
      "slow_compute", "Works for `seconds`, then reports its label",
      {{"type", "object"},
       {"properties", {{"seconds", {{"type", "number"}}}, {"label", {{"type", "string"}}}}},
       {"required", {"seconds"}}},
      "optional", [](const json& args, Peer& peer) -> Result<json> {
        pause(peer,
              std::chrono::milliseconds(static_cast<int64_t>(args.value("seconds", 0.0) * 1000)));
        if (peer.cancel().cancelled()) return cancelled("cancelled");
        return textResult("Computed " + args.value("label", std::string("")));
      }));
  list.push_back(taskTool("failing_job", "Fails as a tool after a second (a task only)",
                          noArguments(), "required", [](const json&, Peer& peer) -> Result<json> {
                            pause(peer, std::chrono::seconds(1));
                            return json{{"content", {text("the job failed")}}, {"isError", true}};
                          }));
  list.push_back(taskTool("protocol_error_job", "Ends in an internal error", noArguments(),
                          "optional", [](const json&, Peer& peer) -> Result<json> {
                            pause(peer, std::chrono::milliseconds(200));
                            return internalError("the job broke down");
                          }));
  list.push_back(taskTool(
      "confirm_delete", "Asks for confirmation, then deletes (pretends to)",
      stringArgument("filename", "The file"), "optional",
      [](const json& args, Peer& peer) -> Result<json> {
        const std::string file = args.value("filename", "");
        BYD_ASSIGN_OR_RETURN(
            json answers,
            peer.askAll({{"confirm-1", confirmQuestion("Confirm deletion of " + file + "?")}}));
        const bool yes = answers["confirm-1"].value("action", "") == "accept";
        return textResult(yes ? "Deleted " + file : "Kept " + file);
      }));
  list.push_back(taskTool(
      "multi_input", "Asks two questions at once", noArguments(), "optional",
      [](const json&, Peer& peer) -> Result<json> {
        BYD_ASSIGN_OR_RETURN(json answers, peer.askAll({{"first", confirmQuestion("First?")},
                                                        {"second", confirmQuestion("Second?")}}));
        return textResult("Answered: " + answers.dump());
      }));
  CatalogTool after = taskTool(
      "test_tool_with_task", "Asks for a name, then greets it as a task", noArguments(), "required",
      [](const json&, Peer& peer) -> Result<json> {
        BYD_ASSIGN_OR_RETURN(json answer, peer.ask("elicitation/create",
                                                   elicitName("What is your name?"), "user_name"));
        const std::string name =
            answer.value("content", json::object()).value("name", std::string("nobody"));
        return peer.asTask(
            [name](Peer&) -> Result<json> { return textResult("Hello, " + name + "!"); });
      });
  after.starts_task = true;
  list.push_back(std::move(after));
  return list;
}

std::vector<CatalogTool> tools() {
  std::vector<CatalogTool> list;
  list.push_back(tool("test_simple_text", "Returns one text block", noArguments(),
                      [](const json&, Peer&) -> Result<json> {
                        return textResult("This is a simple text response for testing.");
                      }));
  list.push_back(tool("test_image_content", "Returns a 1x1 PNG image", noArguments(),
                      [](const json&, Peer&) -> Result<json> {
                        return json{{"content", {image()}}};
                      }));
  list.push_back(tool(
      "test_audio_content", "Returns a short WAV clip", noArguments(),
      [](const json&, Peer&) -> Result<json> {
        return json{{"content", {{{"type", "audio"}, {"data", kWav}, {"mimeType", "audio/wav"}}}}};
      }));
  list.push_back(tool("test_embedded_resource", "Returns an embedded text resource", noArguments(),
                      [](const json&, Peer&) -> Result<json> {
                        return json{{"content",
                                     {embedded("test://embedded-resource", "text/plain",
                                               "This is an embedded resource content.")}}};
                      }));
  list.push_back(tool("test_multiple_content_types", "Returns text, an image and a resource",
                      noArguments(), [](const json&, Peer&) -> Result<json> {
                        return json{{"content",
                                     {text("Multiple content types test:"), image(),
                                      embedded("test://mixed-content-resource", "application/json",
                                               R"({"test":"data","value":123})")}}};
                      }));
  list.push_back(tool("test_tool_with_logging", "Sends three log messages while it runs",
                      noArguments(), [](const json&, Peer& peer) -> Result<json> {
                        peer.log("info", "Tool execution started");
                        pause(peer, std::chrono::milliseconds(50));
                        peer.log("info", "Tool processing data");
                        pause(peer, std::chrono::milliseconds(50));
                        peer.log("info", "Tool execution completed");
                        return textResult("Tool with logging executed successfully");
                      }));
  list.push_back(tool(
      "test_error_handling", "Always fails", noArguments(), [](const json&, Peer&) -> Result<json> {
        return json{{"content", {text("This tool intentionally returns an error for testing")}},
                    {"isError", true}};
      }));
  list.push_back(tool("test_tool_with_progress", "Reports progress 0, 50 and 100 of 100",
                      noArguments(), [](const json&, Peer& peer) -> Result<json> {
                        for (double step : {0.0, 50.0, 100.0}) {
                          if (step > 0) pause(peer, std::chrono::milliseconds(50));
                          peer.progress(step, 100.0);
                        }
                        return textResult("Tool with progress executed successfully");
                      }));
  list.push_back(tool(
      "test_sampling", "Asks the client's model to answer a prompt",
      stringArgument("prompt", "The prompt to send to the LLM"),
      [](const json& args, Peer& peer) -> Result<json> {
        auto answer =
            peer.ask("sampling/createMessage",
                     {{"messages",
                       {{{"role", "user"}, {"content", text(args["prompt"].get<std::string>())}}}},
                      {"maxTokens", 100}});
        if (!answer.ok()) {
          return json{{"content", {text("Sampling failed: " + answer.status().message())}},
                      {"isError", true}};
        }
        const json content = answer->value("content", json::object());
        const std::string reply =
            content.is_object() ? content.value("text", content.dump()) : content.dump();
        return textResult("LLM response: " + reply);
      }));
  list.push_back(tool(
      "test_elicitation", "Asks the user for a name and an email address",
      stringArgument("message", "The message to show the user"),
      [](const json& args, Peer& peer) -> Result<json> {
        return elicit(peer, args["message"].get<std::string>(),
                      {{"type", "object"},
                       {"properties",
                        {{"username", {{"type", "string"}, {"description", "User's response"}}},
                         {"email", {{"type", "string"}, {"description", "User's email address"}}}}},
                       {"required", {"username", "email"}}},
                      "User response: ");
      }));
  list.push_back(tool(
      "test_elicitation_sep1034_defaults", "Asks for fields that all have defaults (SEP-1034)",
      noArguments(), [](const json&, Peer& peer) -> Result<json> {
        json properties = {
            {"name", {{"type", "string"}, {"description", "User name"}, {"default", "John Doe"}}},
            {"age", {{"type", "integer"}, {"description", "User age"}, {"default", 30}}},
            {"score", {{"type", "number"}, {"description", "User score"}, {"default", 95.5}}},
            {"status",
             {{"type", "string"},
              {"description", "User status"},
              {"enum", {"active", "inactive", "pending"}},
              {"default", "active"}}},
            {"verified",
             {{"type", "boolean"}, {"description", "Verification status"}, {"default", true}}}};
        return elicit(peer, "Please review and update the form fields with defaults",
                      {{"type", "object"}, {"properties", properties}, {"required", json::array()}},
                      "Elicitation completed: ");
      }));
  list.push_back(tool(
      "test_elicitation_sep1330_enums", "Asks with every enum form (SEP-1330)", noArguments(),
      [](const json&, Peer& peer) -> Result<json> {
        auto titled = [](const char* prefix, std::initializer_list<const char*> titles) {
          json options = json::array();
          int n = 1;
          for (const char* title : titles) {
            options.push_back({{"const", prefix + std::to_string(n++)}, {"title", title}});
          }
          return options;
        };
        json properties = {
            {"untitledSingle",
             {{"type", "string"},
              {"description", "Untitled single-select"},
              {"enum", {"option1", "option2", "option3"}}}},
            {"titledSingle",
             {{"type", "string"},
              {"description", "Titled single-select"},
              {"oneOf", titled("value", {"First Option", "Second Option", "Third Option"})}}},
            {"legacyEnum",
             {{"type", "string"},
              {"description", "Legacy titled enum"},
              {"enum", {"opt1", "opt2", "opt3"}},
              {"enumNames", {"Option One", "Option Two", "Option Three"}}}},
            {"untitledMulti",
             {{"type", "array"},
              {"description", "Untitled multi-select"},
              {"items", {{"type", "string"}, {"enum", {"option1", "option2", "option3"}}}}}},
            {"titledMulti",
             {{"type", "array"},
              {"description", "Titled multi-select"},
              {"items",
               {{"anyOf", titled("value", {"First Choice", "Second Choice", "Third Choice"})}}}}}};
        return elicit(peer, "Please choose from the enum fields",
                      {{"type", "object"}, {"properties", properties}, {"required", json::array()}},
                      "Elicitation completed: ");
      }));
  list.push_back(tool("test_reconnection",
                      "Ends its HTTP response stream before answering; the client resumes it "
                      "with Last-Event-ID (SSE polling)",
                      noArguments(), [](const json&, Peer& peer) -> Result<json> {
                        const bool closed = peer.closeStream();
                        // Let the cut reach the client before the answer exists.
                        pause(peer, std::chrono::milliseconds(100));
                        return textResult(closed ? "Reconnection test completed successfully"
                                                 : "Reconnection test completed (this transport "
                                                   "keeps its streams open)");
                      }));
  list.push_back(tool(
      "json_schema_2020_12_tool", "Tool with JSON Schema 2020-12 features",
      {{"$schema", "https://json-schema.org/draft/2020-12/schema"},
       {"type", "object"},
       {"$defs",
        {{"address",
          {{"$anchor", "addressDef"},
           {"type", "object"},
           {"properties", {{"street", {{"type", "string"}}}, {"city", {{"type", "string"}}}}}}}}},
       {"properties",
        {{"name", {{"type", "string"}}},
         {"address", {{"$ref", "#/$defs/address"}}},
         {"contactMethod", {{"type", "string"}, {"enum", {"phone", "email"}}}},
         {"phone", {{"type", "string"}}},
         {"email", {{"type", "string"}}}}},
       {"allOf", {{{"anyOf", {{{"required", {"phone"}}}, {{"required", {"email"}}}}}}}},
       {"if",
        {{"properties", {{"contactMethod", {{"const", "phone"}}}}},
         {"required", {"contactMethod"}}}},
       {"then", {{"required", {"phone"}}}},
       {"else", {{"required", {"email"}}}},
       {"additionalProperties", false}},
      [](const json& args, Peer&) -> Result<json> {
        return textResult("Received: " + args.dump());
      }));
  for (CatalogTool& t : statelessTools()) list.push_back(std::move(t));
  for (CatalogTool& t : taskTools()) list.push_back(std::move(t));
  return list;
}

Resource textResource(const std::string& uri, const std::string& name,
                      const std::string& description, const std::string& body) {
  return {{{"uri", uri}, {"name", name}, {"description", description}, {"mimeType", "text/plain"}},
          [body](const std::string& u) -> Result<json> {
            return json::array({{{"uri", u}, {"mimeType", "text/plain"}, {"text", body}}});
          }};
}

std::vector<Resource> resources() {
  std::vector<Resource> list;
  list.push_back(textResource("test://static-text", "static-text", "A static text resource",
                              "This is the content of the static text resource."));
  list.push_back({{{"uri", "test://static-binary"},
                   {"name", "static-binary"},
                   {"description", "A static binary resource (a PNG image)"},
                   {"mimeType", "image/png"}},
                  [](const std::string& uri) -> Result<json> {
                    return json::array({{{"uri", uri}, {"mimeType", "image/png"}, {"blob", kPng}}});
                  }});
  list.push_back(textResource("test://watched-resource", "watched-resource",
                              "A resource clients may subscribe to",
                              "This resource is watched for changes."));
  return list;
}

std::vector<ResourceTemplate> templates() {
  return {
      {{{"uriTemplate", "test://template/{id}/data"},
        {"name", "template-data"},
        {"description", "Data for one id"},
        {"mimeType", "application/json"}},
       [](const std::string& uri, const std::map<std::string, std::string>& vars) -> Result<json> {
         const std::string id = vars.at("id");
         const json body = {{"id", id}, {"templateTest", true}, {"data", "Data for ID: " + id}};
         return json::array(
             {{{"uri", uri}, {"mimeType", "application/json"}, {"text", body.dump()}}});
       }}};
}

json message(json content) { return {{"role", "user"}, {"content", std::move(content)}}; }

std::vector<Prompt> prompts() {
  std::vector<Prompt> list;
  list.push_back(
      {{{"name", "test_simple_prompt"}, {"description", "A prompt without arguments"}},
       [](const std::map<std::string, std::string>&, Peer&) -> Result<json> {
         return json{{"messages", {message(text("This is a simple prompt for testing."))}}};
       }});
  list.push_back(
      {{{"name", "test_prompt_with_arguments"},
        {"description", "A prompt with two arguments"},
        {"arguments",
         {{{"name", "arg1"}, {"description", "First test argument"}, {"required", true}},
          {{"name", "arg2"}, {"description", "Second test argument"}, {"required", true}}}}},
       [](const std::map<std::string, std::string>& args, Peer&) -> Result<json> {
         return json{{"messages",
                      {message(text("Prompt with arguments: arg1='" + args.at("arg1") +
                                    "', arg2='" + args.at("arg2") + "'"))}}};
       }});
  list.push_back({{{"name", "test_prompt_with_embedded_resource"},
                   {"description", "A prompt that embeds a resource"},
                   {"arguments",
                    {{{"name", "resourceUri"},
                      {"description", "URI of the resource to embed"},
                      {"required", true}}}}},
                  [](const std::map<std::string, std::string>& args, Peer&) -> Result<json> {
                    return json{{"messages",
                                 {message(embedded(args.at("resourceUri"), "text/plain",
                                                   "Embedded resource content for testing.")),
                                  message(text("Please process the embedded resource above."))}}};
                  }});
  list.push_back({{{"name", "test_input_required_result_prompt"},
                   {"description", "Asks the user for context before it answers"}},
                  [](const std::map<std::string, std::string>&, Peer& peer) -> Result<json> {
                    BYD_ASSIGN_OR_RETURN(
                        json answer,
                        peer.ask("elicitation/create",
                                 {{"message", "What context should the prompt use?"},
                                  {"requestedSchema",
                                   {{"type", "object"},
                                    {"properties", {{"context", {{"type", "string"}}}}},
                                    {"required", {"context"}}}}},
                                 "user_context"));
                    return json{{"messages", {message(text("Context: " + answerText(answer)))}}};
                  }});
  list.push_back(
      {{{"name", "test_prompt_with_image"}, {"description", "A prompt with an image"}},
       [](const std::map<std::string, std::string>&, Peer&) -> Result<json> {
         return json{
             {"messages", {message(image()), message(text("Please analyze the image above."))}}};
       }});
  return list;
}

// Completes arg1 of test_prompt_with_arguments and the id of the template from fixed lists.
Result<std::vector<std::string>> complete(const json& ref, const std::string& argument,
                                          const std::string& value, const json&) {
  std::vector<std::string> candidates;
  if (ref.value("name", "") == "test_prompt_with_arguments" && argument == "arg1") {
    candidates = {"paris", "park", "party", "test", "testing", "tested"};
  } else if (ref.value("uri", "") == "test://template/{id}/data" && argument == "id") {
    candidates = {"1", "12", "123", "2", "42"};
  }
  std::vector<std::string> matches;
  std::copy_if(candidates.begin(), candidates.end(), std::back_inserter(matches),
               [&](const std::string& c) { return c.starts_with(value); });
  return matches;
}

}  // namespace

std::shared_ptr<const Catalog> fixtureCatalog() {
  auto catalog = std::make_shared<Catalog>();
  catalog->console_tools = false;
  catalog->lists_change = true;  // test_trigger_tool_change and test_trigger_prompt_change
  catalog->tools = tools();
  catalog->resources = resources();
  catalog->templates = templates();
  catalog->prompts = prompts();
  catalog->complete = complete;
  return catalog;
}

}  // namespace byd::conformance

// The runtimes file (--runtimes): the images a session of the Docker backend (or, with
// --placement docker-swarm, the agent images a session's Swarm service) may ask for by
// name (`_meta` "io.backyard/runtime" on initialize, or ?runtime=NAME on the endpoint), each
// given or built on first use, with its own limits and network rules.
//
//   {
//     "python-datascience": {
//       "description": "Python 3.11 with numpy, pandas, matplotlib and scikit-learn",
//       "base_image": "backyard-mcp/python:bookworm",
//       "packages": {"apt": ["python3-numpy", "python3-pandas"], "pip": [], "npm": []},
//       "limits": {"container_memory": 2147483648, "cpus": 2, "pids": 512, "max_timeout_s": 1800},
//       "network": {"default": "deny", "rules": [{"pattern": "pypi.org:443", "action": "allow"}]}
//     },
//     "plain": {"image": "python:3.12-slim"}
//   }
//
// Each runtime has an `image` (run as it is) or a `base_image` and `packages` (Debian's apt,
// pip, npm; `pip_index_url` and `npm_registry` name where pip and npm fetch from), built
// through the engine's build endpoint into "backyard-runtime/NAME:DIGEST", the digest that of
// its Dockerfile: the same recipe is built once, a changed one is a new image. `limits` are
// the settings of those names, for its containers and calls; `network` is a ruleset's network
// section (its default and rules), which takes the place of the ruleset's own for the
// runtime's sessions. A Swarm front takes an `image` and `limits` alone (its agents run on
// other engines, by their own rules), and places a runtime's sessions on the nodes labelled
// for it (see placement/swarm.h). Errors name the file, the runtime and the key.

#include <algorithm>

#include "common/text.h"
#include "config.h"
#include "mcp/crypto.h"
#include "permissions/ruleset.h"

namespace byd {
namespace {

constexpr std::string_view kRuntimeKeys[] = {"description", "image",         "base_image",
                                             "packages",    "pip_index_url", "npm_registry",
                                             "limits",      "network"};
constexpr std::string_view kPackageKinds[] = {"apt", "pip", "npm"};
constexpr std::string_view kRuntimeLimits[] = {"container_memory", "cpus", "pids", "max_timeout_s"};

Status knownKeys(const nlohmann::json& object, std::span<const std::string_view> known,
                 const std::string& where) {
  for (const auto& [key, _] : object.items()) {
    if (std::ranges::find(known, key) == known.end()) {
      return invalidArgument(where + ": unknown key '" + key + "' (known: " + joinComma(known) +
                             ")");
    }
  }
  return okStatus();
}

Result<std::string> stringField(const nlohmann::json& object, std::string_view key,
                                const std::string& where) {
  auto it = object.find(key);
  if (it == object.end()) return std::string();
  if (!it->is_string() || it->get<std::string>().empty()) {
    return invalidArgument(where + ": " + std::string(key) + " must be a non-empty string");
  }
  const std::string text = it->get<std::string>();
  if (text.find_first_of(" \t\r\n'\"\\`$") != std::string::npos) {
    return invalidArgument(where + ": " + std::string(key) + " '" + text +
                           "' holds a space, a quote or another character it cannot hold");
  }
  return text;
}

Status readPackages(const nlohmann::json& packages, const std::string& where,
                    docker::ImageRecipe& recipe) {
  if (!packages.is_object()) return invalidArgument(where + ": packages: not a JSON object");
  BYD_RETURN_IF_ERROR(knownKeys(packages, kPackageKinds, where + ": packages"));
  for (const auto& [kind, names] : packages.items()) {
    auto& into = kind == "apt" ? recipe.apt : kind == "pip" ? recipe.pip : recipe.npm;
    if (!names.is_array()) {
      return invalidArgument(where + ": packages." + kind + ": not an array of names");
    }
    for (const nlohmann::json& name : names) {
      if (!name.is_string()) {
        return invalidArgument(where + ": packages." + kind + ": not an array of names");
      }
      const std::string why = docker::checkPackageName(kind, name.get<std::string>());
      if (!why.empty()) return invalidArgument(where + ": packages." + kind + ": " + why);
      into.push_back(name.get<std::string>());
    }
  }
  return okStatus();
}

Result<RuntimeSpec> readRuntime(const Config& config, const std::string& name,
                                const nlohmann::json& value, const std::filesystem::path& dir,
                                const std::string& source) {
  const std::string where = source + ": runtime '" + name + "'";
  if (!plainName(name)) {
    return invalidArgument(source + ": the runtime name '" + name + "' must be " +
                           std::string(kPlainNameRule));
  }
  if (!value.is_object()) return invalidArgument(where + ": not a JSON object");
  BYD_RETURN_IF_ERROR(knownKeys(value, kRuntimeKeys, where));
  RuntimeSpec rt;
  rt.name = name;
  if (auto d = value.find("description"); d != value.end()) {
    if (!d->is_string()) return invalidArgument(where + ": description must be a string");
    rt.description = d->get<std::string>();
  }
  BYD_ASSIGN_OR_RETURN(rt.image, stringField(value, "image", where));
  BYD_ASSIGN_OR_RETURN(const std::string base, stringField(value, "base_image", where));
  const bool has_packages = value.contains("packages");
  if (rt.image.empty() == base.empty()) {
    return invalidArgument(where +
                           ": give either \"image\" (run as it is) or \"base_image\" "
                           "and \"packages\" (built on first use)");
  }
  if (!rt.image.empty() &&
      (has_packages || value.contains("pip_index_url") || value.contains("npm_registry"))) {
    return invalidArgument(where +
                           ": \"packages\", \"pip_index_url\" and \"npm_registry\" go "
                           "with \"base_image\": an \"image\" is run as it is");
  }
  if (!base.empty()) {
    docker::ImageRecipe recipe;
    recipe.runtime = name;
    recipe.base_image = base;
    if (has_packages) BYD_RETURN_IF_ERROR(readPackages(value["packages"], where, recipe));
    BYD_ASSIGN_OR_RETURN(recipe.pip_index_url, stringField(value, "pip_index_url", where));
    BYD_ASSIGN_OR_RETURN(recipe.npm_registry, stringField(value, "npm_registry", where));
    BYD_ASSIGN_OR_RETURN(const std::string digest, mcp::sha256Hex(recipe.dockerfile()));
    recipe.tag = docker::runtimeRepository(name) + ":" + digest.substr(0, 16);
    rt.image = recipe.tag;
    rt.recipe = std::move(recipe);
  }
  if (auto limits = value.find("limits"); limits != value.end()) {
    if (!limits->is_object()) return invalidArgument(where + ": limits: not a JSON object");
    BYD_RETURN_IF_ERROR(knownKeys(*limits, kRuntimeLimits, where + ": limits"));
    Config own = config;
    for (const auto& [limit, amount] : limits->items()) {
      BYD_RETURN_IF_ERROR(applySetting(limit, amount, dir, where + ": limits." + limit, own));
    }
    if (limits->contains("container_memory")) rt.memory_bytes = own.docker.memory_bytes;
    if (limits->contains("cpus")) rt.cpus = own.docker.cpus;
    if (limits->contains("pids")) rt.pids = own.docker.pids;
    if (limits->contains("max_timeout_s")) rt.max_timeout_s = own.limits.max_timeout_s;
  }
  if (auto network = value.find("network"); network != value.end()) {
    // Checked as a ruleset holding it would be.
    auto checked = permissions::Ruleset::fromJson(
        nlohmann::json{{"name", "runtime " + name}, {"default", "deny"}, {"network", *network}});
    if (!checked.ok()) return invalidArgument(where + ": network: " + checked.status().message());
    rt.network = *network;
  }
  return rt;
}

}  // namespace

Result<std::vector<RuntimeSpec>> loadRuntimes(const Config& config) {
  const std::string& path = config.runtimes_file;
  const std::string source = "runtimes file '" + path + "'";
  const bool swarm = config.placement == "docker-swarm";
  if (config.backend != "docker" && !swarm) {
    return invalidArgument(source +
                           ": runtimes are images of the Docker backend or of a Swarm front's "
                           "agents: they need --backend docker or --placement docker-swarm");
  }
  BYD_ASSIGN_OR_RETURN(nlohmann::json doc, readJsonFile(path, "runtimes file"));
  if (!doc.is_object() || doc.empty()) {
    return invalidArgument(source + ": must be a JSON object with one key per runtime");
  }
  const std::filesystem::path dir = std::filesystem::absolute(path).parent_path();
  std::vector<RuntimeSpec> out;
  for (const auto& [name, value] : doc.items()) {
    BYD_ASSIGN_OR_RETURN(RuntimeSpec rt, readRuntime(config, name, value, dir, source));
    // A Swarm front's agents run on other engines, under their own rules.
    if (swarm && rt.recipe) {
      return invalidArgument(source + ": runtime '" + name +
                             "': --placement docker-swarm runs an \"image\" every node has "
                             "(an agent image, pushed or loaded there); one built from "
                             "\"base_image\" would be on this engine alone");
    }
    if (swarm && !rt.network.is_null()) {
      return invalidArgument(source + ": runtime '" + name +
                             "': network: a Swarm session's agent judges its network by its "
                             "own ruleset: give the rules to the agent's image");
    }
    out.push_back(std::move(rt));
  }
  return out;
}

const RuntimeSpec* findRuntime(const Config& config, std::string_view name) {
  for (const RuntimeSpec& rt : config.runtimes) {
    if (rt.name == name) return &rt;
  }
  return nullptr;
}

}  // namespace byd

// The tenants file (--tokens-file): who may use an HTTP server, each known by a bearer token.
//
//   {
//     "sha256:9f86d081884c7d65...": {"name": "alice", "max_sessions": 4, "ruleset": "readonly"},
//     "a-long-random-token-for-bob": {"name": "bob", "workspace_root": "/srv/bob",
//                                     "limits": {"max_timeout_s": 60}}
//   }
//
// Each key is a token, or "sha256:" and the lowercase or uppercase hex SHA-256 of one (so the
// file need not hold the token itself); only the digest is kept. Each value is a tenant: its
// `name` (letters, digits, '.', '_', '-'; unique), and optionally `max_sessions` (below
// --max-sessions, which stays the cap of all), `ruleset` (as the setting: a preset, a file
// beside this one, or the ruleset itself), `workspace_root` (its sessions' directories; else
// --workspace-root/NAME when that is set) and `limits` (max_text_bytes, max_read_bytes,
// max_results, max_timeout_s, max_output_bytes, each as its setting) and `runtimes` (the names
// of the --runtimes it may use; the first is its sessions' when they ask for none; without the
// key, it may use every one). Errors name the file,
// the tenant and the key, never a token. A file that users other than its owner may read or
// write is refused: it holds the keys to every tenant.

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <set>

#include "common/text.h"
#include "config.h"
#include "mcp/crypto.h"

namespace byd {
namespace {

constexpr std::string_view kDigestPrefix = "sha256:";
constexpr size_t kMinTokenChars = 16;
constexpr std::string_view kTenantKeys[] = {"name",           "max_sessions", "ruleset",
                                            "workspace_root", "limits",       "runtimes"};
constexpr std::string_view kLimitKeys[] = {"max_text_bytes", "max_read_bytes", "max_results",
                                           "max_timeout_s", "max_output_bytes"};

// The digest a key stands for: its own hex, or the SHA-256 of the token it is.
Result<std::string> digestOf(const std::string& key, const std::string& where) {
  if (key.compare(0, kDigestPrefix.size(), kDigestPrefix) == 0) {
    std::string hex = key.substr(kDigestPrefix.size());
    for (char& c : hex) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (hex.size() != 64 || hex.find_first_not_of("0123456789abcdef") != std::string::npos) {
      return invalidArgument(where + ": a key \"sha256:…\" needs the 64 hex digits of a SHA-256");
    }
    return hex;
  }
  if (key.size() < kMinTokenChars) {
    return invalidArgument(where + ": its token has " + std::to_string(key.size()) +
                           " characters, fewer than " + std::to_string(kMinTokenChars) +
                           ": too easy to guess");
  }
  return mcp::sha256Hex(key);
}

Result<TenantSpec> readTenant(const Config& config, const std::string& key,
                              const nlohmann::json& value, const std::filesystem::path& dir,
                              const std::string& where) {
  if (!value.is_object()) return invalidArgument(where + ": not a JSON object");
  for (const auto& [field, _] : value.items()) {
    if (std::ranges::find(kTenantKeys, field) == std::end(kTenantKeys)) {
      return invalidArgument(where + ": unknown key '" + field +
                             "' (known: " + joinComma(kTenantKeys) + ")");
    }
  }
  TenantSpec tenant;
  const auto name = value.find("name");
  if (name == value.end() || !name->is_string() || !plainName(name->get<std::string>())) {
    return invalidArgument(where + ": \"name\" must be " + std::string(kPlainNameRule));
  }
  tenant.name = name->get<std::string>();
  const std::string at = where + " ('" + tenant.name + "')";
  BYD_ASSIGN_OR_RETURN(tenant.token_sha256, digestOf(key, at));

  Config own = config;  // the tenant's settings, over the server's
  tenant.max_sessions = config.max_sessions;
  if (auto cap = value.find("max_sessions"); cap != value.end()) {
    BYD_RETURN_IF_ERROR(applySetting("max_sessions", *cap, dir, at + ": max_sessions", own));
    tenant.max_sessions = std::min(own.max_sessions, config.max_sessions);
  }
  if (auto rules = value.find("ruleset"); rules != value.end()) {
    BYD_RETURN_IF_ERROR(applySetting("ruleset", *rules, dir, at + ": ruleset", own));
    auto loaded = loadRuleset(own);
    if (!loaded.ok()) return invalidArgument(at + ": ruleset: " + loaded.status().message());
    tenant.ruleset = std::move(*loaded);
  }
  if (auto limits = value.find("limits"); limits != value.end()) {
    if (!limits->is_object()) return invalidArgument(at + ": limits: not a JSON object");
    for (const auto& [limit, amount] : limits->items()) {
      if (std::ranges::find(kLimitKeys, limit) == std::end(kLimitKeys)) {
        return invalidArgument(at + ": limits: unknown key '" + limit +
                               "' (known: " + joinComma(kLimitKeys) + ")");
      }
      BYD_RETURN_IF_ERROR(applySetting(limit, amount, dir, at + ": limits." + limit, own));
    }
    tenant.limits = own.limits;
  }
  if (auto runtimes = value.find("runtimes"); runtimes != value.end()) {
    if (!runtimes->is_array()) {
      return invalidArgument(at + ": runtimes: not an array of runtime names");
    }
    tenant.runtimes.emplace();
    for (const nlohmann::json& name : *runtimes) {
      if (!name.is_string() || findRuntime(config, name.get<std::string>()) == nullptr) {
        std::vector<std::string> known;
        for (const RuntimeSpec& rt : config.runtimes) known.push_back(rt.name);
        return invalidArgument(at + ": runtimes: " + name.dump() + " is not a runtime of " +
                               (config.runtimes_file.empty()
                                    ? std::string("this server (no --runtimes file)")
                                    : "--runtimes (" + joinComma(known) + ")"));
      }
      tenant.runtimes->push_back(name.get<std::string>());
    }
  }
  if (auto root = value.find("workspace_root"); root != value.end()) {
    if (config.backend == "state") {
      return invalidArgument(at + ": workspace_root: the state backend keeps no files");
    }
    BYD_RETURN_IF_ERROR(applySetting("workspace_root", *root, dir, at + ": workspace_root", own));
    std::error_code ec;
    if (!std::filesystem::is_directory(own.workspace_root, ec)) {
      return invalidArgument(at + ": workspace_root '" + own.workspace_root +
                             "' is not a directory");
    }
    tenant.workspace_root = std::filesystem::canonical(own.workspace_root).string();
  } else if (!config.workspace_root.empty()) {
    // Under the server's, in a directory of its own, made now.
    const std::filesystem::path own_dir =
        std::filesystem::path(config.workspace_root) / tenant.name;
    if (mkdir(own_dir.c_str(), 0700) != 0 && errno != EEXIST) {
      return invalidArgument(at + ": cannot make its directory " + own_dir.string() + ": " +
                             strerror(errno));
    }
    tenant.workspace_root = std::filesystem::canonical(own_dir).string();
  }
  return tenant;
}

}  // namespace

Result<std::vector<TenantSpec>> loadTenants(const Config& config) {
  const std::string& path = config.tokens_file;
  const std::string source = "tokens file '" + path + "'";
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    return invalidArgument(source + " cannot be read: " + strerror(errno));
  }
  if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    char mode[8];
    snprintf(mode, sizeof mode, "%04o", st.st_mode & 07777);
    return invalidArgument(source + " may be read or written by users other than its owner (mode " +
                           mode + "): it holds every tenant's token; chmod 600 it");
  }
  BYD_ASSIGN_OR_RETURN(nlohmann::json doc, readJsonFile(path, "tokens file"));
  if (!doc.is_object() || doc.empty()) {
    return invalidArgument(source + ": must be a JSON object with one key per token");
  }
  const std::filesystem::path dir = std::filesystem::absolute(path).parent_path();
  std::vector<TenantSpec> tenants;
  std::set<std::string> names, digests, roots;
  size_t index = 0;
  for (const auto& [key, value] : doc.items()) {
    const std::string where = source + ": tenant " + std::to_string(++index);
    BYD_ASSIGN_OR_RETURN(TenantSpec tenant, readTenant(config, key, value, dir, where));
    if (!names.insert(tenant.name).second) {
      return invalidArgument(where + ": the name '" + tenant.name + "' is taken by another");
    }
    for (const std::string& other : roots) {  // canonical paths: one spelling each
      const std::string& mine = tenant.workspace_root;
      const auto within = [](const std::string& a, const std::string& b) {
        return a == b || (a.size() > b.size() && a.compare(0, b.size(), b) == 0 &&
                          (b.back() == '/' || a[b.size()] == '/'));
      };
      if (!mine.empty() && (within(mine, other) || within(other, mine))) {
        return invalidArgument(where + " ('" + tenant.name + "'): workspace_root '" + mine +
                               "' is, holds or lies in another tenant's ('" + other + "')");
      }
    }
    if (!tenant.workspace_root.empty()) roots.insert(tenant.workspace_root);
    if (!digests.insert(tenant.token_sha256).second) {
      return invalidArgument(where + " ('" + tenant.name + "'): its token is another tenant's too");
    }
    tenants.push_back(std::move(tenant));
  }
  // Tenants must not share files: each session in a directory of its own, or a backend that
  // keeps none on this machine's root.
  const bool shares_root =
      config.backend == "local" || (config.backend == "docker" && config.root_given);
  if (shares_root && tenants.size() > 1) {
    for (const TenantSpec& tenant : tenants) {
      if (tenant.workspace_root.empty()) {
        return invalidArgument(source + ": tenant '" + tenant.name +
                               "' would work in the root, which other tenants see too: give "
                               "--workspace-root (each session then gets a directory of its "
                               "own) or the tenant a workspace_root");
      }
    }
  }
  return tenants;
}

}  // namespace byd

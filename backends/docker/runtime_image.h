#pragma once
// Images built on demand for a runtime (see runtimes.cpp): a base image and packages from
// Debian (apt), Python's index (pip) and npm's registry, made into a Dockerfile, sent in a tar
// (libarchive) to the engine's build endpoint and tagged with a digest of the recipe, so a
// second session of the runtime (or a server started again) finds the image and builds
// nothing, and a changed recipe is a new image. Concurrent requests for one image wait for the
// one build.

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "backends/docker/docker_client.h"
#include "common/cancel.h"
#include "common/result.h"

namespace byd::docker {

struct ImageRecipe {
  std::string runtime;     // its runtime's name: in the tag and the labels
  std::string base_image;  // FROM
  std::vector<std::string> apt, pip, npm;
  std::string pip_index_url;  // pip's --index-url ("": its default)
  std::string npm_registry;   // npm's --registry ("": its default)
  // Where the image is kept: "backyard-runtime/NAME:" and a digest of the Dockerfile (made
  // by whoever reads the runtimes, see runtimes.cpp).
  std::string tag;

  // The Dockerfile: the base image, then one RUN per kind of package (as root; the sessions'
  // code runs as the backend's user whatever the image says).
  std::string dockerfile() const;
};
// The repository part of a runtime's tag: "backyard-runtime/" and its name in the characters
// an image name may hold.
std::string runtimeRepository(std::string_view runtime);

// Whether `name` may stand in a recipe (and so in a shell line of the Dockerfile): the
// characters each packaging tool's names and version specifiers use, and nothing a shell
// reads. "" when it may, else why not.
std::string checkPackageName(std::string_view kind, std::string_view name);

// The engine's build output (JSON objects, one after another): the text of its "stream"
// members line by line, and its "error", if any.
class BuildLog {
 public:
  // Feeds bytes as they come; `line` gets each complete line of output.
  void feed(std::string_view bytes, const std::function<void(std::string_view line)>& line);
  const std::string& error() const { return error_; }
  // The last `n` lines, joined by newlines.
  std::string tail(size_t n) const;

 private:
  void take(const std::string& object, const std::function<void(std::string_view)>& line);
  std::string pending_;             // bytes of an object not yet complete
  std::string partial_;             // output after the last newline
  std::vector<std::string> lines_;  // the last few hundred
  std::string error_;
};

// Makes sure the image of `recipe` is on the engine: there already, or built now, with each
// line of the build's output given to `progress` (and logged). A failed build is an error
// naming the runtime with its last log lines; `cancel` stops the build.
Status ensureImage(const Client& client, const ImageRecipe& recipe,
                   const std::function<void(std::string_view line)>& progress,
                   const CancelToken& cancel);

}  // namespace byd::docker

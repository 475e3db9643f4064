// Runtimes built on demand, the parts that need no engine: the Dockerfile a recipe makes, the
// names a recipe may hold, and the build output as the engine streams it.

#include "backends/docker/runtime_image.h"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

namespace byd::docker {
namespace {

TEST(RuntimeImageTest, DockerfileInstallsEachKindOfPackageOnTheBase) {
  ImageRecipe r;
  r.runtime = "python-web";
  r.base_image = "backyard-mcp/python:bookworm";
  r.apt = {"python3-numpy", "jq=1.6-2.1"};
  r.pip = {"tinypkg==1.0", "requests>=2"};
  r.npm = {"@scope/tool@1.2.3"};
  r.pip_index_url = "http://127.0.0.2:8080/simple/";
  const std::string d = r.dockerfile();
  EXPECT_NE(d.find("FROM backyard-mcp/python:bookworm\n"), std::string::npos) << d;
  EXPECT_NE(d.find("apt-get install -y --no-install-recommends 'python3-numpy' 'jq=1.6-2.1'"),
            std::string::npos)
      << d;
  EXPECT_NE(d.find("--index-url 'http://127.0.0.2:8080/simple/' 'tinypkg==1.0' 'requests>=2'"),
            std::string::npos)
      << d;
  EXPECT_NE(d.find("npm install --global '@scope/tool@1.2.3'"), std::string::npos) << d;
  EXPECT_NE(d.find("LABEL io.backyard-mcp.runtime=\"python-web\""), std::string::npos) << d;
  // Without packages of a kind, no RUN for it.
  ImageRecipe bare;
  bare.runtime = "bare";
  bare.base_image = "debian:bookworm";
  EXPECT_EQ(bare.dockerfile().find("RUN"), std::string::npos) << bare.dockerfile();
}

TEST(RuntimeImageTest, QuotedNamesReachTheShellAsThemselves) {
  // What the RUN lines hand the shell: each name, one argument, as written (a '>' in a
  // version is not a redirection, a '*' no pattern).
  ImageRecipe r;
  r.runtime = "x";
  r.base_image = "b";
  r.pip = {"requests>=2", "a[extra]", "b~=1.0", "c*"};
  const std::string d = r.dockerfile();
  const std::string flag = "--break-system-packages";
  const size_t at = d.find(flag);
  ASSERT_NE(at, std::string::npos);
  const size_t from = at + flag.size();
  const std::string args = d.substr(from, d.find('\n', from) - from);
  const std::string script = "for a in" + args + "; do printf '%s\\n' \"$a\"; done\n";
  char path[] = "/tmp/byd-runtime-test-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, script.data(), script.size()), static_cast<ssize_t>(script.size()));
  close(fd);
  FILE* p = popen(("cd /tmp && /bin/sh " + std::string(path)).c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[256];
  while (fgets(buf, sizeof buf, p) != nullptr) out += buf;
  ASSERT_EQ(WEXITSTATUS(pclose(p)), 0);
  unlink(path);
  EXPECT_EQ(out, "requests>=2\na[extra]\nb~=1.0\nc*\n");
}

TEST(RuntimeImageTest, NamesAShellWouldReadAreRefused) {
  for (const char* good :
       {"python3-numpy", "numpy==1.26.4", "requests>=2,<3", "left-pad@1.3.0", "g++", "a[b,c]"}) {
    EXPECT_EQ(checkPackageName("pip", good), "") << good;
  }
  EXPECT_EQ(checkPackageName("npm", "@types/node"), "");
  for (const char* bad : {"", "a b", "a;rm -rf /", "$(id)", "a'b", "`id`", "a|b", "a&b", "-e",
                          "a\nb", "a\\b", "@scope/x", "a\"b"}) {
    EXPECT_NE(checkPackageName("apt", bad), "") << "'" << bad << "' was accepted";
  }
  EXPECT_NE(checkPackageName("pip", "a;b").find("';'"), std::string::npos);
}

TEST(RuntimeImageTest, RepositoryNamesAreOnesAnEngineTakes) {
  EXPECT_EQ(runtimeRepository("python-minimal"), "backyard-runtime/python-minimal");
  EXPECT_EQ(runtimeRepository("Py.Data_Sci"), "backyard-runtime/py-data-sci");
  EXPECT_EQ(runtimeRepository("a--"), "backyard-runtime/a");
}

TEST(BuildLogTest, LinesOfTheStreamInAnyPieces) {
  const std::string stream =
      "{\"stream\":\"Step 1/3 : FROM base\\n\"}\r\n"
      "{\"stream\":\" ---> 542dd2bb\\n\"}\n"
      "{\"stream\":\"Step 2/3 : RUN apt-get \"}{\"stream\":\"install {x} \\\"q\\\"\\n\"}"
      "{\"aux\":{\"ID\":\"sha256:abc\"}}\n"
      "{\"stream\":\"Successfully built a94d84ebbc0c\\n\"}\n";
  for (size_t piece : {size_t{1}, size_t{7}, stream.size()}) {
    BuildLog log;
    std::vector<std::string> lines;
    for (size_t i = 0; i < stream.size(); i += piece) {
      log.feed(stream.substr(i, piece), [&](std::string_view l) { lines.emplace_back(l); });
    }
    EXPECT_EQ(lines, (std::vector<std::string>{"Step 1/3 : FROM base", " ---> 542dd2bb",
                                               "Step 2/3 : RUN apt-get install {x} \"q\"",
                                               "Successfully built a94d84ebbc0c"}))
        << "pieces of " << piece;
    EXPECT_EQ(log.error(), "");
    EXPECT_EQ(log.tail(2),
              "Step 2/3 : RUN apt-get install {x} \"q\"\nSuccessfully built a94d84ebbc0c");
  }
}

TEST(BuildLogTest, TheErrorIsKeptAndEndsTheTail) {
  BuildLog log;
  log.feed(
      "{\"stream\":\"E: Unable to locate package nosuch\\n\"}\n"
      "{\"errorDetail\":{\"code\":100,\"message\":\"The command returned a non-zero code: 100\"},"
      "\"error\":\"The command returned a non-zero code: 100\"}\n",
      nullptr);
  EXPECT_EQ(log.error(), "The command returned a non-zero code: 100");
  EXPECT_EQ(log.tail(5),
            "E: Unable to locate package nosuch\nThe command returned a non-zero code: 100");
}

}  // namespace
}  // namespace byd::docker

// The pieces of the Docker client that need no engine: addresses, the multiplexed stream and
// tar archives; and how the Docker backend maps /workspace paths.

#include "backends/docker/docker_client.h"

#include <archive.h>
#include <archive_entry.h>
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <map>
#include <sstream>

#include "backends/docker/docker_backend.h"
#include "backends/docker/orphans.h"
#include "backends/local/sandbox_identity.h"
#include "tests/test_util.h"

namespace byd::docker {
namespace {

TEST(DockerHostTest, ParsesUnixAndTcp) {
  auto def = parseHost("");
  ASSERT_TRUE(def.ok());
  EXPECT_EQ(def->unix_path, "/var/run/docker.sock");
  auto unix_host = parseHost("unix:///run/podman/podman.sock");
  ASSERT_TRUE(unix_host.ok());
  EXPECT_EQ(unix_host->unix_path, "/run/podman/podman.sock");
  EXPECT_EQ(unix_host->base_url, "http://localhost");
  auto tcp = parseHost("tcp://127.0.0.1:2375");
  ASSERT_TRUE(tcp.ok());
  EXPECT_TRUE(tcp->unix_path.empty());
  EXPECT_EQ(tcp->base_url, "http://127.0.0.1:2375");
  for (const char* bad : {"unix://relative.sock", "http://x", "tcp://", "tcp://a/b", "ssh://h"}) {
    EXPECT_FALSE(parseHost(bad).ok()) << bad;
  }
}

std::string frame(int stream, const std::string& data) {
  std::string h(8, '\0');
  h[0] = static_cast<char>(stream);
  const uint32_t n = data.size();
  h[4] = static_cast<char>(n >> 24);
  h[5] = static_cast<char>(n >> 16);
  h[6] = static_cast<char>(n >> 8);
  h[7] = static_cast<char>(n);
  return h + data;
}

TEST(StreamDemuxerTest, SplitsFramesFedInAnyPieces) {
  const std::string wire = frame(1, "hello ") + frame(2, "oops") + frame(1, "world") + frame(1, "");
  for (size_t step : {1u, 3u, 7u, 100u}) {
    StreamDemuxer demux;
    std::map<int, std::string> got;
    for (size_t i = 0; i < wire.size(); i += step) {
      ASSERT_TRUE(demux.feed(std::string_view(wire).substr(i, step),
                             [&](int s, std::string_view d) { got[s] += d; }));
    }
    EXPECT_EQ(got[1], "hello world") << step;
    EXPECT_EQ(got[2], "oops") << step;
    EXPECT_EQ(demux.pending(), 0u);
  }
}

TEST(StreamDemuxerTest, RefusesWhatIsNotAMultiplexedStream) {
  StreamDemuxer demux;
  EXPECT_FALSE(demux.feed("HTTP/1.1 500 oops\r\n", [](int, std::string_view) {}));
}

TEST(TarTest, WritesEntriesLibarchiveReadsBack) {
  auto tar = makeTar({{"kernel.py", "print('hi')\n", 0644}, {"bin/run", "#!/bin/sh\n", 0755}});
  ASSERT_TRUE(tar.ok()) << tar.status().message();
  ASSERT_EQ(tar->size() % 512, 0u);
  struct archive* a = archive_read_new();
  archive_read_support_format_tar(a);
  ASSERT_EQ(archive_read_open_memory(a, tar->data(), tar->size()), ARCHIVE_OK);
  std::map<std::string, std::pair<std::string, int>> files;
  archive_entry* entry;
  while (archive_read_next_header(a, &entry) == ARCHIVE_OK) {
    std::string data(archive_entry_size(entry), '\0');
    archive_read_data(a, data.data(), data.size());
    files[archive_entry_pathname(entry)] = {data, archive_entry_perm(entry)};
  }
  archive_read_free(a);
  EXPECT_EQ(files["kernel.py"], std::make_pair(std::string("print('hi')\n"), 0644));
  EXPECT_EQ(files["bin/run"], std::make_pair(std::string("#!/bin/sh\n"), 0755));
}

TEST(DockerBackendPathsTest, WorkspacePathsAreTheContainersView) {
  byd::testing::TempDir tmp;
  tmp.write("src/a.py", "x = 1\n");
  // The workspace belongs to the container's user, as the server arranges it.
  for (const auto& p : {tmp.path(), tmp.path() / "src", tmp.path() / "src/a.py"}) {
    ASSERT_EQ(chown(p.c_str(), kDedicatedSandboxUid, kDedicatedSandboxUid), 0);
  }
  DockerOptions options;
  options.host = "unix:///nonexistent/docker.sock";  // file tools never ask the engine
  auto backend = DockerBackend::open(tmp.str(), options);
  ASSERT_TRUE(backend.ok()) << backend.status().message();
  EXPECT_EQ((*backend)->root(), "/workspace");
  auto key = [&](const char* path) {
    auto r = (*backend)->normalize(path);
    return r.ok() ? *r : "<" + r.status().message() + ">";
  };
  EXPECT_EQ(key("/workspace/src/a.py"), "src/a.py");
  EXPECT_EQ(key("src/a.py"), "src/a.py");
  EXPECT_EQ(key("/workspace"), "");
  EXPECT_FALSE((*backend)->normalize("/workspace/../etc/passwd").ok());
  EXPECT_FALSE((*backend)->normalize("/workspacex/a").ok());
  EXPECT_FALSE((*backend)->normalize("/etc/passwd").ok());
  auto content = (*backend)->read("src/a.py", 0, 100);
  ASSERT_TRUE(content.ok()) << content.status().message();
  EXPECT_EQ(*content, "x = 1\n");
  // Without an engine, what needs the container fails clearly and the file tools go on.
  ExecRequest request;
  request.command = "true";
  auto run = (*backend)->execute(request, CancelToken());
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.status().message().find("not reachable"), std::string::npos)
      << run.status().message();
  EXPECT_TRUE((*backend)->list("").ok());
}

TEST(DockerBackendPathsTest, BadOptionsAreRefused) {
  byd::testing::TempDir tmp;
  DockerOptions root_user;
  root_user.user = "0:0";
  EXPECT_FALSE(DockerBackend::open(tmp.str(), root_user).ok());
  DockerOptions runtime;
  runtime.runtime = "kata";
  EXPECT_FALSE(DockerBackend::open(tmp.str(), runtime).ok());
  DockerOptions host;
  host.host = "ssh://x";
  EXPECT_FALSE(DockerBackend::open(tmp.str(), host).ok());
}

// The owner label of session containers, and how a server tells that another has ended.
// The four words of this process's owner label (empty without a machine id).
struct OwnerParts {
  std::string machine, ns, pid, started;
};
OwnerParts ownParts() {
  OwnerParts p;
  std::istringstream(docker::ownerLabel()) >> p.machine >> p.ns >> p.pid >> p.started;
  return p;
}

TEST(DockerOrphansTest, ALiveServerIsNotEnded) {
  const std::string mine = docker::ownerLabel();
  if (mine.empty()) GTEST_SKIP() << "no /etc/machine-id here";
  EXPECT_FALSE(docker::ownerEnded(mine));
}

TEST(DockerOrphansTest, AnEndedOrReusedPidIsEnded) {
  const OwnerParts mine = ownParts();
  if (mine.machine.empty()) GTEST_SKIP() << "no /etc/machine-id here";
  const auto& [machine, ns, pid, started] = mine;
  const pid_t child = fork();
  if (child == 0) _exit(0);
  ASSERT_GT(child, 0);
  ASSERT_EQ(waitpid(child, nullptr, 0), child);
  const std::string place = machine + " " + ns + " ";
  EXPECT_TRUE(docker::ownerEnded(place + std::to_string(child) + " " + started));
  // This very pid, but started at another time: another process now.
  EXPECT_TRUE(docker::ownerEnded(place + pid + " 1"));
}

TEST(DockerOrphansTest, OtherMachinesNamespacesAndNonsenseAreNotJudged) {
  const OwnerParts mine = ownParts();
  if (mine.machine.empty()) GTEST_SKIP() << "no /etc/machine-id here";
  const auto& [machine, ns, pid, started] = mine;
  EXPECT_FALSE(docker::ownerEnded("another-machine " + ns + " 999999 1"));
  EXPECT_FALSE(docker::ownerEnded(machine + " pid:[1] 999999 1"));
  EXPECT_FALSE(docker::ownerEnded(""));
  EXPECT_FALSE(docker::ownerEnded("garbage"));
}

}  // namespace
}  // namespace byd::docker

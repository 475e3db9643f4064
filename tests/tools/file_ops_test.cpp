// mkdir, move and delete on every backend, and what Local does with symlinks.

#include <sys/mount.h>

#include <filesystem>

#include "tests/tools/tool_fixture.h"

namespace byd::testing {
namespace {

using nlohmann::json;

class FileOpsTest : public ToolTest {
 protected:
  FileType typeOf(const std::string& path) {
    auto info = backend_->stat(path);
    return info.ok() ? info->type : FileType::kOther;
  }
  bool exists(const std::string& path) { return backend_->stat(path).ok(); }
};
BYD_TOOL_SUITE(FileOpsTest);

TEST_P(FileOpsTest, MkdirMakesTheParentsAndTwiceIsOnce) {
  json r = call("mkdir", {{"path", "a/b/c"}});
  ASSERT_FALSE(isError(r)) << text(r);
  EXPECT_EQ(text(r), "Made the directory 'a/b/c'.");
  EXPECT_EQ(r["structuredContent"]["created"], true);
  EXPECT_EQ(typeOf("a/b"), FileType::kDir);
  EXPECT_EQ(typeOf("a/b/c"), FileType::kDir);
  r = call("mkdir", {{"path", "a/b/c"}});
  ASSERT_FALSE(isError(r)) << text(r);
  EXPECT_EQ(r["structuredContent"]["created"], false);
  EXPECT_EQ(text(r), "'a/b/c' is a directory already; nothing changed.");
}

TEST_P(FileOpsTest, MkdirWhereAFileIsFails) {
  seed("f.txt", "keep");
  json r = call("mkdir", {{"path", "f.txt"}});
  EXPECT_TRUE(isError(r));
  EXPECT_EQ(text(r), "'f.txt' already exists and is not a directory");
  r = call("mkdir", {{"path", "f.txt/sub"}});
  EXPECT_TRUE(isError(r));
  EXPECT_NE(text(r).find("'f.txt' is not a directory"), std::string::npos) << text(r);
  EXPECT_EQ(contentOf("f.txt"), "keep");
  EXPECT_TRUE(isError(call("mkdir", {{"path", "../out"}})));
}

TEST_P(FileOpsTest, MoveRenamesAFileMakingTheParents) {
  seed("a.txt", "alpha");
  json r = call("move", {{"source", "a.txt"}, {"destination", "x/y/b.txt"}});
  ASSERT_FALSE(isError(r)) << text(r);
  EXPECT_EQ(text(r), "Moved the file 'a.txt' to 'x/y/b.txt'.");
  EXPECT_EQ(r["structuredContent"], (json{{"source", "a.txt"},
                                          {"destination", "x/y/b.txt"},
                                          {"type", "file"},
                                          {"replaced", false}}));
  EXPECT_FALSE(exists("a.txt"));
  EXPECT_EQ(contentOf("x/y/b.txt"), "alpha");
}

TEST_P(FileOpsTest, MoveNeverReplacesUnlessAsked) {
  seed("a.txt", "alpha");
  seed("b.txt", "beta");
  json r = call("move", {{"source", "a.txt"}, {"destination", "b.txt"}});
  EXPECT_TRUE(isError(r));
  EXPECT_EQ(text(r), "'b.txt' already exists; pass overwrite: true to replace it");
  EXPECT_EQ(contentOf("a.txt"), "alpha");
  EXPECT_EQ(contentOf("b.txt"), "beta");
  r = call("move", {{"source", "a.txt"}, {"destination", "b.txt"}, {"overwrite", true}});
  ASSERT_FALSE(isError(r)) << text(r);
  EXPECT_EQ(text(r), "Moved the file 'a.txt' to 'b.txt', replacing what was there.");
  EXPECT_EQ(r["structuredContent"]["replaced"], true);
  EXPECT_FALSE(exists("a.txt"));
  EXPECT_EQ(contentOf("b.txt"), "alpha");
}

TEST_P(FileOpsTest, MoveTakesADirectoryWithEverythingInIt) {
  seed("d/x.txt", "x");
  seed("d/e/y.txt", "y");
  seed("dx.txt", "not below d");
  json r = call("move", {{"source", "d"}, {"destination", "n"}});
  ASSERT_FALSE(isError(r)) << text(r);
  EXPECT_EQ(text(r), "Moved the directory 'd' to 'n'.");
  EXPECT_EQ(r["structuredContent"]["type"], "dir");
  EXPECT_EQ(contentOf("n/x.txt"), "x");
  EXPECT_EQ(contentOf("n/e/y.txt"), "y");
  EXPECT_FALSE(exists("d"));
  EXPECT_FALSE(exists("d/x.txt"));
  EXPECT_EQ(contentOf("dx.txt"), "not below d");
}

TEST_P(FileOpsTest, MoveRefusesWhatCannotBeDoneAndChangesNothing) {
  seed("d/x.txt", "x");
  seed("full/y.txt", "y");
  seed("f.txt", "f");
  backend_->makeDir("empty").value();
  const std::pair<json, std::string> cases[] = {
      {{{"source", "d"}, {"destination", "d/inner"}},
       "'d' cannot be moved into itself ("
       "'d/inner')"},
      {{{"source", "d"}, {"destination", "full"}, {"overwrite", true}},
       "'full' is a directory that is not empty; only an empty one is replaced"},
      {{{"source", "f.txt"}, {"destination", "empty"}, {"overwrite", true}},
       "'empty' is a directory; a file does not replace it"},
      {{{"source", "d"}, {"destination", "f.txt"}, {"overwrite", true}},
       "'f.txt' is not a directory; a directory does not replace it"},
      {{{"source", "f.txt"}, {"destination", "./f.txt"}},
       "'f.txt' is both the source and the destination"},
      {{{"source", "missing.txt"}, {"destination", "m.txt"}}, "'missing.txt' does not exist"},
      {{{"source", "."}, {"destination", "root"}}, "the workspace root cannot be moved"},
  };
  for (const auto& [args, message] : cases) {
    json r = call("move", args);
    EXPECT_TRUE(isError(r)) << args.dump();
    EXPECT_EQ(text(r), message) << args.dump();
  }
  EXPECT_EQ(contentOf("d/x.txt"), "x");
  EXPECT_EQ(contentOf("full/y.txt"), "y");
  EXPECT_EQ(contentOf("f.txt"), "f");
  EXPECT_EQ(typeOf("empty"), FileType::kDir);
  EXPECT_FALSE(exists("m.txt"));
  EXPECT_TRUE(isError(call("move", {{"source", "f.txt"}, {"destination", "../f.txt"}})));
  // A directory may replace an empty one.
  json r = call("move", {{"source", "d"}, {"destination", "empty"}, {"overwrite", true}});
  ASSERT_FALSE(isError(r)) << text(r);
  EXPECT_EQ(contentOf("empty/x.txt"), "x");
}

TEST_P(FileOpsTest, DeleteAFileAndAnEmptyDirectory) {
  seed("a.txt", "a");
  backend_->makeDir("empty").value();
  json r = call("delete", {{"path", "a.txt"}});
  ASSERT_FALSE(isError(r)) << text(r);
  EXPECT_EQ(text(r), "Deleted the file 'a.txt'.");
  EXPECT_EQ(r["structuredContent"],
            (json{{"path", "a.txt"}, {"type", "file"}, {"files", 1}, {"dirs", 0}}));
  EXPECT_FALSE(exists("a.txt"));
  r = call("delete", {{"path", "empty"}});
  ASSERT_FALSE(isError(r)) << text(r);
  EXPECT_EQ(text(r), "Deleted the directory 'empty' with 0 files and 0 directories in it.");
  EXPECT_FALSE(exists("empty"));
  r = call("delete", {{"path", "a.txt"}});
  EXPECT_TRUE(isError(r));
  EXPECT_EQ(text(r), "'a.txt' does not exist");
}

TEST_P(FileOpsTest, ADirectoryWithSomethingInItNeedsRecursive) {
  seed("d/x.txt", "x");
  seed("d/e/y.txt", "y");
  seed("d/e/f/z.txt", "z");
  seed("dx.txt", "kept");
  json r = call("delete", {{"path", "d"}});
  EXPECT_TRUE(isError(r));
  EXPECT_EQ(text(r),
            "'d' is a directory that is not empty; pass recursive: true to delete it and "
            "everything in it");
  EXPECT_EQ(contentOf("d/e/f/z.txt"), "z");
  r = call("delete", {{"path", "d"}, {"recursive", true}});
  ASSERT_FALSE(isError(r)) << text(r);
  EXPECT_EQ(text(r), "Deleted the directory 'd' with 3 files and 2 directories in it.");
  EXPECT_EQ(r["structuredContent"]["files"], 3);
  EXPECT_EQ(r["structuredContent"]["dirs"], 3);
  EXPECT_FALSE(exists("d"));
  EXPECT_EQ(contentOf("dx.txt"), "kept");
  r = call("delete", {{"path", "."}, {"recursive", true}});
  EXPECT_TRUE(isError(r));
  EXPECT_EQ(text(r), "the workspace root cannot be deleted");
  EXPECT_EQ(contentOf("dx.txt"), "kept");
}

TEST_P(FileOpsTest, OtherToolsSpellingsAreTaken) {
  seed("a.txt", "a");
  json r = call("move", {{"from", "a.txt"}, {"to", "b.txt"}});
  ASSERT_FALSE(isError(r)) << text(r);
  EXPECT_EQ(contentOf("b.txt"), "a");
  r = call("delete", {{"path", "b.txt"}, {"force", true}});
  EXPECT_TRUE(isError(r));
  EXPECT_NE(text(r).find("delete has no force"), std::string::npos) << text(r);
}

// Symlinks exist on disk only.
class FileOpsOnDiskTest : public FileOpsTest {
 protected:
  void SetUp() override {
    if (GetParam() == BackendKind::kState) GTEST_SKIP() << "State has no symlinks";
    FileOpsTest::SetUp();
  }
  std::filesystem::path on(const std::string& rel) { return tmp_->path() / rel; }
};
BYD_TOOL_SUITE(FileOpsOnDiskTest);

TEST_P(FileOpsOnDiskTest, ASymlinkIsMovedAndDeletedNeverWhatItPointsAt) {
  seed("target.txt", "t");
  std::filesystem::create_symlink("target.txt", on("link"));
  json r = call("move", {{"source", "link"}, {"destination", "sub/link2"}});
  ASSERT_FALSE(isError(r)) << text(r);
  EXPECT_EQ(r["structuredContent"]["type"], "symlink");
  EXPECT_TRUE(std::filesystem::is_symlink(on("sub/link2")));
  r = call("delete", {{"path", "sub/link2"}});
  ASSERT_FALSE(isError(r)) << text(r);
  EXPECT_EQ(text(r), "Deleted the symlink 'sub/link2'.");
  EXPECT_EQ(contentOf("target.txt"), "t");
}

TEST_P(FileOpsOnDiskTest, ARecursiveDeleteNeverFollowsALinkOut) {
  TempDir outside;
  outside.write("precious.txt", "keep");
  seed("d/x.txt", "x");
  std::filesystem::create_directory_symlink(outside.path(), on("d/out"));
  std::filesystem::create_directory_symlink("../keepdir", on("d/in"));
  seed("keepdir/k.txt", "k");
  json r = call("delete", {{"path", "d"}, {"recursive", true}});
  ASSERT_FALSE(isError(r)) << text(r);
  EXPECT_EQ(r["structuredContent"]["files"], 3);  // x.txt and the two links
  EXPECT_EQ(outside.read("precious.txt"), "keep");
  EXPECT_EQ(contentOf("keepdir/k.txt"), "k");
  EXPECT_FALSE(std::filesystem::exists(on("d")));
}

TEST_P(FileOpsOnDiskTest, ARecursiveDeleteStopsAtAMountPointAndSaysWhatItDeleted) {
  // A bind mount of the same file system: only its mount id tells it apart.
  TempDir elsewhere;
  elsewhere.write("mounted.txt", "keep");
  seed("d/a.txt", "a");
  std::filesystem::create_directories(on("d/m"));
  if (::mount(elsewhere.str().c_str(), on("d/m").c_str(), nullptr, MS_BIND, nullptr) != 0) {
    GTEST_SKIP() << "cannot bind-mount here (not root?)";
  }
  json r = call("delete", {{"path", "d"}, {"recursive", true}});
  EXPECT_TRUE(isError(r));
  EXPECT_TRUE(text(r).starts_with("'d/m' is a mount point; it is not deleted")) << text(r);
  EXPECT_EQ(elsewhere.read("mounted.txt"), "keep");
  ASSERT_EQ(::umount2(on("d/m").c_str(), MNT_DETACH), 0);
  EXPECT_EQ(elsewhere.read("mounted.txt"), "keep");
}

TEST_P(FileOpsOnDiskTest, NoPathLeavesTheWorkspace) {
  TempDir outside;
  outside.write("o.txt", "outside");
  seed("a.txt", "a");
  std::filesystem::create_directory_symlink(outside.path(), on("escape"));
  EXPECT_TRUE(isError(call("move", {{"source", "a.txt"}, {"destination", "escape/a.txt"}})));
  EXPECT_TRUE(isError(call("move", {{"source", "escape/o.txt"}, {"destination", "o.txt"}})));
  EXPECT_TRUE(isError(call("delete", {{"path", "escape/o.txt"}})));
  EXPECT_TRUE(isError(call("mkdir", {{"path", "escape/new"}})));
  EXPECT_EQ(outside.read("o.txt"), "outside");
  EXPECT_FALSE(std::filesystem::exists(outside.path() / "a.txt"));
  EXPECT_FALSE(std::filesystem::exists(outside.path() / "new"));
  EXPECT_EQ(contentOf("a.txt"), "a");
}

TEST_P(FileOpsOnDiskTest, AnAbsoluteLinkIsReadAsTheContainerReadsIt) {
  seed("t.txt", "target");
  seed("sub/a.txt", "in sub");
  std::filesystem::create_symlink("/workspace/t.txt", on("link"));
  std::filesystem::create_directory_symlink("/workspace/sub", on("dirlink"));
  std::filesystem::create_symlink("/workspace/../etc/passwd", on("up"));
  std::filesystem::create_symlink("/workspacex/t.txt", on("sibling"));
  std::filesystem::create_symlink("/workspace/.env", on("envlink"));
  std::filesystem::create_symlink("/workspace/new.txt", on("dangling"));
  const bool docker = GetParam() == BackendKind::kDocker;
  json r = call("read_file", {{"path", "link"}});
  EXPECT_EQ(isError(r), !docker) << text(r);
  r = call("read_file", {{"path", "dirlink/a.txt"}});
  EXPECT_EQ(isError(r), !docker) << text(r);
  if (docker) {
    EXPECT_NE(text(r).find("in sub"), std::string::npos) << text(r);
    // The rules judge what a link reaches.
    EXPECT_EQ(backend_->realKey("envlink").value(), ".env");
    EXPECT_EQ(backend_->realKey("dirlink/a.txt").value(), "sub/a.txt");
    // A write through a dangling link creates its target, as in the container.
    EXPECT_EQ(backend_->realKey("dangling").value(), "new.txt");
    r = call("write_file", {{"path", "dangling"}, {"content", "made"}});
    ASSERT_FALSE(isError(r)) << text(r);
    EXPECT_EQ(contentOf("new.txt"), "made");
    EXPECT_TRUE(std::filesystem::is_symlink(on("dangling")));
  } else {
    EXPECT_NE(text(r).find("outside the workspace"), std::string::npos) << text(r);
    EXPECT_TRUE(isError(call("write_file", {{"path", "dangling"}, {"content", "x"}})));
    EXPECT_FALSE(std::filesystem::exists(on("new.txt")));
  }
  // Whatever the backend, a link out of the mount point stays out.
  for (const char* path : {"up", "sibling"}) {
    r = call("read_file", {{"path", path}});
    EXPECT_TRUE(isError(r)) << path << ": " << text(r);
    EXPECT_TRUE(isError(call("write_file", {{"path", path}, {"content", "x"}}))) << path;
  }
}

}  // namespace
}  // namespace byd::testing

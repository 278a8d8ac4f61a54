#pragma once
// Where the repository is, for tests that read files from it (README.md, ../shared/).
// CTest passes it in the environment (tests/CMakeLists.txt): sources are compiled with paths
// relative to the build (ccache's base_dir, so that every clone shares one cache), which makes
// __FILE__ useless for finding anything at run time.
#include <cstdlib>
#include <filesystem>

namespace test_support {

// The repository root, or an empty path when the test was started outside CTest.
inline std::filesystem::path source_dir() {
  const char* dir = std::getenv("NVMETUNE_SOURCE_DIR");
  return dir != nullptr ? std::filesystem::path(dir) : std::filesystem::path();
}

}  // namespace test_support

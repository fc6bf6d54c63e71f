// PrepareOneShotHeap must leave the apply's allocations in memory the kernel
// may back with huge pages: /proc/self/smaps says so per mapping
// ("THPeligible"), independent of whether a huge page was free just then.
#include "host/adapters/one_shot_heap.h"

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace mesh::adapters {
namespace {

std::string ThpMode() {
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto open = text.find('['), close = text.find(']');
  if (open == std::string::npos || close == std::string::npos) return "";
  return text.substr(open + 1, close - open - 1);
}

// The THPeligible field of the mapping that holds `address`, or -1.
int ThpEligible(uintptr_t address) {
  std::ifstream in("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-') {
      inside = lo <= address && address < hi;
      continue;
    }
    if (inside && line.rfind("THPeligible:", 0) == 0) return std::stoi(line.substr(12));
  }
  return -1;
}

TEST(OneShotHeapTest, TheApplysAllocationsMayUseHugePages) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "a sanitizer's allocator is not glibc's heap";
#endif
  std::string mode = ThpMode();
  if (mode != "madvise" && mode != "always") GTEST_SKIP() << "transparent huge pages: " << mode;
  PrepareOneShotHeap();
  // What the apply allocates: many small blocks (record entries, outcomes)
  // and a large one (the declaration's text), all in the advised heap.
  std::vector<std::unique_ptr<char[]>> blocks;
  for (int i = 0; i < 20000; ++i) blocks.emplace_back(new char[200]);
  std::unique_ptr<char[]> text(new char[8 << 20]);
  EXPECT_EQ(ThpEligible(reinterpret_cast<uintptr_t>(blocks.back().get())), 1);
  EXPECT_EQ(ThpEligible(reinterpret_cast<uintptr_t>(text.get())), 1);
}

}  // namespace
}  // namespace mesh::adapters

// libFuzzer target: a bundle's member names, which come from anyone who
// can build an archive. Whatever they are, the entry check either refuses
// them with a message that prints as one line, or lets through only names
// the unpacker can use: relative, normalised, no "..", within the depth and
// name-length limits, none twice. And Printable is what its callers rely
// on: one line of valid UTF-8, unchanged when escaped again.
//
// Input: one member per line; the first byte of a line picks its type.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "host/core/file_info.h"
#include "host/core/printable.h"
#include "host/core/want.h"

namespace {

using mesh::core::FileType;

void CheckPrintable(std::string_view text) {
  std::string once = mesh::core::Printable(text);
  if (!mesh::core::IsPrintable(once)) std::abort();
  if (mesh::core::Printable(once) != once) std::abort();
  for (char c : once) {
    if (static_cast<unsigned char>(c) < 0x20) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  CheckPrintable(input);
  std::vector<mesh::core::TreeEntry> entries;
  size_t start = 0;
  while (start < input.size() && entries.size() < 64) {
    size_t end = input.find('\n', start);
    if (end == std::string_view::npos) end = input.size();
    std::string_view line = input.substr(start, end - start);
    start = end + 1;
    if (line.empty()) continue;
    mesh::core::TreeEntry e;
    static constexpr FileType kTypes[] = {FileType::kRegular, FileType::kDirectory,
                                          FileType::kSymlink, FileType::kHardlink,
                                          FileType::kOther};
    e.type = kTypes[static_cast<unsigned char>(line[0]) % 5];
    e.relpath = std::string(line.substr(1));
    e.mode = 0644;
    entries.push_back(std::move(e));
  }
  auto checked = mesh::core::CheckBundleEntries(entries);
  if (!checked) {
    CheckPrintable(checked.error().message);
    return 0;
  }
  std::set<std::string> seen;
  for (const mesh::core::TreeEntry& e : *checked) {
    if (e.type != FileType::kRegular && e.type != FileType::kDirectory) std::abort();
    if (e.relpath.empty() || e.relpath.front() == '/' || e.relpath.back() == '/') std::abort();
    if (e.relpath.find('\0') != std::string::npos) std::abort();
    int depth = 0;
    size_t s = 0;
    while (s <= e.relpath.size()) {
      size_t t = e.relpath.find('/', s);
      if (t == std::string::npos) t = e.relpath.size();
      std::string_view comp(e.relpath.data() + s, t - s);
      if (comp.empty() || comp == "." || comp == "..") std::abort();
      if (comp.size() > mesh::core::kMaxNameBytes) std::abort();
      ++depth;
      s = t + 1;
    }
    if (depth > mesh::core::kMaxTreeDepth) std::abort();
    if (!seen.insert(e.relpath).second) std::abort();
  }
  return 0;
}

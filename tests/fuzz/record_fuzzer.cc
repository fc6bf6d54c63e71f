// libFuzzer target: the record loader. Whatever state.json holds (a torn
// disk, a hand edit), loading must not crash, and what loads must survive a
// save and a load unchanged. Streamed to a visitor (how a one-shot apply
// reads it), the same text must read the same way: the same verdict, the
// same entries, and a visitor that stops part-way must stop the reading.
// A whole text and a stream must read alike, down to the words of a
// refusal.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "host/core/record.h"

namespace {

class Collect : public mesh::core::RecordVisitor {
 public:
  explicit Collect(size_t stop_after) : stop_after_(stop_after) {}
  bool Header(const mesh::core::Record& header) override {
    ++headers;
    return true;
  }
  bool Entry(const std::string& id, const mesh::core::RecordEntry& entry) override {
    if (entries.size() == stop_after_) return false;
    entries.emplace_back(id, entry);
    return true;
  }
  int headers = 0;
  std::vector<std::pair<std::string, mesh::core::RecordEntry>> entries;

 private:
  size_t stop_after_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto record = mesh::core::ParseRecord(text);

  Collect all(SIZE_MAX);
  std::istringstream in{std::string(text)};
  auto scanned = mesh::core::ScanRecord(in, all);
  if (scanned.has_value() != record.has_value()) std::abort();
  if (record && all.headers == 1) {
    // Entries arrive as written; the record keeps the last of a repeated id.
    std::map<std::string, mesh::core::RecordEntry> last;
    for (auto& [id, entry] : all.entries) last[id] = entry;
    if (last != record->resources) std::abort();
  }
  std::istringstream stream{std::string(text)};
  auto streamed = mesh::core::ParseRecord(stream);
  if (streamed.has_value() != record.has_value()) std::abort();
  if (record ? !(*record == *streamed) : record.error().message != streamed.error().message) {
    std::abort();
  }
  Collect whole(SIZE_MAX);
  auto scanned_whole = mesh::core::ScanRecord(text, whole);
  if (scanned_whole.has_value() != scanned.has_value()) std::abort();
  if (scanned ? *scanned_whole != *scanned || whole.headers != all.headers ||
                    whole.entries != all.entries
              : scanned_whole.error().message != scanned.error().message) {
    std::abort();
  }
  if (!all.entries.empty()) {
    Collect some(all.entries.size() - 1);
    std::istringstream again{std::string(text)};
    auto stopped = mesh::core::ScanRecord(again, some);
    if (!stopped || *stopped || some.entries.size() != all.entries.size() - 1) std::abort();
  }

  if (!record) return 0;
  std::string once = mesh::core::SerializeRecord(*record);
  auto again = mesh::core::ParseRecord(once);
  if (!again || mesh::core::SerializeRecord(*again) != once) std::abort();
  return 0;
}

#include "host/core/unified_diff.h"

#include <algorithm>
#include <dtl/dtl.hpp>
#include <vector>

#include "host/core/printable.h"

namespace mesh::core {
namespace {

constexpr long long kContext = 3;

struct Lines {
  std::vector<std::string> text;
  bool newline_at_end = true;
};

Lines Split(std::string_view content) {
  Lines lines;
  while (!content.empty()) {
    size_t end = content.find('\n');
    lines.text.emplace_back(content.substr(0, end));
    if (end == std::string_view::npos) {
      lines.newline_at_end = false;
      break;
    }
    content.remove_prefix(end + 1);
  }
  return lines;
}

// A line as a terminal may show it: tabs kept, every other control byte
// and malformed UTF-8 escaped.
std::string Shown(std::string_view line) {
  std::string out;
  for (size_t tab; (tab = line.find('\t')) != std::string_view::npos;) {
    out += Printable(line.substr(0, tab));
    out += '\t';
    line.remove_prefix(tab + 1);
  }
  return out + Printable(line);
}

// "-a,b" as diff writes a range: the count omitted when it is 1, the
// start one before the range when it is empty.
std::string Range(long long start, long long count) {
  if (count == 0) return std::to_string(start - 1) + ",0";
  if (count == 1) return std::to_string(start);
  return std::to_string(start) + "," + std::to_string(count);
}

// One edit per line of either side, in order, with how many lines of each
// side come before it.
struct Edit {
  dtl::edit_t type;
  const std::string* line;
  long long a, b;
};

// The edits of dtl's sequence (which they point into), each run of changes
// with its removed lines first, as diff shows them (dtl may interleave).
template <typename Sequence>
std::vector<Edit> EditsOf(const Sequence& sequence) {
  std::vector<Edit> edits;
  long long a_line = 0, b_line = 0;
  for (const auto& [line, info] : sequence) {
    edits.push_back({info.type, &line, a_line, b_line});
    if (info.type != dtl::SES_ADD) ++a_line;
    if (info.type != dtl::SES_DELETE) ++b_line;
  }
  for (auto run = edits.begin(); run != edits.end();) {
    auto end =
        std::find_if(run, edits.end(), [](const Edit& e) { return e.type == dtl::SES_COMMON; });
    if (run == end) {
      ++run;
      continue;
    }
    long long a = run->a, b = run->b;  // the run's first edit keeps its positions
    std::stable_partition(run, end, [](const Edit& e) { return e.type == dtl::SES_DELETE; });
    run->a = a;
    run->b = b;
    run = end;
  }
  return edits;
}

// The end of the hunk whose first change is edits[i]: kContext lines after
// the last change that is at most 2 * kContext common lines from the next.
size_t HunkEnd(const std::vector<Edit>& edits, size_t i) {
  size_t n = edits.size();
  size_t last = i;
  for (size_t j = i + 1; j < n; ++j) {
    if (edits[j].type == dtl::SES_COMMON) {
      if (static_cast<long long>(j - last) > 2 * kContext) break;
    } else {
      last = j;
    }
  }
  return std::min(n, last + 1 + static_cast<size_t>(kContext));
}

void AppendHunk(const std::vector<Edit>& edits, size_t first, size_t end, std::string& out) {
  long long a_count = 0, b_count = 0;
  for (size_t j = first; j < end; ++j) {
    if (edits[j].type != dtl::SES_ADD) ++a_count;
    if (edits[j].type != dtl::SES_DELETE) ++b_count;
  }
  long long a_start = edits[first].a + 1, b_start = edits[first].b + 1;
  out += "@@ -" + Range(a_start, a_count) + " +" + Range(b_start, b_count) + " @@\n";
  for (size_t j = first; j < end; ++j) {
    std::string_view line = *edits[j].line;
    bool unterminated = line.ends_with('\n');
    if (unterminated) line.remove_suffix(1);
    out += edits[j].type == dtl::SES_ADD ? '+' : edits[j].type == dtl::SES_DELETE ? '-' : ' ';
    out += Shown(line);
    out += '\n';
    if (unterminated) out += "\\ No newline at end of file\n";
  }
}

}  // namespace

bool IsText(std::string_view content) { return content.find('\0') == std::string_view::npos; }

std::optional<std::string> UnifiedHunks(std::string_view before, std::string_view after) {
  if (!IsText(before) || !IsText(after) || before.size() > kMaxDiffBytes ||
      after.size() > kMaxDiffBytes) {
    return std::nullopt;
  }
  if (before == after) return std::string();
  Lines a = Split(before), b = Split(after);
  if (a.text.size() > kMaxDiffLines || b.text.size() > kMaxDiffLines) return std::nullopt;
  // A last line that lost or gained its newline differs from itself.
  if (!a.newline_at_end && !a.text.empty()) a.text.back() += '\n';
  if (!b.newline_at_end && !b.text.empty()) b.text.back() += '\n';

  dtl::Diff<std::string> diff(a.text, b.text);
  diff.onHuge();
  diff.compose();
  // getSes() and getSequence() return copies: keep the one the edits point into.
  const auto sequence = diff.getSes().getSequence();
  const std::vector<Edit> edits = EditsOf(sequence);
  std::string out;
  for (size_t i = 0; i < edits.size();) {
    if (edits[i].type == dtl::SES_COMMON) {
      ++i;
      continue;
    }
    size_t first = i >= static_cast<size_t>(kContext) ? i - kContext : 0;
    size_t end = HunkEnd(edits, i);
    AppendHunk(edits, first, end, out);
    i = end;
  }
  return out;
}

}  // namespace mesh::core

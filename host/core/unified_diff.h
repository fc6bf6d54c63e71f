// Unified diffs of text, for `mesh-host plan --diff`.
//
// The edit script comes from dtl (Debian's libdtl-dev, header-only); this
// module only groups it into hunks as GNU diff -u does (3 lines of context,
// hunks closer than 6 lines merged) and makes every line safe to print: a
// file on the machine may hold terminal escapes.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace mesh::core {

// Beyond these, content is summarised, not diffed: the edit script costs
// time in the product of the sizes.
inline constexpr size_t kMaxDiffBytes = 256 << 10;
inline constexpr size_t kMaxDiffLines = 5000;

// Whether content is diffed as text: no NUL byte.
bool IsText(std::string_view content);

// The hunks ("@@ -a,b +c,d @@" and their lines, each ending in "\n") that
// turn `before` into `after`; empty when they are equal. None when either
// is not text or is over the limits. A last line without a newline is
// followed by "\ No newline at end of file", as diff writes it.
std::optional<std::string> UnifiedHunks(std::string_view before, std::string_view after);

}  // namespace mesh::core

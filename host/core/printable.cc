#include "host/core/printable.h"

#include <cstdint>
#include <cstdio>

namespace mesh::core {
namespace {

// Valid characters that change what a reader sees of the text around
// them: bidirectional controls (a "Trojan Source" line reads otherwise
// than it is), line and paragraph separators, and the invisible ones that
// hide inside a name (zero-width, word joiner, BOM).
bool HidesOrReorders(uint32_t cp) {
  return cp == 0x061c || (cp >= 0x200b && cp <= 0x200f) || (cp >= 0x2028 && cp <= 0x202e) ||
         (cp >= 0x2060 && cp <= 0x2069) || cp == 0xfeff;
}

// Length of the valid, printable UTF-8 sequence starting at text[i], or 0;
// `strict`: 0 for a character that hides or reorders text too.
size_t PrintableRun(std::string_view text, size_t i, bool strict = true) {
  auto c = static_cast<unsigned char>(text[i]);
  if (c >= 0x20 && c < 0x7f) return 1;
  size_t n;
  uint32_t cp;
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2;
    cp = c & 0x1f;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3;
    cp = c & 0x0f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + n > text.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    auto cc = static_cast<unsigned char>(text[i + k]);
    if ((cc & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (cc & 0x3f);
  }
  // Overlong forms, surrogates, beyond U+10FFFF, and the C1 controls.
  if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
      (cp >= 0xd800 && cp <= 0xdfff) || (cp >= 0x80 && cp <= 0x9f)) {
    return 0;
  }
  return strict && HidesOrReorders(cp) ? 0 : n;
}

}  // namespace

bool IsPrintable(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    size_t n = PrintableRun(text, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

bool IsOneLine(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    size_t n = PrintableRun(text, i, /*strict=*/false);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string Printable(std::string_view text, size_t limit) {
  std::string out;
  std::string_view head = text.substr(0, limit);
  out.reserve(head.size());
  for (size_t i = 0; i < head.size();) {
    size_t n = PrintableRun(head, i);
    if (n > 0) {
      out.append(head.substr(i, n));
      i += n;
      continue;
    }
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(head[i]));
    out += buf;
    ++i;
  }
  if (text.size() > head.size()) out += "...";
  return out;
}

std::string JsonErrorWithoutBytes(std::string_view what) {
  // "[json.exception.parse_error.101] parse error at line 2, column 0: ..."
  if (!what.empty() && what.front() == '[') {
    size_t close = what.find("] ");
    if (close != std::string_view::npos) what.remove_prefix(close + 2);
  }
  // Everything from the quoted token on goes: the token is attacker's text,
  // so nothing after its opening quote can be told apart from it.
  size_t quoted = what.find("last read: '");
  if (quoted != std::string_view::npos) {
    what = what.substr(0, quoted);
    while (!what.empty() && (what.back() == ' ' || what.back() == ';')) what.remove_suffix(1);
  }
  return Printable(what, 300);
}

}  // namespace mesh::core

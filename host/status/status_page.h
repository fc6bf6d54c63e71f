// The page at `/`: this machine's state at a glance, for a person with a
// browser, drawn from the same snapshot /status serves.
//
// Self-contained by construction: one HTML document, its style inline and
// named by hash in the Content-Security-Policy sent with it, no script, no
// image, no link off the host. Every text from outside (resource ids,
// member names, systemd's words, a trusted comment) is made printable
// (core::Printable) and then HTML-escaped, so no byte of it can close a
// tag or start one. Bounded whatever the declaration's size: the failing
// resources come first and the table is paged (kRowsPerPage), the rest of
// the picture is counts.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "host/core/result.h"
#include "host/status/status_board.h"

namespace mesh::status {

inline constexpr size_t kRowsPerPage = 200;

struct PageContext {
  std::string version;  // "0.1.0 (commit ...)", shown in the page's foot
  size_t page = 1;      // 1-based, of the resource table
};

// The number of pages of `snapshot`'s resource table (at least 1).
size_t PageCount(const Snapshot& snapshot);

// The page's HTML; an error for a page that does not exist.
core::Result<std::string> RenderStatusPage(const Snapshot& snapshot, const PageContext& context);

// The Content-Security-Policy to send with every page: nothing may load,
// only the page's own inline style applies.
const std::string& StatusPagePolicy();

// `text` made printable and escaped for HTML text or a quoted attribute,
// cut at `limit` bytes of input.
std::string HtmlText(std::string_view text, size_t limit = std::string_view::npos);

}  // namespace mesh::status

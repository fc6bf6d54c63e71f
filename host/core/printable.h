// Text from outside (a declaration, a bundle's member names, systemd, a
// peer) shown where a reader trusts its shape: a log line must stay one
// line, a refusal must not carry a credential's bytes, a terminal must not
// take escape sequences. Every message that quotes outside text passes it
// through here.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace mesh::core {

// `text` with every byte that is not printable, valid UTF-8 written as \xNN
// (control characters, DEL, C1 controls, malformed sequences), so that the
// result is one line of valid UTF-8. A backslash stays as it is, which makes
// Printable idempotent: text escaped once (a refusal built from escaped
// parts) is not escaped again at the sink. Longer than `limit` bytes of
// input: cut there and marked with "...".
std::string Printable(std::string_view text, size_t limit = std::string_view::npos);

// True when Printable(text) == text (the common case, checked cheaply).
bool IsPrintable(std::string_view text);

// True when text is one line of valid UTF-8 with no control character:
// what Printable has ever written, before it escaped the characters that
// hide or reorder text too. The host's own files are read by this, and
// what they hold is escaped again, so an upgrade reads what it wrote.
bool IsOneLine(std::string_view text);

// A JSON parser's message (nlohmann's what()) without the bytes it quotes:
// the parser ends a syntax error with "last read: '<the token>'", and that
// token may be the inside of a credential. Keeps the place (line, column)
// and the reason.
std::string JsonErrorWithoutBytes(std::string_view what);

}  // namespace mesh::core

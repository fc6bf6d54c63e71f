#include "host/core/redact.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>

namespace mesh::core {

namespace {

constexpr size_t kMinWhole = 4;  // shorter stands for every such run of letters
constexpr size_t kMinPiece = 8;  // a line or a value
constexpr size_t kPrefix = 4;    // the lookup key's bytes: no piece is shorter
constexpr char kSeparators[] = ",;&?{}[]";

std::string_view Trimmed(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  return s;
}

uint32_t PrefixOf(const char* p) {
  uint32_t key = 0;
  std::memcpy(&key, p, kPrefix);
  return key;
}

// Calls `each` with each part of `line` between separators that stand
// outside quotes, and with the position in that part of its first = or :
// outside quotes (npos: none). A quote ("..." with backslash escapes, or
// '...') opens only where a key or a value starts: an apostrophe inside
// a word is a letter. One left open closes with the line.
template <typename Each>
void ForEachField(std::string_view line, Each each) {
  size_t start = 0, sep = std::string_view::npos;
  char quote = 0;
  bool token_start = true;  // only blanks since the field's start or its = or :
  for (size_t i = 0; i <= line.size(); ++i) {
    char c = i < line.size() ? line[i] : ',';
    if (quote != 0 && i < line.size()) {
      if (c == '\\' && quote == '"') {
        if (i + 1 < line.size()) ++i;
      } else if (c == quote) {
        quote = 0;
      }
      continue;
    }
    if ((c == '"' || c == '\'') && token_start) {
      quote = c;
    } else if ((c == '=' || c == ':') && sep == std::string_view::npos) {
      sep = i - start;
      token_start = true;
      continue;
    } else if (i == line.size() || std::strchr(kSeparators, c) != nullptr) {
      each(line.substr(start, i - start), sep);
      start = i + 1;
      sep = std::string_view::npos;
      token_start = true;
      continue;
    }
    token_start = token_start && std::isspace(static_cast<unsigned char>(c));
  }
}

// A value without the quotes around it (or a trailing comma after them).
std::string_view Unquoted(std::string_view value) {
  value = Trimmed(value);
  if (value.ends_with(',')) value = Trimmed(value.substr(0, value.size() - 1));
  if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') &&
      value.back() == value.front()) {
    value = value.substr(1, value.size() - 2);
  }
  return value;
}

// The ways a value after an = or : may be logged: whole, and without a
// trailing " # comment" (a YAML one, or a password holding " #": both).
template <typename Each>
void ForEachReading(std::string_view value, Each each) {
  value = Unquoted(value);
  each(value);
  if (size_t hash = value.find(" #"); hash != std::string_view::npos) {
    each(Unquoted(value.substr(0, hash)));
  }
}

}  // namespace

Redactor::Redactor(const Secrets& secrets) {
  for (const auto& [id, content] : secrets) {
    size_t secret = names_.size();
    names_.push_back("[credential " + id + "]");
    Add(Trimmed(content), secret, kMinWhole);
    std::string_view rest = content;
    while (!rest.empty()) {
      size_t end = rest.find('\n');
      AddLine(Trimmed(rest.substr(0, end)), secret, /*nested=*/false);
      if (end == std::string_view::npos) break;
      rest.remove_prefix(end + 1);
    }
    AddJsonStrings(content, secret);
  }
  std::sort(pieces_.begin(), pieces_.end(), [](const Piece& a, const Piece& b) {
    if (a.prefix != b.prefix) return a.prefix < b.prefix;
    if (a.text.size() != b.text.size()) return a.text.size() > b.text.size();
    return a.text < b.text;
  });
  pieces_.erase(std::unique(pieces_.begin(), pieces_.end(),
                            [](const Piece& a, const Piece& b) { return a.text == b.text; }),
                pieces_.end());
}

void Redactor::AddLine(std::string_view line, size_t secret, bool nested) {
  Add(line, secret, kMinPiece);
  auto add = [&](std::string_view value) { Add(value, secret, kMinPiece); };
  // The line's value after its first = or :, quotes or not, and each
  // field's where separators outside quotes split the line.
  if (size_t sep = line.find_first_of("=:"); sep != std::string_view::npos) {
    ForEachReading(line.substr(sep + 1), add);
  }
  ForEachField(line, [&](std::string_view field, size_t sep) {
    if (sep == std::string_view::npos) return;
    std::string_view value = Trimmed(field.substr(sep + 1));
    ForEachReading(value, add);
    // A quoted value that is itself a line of fields (a connection
    // string, JSON in an env file): its fields too, one level down.
    if (std::string_view inner = Unquoted(value); !nested && inner.size() < value.size()) {
      AddLine(inner, secret, /*nested=*/true);
    }
  });
}

void Redactor::Add(std::string_view text, size_t secret, size_t min_size) {
  if (text.size() < std::max(min_size, kPrefix)) return;
  pieces_.push_back({PrefixOf(text.data()), text, secret});
}

// A daemon logs a JSON credential's values decoded ("a\"b" as a"b).
void Redactor::AddJsonStrings(std::string_view content, size_t secret) {
  std::string_view whole = Trimmed(content);
  if (whole.empty() || (whole.front() != '{' && whole.front() != '[')) return;
  nlohmann::json doc = nlohmann::json::parse(whole, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return;
  std::vector<const nlohmann::json*> todo{&doc};  // a stack: no recursion on a deep document
  while (!todo.empty()) {
    const nlohmann::json* j = todo.back();
    todo.pop_back();
    if (j->is_string()) {
      const std::string& s = j->get_ref<const std::string&>();
      if (s.size() >= kMinPiece) {
        decoded_.push_back(s);
        Add(decoded_.back(), secret, kMinPiece);
      }
    } else if (j->is_structured()) {
      for (const nlohmann::json& member : *j) todo.push_back(&member);
    }
  }
}

std::string Redactor::operator()(std::string_view line) const {
  if (pieces_.empty() || line.size() < kPrefix) return std::string(line);
  // The longest piece that starts at each position, if any.
  std::vector<std::optional<std::pair<size_t, size_t>>> at(line.size());  // end, secret
  for (size_t i = 0; i + kPrefix <= line.size(); ++i) {
    uint32_t key = PrefixOf(line.data() + i);
    auto first = std::lower_bound(pieces_.begin(), pieces_.end(), key,
                                  [](const Piece& p, uint32_t k) { return p.prefix < k; });
    for (auto p = first; p != pieces_.end() && p->prefix == key; ++p) {
      if (line.substr(i).starts_with(p->text)) {
        at[i] = {i + p->text.size(), p->secret};
        break;
      }
    }
  }
  std::string out;
  out.reserve(line.size());
  for (size_t i = 0; i < line.size();) {
    if (!at[i]) {
      out += line[i++];
      continue;
    }
    size_t end = at[i]->first;
    for (size_t j = i + 1; j < end; ++j) {
      if (at[j]) end = std::max(end, at[j]->first);
    }
    out += names_[at[i]->second];
    i = end;
  }
  return out;
}

}  // namespace mesh::core

// One resource of a declaration, read field group by field group (a kind is
// the list of its groups): the part of ParseDeclaration that checks each
// resource on its own. Internal to //host/core:declaration.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "host/core/declaration.h"
#include "host/core/json_stream.h"
#include "host/core/result.h"

namespace mesh::core::resource_parsing {

// "resource ID, field F: " (or "resource #N" before the id is known): how
// every refusal starts.
std::string Where(const std::string& id, size_t index, std::string_view field);

// The refusals of one declaration, at most kMaxProblems of them named.
class Problems {
 public:
  static constexpr size_t kMaxProblems = 50;

  void Add(std::string message) {
    if (named_.size() < kMaxProblems) named_.push_back(std::move(message));
    ++total_;
  }
  void Clear() {
    named_.clear();
    total_ = 0;
  }
  // `later`'s after these, counted whole.
  void Append(const Problems& later);
  bool empty() const { return total_ == 0; }
  size_t total() const { return total_; }
  // One refusal: its message, as it always read. Several: a count and
  // all of them on one line, and each in `details` for sinks with lines.
  Error ToError() const;

 private:
  std::vector<std::string> named_;
  size_t total_ = 0;
};

// `obj`, the index-th entry of "resources", read into `r` (a Resource as
// default-constructed: the declaration's list builds it in place). False
// when it is refused: then every field found wrong is added to `refusals`
// (not only the first: fixing a declaration should not take one run per
// mistake), and `r` is half-filled. The resource's strings may be moved out
// of `obj`; its id stays.
bool ParseResource(FlatObject& obj, size_t index, Resource& r, Problems& refusals);

}  // namespace mesh::core::resource_parsing

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

// `obj`, the index-th entry of "resources", read into `r` (a Resource as
// default-constructed: the declaration's list builds it in place). False
// when it is refused: then every field found wrong is added to `refusals`
// (not only the first: fixing a declaration should not take one run per
// mistake), and `r` is half-filled. The resource's strings may be moved out
// of `obj`; its id stays.
bool ParseResource(FlatObject& obj, size_t index, Resource& r, Problems& refusals);

}  // namespace mesh::core::resource_parsing

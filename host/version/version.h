// What `mesh-host --version` and the mesh_host_build_info metric say this
// binary is: the release it belongs to and, for a stamped build (the
// package tools/package makes), the commit it was built from.
#pragma once

#include <string>
#include <string_view>

namespace mesh {

// The release, "0.1.0" (MESH_HOST_RELEASE in version.bzl).
std::string_view Release();

// The commit ("1a2b3c4d5e6f", with "-dirty" when the tree had changes), or
// empty for a development build: development builds are not stamped, so a
// commit does not relink every binary and re-run every test.
std::string_view Commit();

// "0.1.0 (commit 1a2b3c4d5e6f)" or "0.1.0 (development build, not stamped)".
std::string VersionLine();

}  // namespace mesh

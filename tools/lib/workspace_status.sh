#!/bin/sh
# Bazel's --workspace_status_command for stamped builds (tools/package): the
# commit the binary is built from, "-dirty" when the tree differs from it.
commit=$(git rev-parse --short=12 HEAD 2>/dev/null) || exit 0
[ -z "$(git status --porcelain --untracked-files=no 2>/dev/null)" ] || commit=$commit-dirty
echo "STABLE_MESH_HOST_COMMIT $commit"

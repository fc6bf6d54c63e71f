#!/bin/sh
# Bazel's --workspace_status_command for stamped builds (tools/package): the
# commit the binary is built from, "-dirty" when the tree differs from it
# (untracked files count: the package globs docs/). No commit at all when
# git cannot say, rather than a clean one it cannot vouch for.
commit=$(git rev-parse --short=12 HEAD 2>/dev/null) || exit 0
changes=$(git status --porcelain 2>/dev/null) || exit 0
[ -z "$changes" ] || commit=$commit-dirty
echo "STABLE_MESH_HOST_COMMIT $commit"

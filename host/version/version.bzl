"""version_cc: a C++ source carrying the release and, on a stamped build, the commit."""

# The release: --version, mesh_host_build_info and the package say it.
# Bumped with CHANGELOG.md.
MESH_HOST_RELEASE = "0.1.0"

# Its date: the package's files carry it, so the same tree packs the same.
MESH_HOST_RELEASE_DATE = "2026-11-30"

def _version_cc_impl(ctx):
    out = ctx.actions.declare_file(ctx.attr.name + ".cc")

    # ctx.info_file is Bazel's stable status. It carries STABLE_MESH_HOST_COMMIT only
    # when the build ran tools/lib/workspace_status.sh (tools/package does); a
    # stable key's change re-runs this action, so a stamped binary never
    # names a commit it was not built from. Read only under --stamp: a
    # status command left in a user.bazelrc does not make a development
    # build claim a commit.
    status = ctx.info_file if ctx.attr.stamp else ctx.actions.declare_file(ctx.attr.name + ".nostamp")
    if not ctx.attr.stamp:
        ctx.actions.write(status, "")
    ctx.actions.run_shell(
        inputs = [status],
        outputs = [out],
        command = """
commit=$(sed -n 's/^STABLE_MESH_HOST_COMMIT //p' "$1" | tr -cd '0-9a-z-')
cat > "$2" <<EOT
#include "host/version/version.h"
namespace mesh {
std::string_view Release() { return "$3"; }
std::string_view Commit() { return "$commit"; }
}  // namespace mesh
EOT
""",
        arguments = [status.path, out.path, ctx.attr.release],
        mnemonic = "VersionCc",
    )
    return [DefaultInfo(files = depset([out]))]

version_cc = rule(
    implementation = _version_cc_impl,
    attrs = {
        "release": attr.string(mandatory = True),
        "stamp": attr.bool(default = False),
    },
)

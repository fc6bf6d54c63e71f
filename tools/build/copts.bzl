"""Compiler options shared by every package."""

# For a library off the hot paths (the no-op, the full pass, the first
# apply's writes): optimised for size in an optimised build. GCC's -O2
# inlines freely, and the daemon keeps every page of its code that it ever
# ran: its own code was a third of its private memory. The hot libraries
# keep -O2; docs/performance.md ("Code size") has the measurements.
COLD_COPTS = select({
    "//tools/build:opt": ["-Os"],
    "//conditions:default": [],
})

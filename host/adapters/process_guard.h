// What the process sets about itself before it holds secrets or serves
// clients.
#pragma once

#include <cstdint>

namespace mesh::adapters {

// No core file and no /proc/PID/mem for other users: an abort (a failed
// allocation under a memory limit) would otherwise write every credential
// the apply held to disk.
void KeepSecretsOutOfCoreFiles();

// Raises the soft limit on open descriptors to the hard limit (systemd's
// default soft limit is 1,024): the reconcile opens a descriptor per
// directory it walks, and must never run short because of anything else.
// Returns the soft limit now in force.
uint64_t RaiseOpenFileLimit();

}  // namespace mesh::adapters

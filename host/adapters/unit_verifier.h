// systemd-analyze verify over a declaration's unit texts: what systemd
// itself says of each (an unknown key, a type it cannot parse, a command
// that is not executable here), for `mesh-host validate`.
//
// Each unit text and its drop-ins are written to a private temporary
// directory (0700, removed after), and one systemd-analyze run reads them
// all. Only /usr/bin/systemd-analyze or /bin/systemd-analyze is run (no
// PATH lookup: validate may run as root), with a 10 s deadline and its
// output bounded.
#pragma once

#include <string>
#include <vector>

#include "host/core/declaration.h"

namespace mesh::adapters {

// One line per finding ("unit web.service: line 3: Unknown key …"), or one
// saying why nothing was checked; none when every unit text reads clean.
std::vector<std::string> VerifyUnitTexts(const core::Declaration& declaration);

}  // namespace mesh::adapters

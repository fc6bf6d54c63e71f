#include "host/base/shared_library.h"

#include <dlfcn.h>

namespace mesh::base {

core::Result<SharedLibrary> SharedLibrary::Open(const std::string& soname) {
  // RTLD_LOCAL: its symbols stay its own, not a lookup scope for libraries
  // loaded after it.
  void* handle = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return core::Fail(soname + " could not be loaded: " + (why != nullptr ? why : "unknown error"));
  }
  return SharedLibrary(handle, soname);
}

core::Result<void*> SharedLibrary::Find(const char* name) const {
  dlerror();  // a null symbol is only an error when dlerror says so
  void* address = dlsym(handle_, name);
  if (address == nullptr) {
    const char* why = dlerror();
    return core::Fail(soname_ + " has no " + name +
                      (why != nullptr ? std::string(": ") + why : ""));
  }
  return address;
}

}  // namespace mesh::base

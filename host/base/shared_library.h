// SharedLibrary: a shared library mesh-host loads when it first needs it,
// not at process start.
//
// Every library an executable links is mapped and relocated before main,
// whatever the command. libsystemd brings six more (libgcrypt, libgpg-error,
// liblzma, libzstd, liblz4, libcap), and only the commands that talk to
// systemd need any of them: `mesh-host --version`, a files-only apply and
// `mesh-host status` should not pay for them (docs/performance.md has the
// figures). A library opened here is never closed: its functions stay
// callable until the process exits.
#pragma once

#include <mutex>
#include <string>

#include "host/core/result.h"

namespace mesh::base {

class SharedLibrary {
 public:
  // dlopen(soname, RTLD_NOW | RTLD_LOCAL). The error names the library and
  // the loader's reason ("libsystemd.so.0 could not be loaded: …").
  static core::Result<SharedLibrary> Open(const std::string& soname);

  // Points `fn` at the library's function `name` (declared by the
  // library's own header, so the type is the header's). The error names
  // the function and the library.
  template <typename F>
  core::Status Bind(const char* name, F*& fn) const {
    auto address = Find(name);
    if (!address) return std::unexpected(address.error());
    fn = reinterpret_cast<F*>(*address);
    return core::Ok();
  }

 private:
  SharedLibrary(void* handle, std::string soname) : handle_(handle), soname_(std::move(soname)) {}
  core::Result<void*> Find(const char* name) const;

  void* handle_;
  std::string soname_;
};

// A library's functions bound once, by the first call of `load` that
// succeeds. A failure (a passing EMFILE or ENOMEM among the reasons) is the
// caller's error, and the next call tries again; after a success every call
// returns at once. Calls are serialized, so the pointers `load` sets are
// read only after a load that succeeded.
class LoadOnce {
 public:
  template <typename Load>
  core::Status operator()(Load load) {
    std::lock_guard<std::mutex> lock(mu_);
    if (loaded_) return core::Ok();
    core::Status st = load();
    loaded_ = st.has_value();
    return st;
  }

 private:
  std::mutex mu_;
  bool loaded_ = false;
};

}  // namespace mesh::base

// Boxed<T>: an optional whose value lives on the heap, for a member that is
// large and usually empty.
//
// A ResourceOutcome carries a unit's snapshot for services and processes
// only; held inline as std::optional it is 152 bytes of every file's
// outcome too, and a large apply holds one outcome per resource (as does
// /status's picture). Empty, a Boxed is one pointer. It copies by value, as
// std::optional does, and reads like one. A resource, a record entry, a
// write and an outcome box a unit's part the same way, read through
// value_or_empty() and made through get_or_make().
#pragma once

#include <memory>
#include <optional>
#include <utility>

namespace mesh::core {

template <typename T>
class Boxed {
 public:
  Boxed() = default;
  Boxed(std::nullopt_t) {}                                           // NOLINT: as std::optional
  Boxed(T value) : value_(std::make_unique<T>(std::move(value))) {}  // NOLINT: as std::optional
  Boxed(const Boxed& other) : value_(other ? std::make_unique<T>(*other) : nullptr) {}
  Boxed(Boxed&&) noexcept = default;
  Boxed& operator=(const Boxed& other) {
    if (this != &other) value_ = other ? std::make_unique<T>(*other) : nullptr;
    return *this;
  }
  Boxed& operator=(Boxed&&) noexcept = default;
  Boxed& operator=(std::nullopt_t) {
    value_.reset();
    return *this;
  }

  bool has_value() const { return value_ != nullptr; }
  explicit operator bool() const { return has_value(); }
  T& operator*() { return *value_; }
  const T& operator*() const { return *value_; }
  T* operator->() { return value_.get(); }
  const T* operator->() const { return value_.get(); }

  // The value, or a default-made one when empty: a reader of a part that
  // only some owners have needs no check.
  const T& value_or_empty() const { return value_ ? *value_ : Empty(); }
  // The value, made on first use.
  T& get_or_make() {
    if (!value_) value_ = std::make_unique<T>();
    return *value_;
  }

  // As std::optional's: both empty, or both holding equal values.
  friend bool operator==(const Boxed& a, const Boxed& b) {
    return a.has_value() == b.has_value() && (!a.has_value() || *a == *b);
  }

 private:
  static const T& Empty() {
    static const T empty{};
    return empty;
  }

  std::unique_ptr<T> value_;
};

}  // namespace mesh::core

#include "host/core/boxed.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "host/core/outcome.h"

namespace mesh::core {
namespace {

TEST(Boxed, IsOnePointerWhereAnOptionalWouldHoldTheValue) {
  EXPECT_EQ(sizeof(Boxed<UnitSnapshot>), sizeof(void*));
  EXPECT_LT(sizeof(ResourceOutcome), 300u) << "an outcome holds no snapshot inline";
}

TEST(Boxed, CopiesTheValueNotThePointer) {
  Boxed<std::string> a = std::string("web.service");
  Boxed<std::string> b = a;
  ASSERT_TRUE(b.has_value());
  EXPECT_NE(&*a, &*b);
  *b = "db.service";
  EXPECT_EQ(*a, "web.service");
  a = b;
  EXPECT_EQ(*a, "db.service");
  EXPECT_NE(&*a, &*b);
}

TEST(Boxed, EmptiesLikeAnOptional) {
  Boxed<std::string> empty;
  EXPECT_FALSE(empty.has_value());
  EXPECT_FALSE(empty);
  Boxed<std::string> copy = empty;
  EXPECT_FALSE(copy.has_value());
  Boxed<std::string> a = std::string("x");
  Boxed<std::string> moved = std::move(a);
  EXPECT_EQ(*moved, "x");
  moved = std::nullopt;
  EXPECT_FALSE(moved.has_value());
  moved = empty;
  EXPECT_FALSE(moved.has_value());
}

}  // namespace
}  // namespace mesh::core

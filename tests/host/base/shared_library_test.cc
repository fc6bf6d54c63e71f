#include "host/base/shared_library.h"

#include <gtest/gtest.h>

#include <cmath>

namespace mesh::base {
namespace {

TEST(SharedLibrary, BindsAFunctionOfTheLibraryByItsName) {
  auto libm = SharedLibrary::Open("libm.so.6");
  ASSERT_TRUE(libm) << libm.error().message;
  decltype(&::cos) cosine = nullptr;
  ASSERT_TRUE(libm->Bind("cos", cosine));
  EXPECT_EQ(cosine(0.0), 1.0);
}

TEST(SharedLibrary, ALibraryThatIsNotThereIsAnErrorNamingIt) {
  auto lib = SharedLibrary::Open("libmesh-host-absent.so.0");
  ASSERT_FALSE(lib);
  EXPECT_NE(lib.error().message.find("libmesh-host-absent.so.0 could not be loaded: "),
            std::string::npos)
      << lib.error().message;
}

TEST(SharedLibrary, AFunctionThatIsNotThereIsAnErrorNamingBoth) {
  auto libm = SharedLibrary::Open("libm.so.6");
  ASSERT_TRUE(libm);
  void (*absent)() = nullptr;
  auto st = libm->Bind("mesh_host_absent", absent);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message.find("libm.so.6 has no mesh_host_absent"), std::string::npos)
      << st.error().message;
  EXPECT_EQ(absent, nullptr);
}

// libsystemd and libcrypt are bound this way: a load that failed for a
// passing reason must be tried again, and one that worked never again.
TEST(LoadOnce, TriesAgainAfterAFailureAndNeverAfterASuccess) {
  LoadOnce once;
  int calls = 0;
  auto failing = [&]() -> core::Status {
    ++calls;
    return core::Fail("EMFILE, for now");
  };
  auto working = [&]() -> core::Status {
    ++calls;
    return core::Ok();
  };
  EXPECT_FALSE(once(failing));
  EXPECT_FALSE(once(failing));
  EXPECT_EQ(calls, 2);
  EXPECT_TRUE(once(working));
  EXPECT_TRUE(once(failing)) << "loaded once: the later load is not run";
  EXPECT_TRUE(once(working));
  EXPECT_EQ(calls, 3);
}

}  // namespace
}  // namespace mesh::base

// The kvlens::Error message `fn` throws, checked to be one line; a test failure when
// it throws nothing or something else. For tests of user-reachable errors.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "core/Error.h"

namespace kvlens::test {

inline std::string errorOf(const std::function<void()>& fn) {
    try {
        fn();
    } catch (const Error& e) {
        const std::string m = e.what();
        EXPECT_EQ(m.find('\n'), std::string::npos) << m;
        return m;
    } catch (const std::exception& e) {
        ADD_FAILURE() << "not a kvlens::Error: " << e.what();
        return "";
    }
    ADD_FAILURE() << "no error";
    return "";
}

}  // namespace kvlens::test

// The one exception type every user-reachable failure throws: a bad file, flag,
// field or model. Its message is a single line naming the culprit.
#pragma once

#include <stdexcept>
#include <string>

namespace kvlens {

class Error : public std::runtime_error {
public:
    explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace kvlens

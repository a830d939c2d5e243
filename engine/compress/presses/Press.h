// A KV-cache compression method: from a prefill's capture and the method's
// parameters to the positions each head keeps. Selecting never re-runs the
// prefill, so a new budget or method costs milliseconds.
#pragma once

#include <memory>
#include <string>

#include "engine/compress/Capture.h"
#include "core/PressParams.h"
#include "core/Selection.h"

namespace kvlens {

class Press {
public:
    virtual ~Press() = default;
    // Validates `params` against the capture (throws kvlens::Error naming the
    // flag) and returns the kept positions, ascending, per layer and head.
    Selection select(const Capture& capture, const PressParams& params) const;

    // The press for `params.method`; throws kvlens::Error for an unknown name.
    static std::unique_ptr<Press> create(const std::string& method);

protected:
    // `selection` arrives with its shape filled in and `params` validated; the
    // prompt is longer than the budget (otherwise everything is kept).
    virtual void fill(const Capture& capture, const PressParams& params, int64_t budget,
                      Selection& selection) const = 0;
};

}  // namespace kvlens

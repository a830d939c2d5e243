// The Qt application the report's drawing needs (fonts, image plugins): created once,
// headless. The platform is "offscreen" unless QT_QPA_PLATFORM says otherwise, since
// the report never opens a window; Qt's own warnings are silenced unless
// KVLENS_QT_DEBUG is set, so that kvlens keeps its one-line errors.
#pragma once

namespace kvlens {

class QtRuntime {
public:
    // Creates the QGuiApplication when there is none yet; safe to call often.
    static void ensure();
};

}  // namespace kvlens

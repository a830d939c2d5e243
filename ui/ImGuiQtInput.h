// The Qt-to-Dear-ImGui input glue: how Qt's keys, mouse buttons and modifiers land
// in an ImGuiIO (Dear ImGui 1.86's interface: io.KeyMap[] into io.KeysDown[512],
// io.MouseDown[5], io.KeyCtrl/Shift/Alt/Super). Plain functions on the ImGuiIO they
// are given: no ImGui context is touched but that one.
#pragma once

#include <Qt>

struct ImGuiIO;

namespace kvlens::ui {

class ImGuiQtInput {
public:
    // The slot of io.KeysDown[] for a Qt::Key: Latin-1 keys keep their code (0..255),
    // Qt's special keys (0x01000000 | n, n < 256) go to 256 + n; -1 for the others.
    static int keyIndex(int qtKey);
    // Fills io.KeyMap[] with the slots of the keys ImGui names (Tab, arrows, ...).
    static void installKeyMap(ImGuiIO& io);
    // io.MouseDown[0..4] from Qt's button state (left, right, middle, back, forward).
    static void setMouseButtons(ImGuiIO& io, Qt::MouseButtons buttons);
    static void setModifiers(ImGuiIO& io, Qt::KeyboardModifiers modifiers);
    // Wheel angles in eighths of a degree (QWheelEvent::angleDelta): one notch, 120, is
    // one ImGui wheel unit.
    static void addWheel(ImGuiIO& io, int angleDeltaX, int angleDeltaY);
};

}  // namespace kvlens::ui

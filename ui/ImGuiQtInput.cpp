#include "ui/ImGuiQtInput.h"

#include <imgui.h>

namespace kvlens::ui {

int ImGuiQtInput::keyIndex(int qtKey) {
    if (qtKey >= 0 && qtKey < 256) return qtKey;
    const int special = qtKey & ~0x01000000;
    if ((qtKey & 0x01000000) != 0 && special >= 0 && special < 256) return 256 + special;
    return -1;
}

void ImGuiQtInput::installKeyMap(ImGuiIO& io) {
    io.KeyMap[ImGuiKey_Tab] = keyIndex(Qt::Key_Tab);
    io.KeyMap[ImGuiKey_LeftArrow] = keyIndex(Qt::Key_Left);
    io.KeyMap[ImGuiKey_RightArrow] = keyIndex(Qt::Key_Right);
    io.KeyMap[ImGuiKey_UpArrow] = keyIndex(Qt::Key_Up);
    io.KeyMap[ImGuiKey_DownArrow] = keyIndex(Qt::Key_Down);
    io.KeyMap[ImGuiKey_PageUp] = keyIndex(Qt::Key_PageUp);
    io.KeyMap[ImGuiKey_PageDown] = keyIndex(Qt::Key_PageDown);
    io.KeyMap[ImGuiKey_Home] = keyIndex(Qt::Key_Home);
    io.KeyMap[ImGuiKey_End] = keyIndex(Qt::Key_End);
    io.KeyMap[ImGuiKey_Insert] = keyIndex(Qt::Key_Insert);
    io.KeyMap[ImGuiKey_Delete] = keyIndex(Qt::Key_Delete);
    io.KeyMap[ImGuiKey_Backspace] = keyIndex(Qt::Key_Backspace);
    io.KeyMap[ImGuiKey_Space] = keyIndex(Qt::Key_Space);
    io.KeyMap[ImGuiKey_Enter] = keyIndex(Qt::Key_Return);
    io.KeyMap[ImGuiKey_Escape] = keyIndex(Qt::Key_Escape);
    io.KeyMap[ImGuiKey_KeyPadEnter] = keyIndex(Qt::Key_Enter);
    io.KeyMap[ImGuiKey_A] = keyIndex(Qt::Key_A);
    io.KeyMap[ImGuiKey_C] = keyIndex(Qt::Key_C);
    io.KeyMap[ImGuiKey_V] = keyIndex(Qt::Key_V);
    io.KeyMap[ImGuiKey_X] = keyIndex(Qt::Key_X);
    io.KeyMap[ImGuiKey_Y] = keyIndex(Qt::Key_Y);
    io.KeyMap[ImGuiKey_Z] = keyIndex(Qt::Key_Z);
}

void ImGuiQtInput::setMouseButtons(ImGuiIO& io, Qt::MouseButtons buttons) {
    io.MouseDown[0] = buttons.testFlag(Qt::LeftButton);
    io.MouseDown[1] = buttons.testFlag(Qt::RightButton);
    io.MouseDown[2] = buttons.testFlag(Qt::MiddleButton);
    io.MouseDown[3] = buttons.testFlag(Qt::BackButton);
    io.MouseDown[4] = buttons.testFlag(Qt::ForwardButton);
}

void ImGuiQtInput::setModifiers(ImGuiIO& io, Qt::KeyboardModifiers modifiers) {
    io.KeyCtrl = modifiers.testFlag(Qt::ControlModifier);
    io.KeyShift = modifiers.testFlag(Qt::ShiftModifier);
    io.KeyAlt = modifiers.testFlag(Qt::AltModifier);
    io.KeySuper = modifiers.testFlag(Qt::MetaModifier);
}

void ImGuiQtInput::addWheel(ImGuiIO& io, int angleDeltaX, int angleDeltaY) {
    io.MouseWheelH += static_cast<float>(angleDeltaX) / 120.0f;
    io.MouseWheel += static_cast<float>(angleDeltaY) / 120.0f;
}

}  // namespace kvlens::ui

// ImGuiQtInput on a bare ImGui context (no window, no GL).
#include "ui/ImGuiQtInput.h"

#include <gtest/gtest.h>
#include <imgui.h>

#include <set>

namespace kvlens::ui {
namespace {

class ImGuiQtInputTest : public ::testing::Test {
protected:
    void SetUp() override {
        previous_ = ImGui::GetCurrentContext();
        context_ = ImGui::CreateContext();
        ImGui::SetCurrentContext(context_);
    }
    void TearDown() override {
        ImGui::DestroyContext(context_);
        ImGui::SetCurrentContext(previous_);
    }
    ImGuiContext* previous_ = nullptr;
    ImGuiContext* context_ = nullptr;
};

TEST_F(ImGuiQtInputTest, KeyIndicesAreDistinctAndInsideKeysDown) {
    EXPECT_EQ(ImGuiQtInput::keyIndex(Qt::Key_A), 'A');
    EXPECT_EQ(ImGuiQtInput::keyIndex(Qt::Key_Space), ' ');
    EXPECT_EQ(ImGuiQtInput::keyIndex(Qt::Key_Escape), 256);
    EXPECT_EQ(ImGuiQtInput::keyIndex(Qt::Key_Left), 256 + 0x12);
    EXPECT_EQ(ImGuiQtInput::keyIndex(Qt::Key_unknown), -1);
    EXPECT_EQ(ImGuiQtInput::keyIndex(Qt::Key_Dead_Grave), -1);  // 0x01001250
    EXPECT_EQ(ImGuiQtInput::keyIndex(0x20ac), -1);               // a non-Latin-1 key (the euro sign)
}

TEST_F(ImGuiQtInputTest, KeyMapFillsEveryImGuiKeyWithADistinctSlot) {
    ImGuiIO& io = ImGui::GetIO();
    for (int& k : io.KeyMap) k = -1;
    ImGuiQtInput::installKeyMap(io);
    std::set<int> used;
    for (int k = 0; k < ImGuiKey_COUNT; ++k) {
        ASSERT_GE(io.KeyMap[k], 0) << "ImGuiKey " << k;
        ASSERT_LT(io.KeyMap[k], static_cast<int>(IM_ARRAYSIZE(io.KeysDown)));
        used.insert(io.KeyMap[k]);
    }
    EXPECT_EQ(static_cast<int>(used.size()), static_cast<int>(ImGuiKey_COUNT));
    EXPECT_EQ(io.KeyMap[ImGuiKey_Enter], ImGuiQtInput::keyIndex(Qt::Key_Return));
    EXPECT_EQ(io.KeyMap[ImGuiKey_KeyPadEnter], ImGuiQtInput::keyIndex(Qt::Key_Enter));
}

TEST_F(ImGuiQtInputTest, ButtonsModifiersAndWheel) {
    ImGuiIO& io = ImGui::GetIO();
    ImGuiQtInput::setMouseButtons(io, Qt::LeftButton | Qt::MiddleButton);
    EXPECT_TRUE(io.MouseDown[0]);
    EXPECT_FALSE(io.MouseDown[1]);
    EXPECT_TRUE(io.MouseDown[2]);
    ImGuiQtInput::setMouseButtons(io, Qt::RightButton);
    EXPECT_FALSE(io.MouseDown[0]);
    EXPECT_TRUE(io.MouseDown[1]);
    EXPECT_FALSE(io.MouseDown[2]);

    ImGuiQtInput::setModifiers(io, Qt::ControlModifier | Qt::AltModifier);
    EXPECT_TRUE(io.KeyCtrl);
    EXPECT_FALSE(io.KeyShift);
    EXPECT_TRUE(io.KeyAlt);
    EXPECT_FALSE(io.KeySuper);

    io.MouseWheel = 0.0f;
    io.MouseWheelH = 0.0f;
    ImGuiQtInput::addWheel(io, 0, 240);
    ImGuiQtInput::addWheel(io, -60, -120);
    EXPECT_FLOAT_EQ(io.MouseWheel, 1.0f);
    EXPECT_FLOAT_EQ(io.MouseWheelH, -0.5f);
}

}  // namespace
}  // namespace kvlens::ui

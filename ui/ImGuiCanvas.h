// A QOpenGLWidget that draws with Dear ImGui. Each canvas owns its ImGuiContext
// (created in the constructor, destroyed in the destructor) and makes it current
// before every use, so any number of canvases live side by side with no global state
// of ours. Qt's mouse, wheel, key, text, focus and leave events are forwarded to that
// context's ImGuiIO; paintGL runs one ImGui frame (NewFrame, drawFrame(), Render) and
// renders it with the OpenGL3 backend into the widget's framebuffer.
//
// Repainting is event driven: a frame is drawn on input, on resize/expose, and when
// requestRedraw() is called (by a subclass whose data changed). There is no timer.
// After an input event one follow-up frame is scheduled (ImGui resolves some input a
// frame late, e.g. hover after a click), and only one: the follow-up asks for none.
//
// Text: ImGui's own 13 px font for ASCII and Latin-1, with the glyphs of every other
// character a subclass announces (addGlyphs, e.g. the prompt's tokens) merged in from
// the installed fonts that have them (GlyphFonts); the atlas is rebuilt before the
// next frame when new characters arrive. ImGui here keeps 16-bit characters, so code
// points above U+FFFF (most emoji) draw as ImGui's '?'.
#pragma once

#include <QColor>
#include <QElapsedTimer>
#include <QMetaObject>
#include <QOpenGLWidget>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

struct ImGuiContext;

namespace kvlens::ui {

class ImGuiCanvas : public QOpenGLWidget {
    Q_OBJECT

public:
    explicit ImGuiCanvas(QWidget* parent = nullptr);
    ~ImGuiCanvas() override;

    ImGuiCanvas(const ImGuiCanvas&) = delete;
    ImGuiCanvas& operator=(const ImGuiCanvas&) = delete;

    // This canvas's context (for tests and for subclasses that read its IO).
    ImGuiContext* imguiContext() const { return context_; }

    // What drawFrame() draws when a subclass does not override it (optional).
    void setDrawFunction(std::function<void()> draw);
    // The colour the framebuffer is cleared to before ImGui's draw data.
    void setClearColor(const QColor& color);
    // Schedules one repaint (QWidget::update): call it when the data drawn changed.
    void requestRedraw();

    // How many ImGui frames have been drawn (paintGL calls that rendered).
    std::uint64_t frameCount() const { return frames_; }

    // Whether the font drew `codepoint` in the last frame (ASCII and Latin-1 always,
    // others once announced and found in an installed font).
    bool hasGlyph(char32_t codepoint) const;
    // Code points announced beyond Latin-1, and how many of them no font has.
    std::size_t extraGlyphs() const { return wanted_.size(); }
    std::size_t missingGlyphs() const { return missing_; }

protected:
    // Called between ImGui::NewFrame and ImGui::Render with this canvas's context
    // current; draw with ImGui (windows, or the background/foreground draw lists).
    virtual void drawFrame();
    // Makes the font draw the characters of this UTF-8 text from the next frame on.
    void addGlyphs(const std::string& text);

    void initializeGL() override;
    void paintGL() override;

    void mouseMoveEvent(QMouseEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void mouseReleaseEvent(QMouseEvent* event) override;
    void mouseDoubleClickEvent(QMouseEvent* event) override;
    void wheelEvent(QWheelEvent* event) override;
    void keyPressEvent(QKeyEvent* event) override;
    void keyReleaseEvent(QKeyEvent* event) override;
    void focusInEvent(QFocusEvent* event) override;
    void focusOutEvent(QFocusEvent* event) override;
    void leaveEvent(QEvent* event) override;

private:
    void makeImGuiCurrent() const;
    void handleMouse(QMouseEvent* event);
    void handleKey(QKeyEvent* event, bool down);
    // Input arrived: repaint now, and once more after that frame.
    void inputChanged();
    // Frees the backend's GL objects while their GL context is current.
    void releaseGL();
    // Rebuilds the font atlas with the announced characters (GL context current).
    void rebuildFonts();

    ImGuiContext* context_ = nullptr;
    std::function<void()> draw_;
    QColor clearColor_{32, 32, 32};
    QElapsedTimer clock_;
    qint64 lastFrameNs_ = -1;
    std::uint64_t frames_ = 0;
    bool backendReady_ = false;
    bool followUpPending_ = false;
    QMetaObject::Connection contextGone_;
    std::set<char32_t> wanted_;        // beyond Latin-1, within 16 bits
    bool fontsStale_ = false;
    std::size_t missing_ = 0;
    std::vector<std::vector<std::uint16_t>> glyphRanges_;  // the atlas points into these
};

}  // namespace kvlens::ui

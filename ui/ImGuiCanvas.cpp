#include "ui/ImGuiCanvas.h"

#include "ui/GlyphFonts.h"
#include "ui/ImGuiQtInput.h"

#include <imgui.h>
#include <imgui_internal.h>  // ImTextCharFromUtf8
#include <backends/imgui_impl_opengl3.h>

#include <QFocusEvent>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QOpenGLContext>
#include <QOpenGLFunctions>
#include <QWheelEvent>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <fstream>
#include <iterator>
#include <utility>

namespace kvlens::ui {

ImGuiCanvas::ImGuiCanvas(QWidget* parent) : QOpenGLWidget(parent) {
    // CreateContext makes the new context current; put the previous one back so that
    // creating a canvas never changes what another canvas's code sees.
    ImGuiContext* previous = ImGui::GetCurrentContext();
    context_ = ImGui::CreateContext();
    ImGui::SetCurrentContext(context_);
    ImGuiIO& io = ImGui::GetIO();
    io.IniFilename = nullptr;  // no imgui.ini in the working directory
    io.LogFilename = nullptr;
    io.MousePos = ImVec2(-FLT_MAX, -FLT_MAX);
    ImGuiQtInput::installKeyMap(io);
    ImGui::StyleColorsDark();
    ImGui::SetCurrentContext(previous);

    setMouseTracking(true);  // hover moves, not only drags
    setFocusPolicy(Qt::StrongFocus);
    clock_.start();
}

ImGuiCanvas::~ImGuiCanvas() {
    // QOpenGLWidget's destructor would emit aboutToBeDestroyed after this part of the
    // object is gone: drop the connection and release the GL objects now.
    QObject::disconnect(contextGone_);
    releaseGL();
    ImGuiContext* previous = ImGui::GetCurrentContext();
    makeImGuiCurrent();
    ImGui::DestroyContext(context_);
    ImGui::SetCurrentContext(previous == context_ ? nullptr : previous);
}

void ImGuiCanvas::setDrawFunction(std::function<void()> draw) {
    draw_ = std::move(draw);
    requestRedraw();
}

void ImGuiCanvas::setClearColor(const QColor& color) {
    clearColor_ = color;
    requestRedraw();
}

void ImGuiCanvas::requestRedraw() { update(); }

void ImGuiCanvas::drawFrame() {
    if (draw_) draw_();
}

void ImGuiCanvas::makeImGuiCurrent() const { ImGui::SetCurrentContext(context_); }

static_assert(sizeof(ImWchar) == sizeof(std::uint16_t), "glyph ranges are kept as 16-bit characters");

void ImGuiCanvas::addGlyphs(const std::string& text) {
    const char* p = text.data();
    const char* end = p + text.size();
    while (p < end) {
        unsigned int c = 0;
        const int n = ImTextCharFromUtf8(&c, p, end);
        p += n > 0 ? n : 1;
        // Latin-1 is in ImGui's own font; ImGui turns what 16 bits cannot hold into
        // its replacement character, and surrogates are no characters.
        if (c <= 0xFF || c > 0xFFFF || (c >= 0xD800 && c <= 0xDFFF) || c == IM_UNICODE_CODEPOINT_INVALID) continue;
        if (wanted_.insert(static_cast<char32_t>(c)).second) fontsStale_ = true;
    }
    if (fontsStale_) requestRedraw();
}

bool ImGuiCanvas::hasGlyph(char32_t codepoint) const {
    ImGuiContext* previous = ImGui::GetCurrentContext();
    makeImGuiCurrent();
    const ImFontAtlas* atlas = ImGui::GetIO().Fonts;
    const bool has = atlas->IsBuilt() && !atlas->Fonts.empty() && codepoint <= 0xFFFF &&
                     atlas->Fonts[0]->FindGlyphNoFallback(static_cast<ImWchar>(codepoint)) != nullptr;
    ImGui::SetCurrentContext(previous);
    return has;
}

namespace {

// The whole file, in memory ImGui may free (the atlas owns what it is given).
void* readFont(const std::string& path, int* size) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return nullptr;
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (bytes.size() < 12 || bytes.size() > (1u << 30)) return nullptr;
    void* data = ImGui::MemAlloc(bytes.size());
    std::copy(bytes.begin(), bytes.end(), static_cast<char*>(data));
    *size = static_cast<int>(bytes.size());
    return data;
}

}  // namespace

void ImGuiCanvas::rebuildFonts() {
    fontsStale_ = false;
    ImGuiIO& io = ImGui::GetIO();
    const bool uploaded = io.Fonts->TexID != nullptr;
    if (uploaded) ImGui_ImplOpenGL3_DestroyFontsTexture();
    io.Fonts->Clear();
    glyphRanges_.clear();
    io.Fonts->AddFontDefault();  // ProggyClean 13 px: ASCII and Latin-1

    const std::vector<char32_t> wanted(wanted_.begin(), wanted_.end());
    std::size_t found = 0;
    for (const GlyphFonts::Face& face : GlyphFonts::covering(wanted)) {
        int size = 0;
        void* data = readFont(face.file, &size);
        if (data == nullptr) continue;
        ImFontGlyphRangesBuilder builder;
        for (char32_t cp : face.codepoints) builder.AddChar(static_cast<ImWchar>(cp));
        ImVector<ImWchar> ranges;
        builder.BuildRanges(&ranges);
        glyphRanges_.emplace_back(ranges.begin(), ranges.end());
        ImFontConfig config;
        config.MergeMode = true;
        config.PixelSnapH = true;  // whole pixels, like the bitmap font beside it
        config.OversampleH = config.OversampleV = 1;
        config.FontNo = face.index;
        io.Fonts->AddFontFromMemoryTTF(data, size, 13.0f, &config,
                                       reinterpret_cast<const ImWchar*>(glyphRanges_.back().data()));
        found += face.codepoints.size();
    }
    missing_ = wanted.size() - found;
    io.Fonts->Build();
    if (uploaded) ImGui_ImplOpenGL3_CreateFontsTexture();
}

void ImGuiCanvas::initializeGL() {
    // A widget gets a new GL context when it moves to another top-level window; the
    // old one's objects are released first (releaseGL, through aboutToBeDestroyed).
    releaseGL();
    makeImGuiCurrent();
    backendReady_ = ImGui_ImplOpenGL3_Init(nullptr);
    QObject::disconnect(contextGone_);
    contextGone_ = connect(context(), &QOpenGLContext::aboutToBeDestroyed, this,
                           [this] { releaseGL(); }, Qt::DirectConnection);
}

void ImGuiCanvas::releaseGL() {
    if (!backendReady_) return;
    const bool haveContext = context() != nullptr;
    if (haveContext) makeCurrent();
    makeImGuiCurrent();
    ImGui_ImplOpenGL3_Shutdown();
    backendReady_ = false;
    if (haveContext) doneCurrent();
}

void ImGuiCanvas::paintGL() {
    if (!backendReady_) return;
    makeImGuiCurrent();
    ImGuiIO& io = ImGui::GetIO();
    const qreal ratio = devicePixelRatioF();
    io.DisplaySize = ImVec2(static_cast<float>(width()), static_cast<float>(height()));
    io.DisplayFramebufferScale = ImVec2(static_cast<float>(ratio), static_cast<float>(ratio));
    const qint64 now = clock_.nsecsElapsed();
    const double seconds = lastFrameNs_ < 0 ? 1.0 / 60.0 : static_cast<double>(now - lastFrameNs_) * 1e-9;
    io.DeltaTime = static_cast<float>(std::max(seconds, 1e-4));  // ImGui requires > 0
    lastFrameNs_ = now;

    if (fontsStale_) rebuildFonts();
    ImGui_ImplOpenGL3_NewFrame();
    ImGui::NewFrame();
    drawFrame();
    ImGui::Render();

    QOpenGLFunctions* gl = context()->functions();
    gl->glViewport(0, 0, static_cast<int>(std::lround(width() * ratio)),
                   static_cast<int>(std::lround(height() * ratio)));
    gl->glClearColor(static_cast<float>(clearColor_.redF()), static_cast<float>(clearColor_.greenF()),
                     static_cast<float>(clearColor_.blueF()), static_cast<float>(clearColor_.alphaF()));
    gl->glClear(GL_COLOR_BUFFER_BIT);
    ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
    ++frames_;

    if (followUpPending_) {
        followUpPending_ = false;
        update();
    }
}

void ImGuiCanvas::inputChanged() {
    followUpPending_ = true;
    update();
}

void ImGuiCanvas::handleMouse(QMouseEvent* event) {
    makeImGuiCurrent();
    ImGuiIO& io = ImGui::GetIO();
    const QPointF p = event->position();
    io.MousePos = ImVec2(static_cast<float>(p.x()), static_cast<float>(p.y()));
    ImGuiQtInput::setMouseButtons(io, event->buttons());
    ImGuiQtInput::setModifiers(io, event->modifiers());
    event->accept();
    inputChanged();
}

void ImGuiCanvas::mouseMoveEvent(QMouseEvent* event) { handleMouse(event); }
void ImGuiCanvas::mousePressEvent(QMouseEvent* event) { handleMouse(event); }
void ImGuiCanvas::mouseReleaseEvent(QMouseEvent* event) { handleMouse(event); }
void ImGuiCanvas::mouseDoubleClickEvent(QMouseEvent* event) { handleMouse(event); }

void ImGuiCanvas::wheelEvent(QWheelEvent* event) {
    makeImGuiCurrent();
    ImGuiIO& io = ImGui::GetIO();
    const QPointF p = event->position();
    io.MousePos = ImVec2(static_cast<float>(p.x()), static_cast<float>(p.y()));
    ImGuiQtInput::addWheel(io, event->angleDelta().x(), event->angleDelta().y());
    ImGuiQtInput::setModifiers(io, event->modifiers());
    event->accept();
    inputChanged();
}

void ImGuiCanvas::handleKey(QKeyEvent* event, bool down) {
    makeImGuiCurrent();
    ImGuiIO& io = ImGui::GetIO();
    const int index = ImGuiQtInput::keyIndex(event->key());
    if (index >= 0) io.KeysDown[index] = down;
    ImGuiQtInput::setModifiers(io, event->modifiers());
    if (down && !event->text().isEmpty()) {
        const QByteArray utf8 = event->text().toUtf8();
        // Control characters (Tab, Return, Backspace...) travel as keys, not text.
        if (static_cast<unsigned char>(utf8.front()) >= 0x20 && utf8.front() != 0x7f)
            io.AddInputCharactersUTF8(utf8.constData());
    }
    event->accept();
    inputChanged();
}

void ImGuiCanvas::keyPressEvent(QKeyEvent* event) { handleKey(event, true); }
void ImGuiCanvas::keyReleaseEvent(QKeyEvent* event) { handleKey(event, false); }

void ImGuiCanvas::focusInEvent(QFocusEvent* event) {
    makeImGuiCurrent();
    ImGui::GetIO().AddFocusEvent(true);
    QOpenGLWidget::focusInEvent(event);
    inputChanged();
}

void ImGuiCanvas::focusOutEvent(QFocusEvent* event) {
    makeImGuiCurrent();
    ImGui::GetIO().AddFocusEvent(false);  // releases held keys and buttons
    QOpenGLWidget::focusOutEvent(event);
    inputChanged();
}

void ImGuiCanvas::leaveEvent(QEvent* event) {
    makeImGuiCurrent();
    ImGui::GetIO().MousePos = ImVec2(-FLT_MAX, -FLT_MAX);
    QOpenGLWidget::leaveEvent(event);
    inputChanged();
}

}  // namespace kvlens::ui

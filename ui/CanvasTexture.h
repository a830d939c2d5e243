// One RGBA OpenGL texture owned by a QOpenGLWidget (a canvas's rasterised cells): made on
// first upload, refilled in place while its size holds, freed before the context goes.
#pragma once

#include <QMetaObject>

class QOpenGLWidget;

namespace kvlens::ui {

class CanvasTexture {
public:
    CanvasTexture() = default;
    ~CanvasTexture();

    CanvasTexture(const CanvasTexture&) = delete;
    CanvasTexture& operator=(const CanvasTexture&) = delete;

    // Fills the texture with width x height RGBA pixels (rows packed, 4-byte aligned), with
    // owner's GL context current: made in that context when there is none (and freed when
    // that context is about to be destroyed, e.g. when owner moves to another window),
    // reallocated when the size changed, updated in place otherwise. Nearest filtering,
    // clamped to the edges; leaves no texture bound.
    void upload(QOpenGLWidget& owner, int width, int height, const void* rgba);
    // Frees the texture (making its owner's context current); id() is 0 until the next upload.
    void release();

    // The OpenGL name, 0 when there is no texture.
    unsigned id() const { return id_; }
    // The size allocated, 0 x 0 when there is no texture.
    int width() const { return width_; }
    int height() const { return height_; }

private:
    QOpenGLWidget* owner_ = nullptr;
    unsigned id_ = 0;
    int width_ = 0, height_ = 0;
    QMetaObject::Connection contextGone_;
};

}  // namespace kvlens::ui

// CanvasTexture: the texture's life in its owner's GL context, and its uploads.
#include "ui/CanvasTexture.h"

#include <QObject>
#include <QOpenGLContext>
#include <QOpenGLFunctions>
#include <QOpenGLWidget>

namespace kvlens::ui {

CanvasTexture::~CanvasTexture() { release(); }

void CanvasTexture::upload(QOpenGLWidget& owner, int width, int height, const void* rgba) {
    QOpenGLFunctions* gl = owner.context()->functions();
    if (id_ == 0) {
        gl->glGenTextures(1, &id_);
        owner_ = &owner;
        width_ = height_ = 0;
        QObject::disconnect(contextGone_);
        // The texture lives in this context: free it before the context goes.
        contextGone_ = QObject::connect(
            owner.context(), &QOpenGLContext::aboutToBeDestroyed, &owner, [this] { release(); },
            Qt::DirectConnection);
    }
    gl->glBindTexture(GL_TEXTURE_2D, id_);
    gl->glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
    if (width != width_ || height != height_) {
        // Nearest: a texel is a pixel of the caller's raster, never blended with its neighbours.
        gl->glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
        gl->glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
        gl->glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
        gl->glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
        gl->glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA, width, height, 0, GL_RGBA, GL_UNSIGNED_BYTE,
                         rgba);
        width_ = width;
        height_ = height;
    } else {
        gl->glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, width, height, GL_RGBA, GL_UNSIGNED_BYTE, rgba);
    }
    gl->glBindTexture(GL_TEXTURE_2D, 0);
}

void CanvasTexture::release() {
    QObject::disconnect(contextGone_);
    if (id_ == 0) return;
    if (owner_->context() != nullptr) {
        owner_->makeCurrent();
        owner_->context()->functions()->glDeleteTextures(1, &id_);
        owner_->doneCurrent();
    }
    id_ = 0;
    width_ = height_ = 0;
}

}  // namespace kvlens::ui

#include "reports/ReportPdf.h"

#include "core/Error.h"

#if KVLENS_REPORTS_QT
#include <QBuffer>
#include <QImage>
#include <QPageLayout>
#include <QPageSize>
#include <QPainter>
#include <QPdfWriter>
#include <QTextDocument>
#include <QUrl>

#include "reports/QtRuntime.h"
#include "reports/ReportHtml.h"
#endif

namespace kvlens {

#if KVLENS_REPORTS_QT

std::vector<uint8_t> ReportPdf::render(const std::string& printHtml, const std::vector<ReportFigure>& figures,
                                       const std::string& title) {
    QtRuntime::ensure();
    QByteArray bytes;
    {
        QBuffer buffer(&bytes);
        buffer.open(QIODevice::WriteOnly);
        QPdfWriter writer(&buffer);
        writer.setTitle(QString::fromStdString(title));
        writer.setCreator("KV Lens");
        writer.setPageLayout(QPageLayout(QPageSize(QPageSize::A4), QPageLayout::Portrait, QMarginsF(15, 15, 15, 15),
                                         QPageLayout::Millimeter));
        // Layout units are 96-dpi pixels, as the HTML's image widths are; images keep
        // their own resolution in the file.
        writer.setResolution(96);

        QTextDocument doc;
        doc.setDocumentMargin(0);
        QFont font("DejaVu Sans");
        font.setPointSizeF(9.5);
        doc.setDefaultFont(font);
        for (const ReportFigure& f : figures) {
            QImage image;
            if (!image.loadFromData(f.png.data(), int(f.png.size()), "PNG")) {
                throw Error("figure " + f.name + " of the report: Qt cannot read its PNG");
            }
            doc.addResource(QTextDocument::ImageResource, QUrl(QString::fromStdString(ReportHtml::figureResource(f))),
                            image);
        }
        doc.setHtml(QString::fromUtf8(printHtml.data(), qsizetype(printHtml.size())));
        const QSizeF page = writer.pageLayout().paintRectPixels(writer.resolution()).size();
        doc.setPageSize(page);
        // Drawn page by page rather than with QTextDocument::print, so that the painter
        // can ask for lossless images: the PDF holds the figures' very pixels, not JPEGs.
        QPainter painter(&writer);
        painter.setRenderHint(QPainter::LosslessImageRendering);
        for (int i = 0; i < doc.pageCount(); ++i) {
            if (i > 0) writer.newPage();
            painter.save();
            painter.translate(0, -i * page.height());
            doc.drawContents(&painter, QRectF(0, i * page.height(), page.width(), page.height()));
            painter.restore();
        }
        painter.end();
    }
    return std::vector<uint8_t>(bytes.begin(), bytes.end());
}

bool ReportPdf::available() { return true; }

#else

std::vector<uint8_t> ReportPdf::render(const std::string&, const std::vector<ReportFigure>&, const std::string&) {
    throw Error("the PDF report needs Qt: this kvlens was built without it (-DKVLENS_GUI=OFF)");
}

bool ReportPdf::available() { return false; }

#endif

}  // namespace kvlens

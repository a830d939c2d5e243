// libkvlens_sentencepiece.so: libsentencepiece behind a C interface (see the header).
#include "engine/tokenizer/sentencepiece/SentencePieceShim.h"

#include <sentencepiece_processor.h>

#include <cstring>
#include <string>
#include <vector>

namespace {

void copyError(const std::string& what, char* error, size_t errorSize) {
    if (!error || errorSize == 0) return;
    const size_t n = std::min(what.size(), errorSize - 1);
    std::memcpy(error, what.data(), n);
    error[n] = '\0';
}

const sentencepiece::SentencePieceProcessor& processor(const void* sp) {
    return *static_cast<const sentencepiece::SentencePieceProcessor*>(sp);
}

}  // namespace

extern "C" {

void* kvlens_sp_load(const char* data, size_t size, char* error, size_t errorSize) {
    auto* sp = new sentencepiece::SentencePieceProcessor();
    const auto status = sp->LoadFromSerializedProto(std::string_view(data, size));
    if (!status.ok()) {
        copyError(status.ToString(), error, errorSize);
        delete sp;
        return nullptr;
    }
    return sp;
}

void kvlens_sp_free(void* sp) { delete static_cast<sentencepiece::SentencePieceProcessor*>(sp); }

int kvlens_sp_piece_size(const void* sp) { return processor(sp).GetPieceSize(); }

const char* kvlens_sp_piece(const void* sp, int id, size_t* length) {
    const std::string& p = processor(sp).IdToPiece(id);
    *length = p.size();
    return p.data();
}

int kvlens_sp_type(const void* sp, int id) {
    const auto& p = processor(sp);
    if (p.IsControl(id)) return 3;
    if (p.IsUnknown(id)) return 2;
    if (p.IsUnused(id)) return 5;
    if (p.IsByte(id)) return 6;
    return 1;
}

int kvlens_sp_special(const void* sp, int which) {
    const auto& p = processor(sp);
    const int id = which == 0 ? p.bos_id() : which == 1 ? p.eos_id() : p.unk_id();
    return id >= 0 && id < p.GetPieceSize() ? id : -1;
}

long kvlens_sp_encode(const void* sp, const char* text, size_t size, int* ids, size_t capacity, char* error,
                      size_t errorSize) {
    std::vector<int> out;
    const auto status = processor(sp).Encode(std::string_view(text, size), &out);
    if (!status.ok()) {
        copyError(status.ToString(), error, errorSize);
        return -1;
    }
    for (size_t i = 0; i < out.size() && i < capacity; ++i) ids[i] = out[i];
    return static_cast<long>(out.size());
}

}  // extern "C"

// The C interface of libkvlens_sentencepiece.so, a thin shared library around
// Debian's libsentencepiece. Why a separate library, opened at run time with
// RTLD_LOCAL | RTLD_DEEPBIND (SentencePieceLibrary): libsentencepiece 0.1.97
// carries its own copy of protobuf-lite with default visibility; linked into a
// process that also loads LibTorch's libprotobuf.so.32, its symbols interpose on
// libprotobuf's and the process crashes in protobuf's static initialisation
// before main. Opened locally and deep-bound, each keeps its own protobuf.
#pragma once

#include <cstddef>

extern "C" {

// A processor for a serialized ModelProto, or nullptr with `error` filled.
void* kvlens_sp_load(const char* data, size_t size, char* error, size_t errorSize);
void kvlens_sp_free(void* sp);
int kvlens_sp_piece_size(const void* sp);
// The piece of `id` (valid while `sp` lives) and its length.
const char* kvlens_sp_piece(const void* sp, int id, size_t* length);
// 1 normal, 2 unknown, 3 control, 5 unused, 6 byte (GGUF's token types).
int kvlens_sp_type(const void* sp, int id);
// 0: BOS, 1: EOS, 2: unknown; -1 when the model has none.
int kvlens_sp_special(const void* sp, int which);
// Encodes `text` into `ids` (room for `capacity`); returns the count, which may
// exceed `capacity` (call again with more room), or -1 with `error` filled.
long kvlens_sp_encode(const void* sp, const char* text, size_t size, int* ids, size_t capacity, char* error,
                      size_t errorSize);
}

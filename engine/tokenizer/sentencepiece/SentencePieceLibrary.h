// libkvlens_sentencepiece.so opened at run time, locally and deep-bound (see
// SentencePieceShim.h for why), and its functions. Where it is looked for:
// $KVLENS_SENTENCEPIECE_LIBRARY, then beside the running executable, then where
// the build put it.
#pragma once

#include "engine/tokenizer/sentencepiece/SentencePieceShim.h"

namespace kvlens {

class SentencePieceLibrary {
public:
    // Opened once; throws kvlens::Error naming the library and dlerror() when it cannot be.
    static const SentencePieceLibrary& get();

    decltype(&kvlens_sp_load) load = nullptr;
    decltype(&kvlens_sp_free) free = nullptr;
    decltype(&kvlens_sp_piece_size) pieceSize = nullptr;
    decltype(&kvlens_sp_piece) piece = nullptr;
    decltype(&kvlens_sp_type) type = nullptr;
    decltype(&kvlens_sp_special) special = nullptr;
    decltype(&kvlens_sp_encode) encode = nullptr;

private:
    SentencePieceLibrary() = default;
};

}  // namespace kvlens

// dlopen of the SentencePiece shim with RTLD_LOCAL | RTLD_DEEPBIND.
#include "engine/tokenizer/sentencepiece/SentencePieceLibrary.h"

#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "core/Error.h"

#ifndef KVLENS_SENTENCEPIECE_SHIM
#define KVLENS_SENTENCEPIECE_SHIM "libkvlens_sentencepiece.so"
#endif

namespace kvlens {
namespace {

std::vector<std::string> candidates() {
    std::vector<std::string> out;
    if (const char* env = std::getenv("KVLENS_SENTENCEPIECE_LIBRARY"); env && *env) out.emplace_back(env);
    char exe[PATH_MAX];
    const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        std::string dir(exe, size_t(n));
        dir = dir.substr(0, dir.rfind('/'));
        out.push_back(dir + "/libkvlens_sentencepiece.so");
    }
    out.emplace_back(KVLENS_SENTENCEPIECE_SHIM);
    return out;
}

}  // namespace

const SentencePieceLibrary& SentencePieceLibrary::get() {
    static std::mutex mutex;
    static SentencePieceLibrary* library = nullptr;
    std::lock_guard<std::mutex> lock(mutex);
    if (library) return *library;
    void* handle = nullptr;
    std::string tried, why;
    for (const std::string& path : candidates()) {
        if (::access(path.c_str(), R_OK) != 0 && path.find('/') != std::string::npos) continue;
        handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
        if (handle) break;
        const char* e = ::dlerror();
        why = e ? e : "unknown";
        tried += (tried.empty() ? "" : ", ") + path;
    }
    if (!handle) {
        throw Error("the SentencePiece library libkvlens_sentencepiece.so cannot be loaded" +
                    (why.empty() ? std::string(" (not found beside the program or at " KVLENS_SENTENCEPIECE_SHIM ")")
                                 : " (" + why + ")") +
                    "; it reads tokenizer.model files");
    }
    auto* lib = new SentencePieceLibrary();
    auto bind = [&](auto& fn, const char* name) {
        fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(handle, name));
        if (!fn) throw Error(std::string("the SentencePiece library lacks ") + name + "; rebuild KV Lens");
    };
    bind(lib->load, "kvlens_sp_load");
    bind(lib->free, "kvlens_sp_free");
    bind(lib->pieceSize, "kvlens_sp_piece_size");
    bind(lib->piece, "kvlens_sp_piece");
    bind(lib->type, "kvlens_sp_type");
    bind(lib->special, "kvlens_sp_special");
    bind(lib->encode, "kvlens_sp_encode");
    library = lib;
    return *library;
}

}  // namespace kvlens

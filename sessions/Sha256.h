// SHA-256 (FIPS 180-4), incremental, so a model file of several GB is hashed
// in chunks; written here to keep the store free of a crypto library.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace kvlens::sessions {

class Sha256 {
public:
    Sha256();
    void update(const void* data, size_t size);
    void update(const std::string& text) { update(text.data(), text.size()); }
    // The 32-byte digest; the object must not be updated afterwards.
    std::array<uint8_t, 32> finish();
    // Lower-case hex of finish().
    std::string finishHex();

    static std::string hex(const std::string& data);

private:
    void compress(const uint8_t* block);

    std::array<uint32_t, 8> state_;
    std::array<uint8_t, 64> buffer_{};
    size_t buffered_ = 0;
    uint64_t totalBytes_ = 0;
};

}  // namespace kvlens::sessions

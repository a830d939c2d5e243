// SHA-256 against the FIPS 180-4 / NIST example vectors, in one piece and in
// every split, and the chunked file hash of ModelFile.
#include <gtest/gtest.h>

#include <string>

#include "TestPaths.h"
#include "core/Error.h"
#include "sessions/ModelFile.h"
#include "sessions/Sha256.h"

namespace kvlens::sessions {
namespace {

TEST(Sha256, FipsVectors) {
    EXPECT_EQ(Sha256::hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    EXPECT_EQ(Sha256::hex("abc"),
              "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    EXPECT_EQ(Sha256::hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
              "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    EXPECT_EQ(Sha256::hex(
                  "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopq"
                  "klmnopqrlmnopqrsmnopqrstnopqrstu"),
              "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
    EXPECT_EQ(Sha256::hex(std::string(1000000, 'a')),
              "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, AnySplitGivesTheSameDigest) {
    std::string data;
    for (int i = 0; i < 300; ++i) data += char(i * 37 + 11);
    const std::string whole = Sha256::hex(data);
    for (size_t cut = 0; cut <= data.size(); ++cut) {
        Sha256 h;
        h.update(data.data(), cut);
        h.update(data.data() + cut, data.size() - cut);
        ASSERT_EQ(h.finishHex(), whole) << "cut at " << cut;
    }
}

TEST(Sha256, FileHashMatchesAndReportsProgress) {
    const std::string path = test::storePath("model.bin");
    std::string data(9 << 20, '\0');  // more than two 4 MB chunks
    for (size_t i = 0; i < data.size(); ++i) data[i] = char(i * 131 >> 3);
    test::writeFile(path, data);
    double last = 0;
    int calls = 0;
    EXPECT_EQ(ModelFile::sha256(path, [&](double f) { last = f, ++calls; }), Sha256::hex(data));
    EXPECT_EQ(calls, 3);
    EXPECT_DOUBLE_EQ(last, 1.0);
    try {
        ModelFile::sha256(path + ".missing");
        FAIL() << "no error for a missing file";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(path + ".missing: cannot read the model file"),
                  std::string::npos)
            << e.what();
    }
    ::unlink(path.c_str());
}

}  // namespace
}  // namespace kvlens::sessions

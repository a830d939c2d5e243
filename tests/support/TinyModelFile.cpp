#include "support/TinyModelFile.h"

#include <cstdio>
#include <random>
#include <sys/stat.h>

namespace kvlens::test {

TinyModelFile makeTinyModelFile(const TinyModelShape& s) {
    TinyModelFile m;
    m.shape = s;
    std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
    std::vector<int32_t> types = {2, 3, 3};
    for (int b = 0; b < 256; ++b) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "<0x%02X>", b);
        tokens.push_back(buf);
        types.push_back(6);
    }
    const std::string marker = "\xe2\x96\x81";  // SentencePiece's space, U+2581
    for (const std::string& piece : {marker + "the", marker + "a", marker + "cat", marker,
                                     std::string("th"), std::string("he"), std::string("at"),
                                     std::string("ca"), marker + "t", std::string("e"),
                                     std::string("t"), std::string("h"), std::string("a"),
                                     std::string("c")}) {
        tokens.push_back(piece);
        types.push_back(1);
    }
    for (const std::string& control : s.controlTokens) {
        tokens.push_back(control);
        types.push_back(3);
    }
    std::vector<float> scores(tokens.size());
    for (size_t i = 0; i < tokens.size(); ++i) scores[i] = -static_cast<float>(i);
    m.vocab = static_cast<int64_t>(tokens.size());

    const std::string a = s.architecture;
    GgufBuilder& b = m.builder;
    b.addString("general.architecture", a).addString("general.name", "tiny-test");
    b.addUInt32(a + ".block_count", static_cast<uint32_t>(s.layers));
    b.addUInt32(a + ".embedding_length", static_cast<uint32_t>(s.embed));
    b.addUInt32(a + ".feed_forward_length", static_cast<uint32_t>(s.ffn));
    b.addUInt32(a + ".attention.head_count", static_cast<uint32_t>(s.heads));
    b.addUInt32(a + ".attention.head_count_kv", static_cast<uint32_t>(s.kvHeads));
    b.addUInt32(a + ".context_length", static_cast<uint32_t>(s.context));
    b.addFloat32(a + ".attention.layer_norm_rms_epsilon", 1e-5f);
    b.addFloat32(a + ".rope.freq_base", static_cast<float>(s.ropeTheta));
    if (s.ropeDim > 0) b.addUInt32(a + ".rope.dimension_count", static_cast<uint32_t>(s.ropeDim));
    b.addString("tokenizer.ggml.model", "llama");
    b.addStringArray("tokenizer.ggml.tokens", tokens);
    b.addFloat32Array("tokenizer.ggml.scores", scores);
    b.addInt32Array("tokenizer.ggml.token_type", types);
    b.addUInt32("tokenizer.ggml.bos_token_id", 1);
    b.addUInt32("tokenizer.ggml.eos_token_id", 2);
    b.addUInt32("tokenizer.ggml.unknown_token_id", 0);
    if (!s.chatTemplate.empty()) b.addString("tokenizer.chat_template", s.chatTemplate);

    std::mt19937_64 rng(s.seed);
    std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
    auto add = [&](const std::string& name, std::vector<int64_t> shape, float scale, float offset) {
        int64_t n = 1;
        for (int64_t d : shape) n *= d;
        std::vector<float> v(n);
        for (float& x : v) x = offset + scale * uni(rng);
        b.addTensorF32(name, shape, v);
        m.weights[name] = std::move(v);
    };
    const int64_t hd = s.embed / s.heads, E = s.embed;
    add("token_embd.weight", {E, m.vocab}, 1.0f, 0.0f);
    for (int64_t l = 0; l < s.layers; ++l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        add(p + "attn_norm.weight", {E}, 0.2f, 1.0f);
        add(p + "attn_q.weight", {E, s.heads * hd}, 0.5f, 0.0f);
        add(p + "attn_k.weight", {E, s.kvHeads * hd}, 0.5f, 0.0f);
        add(p + "attn_v.weight", {E, s.kvHeads * hd}, 0.5f, 0.0f);
        if (a == "qwen2") {
            add(p + "attn_q.bias", {s.heads * hd}, 0.3f, 0.0f);
            add(p + "attn_k.bias", {s.kvHeads * hd}, 0.3f, 0.0f);
            add(p + "attn_v.bias", {s.kvHeads * hd}, 0.3f, 0.0f);
        }
        if (a == "qwen3") {
            add(p + "attn_q_norm.weight", {hd}, 0.3f, 1.0f);
            add(p + "attn_k_norm.weight", {hd}, 0.3f, 1.0f);
        }
        add(p + "attn_output.weight", {s.heads * hd, E}, 0.3f, 0.0f);
        add(p + "ffn_norm.weight", {E}, 0.2f, 1.0f);
        add(p + "ffn_gate.weight", {E, s.ffn}, 0.4f, 0.0f);
        add(p + "ffn_up.weight", {E, s.ffn}, 0.4f, 0.0f);
        add(p + "ffn_down.weight", {s.ffn, E}, 0.3f, 0.0f);
    }
    add("output_norm.weight", {E}, 0.2f, 1.0f);
    if (s.llama3Rope) {
        // Factors between 1 and 8, as Llama 3.1's (low frequencies slowed most).
        const int64_t rotated = s.ropeDim > 0 ? s.ropeDim : hd;
        std::vector<float> f(size_t(rotated / 2));
        for (size_t i = 0; i < f.size(); ++i) f[i] = 1.0f + 7.0f * float(i) / float(f.size());
        b.addTensorF32("rope_freqs.weight", {rotated / 2}, f);
        m.weights["rope_freqs.weight"] = f;
    }
    if (!s.tiedOutput) add("output.weight", {E, m.vocab}, 0.3f, 0.0f);
    return m;
}

std::string testOutputPath(const std::string& name) {
    const std::string dir = std::string(KVLENS_BINARY_DIR) + "/test-output";
    ::mkdir(dir.c_str(), 0755);
    return dir + "/" + name;
}

}  // namespace kvlens::test

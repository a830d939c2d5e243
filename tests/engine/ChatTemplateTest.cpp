// Chat templates: each family recognised from the markers of its template
// text (and the real templates of the Phi-3 and DBRX vocabularies), its one
// user turn written as the family's published format says (Llama 3, ChatML,
// Mistral v1/v3/v7, Llama 2, Gemma, Phi-3, DeepSeek), and an unknown template
// refused in one line showing how it begins.
#include <gtest/gtest.h>

#include <fstream>

#include "core/Error.h"
#include "engine/gguf/GgufFile.h"
#include "engine/tokenizer/ChatTemplate.h"

namespace kvlens {
namespace {

using F = ChatTemplate::Family;

TEST(ChatTemplate, FamiliesAreRecognisedByTheirMarkers) {
    EXPECT_EQ(ChatTemplate::detect("{{'<|start_header_id|>' + role + '<|end_header_id|>'}}", "f"),
              F::Llama3);
    EXPECT_EQ(ChatTemplate::detect("{{'<|im_start|>' + message['role']}}", "f"), F::ChatML);
    EXPECT_EQ(ChatTemplate::detect("{{ bos_token }}[INST] {{ m }} [/INST]", "f"), F::Llama2);
    EXPECT_EQ(ChatTemplate::detect("[SYSTEM_PROMPT] x [/SYSTEM_PROMPT][INST]", "f"), F::MistralV7);
    EXPECT_EQ(ChatTemplate::detect("[AVAILABLE_TOOLS] \"[INST]\"", "f"), F::MistralV3Tekken);
    EXPECT_EQ(ChatTemplate::detect("{{ '<start_of_turn>' + role }}", "f"), F::Gemma);
    EXPECT_EQ(ChatTemplate::detect("{{'<|user|>' + c + '<|end|>' + '<|assistant|>'}}", "f"),
              F::Phi3);
    EXPECT_EQ(ChatTemplate::detect("### Instruction:\n{{c}}\n### Response:\n<|EOT|>", "f"),
              F::DeepSeekCoder);
    const std::string dir = std::string(KVLENS_SHARED_DIR) + "/testdata/vocab/";
    for (const auto& [vocab, family] :
         {std::pair<const char*, F>{"phi-3", F::Phi3}, {"dbrx", F::ChatML}}) {
        const std::string path = dir + "ggml-vocab-" + vocab + ".gguf";
        if (!std::ifstream(path).good()) continue;
        GgufFile file(path);
        EXPECT_EQ(ChatTemplate::detect(file.getString("tokenizer.chat_template"), path), family)
            << vocab;
    }
}

TEST(ChatTemplate, OneUserTurnAsEachFamilyWritesIt) {
    const std::string sys = "Be brief.", user = " Hi there ";
    EXPECT_EQ(ChatTemplate::apply(F::Llama3, sys, user),
              "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
              "<|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|>"
              "<|start_header_id|>assistant<|end_header_id|>\n\n");
    EXPECT_EQ(ChatTemplate::apply(F::ChatML, sys, "Hi"),
              "<|im_start|>system\nBe "
              "brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
    EXPECT_EQ(ChatTemplate::apply(F::ChatML, "", "Hi"),
              "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
    EXPECT_EQ(ChatTemplate::apply(F::MistralV1, sys, "Hi"), " [INST] Be brief.\n\nHi [/INST]");
    EXPECT_EQ(ChatTemplate::apply(F::MistralV3, "", "Hi"), "[INST] Hi[/INST]");
    EXPECT_EQ(ChatTemplate::apply(F::MistralV3Tekken, "", "Hi"), "[INST]Hi[/INST]");
    EXPECT_EQ(ChatTemplate::apply(F::MistralV7, sys, "Hi"),
              "[SYSTEM_PROMPT] Be brief.[/SYSTEM_PROMPT][INST] Hi[/INST]");
    EXPECT_EQ(ChatTemplate::apply(F::Llama2, sys, "Hi"),
              "[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST]");
    // Gemma has no system role: the system text opens the user's turn.
    EXPECT_EQ(ChatTemplate::apply(F::Gemma, sys, user),
              "<start_of_turn>user\nBe brief.\n\nHi there<end_of_turn>\n<start_of_turn>model\n");
    EXPECT_EQ(ChatTemplate::apply(F::Phi3, sys, "Hi"),
              "<|system|>\nBe brief.<|end|>\n<|user|>\nHi<|end|>\n<|assistant|>\n");
    EXPECT_EQ(ChatTemplate::apply(F::DeepSeekCoder, "", "Hi"),
              "### Instruction:\nHi\n### Response:\n");
}

TEST(ChatTemplate, AnUnknownTemplateIsOneLineShowingItsStart) {
    try {
        ChatTemplate::detect("{% for m in messages %}<<turn>>{{ m.content }}\n{% endfor %}",
                             "m.gguf");
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()),
                  "m.gguf: tokenizer.chat_template is not one KV Lens recognises (it begins '{% "
                  "for m in messages "
                  "%}<<turn>>{{ m.content }} {% endfor %}'; known: Llama 3, ChatML, Mistral "
                  "[INST], Llama 2, Gemma, "
                  "Phi-3, DeepSeek): send plain text, with the turn markers written into the prompt "
                  "yourself");
    }
}

}  // namespace
}  // namespace kvlens

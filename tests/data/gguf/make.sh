#!/usr/bin/env bash
# How tests/data/gguf was made (not run by the build or the tests): a random-weight
# Llama of 1 layer, width 256, FFN 320 (not a multiple of 256, so llama-quantize's
# fallback types appear too) and stories260K's 512-token vocabulary, quantised by
# llama.cpp c392e50 into each type, and ggml's own dequantisation of every tensor
# (ggml_dequant_reference.c) as the reference that DequantizeFileTest checks.
# Six more types (Q8_0, Q6_K, Q5_K_S, Q4_K_S, Q4_0, Q3_K_L: the in-place kernels' formats)
# come from the same base file. Needs ../shared/tools (llamacpp-build, make_random_gguf.py) and Debian's
# python3-numpy python3-sentencepiece python3-yaml.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
shared=$here/../../../../shared
bin=$("$shared/tools/llamacpp-build")
llama=$(dirname "$(dirname "$bin")")
work=$(mktemp -d)
/usr/bin/python3 "$shared/tools/make_random_gguf.py" "$work/base-f32.gguf" --vocab "$shared/models/stories260K.gguf" \
  --arch llama --layers 1 --dim 256 --ff 320 --heads 4 --kv-heads 2 --ctx 256 --dtype f32
gcc -O2 -I"$llama/ggml/include" "$here/ggml_dequant_reference.c" -L"$bin" -lggml -lggml-base \
  -Wl,-rpath,"$bin" -o "$work/ggml_ref"
P="Once upon a time, there was a little girl named Lily. She loved to play"
for t in Q4_1 Q5_0 Q5_1 Q2_K Q3_K_M Q5_K_M IQ4_NL IQ4_XS Q8_0 Q6_K Q5_K_S Q4_K_S Q4_0 Q3_K_L; do
  "$bin/llama-quantize" "$work/base-f32.gguf" "$here/tiny-$t.gguf" "$t" 1 >/dev/null
  "$work/ggml_ref" "$here/tiny-$t.gguf" >"$here/tiny-$t.ggml.json"
  ids=$("$bin/llamacpp-reference" "$here/tiny-$t.gguf" --tokenize "$P" | tr -d "[] ")
  "$bin/llamacpp-reference" "$here/tiny-$t.gguf" 16 "$ids" >"$here/tiny-$t.llamacpp.json"
done
rm -rf "$work"

# YaRN (rope.scaling.type yarn, as Qwen2.5's long-context files carry it): a qwen2 of
# 2 layers, width 64, one head of 64 dimensions, factor 4 over an original
# context of 64 (so the ramp spans pairs 0-9) and attn_factor 1.1, in F32 (llama.cpp
# quantises activations for Q8_0 and F16 weights, which would blur the comparison);
# llama.cpp's greedy run of it. RopeScalingTest checks the first step's logits and the
# greedy tokens.
work=$(mktemp -d)
/usr/bin/python3 "$shared/tools/make_random_gguf.py" "$work/yarn-f32.gguf" --vocab "$shared/models/stories260K.gguf" \
  --arch qwen2 --layers 2 --dim 64 --ff 128 --heads 1 --kv-heads 1 --ctx 256 --dtype f32 --seed 3
PYTHONPATH="$llama/gguf-py" /usr/bin/python3 "$here/add_metadata.py" "$work/yarn-f32.gguf" "$here/tiny-yarn-F32.gguf" \
  qwen2.rope.scaling.type=str:yarn qwen2.rope.scaling.factor=f32:4 \
  qwen2.rope.scaling.original_context_length=u32:64 qwen2.rope.scaling.attn_factor=f32:1.1 >/dev/null
ids=$("$bin/llamacpp-reference" "$here/tiny-yarn-F32.gguf" --tokenize "$P" | tr -d "[] ")
"$bin/llamacpp-reference" "$here/tiny-yarn-F32.gguf" 16 "$ids" >"$here/tiny-yarn-F32.llamacpp.json"
rm -rf "$work"

# Real architectures with byte-level BPE vocabularies (trim_vocab.py: the first 1024
# tokens of a vocabulary from ../shared/testdata/vocab, their merges and a few special
# tokens): a Llama-3-style llama (dbrx's Llama 3 regex, rope base 500000, Llama 3.1's
# rope_freqs) in Q4_K_M and a qwen2 with q/k/v biases (GPT-2's vocabulary) in Q8_0;
# 2 layers, width 128, and llama.cpp's greedy run of each. QuantParityTest checks them
# with the files above. (llama.cpp c392e50 has no qwen3: Qwen3 is checked against
# LlamaModelTest's double-precision reference forward instead.)
work=$(mktemp -d)
vocab=$shared/testdata/vocab
PYTHONPATH="$llama/gguf-py" /usr/bin/python3 "$here/trim_vocab.py" "$vocab/ggml-vocab-dbrx.gguf" "$work/dbrx-1k.gguf" \
  1024 '<|endoftext|>' '<|im_start|>' '<|im_end|>'
PYTHONPATH="$llama/gguf-py" /usr/bin/python3 "$here/trim_vocab.py" "$vocab/ggml-vocab-gpt-2.gguf" "$work/gpt2-1k.gguf" \
  1024 '<|endoftext|>'
model() {  # name vocab type make_random_gguf-flags...
  local name=$1 v=$2 type=$3; shift 3
  /usr/bin/python3 "$shared/tools/make_random_gguf.py" "$work/$name-f32.gguf" --vocab "$work/$v.gguf" \
    --layers 2 --dim 128 --ff 320 --heads 4 --kv-heads 2 --ctx 256 --dtype f32 "$@"
  "$bin/llama-quantize" "$work/$name-f32.gguf" "$here/tiny-$name-$type.gguf" "$type" 1 >/dev/null
  ids=$("$bin/llamacpp-reference" "$here/tiny-$name-$type.gguf" --tokenize "$P" | tr -d "[] ")
  "$bin/llamacpp-reference" "$here/tiny-$name-$type.gguf" 16 "$ids" >"$here/tiny-$name-$type.llamacpp.json"
}
model llama3 dbrx-1k Q4_K_M --arch llama --llama3-rope --rope-base 500000 --seed 11
model qwen2 gpt2-1k Q8_0 --arch qwen2 --rope-base 1000000 --seed 12
rm -rf "$work"

# Phi-3 (make_arch_gguf.py: fused attn_qkv, ffn_up holding [gate | up], RoPE on 24 of 32 head
# dimensions, attention.sliding_window 64) with stories260K's vocabulary, 2 layers, width
# 128, in F16 and Q4_K_M: llama.cpp's greedy run of the usual prompt (21 tokens, inside the
# window) and of a 106-token one (past it: *.window.llamacpp.json). QuantParityTest checks
# the first; SlidingWindowTest the refusal past the window.
work=$(mktemp -d)
PYTHONPATH="$llama/gguf-py" /usr/bin/python3 "$here/make_arch_gguf.py" "$work/phi3-f32.gguf" --vocab "$shared/models/stories260K.gguf"
P2="$P outside in the sun with her friends. One day, she found a big red ball in the park. She ran to her mom and said, look what I found! Her mom smiled and said they could play with it together after lunch. Lily was very happy."
for t in F16 Q4_K_M; do
  "$bin/llama-quantize" "$work/phi3-f32.gguf" "$here/tiny-phi3-$t.gguf" "$t" 1 >/dev/null
  ids=$("$bin/llamacpp-reference" "$here/tiny-phi3-$t.gguf" --tokenize "$P" | tr -d "[] ")
  "$bin/llamacpp-reference" "$here/tiny-phi3-$t.gguf" 16 "$ids" >"$here/tiny-phi3-$t.llamacpp.json"
  ids=$("$bin/llamacpp-reference" "$here/tiny-phi3-$t.gguf" --tokenize "$P2" | tr -d "[] ")
  "$bin/llamacpp-reference" "$here/tiny-phi3-$t.gguf" 16 "$ids" >"$here/tiny-phi3-$t.window.llamacpp.json"
done
rm -rf "$work"

# Gemma 2 (make_arch_gguf.py --arch gemma2: post-attention and post-MLP norms, GeGLU, tied
# output, embeddings x sqrt(64), head dimension 32 with width 64 and 4 heads, a window of 64
# on even layers, soft-caps 4 (attention) and 5 (output) so both bite) with stories260K's
# vocabulary, 26 layers (the fewest llama.cpp c392e50 runs gemma2 at), width 64, in F16 and
# Q4_K_M: llama.cpp's greedy run of the usual prompt and of the 106-token one (past the
# window). QuantParityTest and SlidingWindowParity check them.
work=$(mktemp -d)
PYTHONPATH="$llama/gguf-py" /usr/bin/python3 "$here/make_arch_gguf.py" "$work/gemma2-f32.gguf" --vocab "$shared/models/stories260K.gguf" \
  --arch gemma2 --layers 26 --dim 64 --ff 128 --heads 4 --kv-heads 2 --head-dim 32 --window 64 --attn-cap 4 --final-cap 5 --seed 22
for t in F16 Q4_K_M; do
  "$bin/llama-quantize" "$work/gemma2-f32.gguf" "$here/tiny-gemma2-$t.gguf" "$t" 1 >/dev/null
  ids=$("$bin/llamacpp-reference" "$here/tiny-gemma2-$t.gguf" --tokenize "$P" | tr -d "[] ")
  "$bin/llamacpp-reference" "$here/tiny-gemma2-$t.gguf" 16 "$ids" >"$here/tiny-gemma2-$t.llamacpp.json"
  ids=$("$bin/llamacpp-reference" "$here/tiny-gemma2-$t.gguf" --tokenize "$P2" | tr -d "[] ")
  "$bin/llamacpp-reference" "$here/tiny-gemma2-$t.gguf" 16 "$ids" >"$here/tiny-gemma2-$t.window.llamacpp.json"
done
rm -rf "$work"

# The exact computation of each file's weights: llama-quantize dequantises the file to
# F32 (no activation is then rounded to int8 by llama.cpp) and llama.cpp's greedy run of
# that file is kept as *.exact.llamacpp.json. QuantParityTest holds KV Lens's logits to it
# at every step, and compares tokens with llama.cpp's quantised run only up to where that
# run leaves its exact one.
work=$(mktemp -d)
for t in Q4_1 Q5_0 Q5_1 Q2_K Q3_K_M Q5_K_M IQ4_NL IQ4_XS Q8_0 Q6_K Q5_K_S Q4_K_S Q4_0 Q3_K_L \
         llama3-Q4_K_M qwen2-Q8_0 phi3-F16 phi3-Q4_K_M gemma2-F16 gemma2-Q4_K_M; do
  "$bin/llama-quantize" --allow-requantize "$here/tiny-$t.gguf" "$work/exact.gguf" F32 1 >/dev/null
  ids=$("$bin/llamacpp-reference" "$here/tiny-$t.gguf" --tokenize "$P" | tr -d "[] ")
  "$bin/llamacpp-reference" "$work/exact.gguf" 16 "$ids" >"$here/tiny-$t.exact.llamacpp.json"
done
rm -rf "$work"

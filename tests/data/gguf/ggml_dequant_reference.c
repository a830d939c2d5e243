/* A measuring instrument, not part of the build: prints, as JSON, what ggml
 * itself (ggml_get_type_traits(type)->to_float) makes of every tensor of a
 * GGUF file: its type, element count, the sum of its values and 256 values
 * sampled across it. Built by hand against a llama.cpp build (see make.sh);
 * its output is the reference DequantizeFileTest compares KV Lens with. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml.h"
#include "gguf.h"

int main(int argc, char** argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s FILE.gguf\n", argv[0]);
        return 2;
    }
    struct ggml_context* ctx = NULL;
    struct gguf_init_params params = {false, &ctx};
    struct gguf_context* g = gguf_init_from_file(argv[1], params);
    if (g == NULL) {
        fprintf(stderr, "%s: cannot read\n", argv[1]);
        return 1;
    }
    printf("{\"tensors\": [");
    const int64_t count = gguf_get_n_tensors(g);
    for (int64_t i = 0; i < count; ++i) {
        const char* name = gguf_get_tensor_name(g, i);
        struct ggml_tensor* t = ggml_get_tensor(ctx, name);
        const int64_t n = ggml_nelements(t);
        float* values = malloc(sizeof(float) * (size_t)n);
        if (t->type == GGML_TYPE_F32) {
            memcpy(values, t->data, sizeof(float) * (size_t)n);
        } else {
            ggml_get_type_traits(t->type)->to_float(t->data, values, n);
        }
        double sum = 0;
        for (int64_t k = 0; k < n; ++k) sum += values[k];
        printf("%s\n {\"name\": \"%s\", \"type\": \"%s\", \"n\": %lld, \"sum\": %.17g, \"samples\": [", i ? "," : "",
               name, ggml_type_name(t->type), (long long)n, sum);
        for (int k = 0; k < 256; ++k) {
            int64_t at = (int64_t)k * n / 256 + (k % 7) % (n > 7 ? 7 : 1);
            if (at >= n) at = n - 1;  /* small tensors: stay inside */
            printf("%s[%lld, %.9g]", k ? ", " : "", (long long)at, values[at]);
        }
        printf("]}");
        free(values);
    }
    printf("\n]}\n");
    gguf_free(g);
    ggml_free(ctx);
    return 0;
}

// llama-drive: runs a GGUF model through llama.cpp's own llama_decode and
// writes what the tests compare. It prefills a prompt of pseudo-random
// tokens in chunks, then generates greedily; after every llama_decode call
// it appends the logits of the batch's last token (n_vocab floats) to the
// output file and prints the step's token on stdout.
//
//   llama-drive -m MODEL -o LOGITS [-backends DIR] [-ctx N] [-batch N]
//               [-ubatch N] [-fa 0|1] [-threads N] [-prompt N]
//               [-chunks A,B,...] [-gen N] [-outputs-max N] [-sigint]
//
// With -sigint it installs a SIGINT handler the way llama-server does
// (sigaction, sa_flags 0), prints "ready onstack=B" (B: whether the handler
// the process now has carries SA_ONSTACK), decodes until the signal
// arrives and exits with status 130.

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ggml-backend.h"
#include "llama.h"

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig) {
    (void) sig;
    interrupted = 1;
}

static void die(const char * msg) {
    fprintf(stderr, "llama-drive: %s\n", msg);
    exit(2);
}

// decode runs one batch of n tokens at positions pos.. and returns the
// logits of the last.
static const float * decode(struct llama_context * ctx, struct llama_batch * b, const llama_token * toks, int n,
                            int pos) {
    b->n_tokens = n;
    for (int i = 0; i < n; i++) {
        b->token[i] = toks[i];
        b->pos[i] = pos + i;
        b->n_seq_id[i] = 1;
        b->seq_id[i][0] = 0;
        b->logits[i] = i == n - 1;
    }
    int r = llama_decode(ctx, *b);
    if (r != 0) {
        fprintf(stderr, "llama-drive: llama_decode returned %d\n", r);
        exit(3);
    }
    return llama_get_logits_ith(ctx, -1);
}

static llama_token argmax(const float * x, int n) {
    int best = 0;
    for (int i = 1; i < n; i++) {
        if (x[i] > x[best]) {
            best = i;
        }
    }
    return best;
}

int main(int argc, char ** argv) {
    const char * model_path = NULL, * out_path = NULL, * backends = NULL, * chunks = "";
    int n_ctx = 512, n_batch = 512, n_ubatch = 512, fa = 0, threads = 1, n_prompt = 100, n_gen = 32,
        outputs_max = 0, sigint = 0;
    for (int i = 1; i < argc; i++) {
        const char * a = argv[i];
        const char * v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "-sigint") == 0) {
            sigint = 1;
            continue;
        }
        if (v == NULL) {
            die("missing value");
        }
        i++;
        if (strcmp(a, "-m") == 0) model_path = v;
        else if (strcmp(a, "-o") == 0) out_path = v;
        else if (strcmp(a, "-backends") == 0) backends = v;
        else if (strcmp(a, "-ctx") == 0) n_ctx = atoi(v);
        else if (strcmp(a, "-batch") == 0) n_batch = atoi(v);
        else if (strcmp(a, "-ubatch") == 0) n_ubatch = atoi(v);
        else if (strcmp(a, "-fa") == 0) fa = atoi(v);
        else if (strcmp(a, "-threads") == 0) threads = atoi(v);
        else if (strcmp(a, "-prompt") == 0) n_prompt = atoi(v);
        else if (strcmp(a, "-chunks") == 0) chunks = v;
        else if (strcmp(a, "-gen") == 0) n_gen = atoi(v);
        else if (strcmp(a, "-outputs-max") == 0) outputs_max = atoi(v);
        else die("unknown flag");
    }
    if (model_path == NULL || (out_path == NULL && !sigint)) {
        die("usage: llama-drive -m MODEL -o LOGITS [flags]");
    }
    if (backends != NULL) {
        ggml_backend_load_all_from_path(backends);
    } else {
        ggml_backend_load_all();
    }
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    struct llama_model * model = llama_model_load_from_file(model_path, mp);
    if (model == NULL) {
        die("cannot load the model");
    }
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t) n_ctx;
    cp.n_batch = (uint32_t) n_batch;
    cp.n_ubatch = (uint32_t) n_ubatch;
    cp.n_threads = threads;
    cp.n_threads_batch = threads;
    cp.flash_attn_type = fa ? LLAMA_FLASH_ATTN_TYPE_ENABLED : LLAMA_FLASH_ATTN_TYPE_DISABLED;
    cp.n_outputs_max = (uint32_t) outputs_max;
    cp.no_perf = true;
    struct llama_context * ctx = llama_init_from_model(model, cp);
    if (ctx == NULL) {
        die("cannot create the context");
    }
    const struct llama_vocab * vocab = llama_model_get_vocab(model);
    const int n_vocab = llama_vocab_n_tokens(vocab);
    FILE * out = out_path != NULL ? fopen(out_path, "wb") : NULL;
    if (out_path != NULL && out == NULL) {
        die("cannot open the output file");
    }
    llama_token * toks = (llama_token *) malloc(sizeof(llama_token) * (size_t) (n_prompt + n_gen + 1));
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    for (int i = 0; i < n_prompt; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        toks[i] = (llama_token) (3 + (x >> 33) % (uint64_t) (n_vocab - 3));
    }
    struct llama_batch b = llama_batch_init(n_batch, 0, 1);
    int pos = 0;
    const char * c = chunks;
    const float * logits = NULL;
    while (pos < n_prompt) {
        int n = n_prompt - pos;
        if (*c != 0) {
            n = atoi(c);
            while (*c != 0 && *c != ',') c++;
            if (*c == ',') c++;
        }
        if (n > n_prompt - pos) n = n_prompt - pos;
        if (n > n_batch) n = n_batch;
        if (n <= 0) die("bad chunk size");
        logits = decode(ctx, &b, toks + pos, n, pos);
        if (out) fwrite(logits, sizeof(float), (size_t) n_vocab, out);
        printf("prefill %d %d\n", pos, n);
        pos += n;
    }
    if (sigint) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_sigint;
        sigaction(SIGINT, &sa, NULL);
        struct sigaction now;
        sigaction(SIGINT, NULL, &now);
        printf("ready onstack=%d\n", (now.sa_flags & SA_ONSTACK) != 0);
        fflush(stdout);
        llama_token t = argmax(logits, n_vocab);
        while (!interrupted) {
            if (pos >= n_ctx - 1) {
                llama_memory_clear(llama_get_memory(ctx), true);
                pos = 0;
            }
            logits = decode(ctx, &b, &t, 1, pos++);
            t = argmax(logits, n_vocab);
        }
        printf("interrupted\n");
        fflush(stdout);
        llama_batch_free(b);
        llama_free(ctx);
        llama_model_free(model);
        return 130;
    }
    for (int i = 0; i < n_gen; i++) {
        llama_token t = argmax(logits, n_vocab);
        printf("token %d\n", t);
        logits = decode(ctx, &b, &t, 1, pos++);
        if (out) fwrite(logits, sizeof(float), (size_t) n_vocab, out);
    }
    fclose(out);
    llama_batch_free(b);
    llama_free(ctx);
    llama_model_free(model);
    free(toks);
    return 0;
}

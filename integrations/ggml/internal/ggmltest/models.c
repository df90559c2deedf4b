#include "models.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// Sizing-only models point their weights and caches here: ggml (and the
// allocators) only need to see data that is not theirs to place.
static char sa_fake_data[64];

static struct ggml_tensor * named(struct ggml_tensor * t, const char * fmt, int il) {
    if (il >= 0) {
        ggml_format_name(t, fmt, il);
    } else {
        ggml_set_name(t, fmt);
    }
    return t;
}

static struct ggml_tensor * w2(struct ggml_context * ctx, enum ggml_type type, int64_t ne0, int64_t ne1, const char * fmt, int il) {
    return named(ggml_new_tensor_2d(ctx, type, ne0, ne1), fmt, il);
}

static struct ggml_tensor * w1(struct ggml_context * ctx, int64_t ne0, const char * fmt, int il) {
    return named(ggml_new_tensor_1d(ctx, GGML_TYPE_F32, ne0), fmt, il);
}

sa_model * sa_model_new(const sa_hparams * hp) {
    sa_model * m = (sa_model *) calloc(1, sizeof(sa_model));
    m->hp = *hp;
    const int E = hp->n_embd, F = hp->n_ff, L = hp->n_layer;
    const enum ggml_type wt = (enum ggml_type) hp->wtype;
    struct ggml_init_params ip = {
        /*.mem_size   =*/ ggml_tensor_overhead() * (size_t) (16 * L + 16),
        /*.mem_buffer =*/ NULL,
        /*.no_alloc   =*/ true,
    };
    m->ctx = ggml_init(ip);
    m->layers = (sa_layer *) calloc((size_t) L, sizeof(sa_layer));
    struct ggml_context * ctx = m->ctx;
    if (hp->arch == SA_ARCH_LLAMA) {
        for (int il = 0; il < L; il++) {
            sa_layer * l = &m->layers[il];
            if (hp->split) {
                l->wq = w2(ctx, wt, E, E, "w.q-%d", il);
                l->wk = w2(ctx, wt, E, E, "w.k-%d", il);
                l->wv = w2(ctx, wt, E, E, "w.v-%d", il);
            } else {
                l->wqkv = w2(ctx, wt, E, 3 * E, "w.qkv-%d", il);
            }
            l->attn_norm = w1(ctx, E, "w.attn_norm-%d", il);
            l->wo = w2(ctx, wt, E, E, "w.o-%d", il);
            l->ffn_norm = w1(ctx, E, "w.ffn_norm-%d", il);
            if (hp->split) {
                l->wgate = w2(ctx, wt, E, F, "w.gate-%d", il);
                l->wup = w2(ctx, wt, E, F, "w.up-%d", il);
            } else {
                l->wup = w2(ctx, wt, E, 2 * F, "w.gate_up-%d", il);
            }
            l->wdown = w2(ctx, wt, F, E, "w.down-%d", il);
        }
        m->out_norm = w1(ctx, E, "w.output_norm", -1);
        if (hp->n_vocab > 0) {
            m->tok_embd = w2(ctx, wt, E, hp->n_vocab, "w.output", -1);
        }
    } else {
        m->tok_embd = w2(ctx, wt, E, hp->n_vocab, "w.tok_embd", -1);
        m->pos_embd = w2(ctx, GGML_TYPE_F32, E, hp->n_ctx, "w.pos_embd", -1);
        for (int il = 0; il < L; il++) {
            sa_layer * l = &m->layers[il];
            l->attn_norm = w1(ctx, E, "w.ln1-%d", il);
            l->attn_norm_b = w1(ctx, E, "b.ln1-%d", il);
            l->wqkv = w2(ctx, wt, E, 3 * E, "w.qkv-%d", il);
            l->bqkv = w1(ctx, 3 * E, "b.qkv-%d", il);
            l->wo = w2(ctx, wt, E, E, "w.o-%d", il);
            l->bo = w1(ctx, E, "b.o-%d", il);
            l->ffn_norm = w1(ctx, E, "w.ln2-%d", il);
            l->ffn_norm_b = w1(ctx, E, "b.ln2-%d", il);
            l->wup = w2(ctx, wt, E, F, "w.up-%d", il);
            l->bup = w1(ctx, F, "b.up-%d", il);
            l->wdown = w2(ctx, wt, F, E, "w.down-%d", il);
            l->bdown = w1(ctx, E, "b.down-%d", il);
        }
        m->out_norm = w1(ctx, E, "w.ln_f", -1);
        m->out_norm_b = w1(ctx, E, "b.ln_f", -1);
    }
    uint64_t seed = hp->seed;
    if (!hp->alloc) {
        for (struct ggml_tensor * t = ggml_get_first_tensor(ctx); t != NULL; t = ggml_get_next_tensor(ctx, t)) {
            t->data = sa_fake_data;
        }
    } else {
        m->buf = ggml_backend_alloc_ctx_tensors_from_buft(ctx, ggml_backend_cpu_buffer_type());
        int i = 0;
        for (struct ggml_tensor * t = ggml_get_first_tensor(ctx); t != NULL; t = ggml_get_next_tensor(ctx, t), i++) {
            uint64_t s = seed ^ (0x51ed2701ULL * (uint64_t) (i + 1));
            if (ggml_n_dims(t) == 1) {
                // norm weights near 1, biases near 0
                int bias = t->name[0] == 'b';
                sa_fill(t, s, bias ? 0.0f : 1.0f, bias ? 0.02f : 0.1f);
            } else if (t == m->pos_embd) {
                sa_fill(t, s, 0.0f, 0.1f);
            } else if (t == m->tok_embd && hp->arch == SA_ARCH_GPT2) {
                sa_fill(t, s, 0.0f, 0.5f);
            } else {
                sa_fill(t, s, 0.0f, 1.0f / sqrtf((float) t->ne[0]));
            }
        }
    }
    return m;
}

void sa_model_free(sa_model * m) {
    if (m == NULL) {
        return;
    }
    sa_free_tensors(m->ctx, m->buf);
    free(m->layers);
    free(m);
}

sa_cache * sa_cache_new(const sa_model * m) {
    const sa_hparams * hp = &m->hp;
    sa_cache * c = (sa_cache *) calloc(1, sizeof(sa_cache));
    c->n_layer = hp->n_layer;
    c->k = (struct ggml_tensor **) calloc((size_t) hp->n_layer, sizeof(struct ggml_tensor *));
    c->v = (struct ggml_tensor **) calloc((size_t) hp->n_layer, sizeof(struct ggml_tensor *));
    struct ggml_init_params ip = {
        /*.mem_size   =*/ ggml_tensor_overhead() * (size_t) (2 * hp->n_layer + 2),
        /*.mem_buffer =*/ NULL,
        /*.no_alloc   =*/ true,
    };
    c->ctx = ggml_init(ip);
    for (int il = 0; il < hp->n_layer; il++) {
        c->k[il] = named(ggml_new_tensor_3d(c->ctx, GGML_TYPE_F16, hp->n_embd, hp->n_ctx, hp->n_seq), "cache_k-%d", il);
        if (hp->attn == SA_ATTN_FLASH) {
            c->v[il] = named(ggml_new_tensor_3d(c->ctx, GGML_TYPE_F16, hp->n_embd, hp->n_ctx, hp->n_seq), "cache_v-%d", il);
        } else {
            c->v[il] = named(ggml_new_tensor_3d(c->ctx, GGML_TYPE_F16, hp->n_ctx, hp->n_embd, hp->n_seq), "cache_v-%d", il);
        }
        if (!hp->alloc) {
            c->k[il]->data = sa_fake_data;
            c->v[il]->data = sa_fake_data;
        }
    }
    if (hp->alloc) {
        c->buf = ggml_backend_alloc_ctx_tensors_from_buft(c->ctx, ggml_backend_cpu_buffer_type());
        ggml_backend_buffer_clear(c->buf, 0);
    }
    return c;
}

void sa_cache_free(sa_cache * c) {
    if (c == NULL) {
        return;
    }
    sa_free_tensors(c->ctx, c->buf);
    free(c->k);
    free(c->v);
    free(c);
}

// view4 takes a view with as few dimensions as the shape needs, so that a
// one-sequence graph has exactly the tensors of a graph written in 2-D/3-D.
static struct ggml_tensor * view4(struct ggml_context * ctx, struct ggml_tensor * a, int64_t ne0, int64_t ne1, int64_t ne2,
                                  int64_t ne3, size_t nb1, size_t nb2, size_t nb3, size_t off) {
    if (ne3 == 1) {
        if (ne2 == 1) {
            return ggml_view_2d(ctx, a, ne0, ne1, nb1, off);
        }
        return ggml_view_3d(ctx, a, ne0, ne1, ne2, nb1, nb2, off);
    }
    return ggml_view_4d(ctx, a, ne0, ne1, ne2, ne3, nb1, nb2, nb3, off);
}

static struct ggml_tensor * nm(struct ggml_tensor * t, const char * fmt, int il) {
    return named(t, fmt, il);
}

sa_graph * sa_graph_new(const sa_model * m, const sa_cache * c, int32_t n_tokens, int32_t n_past) {
    const sa_hparams * hp = &m->hp;
    const int E = hp->n_embd, H = hp->n_head, D = hp->n_embd / hp->n_head, F = hp->n_ff, S = hp->n_seq;
    const int T = n_tokens;
    int n_kv = n_past + n_tokens;
    if (hp->kv_pad > 0) {
        n_kv = (n_kv + hp->kv_pad - 1) / hp->kv_pad * hp->kv_pad;
        if (n_kv > hp->n_ctx) {
            n_kv = hp->n_ctx;
        }
    }
    const float kq_scale = 1.0f / sqrtf((float) D);
    const float eps = 1e-5f;
    const size_t graph_size = (size_t) (64 * hp->n_layer + 256);

    sa_graph * g = (sa_graph *) calloc(1, sizeof(sa_graph));
    g->n_tokens = n_tokens;
    g->n_past = n_past;
    g->n_kv = n_kv;
    struct ggml_init_params ip = {
        /*.mem_size   =*/ ggml_tensor_overhead() * graph_size + ggml_graph_overhead_custom(graph_size, false),
        /*.mem_buffer =*/ NULL,
        /*.no_alloc   =*/ true,
    };
    struct ggml_context * ctx = ggml_init(ip);
    g->ctx = ctx;
    struct ggml_cgraph * gf = ggml_new_graph_custom(ctx, graph_size, false);
    g->gf = gf;

    struct ggml_tensor * inpL;
    if (hp->arch == SA_ARCH_LLAMA) {
        inpL = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, E, (int64_t) T * S);
        ggml_set_name(inpL, "inp_embd");
        ggml_set_input(inpL);
        g->inp_embd = inpL;
    } else {
        g->inp_tokens = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, (int64_t) T * S);
        ggml_set_name(g->inp_tokens, "inp_tokens");
        ggml_set_input(g->inp_tokens);
    }
    g->inp_pos = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, T);
    ggml_set_name(g->inp_pos, "inp_pos");
    ggml_set_input(g->inp_pos);
    if (hp->attn != SA_ATTN_MASK_INF) {
        g->mask = ggml_new_tensor_2d(ctx, hp->attn == SA_ATTN_FLASH ? GGML_TYPE_F16 : GGML_TYPE_F32, n_kv, T);
        ggml_set_name(g->mask, "kq_mask");
        ggml_set_input(g->mask);
    }
    if (hp->last_only && T > 1) {
        g->out_ids = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, S);
        ggml_set_name(g->out_ids, "inp_out_ids");
        ggml_set_input(g->out_ids);
    }
    if (hp->arch == SA_ARCH_GPT2) {
        struct ggml_tensor * tok = nm(ggml_get_rows(ctx, m->tok_embd, g->inp_tokens), "tok_embd", -1);
        struct ggml_tensor * pos = nm(ggml_get_rows(ctx, m->pos_embd, g->inp_pos), "pos_embd", -1);
        inpL = nm(ggml_add(ctx, tok, pos), "inp_embd", -1);
    }

    const size_t es_kv = ggml_type_size(GGML_TYPE_F16);
    for (int il = 0; il < hp->n_layer; il++) {
        const sa_layer * l = &m->layers[il];
        struct ggml_tensor * ck = c->k[il], * cv = c->v[il];
        struct ggml_tensor * cur;
        if (hp->arch == SA_ARCH_LLAMA) {
            cur = nm(ggml_rms_norm(ctx, inpL, eps), "attn_norm-%d", il);
            cur = nm(ggml_mul(ctx, cur, l->attn_norm), "attn_norm_w-%d", il);
        } else {
            cur = nm(ggml_norm(ctx, inpL, eps), "ln1-%d", il);
            cur = nm(ggml_mul(ctx, cur, l->attn_norm), "ln1_w-%d", il);
            cur = nm(ggml_add(ctx, cur, l->attn_norm_b), "ln1_b-%d", il);
        }
        struct ggml_tensor * qkv = NULL, * Qs = NULL, * Ks = NULL, * Vs = NULL;
        if (l->wqkv != NULL) {
            qkv = nm(ggml_mul_mat(ctx, l->wqkv, cur), "qkv-%d", il);
            if (hp->arch == SA_ARCH_GPT2) {
                qkv = nm(ggml_add(ctx, qkv, l->bqkv), "qkv_b-%d", il);
            }
        } else {
            // llama.cpp's order: Q, K, V
            Qs = nm(ggml_mul_mat(ctx, l->wq, cur), "Qcur-%d", il);
            Ks = nm(ggml_mul_mat(ctx, l->wk, cur), "Kcur-%d", il);
            Vs = nm(ggml_mul_mat(ctx, l->wv, cur), "Vcur-%d", il);
        }
        const size_t es = ggml_type_size(GGML_TYPE_F32);
        // activations are [width, tokens of every sequence]; attention splits the sequences
        const size_t row_nb = qkv != NULL ? qkv->nb[1] : E * es;
        const size_t seq_nb = row_nb * (size_t) T;
        struct ggml_tensor * K = qkv != NULL ? view4(ctx, qkv, D, H, T, S, D * es, row_nb, seq_nb, E * es)
                                             : ggml_reshape_4d(ctx, Ks, D, H, T, S);
        nm(K, "K-%d", il);
        if (hp->arch == SA_ARCH_LLAMA) {
            K = nm(ggml_rope_ext(ctx, K, g->inp_pos, NULL, D, 0, hp->n_ctx, 10000.0f, 1.0f, 0.0f, 1.0f, 32.0f, 1.0f), "K_rope-%d", il);
        }
        struct ggml_tensor * kview;
        if (S == 1) {
            kview = ggml_view_1d(ctx, ck, (int64_t) T * E, (size_t) n_past * ck->nb[1]);
        } else {
            kview = ggml_view_2d(ctx, ck, (int64_t) T * E, S, ck->nb[2], (size_t) n_past * ck->nb[1]);
        }
        nm(kview, "k_cache_view-%d", il);
        ggml_build_forward_expand(gf, nm(ggml_cpy(ctx, K, kview), "k_cache_store-%d", il));

        struct ggml_tensor * V = qkv != NULL ? view4(ctx, qkv, E, T, S, 1, row_nb, seq_nb, 0, 2 * E * es)
                                             : ggml_reshape_3d(ctx, Vs, E, T, S);
        nm(V, "V-%d", il);
        if (hp->attn == SA_ATTN_FLASH) {
            struct ggml_tensor * vview;
            if (S == 1) {
                vview = ggml_view_1d(ctx, cv, (int64_t) T * E, (size_t) n_past * cv->nb[1]);
            } else {
                vview = ggml_view_2d(ctx, cv, (int64_t) T * E, S, cv->nb[2], (size_t) n_past * cv->nb[1]);
            }
            nm(vview, "v_cache_view-%d", il);
            ggml_build_forward_expand(gf, nm(ggml_cpy(ctx, V, vview), "v_cache_store-%d", il));
        } else {
            struct ggml_tensor * Vt = nm(ggml_transpose(ctx, V), "V_t-%d", il);
            struct ggml_tensor * vview = nm(view4(ctx, cv, T, E, S, 1, cv->nb[1], cv->nb[2], 0, (size_t) n_past * es_kv),
                                            "v_cache_view-%d", il);
            ggml_build_forward_expand(gf, nm(ggml_cpy(ctx, Vt, vview), "v_cache_store-%d", il));
        }

        struct ggml_tensor * Q = qkv != NULL ? view4(ctx, qkv, D, H, T, S, D * es, row_nb, seq_nb, 0)
                                             : ggml_reshape_4d(ctx, Qs, D, H, T, S);
        nm(Q, "Q-%d", il);
        if (hp->arch == SA_ARCH_LLAMA) {
            Q = nm(ggml_rope_ext(ctx, Q, g->inp_pos, NULL, D, 0, hp->n_ctx, 10000.0f, 1.0f, 0.0f, 1.0f, 32.0f, 1.0f), "Q_rope-%d", il);
        }
        struct ggml_tensor * q = nm(ggml_permute(ctx, Q, 0, 2, 1, 3), "q-%d", il);
        struct ggml_tensor * k = nm(view4(ctx, ck, D, n_kv, H, S, ck->nb[1], D * es_kv, ck->nb[2], 0), "k-%d", il);
        struct ggml_tensor * attn;
        if (hp->attn == SA_ATTN_FLASH) {
            struct ggml_tensor * v = nm(view4(ctx, cv, D, n_kv, H, S, cv->nb[1], D * es_kv, cv->nb[2], 0), "v-%d", il);
            struct ggml_tensor * fa = nm(ggml_flash_attn_ext(ctx, q, k, v, g->mask, kq_scale, 0.0f, 0.0f), "kqv_fa-%d", il);
            attn = nm(ggml_reshape_2d(ctx, fa, E, (int64_t) T * S), "kqv_merged_cont-%d", il);
        } else {
            struct ggml_tensor * v = nm(view4(ctx, cv, n_kv, D, H, S, cv->nb[1], cv->nb[1] * D, cv->nb[2], 0), "v-%d", il);
            struct ggml_tensor * kq = nm(ggml_mul_mat(ctx, k, q), "kq-%d", il);
            if (hp->attn == SA_ATTN_MASK_INF) {
                kq = nm(ggml_scale(ctx, kq, kq_scale), "kq_scaled-%d", il);
                kq = nm(ggml_diag_mask_inf(ctx, kq, n_past), "kq_masked-%d", il);
                kq = nm(ggml_soft_max(ctx, kq), "kq_soft_max-%d", il);
            } else {
                kq = nm(ggml_soft_max_ext(ctx, kq, g->mask, kq_scale, 0.0f), "kq_soft_max-%d", il);
            }
            struct ggml_tensor * kqv = nm(ggml_mul_mat(ctx, v, kq), "kqv-%d", il);
            struct ggml_tensor * merged = nm(ggml_permute(ctx, kqv, 0, 2, 1, 3), "kqv_merged-%d", il);
            attn = nm(ggml_cont_2d(ctx, merged, E, (int64_t) T * S), "kqv_merged_cont-%d", il);
        }
        cur = nm(ggml_mul_mat(ctx, l->wo, attn), "attn_out-%d", il);
        if (hp->arch == SA_ARCH_GPT2) {
            cur = nm(ggml_add(ctx, cur, l->bo), "attn_out_b-%d", il);
        }
        if (il == hp->n_layer - 1 && g->out_ids != NULL) {
            // only each sequence's last token goes on
            cur = nm(ggml_get_rows(ctx, cur, g->out_ids), "attn_out_last", -1);
            inpL = nm(ggml_get_rows(ctx, inpL, g->out_ids), "inp_last", -1);
        }
        struct ggml_tensor * ffn_inp = nm(ggml_add(ctx, cur, inpL), "ffn_inp-%d", il);
        if (hp->arch == SA_ARCH_LLAMA) {
            cur = nm(ggml_rms_norm(ctx, ffn_inp, eps), "ffn_norm-%d", il);
            cur = nm(ggml_mul(ctx, cur, l->ffn_norm), "ffn_norm_w-%d", il);
            if (l->wgate != NULL) {
                struct ggml_tensor * up = nm(ggml_mul_mat(ctx, l->wup, cur), "ffn_up-%d", il);
                struct ggml_tensor * gate = nm(ggml_mul_mat(ctx, l->wgate, cur), "ffn_gate-%d", il);
                cur = nm(ggml_swiglu_split(ctx, gate, up), "ffn_act-%d", il);
            } else {
                struct ggml_tensor * gu = nm(ggml_mul_mat(ctx, l->wup, cur), "gate_up-%d", il);
                const size_t ges = ggml_element_size(gu);
                struct ggml_tensor * gate = nm(ggml_view_2d(ctx, gu, F, gu->ne[1], gu->nb[1], 0), "gate-%d", il);
                struct ggml_tensor * gs = nm(ggml_silu(ctx, gate), "gate_silu-%d", il);
                struct ggml_tensor * up = nm(ggml_view_2d(ctx, gu, F, gu->ne[1], gu->nb[1], F * ges), "up-%d", il);
                cur = nm(ggml_mul(ctx, gs, up), "ffn_act-%d", il);
            }
            cur = nm(ggml_mul_mat(ctx, l->wdown, cur), "ffn_out-%d", il);
        } else {
            cur = nm(ggml_norm(ctx, ffn_inp, eps), "ln2-%d", il);
            cur = nm(ggml_mul(ctx, cur, l->ffn_norm), "ln2_w-%d", il);
            cur = nm(ggml_add(ctx, cur, l->ffn_norm_b), "ln2_b-%d", il);
            cur = nm(ggml_mul_mat(ctx, l->wup, cur), "ffn_up-%d", il);
            cur = nm(ggml_add(ctx, cur, l->bup), "ffn_up_b-%d", il);
            cur = nm(ggml_gelu(ctx, cur), "ffn_gelu-%d", il);
            cur = nm(ggml_mul_mat(ctx, l->wdown, cur), "ffn_out-%d", il);
            cur = nm(ggml_add(ctx, cur, l->bdown), "ffn_out_b-%d", il);
        }
        inpL = nm(ggml_add(ctx, cur, ffn_inp), "l_out-%d", il);
    }
    struct ggml_tensor * out;
    if (hp->arch == SA_ARCH_LLAMA) {
        out = nm(ggml_rms_norm(ctx, inpL, eps), "result_norm_raw", -1);
        out = nm(ggml_mul(ctx, out, m->out_norm), "result_norm", -1);
        if (hp->n_vocab > 0) {
            out = nm(ggml_mul_mat(ctx, m->tok_embd, out), "result_output", -1);
        }
    } else {
        out = nm(ggml_norm(ctx, inpL, eps), "ln_f", -1);
        out = nm(ggml_mul(ctx, out, m->out_norm), "ln_f_w", -1);
        out = nm(ggml_add(ctx, out, m->out_norm_b), "ln_f_b", -1);
        out = nm(ggml_mul_mat(ctx, m->tok_embd, out), "result_output", -1);
    }
    ggml_set_output(out);
    ggml_build_forward_expand(gf, out);
    g->out = out;
    return g;
}

void sa_graph_free(sa_graph * g) {
    if (g == NULL) {
        return;
    }
    ggml_free(g->ctx);
    free(g);
}

void sa_graph_set_inputs(const sa_model * m, sa_graph * g, uint64_t seed) {
    const sa_hparams * hp = &m->hp;
    uint64_t s = seed;
    if (g->inp_embd != NULL) {
        int64_t n = ggml_nelements(g->inp_embd);
        float * f = (float *) malloc((size_t) n * sizeof(float));
        for (int64_t i = 0; i < n; i++) {
            f[i] = sa_unif(&s);
        }
        ggml_backend_tensor_set(g->inp_embd, f, 0, (size_t) n * sizeof(float));
        free(f);
    }
    if (g->inp_tokens != NULL) {
        int64_t n = ggml_nelements(g->inp_tokens);
        int32_t * v = (int32_t *) malloc((size_t) n * sizeof(int32_t));
        for (int64_t i = 0; i < n; i++) {
            v[i] = (int32_t) (sa_splitmix(&s) % (uint64_t) hp->n_vocab);
        }
        ggml_backend_tensor_set(g->inp_tokens, v, 0, (size_t) n * sizeof(int32_t));
        free(v);
    }
    {
        int32_t * v = (int32_t *) malloc((size_t) g->n_tokens * sizeof(int32_t));
        for (int i = 0; i < g->n_tokens; i++) {
            v[i] = g->n_past + i;
        }
        ggml_backend_tensor_set(g->inp_pos, v, 0, (size_t) g->n_tokens * sizeof(int32_t));
        free(v);
    }
    if (g->out_ids != NULL) {
        const int S = hp->n_seq;
        int32_t * v = (int32_t *) malloc((size_t) S * sizeof(int32_t));
        for (int i = 0; i < S; i++) {
            v[i] = i * g->n_tokens + g->n_tokens - 1;
        }
        ggml_backend_tensor_set(g->out_ids, v, 0, (size_t) S * sizeof(int32_t));
        free(v);
    }
    if (g->mask != NULL) {
        int64_t n = (int64_t) g->n_kv * g->n_tokens;
        float * f = (float *) malloc((size_t) n * sizeof(float));
        for (int i = 0; i < g->n_tokens; i++) {
            for (int j = 0; j < g->n_kv; j++) {
                f[(int64_t) i * g->n_kv + j] = j <= g->n_past + i ? 0.0f : -INFINITY;
            }
        }
        if (g->mask->type == GGML_TYPE_F16) {
            ggml_fp16_t * h = (ggml_fp16_t *) malloc((size_t) n * sizeof(ggml_fp16_t));
            ggml_fp32_to_fp16_row(f, h, n);
            ggml_backend_tensor_set(g->mask, h, 0, (size_t) n * sizeof(ggml_fp16_t));
            free(h);
        } else {
            ggml_backend_tensor_set(g->mask, f, 0, (size_t) n * sizeof(float));
        }
        free(f);
    }
}

ggml_gallocr_t sa_gallocr_new(void) {
    return ggml_gallocr_new(ggml_backend_cpu_buffer_type());
}

ggml_backend_buffer_t sa_alloc_own(sa_graph * g) {
    return ggml_backend_alloc_ctx_tensors_from_buft(g->ctx, ggml_backend_cpu_buffer_type());
}

void sa_graph_clear(sa_graph * g, ggml_backend_buffer_t compute) {
    // views first: their base still tells whether they were placed in compute
    for (struct ggml_tensor * t = ggml_get_first_tensor(g->ctx); t != NULL; t = ggml_get_next_tensor(g->ctx, t)) {
        if (compute == NULL) {
            continue; // the walk only
        }
        if (t->view_src != NULL) {
            if (compute != NULL && t->view_src->buffer == compute) {
                t->data = NULL;
            }
            t->buffer = NULL;
        }
    }
    if (compute == NULL) {
        return;
    }
    for (struct ggml_tensor * t = ggml_get_first_tensor(g->ctx); t != NULL; t = ggml_get_next_tensor(g->ctx, t)) {
        if (t->view_src == NULL && t->buffer == compute) {
            t->data = NULL;
            t->buffer = NULL;
        }
    }
}

sa_micro * sa_micro_new(int32_t writer, int32_t reader, uint64_t seed) {
    sa_micro * m = (sa_micro *) calloc(1, sizeof(sa_micro));
    m->writer = writer;
    m->reader = reader;
    m->E = 64;
    m->D = 16;
    m->F = 96; // 6 heads of D
    m->T = 12;
    struct ggml_init_params ip = { ggml_tensor_overhead() * 4, NULL, true };
    m->fx.ctx_w = ggml_init(ip);
    m->w1 = ggml_new_tensor_2d(m->fx.ctx_w, GGML_TYPE_F16, m->E, 2 * m->F);
    m->w2 = ggml_new_tensor_2d(m->fx.ctx_w, GGML_TYPE_F16, m->F, m->E);
    m->w3 = ggml_new_tensor_2d(m->fx.ctx_w, GGML_TYPE_F16, m->D, m->E);
    ggml_set_name(m->w1, "w1");
    ggml_set_name(m->w2, "w2");
    ggml_set_name(m->w3, "w3");
    m->fx.buf_w = ggml_backend_alloc_ctx_tensors_from_buft(m->fx.ctx_w, ggml_backend_cpu_buffer_type());
    sa_fill(m->w1, seed ^ 1, 0.0f, 1.0f / sqrtf((float) m->E));
    sa_fill(m->w2, seed ^ 2, 0.0f, 1.0f / sqrtf((float) m->F));
    sa_fill(m->w3, seed ^ 3, 0.0f, 1.0f / sqrtf((float) m->D));
    return m;
}

void sa_micro_build(sa_micro * m) {
    struct ggml_context * ctx = sa_fixture_new_graph(&m->fx, 64);
    const int E = m->E, F = m->F, D = m->D, T = m->T, H = F / D;
    m->inp = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, E, T);
    ggml_set_name(m->inp, "inp");
    ggml_set_input(m->inp);
    m->pos = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, T);
    ggml_set_name(m->pos, "pos");
    ggml_set_input(m->pos);
    struct ggml_tensor * x = nm(ggml_mul_mat(ctx, m->w1, m->inp), "x", -1);
    struct ggml_tensor * a = nm(ggml_view_2d(ctx, x, F, T, x->nb[1], 0), "a", -1);
    struct ggml_tensor * b = nm(ggml_view_2d(ctx, x, F, T, x->nb[1], F * ggml_element_size(x)), "b", -1);
    struct ggml_tensor * y;
    switch (m->writer) {
        case SA_W_SILU: y = ggml_silu(ctx, a); break;
        case SA_W_GELU: y = ggml_gelu(ctx, a); break;
        case SA_W_MUL: y = ggml_mul(ctx, a, b); break;
        case SA_W_ADD: y = ggml_add(ctx, a, b); break;
        case SA_W_RMS_NORM: y = ggml_rms_norm(ctx, a, 1e-5f); break;
        default: {
            struct ggml_tensor * a3 = nm(ggml_view_3d(ctx, x, D, H, T, D * ggml_element_size(x), x->nb[1], 0), "a3", -1);
            y = ggml_rope_ext(ctx, a3, m->pos, NULL, D, 0, 64, 10000.0f, 1.0f, 0.0f, 1.0f, 32.0f, 1.0f);
        }
    }
    nm(y, "y", -1);
    struct ggml_tensor * z;
    switch (m->reader) {
        case SA_R_MUL_MAT:
            z = m->writer == SA_W_ROPE ? ggml_mul_mat(ctx, m->w3, y) : ggml_mul_mat(ctx, m->w2, y);
            break;
        case SA_R_CPY: {
            struct ggml_tensor * dst = nm(ggml_new_tensor(ctx, GGML_TYPE_F16, 3, y->ne), "cpy_dst", -1);
            z = ggml_cpy(ctx, y, dst);
            break;
        }
        case SA_R_CONT: z = ggml_cont(ctx, ggml_transpose(ctx, y)); break;
        case SA_R_SILU: z = ggml_silu(ctx, y); break;
        case SA_R_GELU: z = ggml_gelu(ctx, y); break;
        case SA_R_MUL: z = ggml_mul(ctx, y, b); break;
        case SA_R_ADD: z = ggml_add(ctx, b, y); break;
        case SA_R_ROPE:
            z = ggml_rope_ext(ctx, nm(ggml_reshape_3d(ctx, y, D, H, T), "y3", -1), m->pos, NULL, D, 0, 64, 10000.0f, 1.0f, 0.0f,
                              1.0f, 32.0f, 1.0f);
            break;
        case SA_R_RMS_NORM: z = ggml_rms_norm(ctx, y, 1e-5f); break;
        default: z = ggml_norm(ctx, y, 1e-5f); break;
    }
    nm(z, "z", -1);
    // a second reader after z: the in-place ops (SILU, ...) may take z over y
    struct ggml_tensor * out = m->reader == SA_R_CPY ? z : nm(ggml_scale(ctx, z, 0.5f), "out", -1);
    ggml_set_output(out);
    m->out = out;
    struct ggml_tensor * keep = nm(ggml_cont(ctx, b), "keep", -1);
    ggml_set_output(keep);
    m->keep = keep;
    ggml_build_forward_expand(m->fx.gf, out);
    ggml_build_forward_expand(m->fx.gf, keep);
}

void sa_micro_set_inputs(sa_micro * m, uint64_t seed) {
    uint64_t s = seed;
    int64_t n = ggml_nelements(m->inp);
    float * f = (float *) malloc((size_t) n * sizeof(float));
    for (int64_t i = 0; i < n; i++) {
        f[i] = sa_unif(&s);
    }
    ggml_backend_tensor_set(m->inp, f, 0, (size_t) n * sizeof(float));
    free(f);
    if (m->pos->buffer == NULL) {
        return; // no node reads it
    }
    int32_t * p = (int32_t *) malloc((size_t) m->T * sizeof(int32_t));
    for (int i = 0; i < m->T; i++) {
        p[i] = 3 + i;
    }
    ggml_backend_tensor_set(m->pos, p, 0, (size_t) m->T * sizeof(int32_t));
    free(p);
}

void sa_micro_free(sa_micro * m) {
    if (m == NULL) {
        return;
    }
    sa_fixture_free(&m->fx);
    free(m);
}

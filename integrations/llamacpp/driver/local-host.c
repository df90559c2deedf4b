// local-host: a host that loads ggml the way a plugin host does, with
// dlopen(RTLD_LOCAL), and creates, uses and frees a gallocr through it:
// ggml's own ggml_gallocr_new calls ggml_gallocr_new_n through the PLT,
// which reaches a preloaded library. It prints "ok" and exits 0 when
// every call returned.
//
//   local-host PATH/libggml-base.so

#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>

int main(int argc, char ** argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: local-host PATH/libggml-base.so\n");
        return 2;
    }
    void * h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        fprintf(stderr, "local-host: %s\n", dlerror());
        return 2;
    }
    void * (*cpu_buft)(void) = (void * (*)(void)) dlsym(h, "ggml_backend_cpu_buffer_type");
    void * (*gallocr_new)(void *) = (void * (*)(void *)) dlsym(h, "ggml_gallocr_new");
    size_t (*get_size)(void *, int) = (size_t (*)(void *, int)) dlsym(h, "ggml_gallocr_get_buffer_size");
    void (*gallocr_free)(void *) = (void (*)(void *)) dlsym(h, "ggml_gallocr_free");
    if (!cpu_buft || !gallocr_new || !get_size || !gallocr_free) {
        fprintf(stderr, "local-host: missing symbols\n");
        return 2;
    }
    void * a = gallocr_new(cpu_buft());
    if (a == NULL) {
        fprintf(stderr, "local-host: no allocator\n");
        return 1;
    }
    size_t size = get_size(a, 0);
    gallocr_free(a);
    printf("ok %zu\n", size);
    return 0;
}

// tests/checkpoints/test_ckpt_unit.c — safetensors round trip and every malformed header, bf16/f16, RoPE row permutation, save/verify/fallback.
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoints/checkpoint.h"
#include "checkpoints/fsio.h"
#include "checkpoints/hf.h"
#include "core/common.h"
#include "tests/check.h"
#include "model/ops.h"

static char dir[256];

static void path_of(char *out, const char *name) { snprintf(out, 512, "%s/%s", dir, name); }

// Writes raw bytes: an 8-byte header length, the header text, then `data` bytes of zeros.
static void write_raw(const char *name, const char *header, size_t data, long hlen_override) {
    char p[512];
    path_of(p, name);
    FILE *f = fopen(p, "wb");
    uint64_t n = hlen_override >= 0 ? (uint64_t)hlen_override : strlen(header);
    fwrite(&n, 8, 1, f);
    fwrite(header, 1, strlen(header), f);
    for (size_t i = 0; i < data; i++) fputc(0, f);
    fclose(f);
}

static void expect_open_fails(const char *name, const char *needle) {
    char p[512];
    path_of(p, name);
    StFile f;
    CkErr e = {{0}};
    int rc = st_open(&f, p, &e);
    CHECK(rc != 0 && strstr(e.msg, needle) && strstr(e.msg, name), "%s: expected an error containing '%s', got rc %d '%s'",
          name, needle, rc, e.msg);
    if (rc == 0) st_close(&f);
}

static void test_roundtrip(void) {
    real a[6] = {1, -2, 3.5f, 0.25f, -1e-3f, 7}, b[3] = {0.1f, 0.2f, 0.3f}, back[6];
    StOut t[2] = {{.name = "a", .ndim = 2, .shape = {2, 3}, .data = a}, {.name = "b.x", .ndim = 1, .shape = {3}, .data = b}};
    char p[512];
    path_of(p, "ok.safetensors");
    CkErr e;
    const char *meta[] = {"k", "v"};
    CHECK(st_write(p, t, 2, sizeof(real) == 4 ? ST_F32 : ST_F64, meta, 1, &e) == 0, "write: %s", e.msg);
    StFile f;
    CHECK(st_open(&f, p, &e) == 0, "open: %s", e.msg);
    CHECK(f.data_start % 8 == 0, "data starts at %zu, not 8-aligned", f.data_start);
    CHECK(f.format && strcmp(f.format, "pt") == 0, "format metadata is not pt");
    const StEntry *x = st_find(&f, "a");
    CHECK(x && x->ndim == 2 && x->shape[0] == 2 && x->shape[1] == 3, "shape of a");
    if (x && st_read(&f, x, 0, x->numel, back, &e) == 0) CHECK(memcmp(back, a, sizeof a) == 0, "values of a differ");
    CHECK(st_find(&f, "b.x") && !st_find(&f, "c"), "lookup by name");
    st_close(&f);
    // bf16: written rounded, read back within bf16 precision
    path_of(p, "bf16.safetensors");
    CHECK(st_write(p, t, 2, ST_BF16, NULL, 0, &e) == 0, "bf16 write: %s", e.msg);
    CHECK(st_open(&f, p, &e) == 0, "bf16 open: %s", e.msg);
    x = st_find(&f, "a");
    if (x && st_read(&f, x, 0, x->numel, back, &e) == 0)
        for (int i = 0; i < 6; i++) CHECK(rel_err(back[i], a[i], 1e-6) < 1e-2, "bf16 value %d: %g vs %g", i, back[i], a[i]);
    st_close(&f);
}

static void test_bad_files(void) {
    write_raw("short.safetensors", "", 0, -1);
    { char p[512]; path_of(p, "tiny.safetensors"); FILE *f = fopen(p, "wb"); fputs("abc", f); fclose(f); }
    expect_open_fails("tiny.safetensors", "too short");
    write_raw("hlen.safetensors", "{}", 0, 1000000);
    expect_open_fails("hlen.safetensors", "header length");
    write_raw("json.safetensors", "{\"a\":", 0, -1);
    expect_open_fails("json.safetensors", "not a valid JSON");
    write_raw("trunc.safetensors", "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 8, -1);
    expect_open_fails("trunc.safetensors", "truncated");
    write_raw("trail.safetensors", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 8, -1);
    expect_open_fails("trail.safetensors", "trailing");
    write_raw("hole.safetensors",
              "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}",
              12, -1);
    expect_open_fails("hole.safetensors", "hole or overlap");
    write_raw("span.safetensors", "{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8, -1);
    expect_open_fails("span.safetensors", "need 12");
    write_raw("dtype.safetensors", "{\"a\":{\"dtype\":\"Q4\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, -1);
    expect_open_fails("dtype.safetensors", "unknown dtype 'Q4'");
    write_raw("dup.safetensors",
              "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
              8, -1);
    expect_open_fails("dup.safetensors", "appears twice");
    write_raw("meta.safetensors", "{\"__metadata__\":{\"format\":3}}", 0, -1);
    expect_open_fails("meta.safetensors", "__metadata__.format");
    // Two __metadata__ objects (cJSON keeps both): refused, and nothing leaks (found by fuzzing).
    write_raw("meta2.safetensors", "{\"__metadata__\":{\"format\":\"pt\"},\"__metadata__\":{\"format\":\"pt\"}}", 0, -1);
    expect_open_fails("meta2.safetensors", "__metadata__ appears twice");
    write_raw("shape.safetensors", "{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4, -1);
    expect_open_fails("shape.safetensors", "shape[0]");
    // a supported container dtype that ringgpt cannot use: opens, but reading names the dtype
    write_raw("i32.safetensors", "{\"a\":{\"dtype\":\"I32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, -1);
    char p[512];
    path_of(p, "i32.safetensors");
    StFile f;
    CkErr e;
    real v;
    CHECK(st_open(&f, p, &e) == 0, "i32 open: %s", e.msg);
    CHECK(st_read(&f, &f.entries[0], 0, 1, &v, &e) != 0 && strstr(e.msg, "dtype I32 is not supported"), "i32 read: %s", e.msg);
    st_close(&f);
}

static void test_conversions(void) {
    CHECK(st_bf16_to_f32(st_f32_to_bf16(1.5f)) == 1.5f, "bf16 exact value");
    CHECK(st_f32_to_bf16(1.0f + 1.0f / 256) == 0x3f80, "bf16 rounds half to even (down)");
    CHECK(st_f16_to_f32(0x3c00) == 1.0f && st_f16_to_f32(0xc000) == -2.0f && st_f16_to_f32(0x0001) == 0x1p-24f,
          "f16 normal and subnormal values");
    // RoPE rows: to HF and back is the identity; head h row 2i+p goes to row p*hd/2+i
    int H = 2, hd = 4, C = 3;
    real w[24], orig[24];
    for (int i = 0; i < 24; i++) w[i] = orig[i] = (real)i;
    hf_permute_rope_rows(w, H, hd, C, true);
    CHECK(w[(1 * hd + 2) * C] == orig[(1 * hd + 1) * C], "row 2i+p=1 (i=0,p=1) of head 1 lands on row p*hd/2+i=2");
    hf_permute_rope_rows(w, H, hd, C, false);
    CHECK(memcmp(w, orig, sizeof w) == 0, "permutation round trip");
    char n[128];
    hf_name("layers.3.attn.wk", n, sizeof n);
    CHECK(strcmp(n, "model.layers.3.self_attn.k_proj.weight") == 0, "hf name %s", n);
}

// Save twice, damage the newer checkpoint in several ways: verification names the file, the fallback picks the older.
static void test_save_verify(void) {
    ModelConfig c;
    config_preset(&c, "tiny");
    GPT m;
    gpt_init(&m, &c, &BACKEND_CPU, 3, GPT_TRAIN);
    AdamW opt;
    adamw_init(&opt, &m, (AdamWConfig){0.9f, 0.95f, 1e-8f, 0.1f});
    CkptState s = {.model = c, .dp = 1, .sp = 1, .seed = 3, .version = CKPT_VERSION};
    snprintf(s.kind, sizeof s.kind, "train");
    char out[512], found[4200], p[600];
    path_of(out, "run");
    CkErr e;
    for (int step = 1; step <= 2; step++) {
        s.step = step;
        CHECK(ckpt_save(out, &s, &m, &opt, 0, NULL, &e) == 0, "save %d: %s", step, e.msg);
    }
    CHECK(ckpt_find_latest(out, found, sizeof found, NULL, &e) == 1 && strstr(found, "step_00000002"), "latest: %s", found);
    snprintf(p, sizeof p, "%s/step_00000002/optim.safetensors", out);
    FILE *f = fopen(p, "r+b");
    fseek(f, 5000, SEEK_SET);
    int ch = fgetc(f);
    fseek(f, 5000, SEEK_SET);
    fputc(ch ^ 0x10, f);   // one flipped bit
    fclose(f);
    snprintf(p, sizeof p, "%s/step_00000002", out);
    CHECK(ckpt_verify(p, NULL, &e) != 0 && strstr(e.msg, "optim.safetensors") && strstr(e.msg, "CRC32"), "bit flip: %s", e.msg);
    CHECK(ckpt_find_latest(out, found, sizeof found, NULL, &e) == 1 && strstr(found, "step_00000001"), "fallback: %s", found);
    // loading a checkpoint into a model of another shape names the tensor
    ModelConfig c2 = c;
    c2.dim = 32;
    GPT m2;
    gpt_init(&m2, &c2, &BACKEND_CPU, 3, GPT_TRAIN);
    snprintf(p, sizeof p, "%s/step_00000001", out);
    CHECK(ckpt_load_model(p, &s, &m2, &e) != 0 && strstr(e.msg, "tok_embeddings") && strstr(e.msg, "shape"), "shape: %s", e.msg);
    gpt_free(&m2);
    adamw_free(&opt, &m);
    gpt_free(&m);
}

// state.json's meta round trip; a state.json without it (an older checkpoint) reads with none. Floats for config.json
// as numpy's float32 repr prints them (the shortest text that reads back the same float).
static void test_meta_state(void) {
    CkptState s = {.dp = 1, .sp = 1, .version = CKPT_VERSION, .model = {.n_layer = 1, .dim = 8, .n_head = 2, .n_kv_head = 2}};
    snprintf(s.kind, sizeof s.kind, "weights");
    snprintf(s.meta.name, sizeof s.meta.name, "HuggingFaceTB/SmolLM2-135M-Instruct");
    s.meta.max_pos = 8192, s.meta.json = "{}", s.meta.json_len = 2;
    char *text = ckpt_state_json(&s);
    CkptState t;
    CkErr e;
    CHECK(ckpt_state_parse(text, "state.json", &t, &e) == 0 && strcmp(t.meta.name, s.meta.name) == 0 && t.meta.max_pos == 8192 &&
          t.meta.has_file && !t.meta.json, "meta round trip: %s", e.msg);
    s.seed = -337;   // train --seed takes a negative seed: its state.json reads back (it was written as 2^64 - 337)
    char *negative = ckpt_state_json(&s);
    CHECK(ckpt_state_parse(negative, "state.json", &t, &e) == 0 && t.seed == -337, "seed -337 round trip: %s", e.msg);
    free(negative);
    char *meta = strstr(text, "\"meta\"");
    char *end = meta ? strchr(meta, '}') : NULL;
    CHECK(meta && end, "state.json has no meta object");
    if (meta && end) memmove(meta, end + 2, strlen(end + 2) + 1);   // drop `"meta": {...},`
    CHECK(ckpt_state_parse(text, "state.json", &t, &e) == 0 && !t.meta.name[0] && !t.meta.max_pos && !t.meta.has_file,
          "a state.json without meta: %s", e.msg);
    free(text);
    const struct { float v; const char *text; } floats[] = {{1e-5f, "1e-05"}, {1e-6f, "1e-06"}, {10000.0f, "10000"}, {0.02f, "0.02"},
                                                           {500000.0f, "500000"}, {3.14159274f, "3.1415927"}, {0.1f, "0.1"}};
    for (size_t i = 0; i < sizeof floats / sizeof floats[0]; i++) {
        char got[40];
        hf_float_text(floats[i].v, got, sizeof got);
        CHECK(strcmp(got, floats[i].text) == 0, "float %.9g printed %s, want %s", (double)floats[i].v, got, floats[i].text);
    }
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/ringgpt_ckpt_unit_%d", (int)getpid());
    make_dirs(dir);
    test_roundtrip();
    test_bad_files();
    test_conversions();
    test_save_verify();
    test_meta_state();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return check_summary();
}

// tests/data/test_prepare_api.c — the prepare pipeline as a library (data/prepare.h, data/prepare_mix.h): mix files, plans, datasets.
#include <inttypes.h>
#include <sys/stat.h>

#include "data/dataset.h"
#include "data/prepare.h"
#include "data/prepare_mix.h"
#include "cli/commands.h"
#include "testutil.h"

static int parse(const char *json, PrepareMix *m, char *err, size_t errn) {
    return prepare_mix_parse(json, strlen(json), "m.json", m, err, errn);
}

static bool is_defaults(const PrepareMix *m) {
    PrepareMix d = prepare_mix_defaults();
    return memcmp(&m->passkey, &d.passkey, sizeof d.passkey) == 0 && m->pairs == d.pairs && m->queries == d.queries && !m->haystack &&
           !m->held_out && !m->text && m->text_frac == 0 && !m->path;
}

// A mix file sets the keys it names; the others keep their defaults.
static void test_mix_keys(void) {
    PrepareMix m;
    char err[1024] = "";
    CHECK(parse("{}", &m, err, sizeof err) == 0 && m.passkey.depth == -1 && m.passkey.edge_span == 0.03 && m.passkey.edge_far == 0.5 &&
          m.passkey.key_max == 40 && m.passkey.distractors == 3 && m.passkey.ask == 1 && m.pairs == 16 && m.queries == 4,
          "an empty mix is the defaults: %s", err);
    prepare_mix_free(&m);
    CHECK(parse("{\"edge-frac\": 0.4, \"key-max\": 12, \"long-frac\": 1, \"text\": \"t.txt\", \"text-frac\": 0.5, \"distractor-frac\": 0.2, "
                "\"ask\": 4, \"haystack\": \"h\", \"haystack-frac\": 0.5, \"held-out\": \"o\", \"pairs\": 8, \"depth\": -1}", &m, err, sizeof err) == 0,
          "a full mix parses: %s", err);
    CHECK(m.passkey.edge_frac == 0.4 && m.passkey.key_max == 12 && m.passkey.long_frac == 1 && strcmp(m.text, "t.txt") == 0 &&
          m.text_frac == 0.5 && m.passkey.distractor_frac == 0.2 && m.passkey.ask == 4 && strcmp(m.haystack, "h") == 0 &&
          m.passkey.hay_frac == 0.5 && strcmp(m.held_out, "o") == 0 && m.pairs == 8 && m.queries == 4 && strcmp(m.path, "m.json") == 0,
          "every key lands in its field, the others keep their defaults");
    prepare_mix_free(&m);
    CHECK(is_defaults(&m), "a freed mix is the defaults");
    CHECK(prepare_mix_has_key("edge-far") && prepare_mix_has_key("held-out") && !prepare_mix_has_key("seed") && !prepare_mix_has_key("edge_far"),
          "the mix's keys are known by name");
}

// Each bad file: -1, one line naming the file, the key and the fix, and the defaults left in *m.
static void test_mix_errors(void) {
    const char *cases[][2] = {
        {"{\"edge-fraction\": 0.2}", "m.json: unknown key \"edge-fraction\": a mix file takes depth, edge-frac"},
        {"{\"key-max\": \"12\"}", "m.json: \"key-max\" must be a number; give 5..60 digits"},
        {"{\"key-max\": 99}", "m.json: \"key-max\" 99: give 5..60 digits"},
        {"{\"key-max\": 4}", "m.json: \"key-max\" 4: give 5..60 digits"},
        {"{\"ask\": 2.5}", "m.json: \"ask\" must be a whole number (got 2.5)"},
        {"{\"edge-frac\": -0.1}", "m.json: \"edge-frac\" -0.1: give a fraction in 0..1"},
        {"{\"edge-span\": 0}", "m.json: \"edge-span\" 0: give a fraction in (0, 1]"},
        {"{\"depth\": 2}", "m.json: \"depth\" 2: give a depth in 0..1"},
        {"{\"distractors\": 0}", "m.json: \"distractors\" 0: give 1..8"},
        {"{\"queries\": 257}", "m.json: \"queries\" 257: give 1..256"},
        {"{\"text\": 5}", "m.json: \"text\" must be a path"},
        {"{\"text\": \"\"}", "m.json: \"text\" must be a path"},
        {"{\"text-frac\": 0.5}", "m.json: \"text-frac\" needs \"text\""},
        {"{\"ask\": 2}", "m.json: \"ask\" 2 needs \"distractor-frac\""},
        {"{\"distractor-alike\": 0.5}", "m.json: \"distractor-alike\" 0.5 needs \"distractor-frac\""},
        {"{\"haystack-frac\": 0.5}", "m.json: \"haystack-frac\" needs \"haystack\""},
        {"{\"haystack\": \"h\"}", "m.json: \"haystack\" needs \"haystack-frac\""},
        {"{\"held-out\": \"o\"}", "m.json: \"held-out\" is checked against \"haystack\""},
        {"{\"ask\": 2, \"ask\": 3}", "m.json: the key \"ask\" appears twice"},
        {"[0.5]", "m.json: not a JSON object of mix keys"},
        {"{\"ask\": 2", "m.json: not valid JSON"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        PrepareMix m;
        char err[1024] = "";
        int rc = parse(cases[i][0], &m, err, sizeof err);
        CHECK(rc == -1 && strncmp(err, cases[i][1], strlen(cases[i][1])) == 0 && !strchr(err, '\n') && is_defaults(&m),
              "%s: rc %d, \"%s\"", cases[i][0], rc, err);
    }
    PrepareMix m;
    char err[1024] = "";
    CHECK(prepare_mix_load("/nonexistent/m.json", &m, err, sizeof err) == -1 && strstr(err, "/nonexistent/m.json: cannot open the mix file"),
          "a missing mix file: %s", err);
}

// The mix against the task: recall documents take none of the passkey keys; the shortest document follows the mix.
static void test_mix_task(void) {
    PrepareMix m;
    char err[1024] = "";
    CHECK(parse("{\"long-frac\": 0.5, \"pairs\": 4, \"queries\": 2}", &m, err, sizeof err) == 0, "parse: %s", err);
    CHECK(prepare_mix_check_task(&m, true, err, sizeof err) == 0, "long keys shape passkey documents");
    CHECK(prepare_mix_check_task(&m, false, err, sizeof err) == -1 && strstr(err, "m.json: ") && strstr(err, "drop them for --synthetic recall"),
          "long keys with recall: %s", err);
    CHECK(prepare_mix_min_doc_len(&m, false) == 1 + recall_min_len(4, 2), "recall's shortest document uses the mix's pairs and queries");
    CHECK(prepare_mix_min_doc_len(&m, true) == 1 + passkey_train_min_len(&m.passkey, 0), "passkey's shortest document");
    prepare_mix_free(&m);
}

// Text inputs: found recursively in name order, binary and empty files left out (and counted), one document each.
static void test_text_plan(const char *dir) {
    char *in = path_join(dir, "in"), *sub = path_join(in, "sub"), *a = path_join(in, "a.txt"), *b = path_join(sub, "b.md"),
         *bin = path_join(in, "c.pyc"), *empty = path_join(in, "d.txt"), *ds = path_join(dir, "text");
    mkdir(in, 0755);
    mkdir(sub, 0755);
    write_bytes(a, "alpha beta gamma\n", 17);
    write_bytes(b, "delta\n", 6);
    write_bytes(bin, "\x00\x01\x02", 3);
    write_bytes(empty, "", 0);
    PrepareSpec s = prepare_spec_defaults();
    const char *inputs[] = {in};
    s.out = ds, s.inputs = inputs, s.n_inputs = 1, s.val_fraction = 0;
    PreparePlan plan;
    prepare_plan(&s, &plan);
    CHECK(plan.kind == PREPARE_TEXT && plan.n_files == 2 && strcmp(plan.files[0], a) == 0 && strcmp(plan.files[1], b) == 0,
          "text inputs in name order, subdirectories included (%zu files)", plan.n_files);
    CHECK(plan.skipped_binary == 1 && strcmp(plan.binary_example, bin) == 0 && plan.skipped_empty == 1 && strcmp(plan.empty_example, empty) == 0,
          "the binary and the empty file are left out and named");
    CHECK(plan.shard.vocab_size == 260 && plan.shard.eos_id == 256 && plan.shard.token_bytes == 2 && !plan.shard.weights,
          "byte tokens: vocab 260, EOS 256, 2-byte ids, no loss weights");
    PrepareResult r;
    prepare_write(&plan, NULL, NULL, &r);
    CHECK(r.splits[SPLIT_TRAIN].docs == 2 && r.splits[SPLIT_TRAIN].tokens == 17 + 6 + 2 && r.in_bytes == 23 && !r.splits[SPLIT_VAL].shards,
          "one document per file, its EOS last: %" PRIu64 " docs, %" PRIu64 " tokens", r.splits[SPLIT_TRAIN].docs, r.splits[SPLIT_TRAIN].tokens);
    Dataset d;
    DataErr e;
    CHECK(dataset_open(ds, SPLIT_TRAIN, &d, &e) == 0 && d.docs == 2 && d.tokens == 25, "the dataset opens: %s", e.msg);
    dataset_close(&d);
    prepare_plan_free(&plan);
    free(in), free(sub), free(a), free(b), free(bin), free(empty), free(ds);
}

static bool same_file(const char *x, const char *y) {
    size_t nx = 0, ny = 0;
    unsigned char *a = read_bytes(x, &nx), *b = read_bytes(y, &ny);
    bool same = a && b && nx == ny && memcmp(a, b, nx) == 0;
    free(a);
    free(b);
    return same;
}

// A passkey mix through the library and through `prepare --mix`: the same shards and manifest, the mix's
// realised counts, and the mix recorded in the manifest.
static void test_passkey_mix(const char *dir) {
    char *lib = path_join(dir, "lib"), *cli = path_join(dir, "cli"), *mixf = path_join(dir, "m.mix.json");
    const char *json = "{\"distractor-frac\": 1, \"distractors\": 3, \"ask\": 4, \"long-frac\": 0.5}";
    write_bytes(mixf, json, strlen(json));
    PrepareSpec s = prepare_spec_defaults();
    s.out = lib, s.synthetic = "passkey", s.docs = 30, s.doc_len = "300,2K", s.seed = 5;
    char err[1024] = "";
    CHECK(prepare_mix_load(mixf, &s.mix, err, sizeof err) == 0, "load the mix: %s", err);
    PreparePlan plan;
    PrepareResult r;
    prepare_plan(&s, &plan);
    prepare_write(&plan, NULL, NULL, &r);
    CHECK(r.passkey_docs == 30 && r.with_distractors == 30 && r.distractors >= 30 && r.questions > r.with_distractors,
          "every document holds distractors and asks more than once (%" PRIu64 " of %" PRIu64 ", %" PRIu64 " questions)", r.with_distractors,
          r.passkey_docs, r.questions);
    CHECK(run_cmd(cmd_prepare, "prepare", "--out", cli, "--synthetic", "passkey", "--docs", "30", "--doc-len", "300,2K", "--seed", "5",
                  "--threads", "1", "--mix", mixf, "--quiet", NULL) == 0, "prepare --mix");
    const char *files[] = {"manifest.json", "train_000000.rgs", "val_000000.rgs"};
    for (int i = 0; i < 3; i++) {
        char *x = path_join(lib, files[i]), *y = path_join(cli, files[i]);
        CHECK(same_file(x, y), "%s: the library's and the command's are byte-identical", files[i]);
        free(x), free(y);
    }
    char *mpath = path_join(lib, "manifest.json");
    size_t n;
    char *manifest = (char *)read_bytes(mpath, &n);
    CHECK(manifest && strstr(manifest, "\"distractor_frac\":\t1,") && strstr(manifest, "\"ask\":\t4,") && strstr(manifest, "\"long_frac\":\t0.5,"),
          "the manifest records the mix");
    free(manifest), free(mpath);
    prepare_plan_free(&plan);
    prepare_mix_free(&s.mix);
    free(lib), free(cli), free(mixf);
}

// Bad input the plan finds exits 2 before anything is written (data/'s fail_usage, as prepare's readers).
static void plan_recall_with_long_keys(const char *out) {
    PrepareSpec s = prepare_spec_defaults();
    s.out = out, s.synthetic = "recall", s.doc_len = "400";
    s.mix.passkey.long_frac = 0.5;
    PreparePlan plan;
    prepare_plan(&s, &plan);
}

static void plan_short_doc(const char *out) {
    PrepareSpec s = prepare_spec_defaults();
    s.out = out, s.synthetic = "passkey", s.doc_len = "20";
    PreparePlan plan;
    prepare_plan(&s, &plan);
}

static int exit_code(void (*fn)(const char *), const char *out) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        FILE *n = freopen("/dev/null", "w", stderr);
        (void)n;
        fn(out);
        exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static void test_plan_errors(const char *dir) {
    char *out = path_join(dir, "never");
    CHECK(exit_code(plan_recall_with_long_keys, out) == 2, "recall with a passkey key: exit 2");
    CHECK(exit_code(plan_short_doc, out) == 2, "a document shorter than the task: exit 2");
    // (That nothing is written is prepare's order, plan before claiming --out: data_cli checks it through the binary.)
    free(out);
}

int main(void) {
    char *dir = temp_dir("prepare_api");
    test_mix_keys();
    test_mix_errors();
    test_mix_task();
    test_text_plan(dir);
    test_passkey_mix(dir);
    test_plan_errors(dir);
    rm_rf(dir);
    free(dir);
    return test_finish();
}

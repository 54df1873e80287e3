// tests/data/test_synthetic.c — passkey and recall documents: the key is where the generator says, at every depth and length.
#include <inttypes.h>
#include <math.h>

#include "data/dataset.h"
#include "data/prepare.h"
#include "data/source.h"
#include "data/synthetic.h"
#include "cli/commands.h"
#include "testutil.h"

static bool digits_at(const uint32_t *doc, uint64_t pos, const char *want, int n) {
    for (int i = 0; i < n; i++)
        if (doc[pos + i] != (unsigned char)want[i]) return false;
    return true;
}

static bool text_at(const uint32_t *doc, uint64_t pos, const char *want) { return digits_at(doc, pos, want, (int)strlen(want)); }

static void test_passkey(void) {
    const uint64_t lens[] = {passkey_min_len(NULL, 0), 200, 1000, 4096, 65536, 1000003, 2500000};
    const double depths[] = {0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0, -1};
    uint32_t *doc = malloc(2500000 * sizeof *doc);
    int bad = 0, cases = 0;
    for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++)
        for (size_t d = 0; d < sizeof depths / sizeof depths[0]; d++) {
            uint64_t len = lens[l];
            PasskeyInfo info;
            synth_passkey(NULL, 5, l * 10 + d, len, depths[d], 0, NULL, doc, &info);
            char key[8];
            snprintf(key, sizeof key, "%05u", info.key);
            uint64_t filler = len - passkey_min_len(NULL, 0), digits = 0;
            for (uint64_t i = 0; i < len; i++) digits += doc[i] >= '0' && doc[i] <= '9';
            double want_depth = depths[d] < 0 ? info.depth : depths[d];
            uint64_t want_needle = strlen("There is a pass key hidden in this text. Remember it. ") + (uint64_t)(want_depth * filler + 0.5);
            bool ok = info.key >= 10000 && info.key <= 99999 && digits_at(doc, info.key_pos, key, 5) && digits_at(doc, info.answer_pos, key, 5) &&
                      info.answer_pos == len - 5 && text_at(doc, info.needle_pos, "The pass key is ") && info.key_pos == info.needle_pos + 16 &&
                      digits == 10 && info.needle_pos == want_needle && info.depth >= 0 && info.depth <= 1 &&
                      text_at(doc, len - 5 - strlen("What is the pass key? The pass key is "), "What is the pass key? The pass key is ");
            bad += !ok;
            cases++;
            if (!ok) fprintf(stderr, "passkey len %" PRIu64 " depth %g: key %u at %" PRIu64 "\n", len, depths[d], info.key, info.key_pos);
        }
    CHECK(bad == 0, "%d of %d passkey cases wrong", bad, cases);
    // Seeded: the same (seed, doc) gives the same document; another seed another key.
    PasskeyInfo a, b;
    uint32_t *doc2 = malloc(4096 * sizeof *doc2);
    synth_passkey(NULL, 9, 3, 4096, -1, 0, NULL, doc, &a);
    synth_passkey(NULL, 9, 3, 4096, -1, 0, NULL, doc2, &b);
    CHECK(a.key == b.key && a.depth == b.depth && memcmp(doc, doc2, 4096 * 4) == 0, "passkey is deterministic");
    int differ = 0;
    for (int s = 0; s < 10; s++) {
        synth_passkey(NULL, 100 + s, 3, 4096, -1, 0, NULL, doc2, &b);
        differ += b.key != a.key;
    }
    CHECK(differ >= 9, "seeds change the key");
    free(doc);
    free(doc2);
}

static void test_recall(void) {
    const uint64_t lens[] = {0, 1000, 50000, 1500000};
    uint32_t *doc = malloc(1500000 * sizeof *doc);
    int bad = 0;
    for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++) {
        int pairs = 8 + (int)l * 8, queries = 3 + (int)l;
        uint64_t len = lens[l] ? lens[l] : recall_min_len(pairs, queries);
        RecallInfo info;
        synth_recall(11, l, len, pairs, queries, doc, &info);
        uint64_t last_pair = info.pair_value_pos[pairs - 1], first_query = info.query_key_pos[0];
        bad += !(first_query > last_pair) || info.query_value_pos[queries - 1] + RECALL_VALUE_CHARS != len;
        bad += len - first_query > (uint64_t)(RECALL_KEY_CHARS + RECALL_VALUE_CHARS + 3) * queries;   // queries sit at the very end
        for (int q = 0; q < queries; q++) {
            int p = info.query_pair[q];
            uint64_t pk = info.pair_value_pos[p] - 1 - RECALL_KEY_CHARS, qv = info.query_value_pos[q], pv = info.pair_value_pos[p];
            for (int c = 0; c < RECALL_VALUE_CHARS; c++) bad += doc[qv + c] != doc[pv + c] || doc[qv + c] < '0' || doc[qv + c] > '9';
            for (int c = 0; c < RECALL_KEY_CHARS; c++) bad += doc[info.query_key_pos[q] + c] != doc[pk + c] || doc[pk + c] < 'a' || doc[pk + c] > 'z';
            bad += doc[qv - 1] != '=';
        }
    }
    CHECK(bad == 0, "recall: %d wrong positions or values", bad);
    free(doc);
}

// Through `prepare --synthetic`: the stored documents are the generator's, --doc-len counts the EOS,
// and the loss weights select exactly the answer's digits and the EOS that ends it.
static void test_prepare_synthetic(void) {
    char *dir = temp_dir("synth"), *ds = path_join(dir, "pk");
    PrepareSpec spec = prepare_spec_defaults();   // prepare --synthetic passkey with the mix {"depth": 0.5}, through data/prepare.h
    spec.out = ds, spec.synthetic = "passkey", spec.docs = 4, spec.doc_len = "5000", spec.seed = 9, spec.block_tokens = 1024;
    spec.mix.passkey.depth = 0.5;
    PreparePlan plan;
    PrepareResult res;
    prepare_plan(&spec, &plan);
    prepare_write(&plan, NULL, NULL, &res);
    prepare_plan_free(&plan);
    CHECK(res.splits[SPLIT_TRAIN].docs == 4 && res.passkey_docs == 4, "prepare --synthetic passkey: %" PRIu64 " documents",
          res.splits[SPLIT_TRAIN].docs);
    Dataset d;
    DataErr e;
    CHECK(dataset_open(ds, SPLIT_TRAIN, &d, &e) == 0 && d.docs == 4 && d.tokens == 4 * 5000 && d.weights,
          "synthetic dataset: 4 documents of 5000 tokens (EOS included) with loss weights: %s", e.msg);
    uint32_t *doc = malloc(4999 * sizeof *doc);
    PasskeyInfo info;
    synth_passkey(NULL, 9, 2, 4999, 0.5, 0, NULL, doc, &info);
    // Document 2 starts at token 2·5000; read the blocks holding its key and its answer.
    const Shard *s = d.shards[0];
    void *raw = malloc(shard_raw_bytes(&s->h, 1024)), *comp = malloc(shard_max_comp_bytes(s));
    int32_t tok[1024];
    uint8_t w[1024];
    uint64_t at = 2 * 5000 + info.key_pos, blk = at / 1024;
    CHECK(shard_read_block(s, blk, raw, comp, &e) == 0, "read block");
    shard_decode_tokens(&s->h, raw, s->blocks[blk].n_tokens, 260, tok);
    char key[8];
    snprintf(key, sizeof key, "%05u", info.key);
    CHECK((uint32_t)tok[at % 1024] == (unsigned char)key[0], "stored key digit matches the generator");
    int ones = 0, ones_at_answer = 0;
    uint64_t answer = 2 * 5000 + info.answer_pos;
    for (uint64_t b = 0; b < s->h.num_blocks; b++) {
        CHECK(shard_read_block(s, b, raw, comp, &e) == 0, "read block %d", (int)b);
        CHECK(shard_decode_weights(&s->h, raw, s->blocks[b].n_tokens, w) < 0, "weights are 0 or 1");
        for (uint32_t i = 0; i < s->blocks[b].n_tokens; i++) {
            uint64_t t = s->blocks[b].first_token + i;
            ones += w[i];
            ones_at_answer += w[i] && t >= answer && t < answer + PASSKEY_KEY_DIGITS;
        }
    }
    CHECK(ones == 4 * (PASSKEY_KEY_DIGITS + 1) && ones_at_answer == PASSKEY_KEY_DIGITS,
          "weight 1 on the answers' digits and their EOS only (%d ones)", ones);
    CHECK(run_cmd(cmd_prepare, "prepare", "--out", ds, "--synthetic", "recall", "--docs", "2", "--doc-len", "50", "--quiet", NULL) == 2,
          "a document too short for the task is a usage error");
    dataset_close(&d);
    free(raw);
    free(comp);
    free(doc);
    rm_rf(dir);
    free(ds);
    free(dir);
}

// --doc-len = --seq-len: every training window is exactly one whole document (the EOS last) whose
// only counted targets are the answer's digits and the EOS; shorter documents start windows at their starts.
static void test_windows(void) {
    char *dir = temp_dir("synthwin"), *ds = path_join(dir, "pk"), *ds2 = path_join(dir, "pk2");
    CHECK(run_cmd(cmd_prepare, "prepare", "--out", ds, "--synthetic", "passkey", "--docs", "6", "--doc-len", "256", "--val-fraction", "0", "--quiet", NULL) == 0,
          "prepare passkey at doc-len 256");
    DataOptions o = {.seq_len = 256, .batch = 1, .seed = 3, .dp = 1, .sp = 1};
    DataSource *d = data_open(ds, &o, false);
    Batch b = batch_alloc(1, 256);
    int bad = 0;
    for (uint64_t k = 0; k < data_num_samples(d); k++) {
        data_next(d, &b);
        int counted = 0;
        for (int t = 0; t < 256; t++) counted += b.targets[t] >= 0;
        bad += b.n_docs[0] != 1 || b.tokens[255] != 256 || b.tokens[0] != 'T' || counted != PASSKEY_KEY_DIGITS + 1;
    }
    CHECK(data_num_samples(d) == 5 && bad == 0, "%" PRIu64 " windows of one whole document each, 6 counted targets (%d bad)",
          data_num_samples(d), bad);
    data_close(d);
    // Documents of 150 tokens, windows of 512: every window starts at a document start and holds three
    // whole documents and the beginning of a fourth (which the next window starts with).
    CHECK(run_cmd(cmd_prepare, "prepare", "--out", ds2, "--synthetic", "passkey", "--docs", "20", "--doc-len", "150", "--val-fraction", "0", "--quiet", NULL) == 0,
          "prepare passkey at doc-len 150");
    o.seq_len = 512;
    d = data_open(ds2, &o, false);
    Batch b2 = batch_alloc(1, 512);
    bad = 0;
    for (uint64_t k = 0; k < data_num_samples(d); k++) {
        data_next(d, &b2);
        bad += b2.tokens[0] != 'T' || b2.n_docs[0] != 4;
    }
    CHECK(data_num_samples(d) == 6 && bad == 0, "%" PRIu64 " windows, each starting at a document start (%d bad)", data_num_samples(d), bad);
    data_close(d);
    batch_free(&b2);
    batch_free(&b);
    rm_rf(dir);
    free(ds);
    free(ds2);
    free(dir);
}

// Training documents (prepare --synthetic passkey with a mix): the needle's key equals the answer, both
// lengthened alike to 6..key_max digits; the document is its length plus 2 per extra digit; edge depths sit
// within edge_span of an end, edge_far of them at the start; the weights cover exactly the whole answer.
typedef struct {
    int near, far, long_keys, bad;
    double depth_sum, depth_min, depth_max;
} MixStats;

static const char INTRO_TEXT[] = "There is a pass key hidden in this text. Remember it. ";

static MixStats mix_docs(const PasskeyMix *mx, const uint64_t *lens, int n_lens, int docs) {
    MixStats st = {.depth_min = 1, .depth_max = 0};
    uint32_t *doc = malloc((4000 + 2 * PASSKEY_KEY_MAX) * sizeof *doc);
    uint8_t *w = malloc(4000 + 2 * PASSKEY_KEY_MAX);
    for (int k = 0; k < docs; k++) {
        uint64_t len = lens[k % n_lens];
        PasskeyInfo info;
        uint64_t n = synth_passkey_train(21, (uint64_t)k, len, mx, doc, w, &info);
        uint64_t digits = n - info.answer_pos, extra = digits - PASSKEY_KEY_DIGITS;
        int ok = n == len + 2 * extra && digits >= PASSKEY_KEY_DIGITS && (int)digits <= mx->key_max;
        for (uint64_t i = 0; ok && i < digits; i++) ok = doc[info.key_pos + i] == doc[info.answer_pos + i] && doc[info.answer_pos + i] >= '0' && doc[info.answer_pos + i] <= '9';
        for (uint64_t i = 0; ok && i < n; i++) ok = w[i] == (i >= info.answer_pos);
        for (size_t i = 0; ok && i < sizeof INTRO_TEXT - 1; i++) ok = doc[i] == (unsigned char)INTRO_TEXT[i];
        st.bad += !ok;
        st.long_keys += extra > 0;
        double d = info.depth;
        st.depth_sum += d, st.depth_min = fmin(st.depth_min, d), st.depth_max = fmax(st.depth_max, d);
        if (mx->edge_frac >= 1 && !(d <= mx->edge_span + 1e-9 || d >= 1 - mx->edge_span - 1e-9)) st.bad++;
        st.near += d > 0.5, st.far += d < 0.5;
    }
    free(doc);
    free(w);
    return st;
}

static void test_train_mix(void) {
    const uint64_t lens[] = {199, 999, 2999};
    PasskeyMix edges = {.depth = -1, .edge_frac = 1, .edge_span = 0.02, .edge_far = 0.5, .long_frac = 1, .key_max = 12};
    MixStats st = mix_docs(&edges, lens, 3, 90);
    CHECK(st.bad == 0 && st.long_keys == 90 && st.near > 10 && st.far > 10,
          "edges + long keys: %d bad documents, %d long keys, %d near / %d far", st.bad, st.long_keys, st.near, st.far);
    for (double far = 0; far <= 1; far += 0.25) {
        PasskeyMix mx = {.depth = -1, .edge_frac = 1, .edge_span = 0.03, .edge_far = far, .key_max = 5};
        st = mix_docs(&mx, lens, 2, 300);
        CHECK(st.bad == 0 && fabs((double)st.far / 300 - far) < 0.1, "--edge-far %.2f: %d of 300 at the start (%d bad)", far, st.far, st.bad);
    }
    PasskeyMix plain = {.depth = -1, .edge_span = 0.03, .edge_far = 0.5, .key_max = 40};
    st = mix_docs(&plain, lens, 3, 90);
    CHECK(st.bad == 0 && st.long_keys == 0 && st.depth_min < 0.1 && st.depth_max > 0.9 && fabs(st.depth_sum / 90 - 0.5) < 0.2,
          "the zero mix: uniform depths, 5-digit keys (%d bad, %d long)", st.bad, st.long_keys);
    // The zero mix is synth_passkey's document, token for token.
    uint32_t a[999 + 2 * PASSKEY_KEY_MAX], b[999];
    uint8_t w[999 + 2 * PASSKEY_KEY_MAX];
    PasskeyInfo ia, ib;
    synth_passkey_train(21, 4, 999, &plain, a, w, &ia);
    synth_passkey(NULL, 21, 4, 999, -1, 0, NULL, b, &ib);
    CHECK(memcmp(a, b, sizeof b) == 0 && ia.key == ib.key, "the zero mix gives synth_passkey's document");
}

// The draw is pinned: the long-context recipe's measured runs depend on it. The digest is that of the JSONL
// records `passkey --write-jsonl` wrote before the generator moved into data/ (md5 1d717f75... of the same text):
// 40 documents of 300 and 700 tokens, seed 1, edge-frac 0.6, edge-span 0.02, long-frac 0.5, key-max 12.
static void test_pinned_draw(void) {
    PasskeyMix mx = {.depth = -1, .edge_frac = 0.6, .edge_span = 0.02, .edge_far = 0.5, .long_frac = 0.5, .key_max = 12};
    uint32_t doc[700 + 2 * PASSKEY_KEY_MAX];
    uint8_t w[700 + 2 * PASSKEY_KEY_MAX];
    uint64_t h = 0xcbf29ce484222325ull, bytes = 0;
    char line[2048];
    for (int k = 0; k < 40; k++) {
        PasskeyInfo info;
        uint64_t n = synth_passkey_train(1, (uint64_t)k, k % 2 ? 699 : 299, &mx, doc, w, &info);
        int p = snprintf(line, sizeof line, "{\"completion\":\"");
        for (uint64_t i = info.answer_pos; i < n; i++) line[p++] = (char)doc[i];
        p += snprintf(line + p, sizeof line - p, "\",\"prompt\":\"");
        for (uint64_t i = 0; i < info.answer_pos; i++) line[p++] = (char)doc[i];
        p += snprintf(line + p, sizeof line - p, "\"}\n");
        for (int i = 0; i < p; i++) h = (h ^ (unsigned char)line[i]) * 0x100000001b3ull;
        bytes += (uint64_t)p;
    }
    CHECK(h == 0x056957ea7b6c3dc9ull && bytes == 21298, "the training documents' draw changed (digest %016" PRIx64 ", %" PRIu64
          " bytes): the recipe's measured runs would not repeat", h, bytes);
}

// Distractors: 1 + K needles "The pass key for NAME is KEY", distinct names and keys; the question names
// the asked one, whose needle holds the answer; the document is exactly len tokens; with a haystack the
// filler is the haystack's text.
static bool text_at_str(const uint32_t *doc, uint64_t pos, const char *s) {
    for (size_t i = 0; s[i]; i++)
        if (doc[pos + i] != (unsigned char)s[i]) return false;
    return true;
}

static int count_text(const uint32_t *doc, uint64_t n, const char *s) {
    int c = 0;
    for (uint64_t i = 0; i + strlen(s) <= n; i++) c += text_at_str(doc, i, s);
    return c;
}

static uint64_t first_text(const uint32_t *doc, uint64_t n, const char *s) {
    for (uint64_t i = 0; i + strlen(s) <= n; i++)
        if (text_at_str(doc, i, s)) return i;
    return n;
}

// Where the last needle sentence before the question ends: the last " Remember it. " before the answer.
static uint64_t last_needle_end(const uint32_t *doc, uint64_t n) {
    const char *s = " Remember it. ";
    uint64_t end = 0;
    for (uint64_t i = 0; i + strlen(s) <= n; i++)
        if (text_at_str(doc, i, s)) end = i + strlen(s);
    return end;
}

// info's distractor keys: each in its own needle (" is KEY. Remember it."), none the asked key, and an answer
// that equals one classed as another needle's key (the asked key as exact; a key in no needle as wrong).
static bool others_in_doc(const uint32_t *doc, uint64_t len, const PasskeyInfo *info) {
    char asked[8], s[40];
    snprintf(asked, sizeof asked, "%05u", info->key);
    bool ok = passkey_answer_kind(asked, info->key, info->others, info->needles - 1) == PASSKEY_ANSWER_EXACT;
    for (int k = 0; ok && k < info->needles - 1; k++) {
        snprintf(s, sizeof s, " is %05u. Remember it.", info->others[k]);
        ok = count_text(doc, len, s) == 1 && info->others[k] != info->key &&
             passkey_answer_kind(s + 4, info->key, info->others, info->needles - 1) == PASSKEY_ANSWER_OTHER_KEY;
    }
    char none[8] = "00000", drift[8];   // keys are 10000..99999; the asked key's first digit, then the other digits' successors
    snprintf(drift, sizeof drift, "%05u", info->key);
    for (int d = 1; d < PASSKEY_KEY_DIGITS; d++) drift[d] = (char)('0' + (drift[d] - '0' + 1) % 10);
    bool other = false;
    for (int k = 0; k < info->needles - 1; k++) other |= info->others[k] == (uint32_t)atoi(drift);
    return ok && passkey_answer_kind(none, info->key, info->others, info->needles - 1) == PASSKEY_ANSWER_WRONG &&
           (other || passkey_answer_kind(drift, info->key, info->others, info->needles - 1) == PASSKEY_ANSWER_DRIFTED);
}

static void test_distractors(void) {
    uint32_t *doc = malloc(4096 * sizeof *doc), *hay = malloc(4096 * sizeof *hay);
    for (int i = 0; i < 4096; i++) hay[i] = "Some plain prose, nothing more. "[i % 32];
    int bad = 0, bad_first = 0, asked_first = 0;
    for (int K = 1; K <= PASSKEY_MAX_DISTRACTORS; K++) {
        for (int d = 0; d < 20; d++) {
            uint64_t len = d % 2 ? 4096 : passkey_min_len(NULL, K) + 3;
            PasskeyInfo info;
            synth_passkey(NULL, 33, (uint64_t)(K * 100 + d), len, d / 19.0, K, d % 3 ? NULL : hay, doc, &info);
            char key[8];
            snprintf(key, sizeof key, "%05u", info.key);
            // The asked name: between "What is the pass key for " and "?" in the question.
            uint64_t q = info.answer_pos;
            while (q > 0 && doc[q] != '?') q--;
            uint64_t qs = q;
            while (qs > 0 && doc[qs - 1] != ' ') qs--;
            char name[16] = "";
            for (uint64_t i = qs; i < q && i - qs < 15; i++) name[i - qs] = (char)doc[i];
            char needle[64];
            snprintf(needle, sizeof needle, "The pass key for %s is %s", name, key);
            bad += info.needles != K + 1 || count_text(doc, len, "The pass key for ") != K + 2 ||   // + the question's
                   count_text(doc, len, needle) != 2 ||   // the needle and the question + answer
                   !text_at_str(doc, info.key_pos, key) ||
                   !text_at_str(doc, info.answer_pos, key) || info.answer_pos + PASSKEY_KEY_DIGITS != len ||
                   !text_at_str(doc, 0, "There are pass keys hidden in this text. Remember them. ") ||
                   (len == 4096 && (d % 3 == 0) != (count_text(doc, len, "Some plain prose") > 0));
            bad += !others_in_doc(doc, len, &info);
            // first_key: the key that ends the document's first needle sentence (the asked one's or another's).
            uint64_t e = first_text(doc, len, ". Remember it. ");
            char first[8];
            snprintf(first, sizeof first, "%05u", info.first_key);
            bad_first += e == len || e < PASSKEY_KEY_DIGITS || !digits_at(doc, e - PASSKEY_KEY_DIGITS, first, PASSKEY_KEY_DIGITS);
            asked_first += info.first_key == info.key;
        }
    }
    CHECK(bad == 0, "distractors: %d documents with a wrong layout", bad);
    CHECK(bad_first == 0 && asked_first > 10 && asked_first < 150, "first needle's key: %d wrong; the asked needle first in %d of 160",
          bad_first, asked_first);
    CHECK(passkey_min_len(NULL, 3) > passkey_min_len(NULL, 1) && passkey_min_len(NULL, 1) > passkey_min_len(NULL, 0), "longer minimum with more needles");
    // Training documents with distractors and long keys: the asked key, lengthened, is the answer; every
    // distractor key is lengthened too (so the longest key is not a shortcut); the weights cover the answer.
    PasskeyMix mx = {.depth = -1, .edge_span = 0.03, .edge_far = 0.5, .long_frac = 1, .key_max = 12, .distractor_frac = 1,
                     .distractors = 3, .hay_frac = 0.5, .hay = hay, .hay_len = 4096};
    uint8_t *w = malloc(passkey_train_cap(4000));
    uint32_t *t = malloc(passkey_train_cap(4000) * sizeof *t);
    int with_hay = 0;
    bad = 0;
    for (int k = 0; k < 50; k++) {
        PasskeyInfo info;
        uint64_t n = synth_passkey_train(5, (uint64_t)k, 4000, &mx, t, w, &info);
        uint64_t digits = n - info.answer_pos;
        int ok = info.needles >= 2 && info.needles <= 4 && digits > PASSKEY_KEY_DIGITS && digits <= 12;
        for (uint64_t i = 0; ok && i < digits; i++) ok = t[info.key_pos + i] == t[info.answer_pos + i];
        ok = ok && !(t[info.key_pos + digits] >= '0' && t[info.key_pos + digits] <= '9');   // the needle's key ends there
        for (uint64_t i = 0; ok && i < n; i++) ok = w[i] == (i >= info.answer_pos);
        with_hay += count_text(t, n, "Some plain prose") > 0;
        bad += !ok;
    }
    CHECK(bad == 0 && with_hay > 10 && with_hay < 40, "training distractors: %d bad, %d of 50 in the haystack", bad, with_hay);
    // Every document at an edge: some needle sits there, the asked one in about E[1/(1+K)] of them (0.36 for
    // K in 1..3, + the chance of a uniform depth near an edge), never in all (the position would tell the answer).
    mx.edge_frac = 1, mx.long_frac = 0, mx.hay_frac = 0;
    int asked_edge = 0, some_edge = 0;
    for (int k = 0; k < 300; k++) {
        PasskeyInfo info;
        uint64_t n = synth_passkey_train(5, (uint64_t)k, 4000, &mx, t, w, &info);
        asked_edge += info.depth <= mx.edge_span || info.depth >= 1 - mx.edge_span;
        some_edge += first_text(t, n, "The pass key for ") < 60 + 4000 * mx.edge_span ||
                     last_needle_end(t, n) + 4000 * mx.edge_span + 60 > info.answer_pos;
    }
    CHECK(some_edge == 300 && asked_edge > 75 && asked_edge < 165,
          "edge documents with distractors: %d of 300 with a needle at an edge, %d with the asked one there", some_edge, asked_edge);
    // Alike distractors: every other key begins with the asked key's first 1..4 digits and differs at the next;
    // the document is otherwise the one without them (the asked key, its place, the answer).
    mx.edge_frac = 0;
    int prefixes[PASSKEY_KEY_DIGITS + 1] = {0};
    bad = 0;
    for (int k = 0; k < 200; k++) {
        PasskeyInfo plain, alike;
        mx.alike_frac = 0;
        synth_passkey_train(5, (uint64_t)k, 4000, &mx, t, w, &plain);
        mx.alike_frac = 1;
        synth_passkey_train(5, (uint64_t)k, 4000, &mx, t, w, &alike);
        bad += plain.key != alike.key || plain.answer_pos != alike.answer_pos || plain.needles != alike.needles;
        for (int i = 0; i < alike.needles - 1; i++) {
            char a[8], o[8];
            snprintf(a, sizeof a, "%05u", alike.key), snprintf(o, sizeof o, "%05u", alike.others[i]);
            int m = 0;
            while (m < PASSKEY_KEY_DIGITS && a[m] == o[m]) m++;
            prefixes[m]++;
            bad += m < 1 || m > 4;
        }
    }
    mx.alike_frac = 0;
    CHECK(bad == 0 && prefixes[1] > 50 && prefixes[2] > 50 && prefixes[3] > 50 && prefixes[4] > 50,
          "alike distractors: %d bad; shared prefixes of 1..4 digits: %d %d %d %d", bad, prefixes[1], prefixes[2], prefixes[3],
          prefixes[4]);
    free(t);
    free(w);
    free(doc);
    free(hay);
}

// The key written after the first "The pass key for NAME is " at or after `from` (its digits into key).
static uint64_t key_of(const uint32_t *doc, uint64_t n, uint64_t from, const char *name, char *key, int cap) {
    char s[64];
    snprintf(s, sizeof s, "The pass key for %.15s is ", name);
    uint64_t at = from + first_text(doc + from, n - from, s) + strlen(s);
    int d = 0;
    while (at + (uint64_t)d < n && d < cap - 1 && doc[at + d] >= '0' && doc[at + d] <= '9') key[d] = (char)doc[at + d], d++;
    key[d] = 0;
    return at;
}

// --ask: a document with distractors asks for several of its keys in turn ("... is KEY. What is the pass key
// for NAME2? ..."), distinct names, each answer the key of that name's needle and in the loss (nothing else
// is); as many questions as fit (all of them in a long document, fewer in a short one, never more than the
// needles); the first question is the one a one-question document asks.
static void test_ask(void) {
    PasskeyMix mx = {.depth = -1, .edge_span = 0.03, .edge_far = 0.5, .long_frac = 1, .key_max = 12, .distractor_frac = 1,
                     .distractors = 3, .ask = 4};
    PasskeyMix one = mx;
    one.ask = 1;
    uint32_t *t = malloc(passkey_train_cap(4000) * sizeof *t), *u = malloc(passkey_train_cap(4000) * sizeof *u);
    uint8_t *w = malloc(passkey_train_cap(4000)), *wu = malloc(passkey_train_cap(4000));
    int bad = 0, fewer = 0, all = 0;
    for (int k = 0; k < 200; k++) {
        uint64_t len = k % 2 ? 4000 : 330 + (uint64_t)k;
        PasskeyInfo info, i1;
        uint64_t n = synth_passkey_train(9, (uint64_t)k, len, &mx, t, w, &info);
        synth_passkey_train(9, (uint64_t)k, len, &one, u, wu, &i1);
        uint64_t first_q = first_text(t, n, "What is the pass key for "), weighted = 0, answers = 0, first_digits = 0;
        int ok = info.asked >= 1 && info.asked <= info.needles && count_text(t, n, "What is the pass key for ") == info.asked &&
                 info.key == i1.key && info.needles == i1.needles && info.asked >= 1 + (len == 4000) * (info.needles - 1);
        char names[PASSKEY_MAX_DISTRACTORS + 1][16];
        for (int q = 0, at = (int)first_q; ok && q < info.asked; q++) {
            uint64_t s = (uint64_t)at + strlen("What is the pass key for "), e = s;
            while (e < n && t[e] != '?') e++;
            for (uint64_t i = s; i < e && i - s < 15; i++) names[q][i - s] = (char)t[i];
            names[q][e - s < 15 ? e - s : 15] = 0;
            for (int j = 0; j < q; j++) ok = ok && strcmp(names[j], names[q]) != 0;
            char in_needle[PASSKEY_KEY_MAX + 1], answer[PASSKEY_KEY_MAX + 1];
            key_of(t, first_q, 0, names[q], in_needle, sizeof in_needle);
            uint64_t a = key_of(t, n, e, names[q], answer, sizeof answer);
            ok = ok && strlen(answer) >= PASSKEY_KEY_DIGITS && strcmp(in_needle, answer) == 0 && (q > 0 || a == info.answer_pos);
            for (uint64_t i = 0; ok && i < strlen(answer); i++) ok = w[a + i] == 1;
            answers += strlen(answer);
            if (q == 0) first_digits = strlen(answer), ok = ok && text_at_str(u, i1.answer_pos, answer);
            at = (int)(a + first_text(t + a, n - a, "What is the pass key for "));
        }
        for (uint64_t i = 0; i < n; i++) weighted += w[i];
        ok = ok && weighted == answers && n == len + 2 * (first_digits - PASSKEY_KEY_DIGITS);   // the asked key's extra digits
        bad += !ok;
        fewer += info.asked < info.needles;
        all += info.asked == info.needles;
    }
    CHECK(bad == 0 && fewer > 10 && all > 100, "--ask: %d bad documents, %d with fewer questions than needles, %d with all", bad,
          fewer, all);
    free(t), free(u), free(w), free(wu);
}

// A passkey mix with recall documents: that share of documents is synth_recall's, its pairs and queries cut to fit
// a short document, weighted on the queries' values; the passkey documents are the ones the mix without recall gives.
static void test_recall_mix(void) {
    const uint64_t len = 150;
    PasskeyMix plain = {.depth = -1, .edge_span = 0.03, .edge_far = 0.5, .key_max = 5};
    PasskeyMix mx = plain;
    mx.recall_frac = 0.4, mx.recall_pairs = 8, mx.recall_queries = 8;
    uint32_t *t = malloc(passkey_train_cap(len) * sizeof *t), *u = malloc(passkey_train_cap(len) * sizeof *u);
    uint32_t *want = malloc(len * sizeof *want);
    uint8_t *w = malloc(passkey_train_cap(len)), *wu = malloc(passkey_train_cap(len)), *ww = malloc(len);
    int recall = 0, bad = 0;
    for (int k = 0; k < 200; k++) {
        PasskeyInfo info, pinfo;
        uint64_t n = synth_passkey_train(3, (uint64_t)k, len, &mx, t, w, &info);
        if (info.needles == 0) {   // recall: the most pairs and queries that fit in 150 tokens (5 and 5)
            RecallInfo rc;
            synth_recall(3, (uint64_t)k, len, 5, 5, want, &rc);
            recall_weights(&rc, len, ww);
            bad += n != len || memcmp(t, want, len * sizeof *t) != 0 || memcmp(w, ww, len) != 0;
            recall++;
            continue;
        }
        uint64_t m = synth_passkey_train(3, (uint64_t)k, len, &plain, u, wu, &pinfo);
        bad += m != n || memcmp(t, u, n * sizeof *t) != 0 || memcmp(w, wu, n) != 0;
    }
    CHECK(recall_min_len(5, 5) <= len && recall_min_len(6, 6) > len, "the recall document of 150 tokens holds 5 pairs, 5 queries");
    CHECK(bad == 0 && recall > 60 && recall < 100, "recall mix: %d bad documents, %d of 200 recall (share 0.4)", bad, recall);
    free(t), free(u), free(want), free(w), free(wu), free(ww);
}

int main(void) {
    test_passkey();
    test_recall();
    test_prepare_synthetic();
    test_windows();
    test_train_mix();
    test_pinned_draw();
    test_distractors();
    test_ask();
    test_recall_mix();
    return test_finish();
}

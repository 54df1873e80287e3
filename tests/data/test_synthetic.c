// tests/data/test_synthetic.c — passkey and recall documents: the key is where the generator says, at every depth and length.
#include <inttypes.h>
#include <math.h>

#include "data/dataset.h"
#include "data/source.h"
#include "data/synthetic.h"
#include "train/commands.h"
#include "testutil.h"

static bool digits_at(const uint32_t *doc, uint64_t pos, const char *want, int n) {
    for (int i = 0; i < n; i++)
        if (doc[pos + i] != (unsigned char)want[i]) return false;
    return true;
}

static bool text_at(const uint32_t *doc, uint64_t pos, const char *want) { return digits_at(doc, pos, want, (int)strlen(want)); }

static void test_passkey(void) {
    const uint64_t lens[] = {passkey_min_len(), 200, 1000, 4096, 65536, 1000003, 2500000};
    const double depths[] = {0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0, -1};
    uint32_t *doc = malloc(2500000 * sizeof *doc);
    int bad = 0, cases = 0;
    for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++)
        for (size_t d = 0; d < sizeof depths / sizeof depths[0]; d++) {
            uint64_t len = lens[l];
            PasskeyInfo info;
            synth_passkey(5, l * 10 + d, len, depths[d], doc, &info);
            char key[8];
            snprintf(key, sizeof key, "%05u", info.key);
            uint64_t filler = len - passkey_min_len(), digits = 0;
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
    synth_passkey(9, 3, 4096, -1, doc, &a);
    synth_passkey(9, 3, 4096, -1, doc2, &b);
    CHECK(a.key == b.key && a.depth == b.depth && memcmp(doc, doc2, 4096 * 4) == 0, "passkey is deterministic");
    int differ = 0;
    for (int s = 0; s < 10; s++) {
        synth_passkey(100 + s, 3, 4096, -1, doc2, &b);
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
// and the loss weights select exactly the answer's digits.
static void test_prepare_synthetic(void) {
    char *dir = temp_dir("synth"), *ds = path_join(dir, "pk");
    CHECK(run_cmd(cmd_prepare, "prepare", "--out", ds, "--synthetic", "passkey", "--docs", "4", "--doc-len", "5000", "--depth", "0.5",
                  "--seed", "9", "--block-tokens", "1024", "--quiet", NULL) == 0, "prepare --synthetic passkey");
    Dataset d;
    DataErr e;
    CHECK(dataset_open(ds, SPLIT_TRAIN, &d, &e) == 0 && d.docs == 4 && d.tokens == 4 * 5000 && d.weights,
          "synthetic dataset: 4 documents of 5000 tokens (EOS included) with loss weights: %s", e.msg);
    uint32_t *doc = malloc(4999 * sizeof *doc);
    PasskeyInfo info;
    synth_passkey(9, 2, 4999, 0.5, doc, &info);
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
    CHECK(ones == 4 * PASSKEY_KEY_DIGITS && ones_at_answer == PASSKEY_KEY_DIGITS, "weight 1 on the answers' digits only (%d ones)", ones);
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
// only counted targets are the answer's digits; shorter documents start windows at their starts.
static void test_windows(void) {
    char *dir = temp_dir("synthwin"), *ds = path_join(dir, "pk"), *ds2 = path_join(dir, "pk2");
    CHECK(run_cmd(cmd_prepare, "prepare", "--out", ds, "--synthetic", "passkey", "--docs", "6", "--doc-len", "256", "--quiet", NULL) == 0,
          "prepare passkey at doc-len 256");
    DataOptions o = {.seq_len = 256, .batch = 1, .seed = 3, .dp = 1, .sp = 1};
    DataSource *d = data_open(ds, &o, false);
    Batch b = batch_alloc(1, 256);
    int bad = 0;
    for (uint64_t k = 0; k < data_num_samples(d); k++) {
        data_next(d, &b);
        int counted = 0;
        for (int t = 0; t < 256; t++) counted += b.targets[t] >= 0;
        bad += b.n_docs[0] != 1 || b.tokens[255] != 256 || b.tokens[0] != 'T' || counted != PASSKEY_KEY_DIGITS;
    }
    CHECK(data_num_samples(d) == 5 && bad == 0, "%" PRIu64 " windows of one whole document each, 5 counted targets (%d bad)",
          data_num_samples(d), bad);
    data_close(d);
    // Documents of 150 tokens, windows of 512: every window starts at a document start and holds three
    // whole documents and the beginning of a fourth (which the next window starts with).
    CHECK(run_cmd(cmd_prepare, "prepare", "--out", ds2, "--synthetic", "passkey", "--docs", "20", "--doc-len", "150", "--quiet", NULL) == 0,
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

int main(void) {
    test_passkey();
    test_recall();
    test_prepare_synthetic();
    test_windows();
    return test_finish();
}

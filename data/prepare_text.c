// data/prepare_text.c — prepare's text documents: files (plain, gzip, zstd), a directory's files joined (--doc-per dir), JSONL text and prompt/completion records.
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "data/prepare_impl.h"
#include "data/prepare_stream.h"
#include "data/text_encode.h"

// JSONL records of files one after another, each non-blank line parsed.
typedef struct {
    char *const *paths;
    size_t n_paths, file;    // the next file to open
    InStream *in;            // the open one
    const char *path;        // its path, and its last line read
    size_t line_no;
    char *line;
    size_t cap;
    uint64_t *in_bytes;      // counts the lines' bytes (NULL: not counted)
    const char *shape;       // the record expected, for messages: {"text": ...}
} Records;

// The next record, NULL after the last file; a line that is not JSON stops prepare naming the file and the line.
static cJSON *records_next(Records *r) {
    for (;;) {
        if (!r->in) {
            if (r->file == r->n_paths) return NULL;
            r->path = r->paths[r->file++];
            r->in = in_open(r->path);
            r->line_no = 0;
        }
        size_t n = in_line(r->in, &r->line, &r->cap);
        if (!n) {
            in_close(r->in);
            r->in = NULL;
            continue;
        }
        r->line_no++;
        if (r->in_bytes) *r->in_bytes += n;
        if (strspn(r->line, " \t\r\n") == n) continue;
        cJSON *rec = cJSON_ParseWithLength(r->line, n);
        if (!rec) fail_usage("%s: line %zu: not valid JSON; each line must be one %s object", r->path, r->line_no, r->shape);
        return rec;
    }
}

static void records_close(Records *r) {
    if (r->in) in_close(r->in);
    free(r->line);
}

static const char *string_field(const cJSON *rec, const char *name) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(rec, name);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

int prep_jsonl_kind(const char *path, const char *text_field) {
    char *one[] = {(char *)path};
    Records r = {.paths = one, .n_paths = 1, .shape = "{\"prompt\": ..., \"completion\": ...} or {\"text\": ...}"};
    cJSON *rec = records_next(&r);
    int kind = -1;   // no record: the kind of the other inputs
    if (rec && string_field(rec, "prompt") && string_field(rec, "completion")) kind = PREPARE_JSONL;
    else if (rec && string_field(rec, text_field)) kind = PREPARE_JSONL_TEXT;
    else if (rec)
        fail_usage("%s: line %zu: the record needs string fields \"prompt\" and \"completion\", or a string field \"%s\" (text records;"
                   " --text-field NAME names another); fix the line or remove it", path, r.line_no, text_field);
    cJSON_Delete(rec);
    records_close(&r);
    return kind;
}

// The documents of text inputs as a TextSource: a file each; with --doc-per dir the files a plan joins, each
// after its header line; or the text field of each JSONL record.
typedef struct {
    Prep *p;
    const PreparePlan *plan;
    size_t file;             // text: the next file to open
    InStream *in;            // text: the open one
    const char *text;        // the bytes to give before the open file's (its header), or a record's text
    size_t text_len, text_pos;
    char *head;              // --doc-per dir: the header's buffer
    size_t head_cap;
    Records rec;             // JSONL text records
    cJSON *doc;              // the record being read
} DocText;

// A file of a --doc-per dir document starts with "==> LABEL <==\n" (as `head` prints several files), and a
// file that continues the document with a newline before that.
static void open_file(DocText *d) {
    const PreparePlan *plan = d->plan;
    size_t i = d->file++;
    d->in = in_open(plan->files[i]);
    d->text_len = d->text_pos = 0;
    if (!plan->label_at) return;
    const char *label = plan->files[i] + plan->label_at[i];
    size_t need = strlen(label) + 16;
    if (need > d->head_cap) d->head = xrealloc(d->head, d->head_cap = need, "a header");
    d->text_len = (size_t)snprintf(d->head, need, "%s==> %s <==\n", plan->joins[i] ? "\n" : "", label);
    d->text = d->head;
}

static bool next_record(DocText *d) {
    cJSON_Delete(d->doc);
    d->doc = records_next(&d->rec);
    if (!d->doc) return false;
    d->text = string_field(d->doc, d->plan->spec.text_field);
    if (!d->text)
        fail_usage("%s: line %zu: the record needs a string field \"%s\" (--text-field NAME names another); fix the line or remove it",
                   d->rec.path, d->rec.line_no, d->plan->spec.text_field);
    d->text_len = strlen(d->text);
    d->text_pos = 0;
    return true;
}

static bool doc_next(void *ctx) {
    DocText *d = ctx;
    if (d->plan->kind == PREPARE_JSONL_TEXT) return next_record(d);
    if (d->file == d->plan->n_files) return false;
    open_file(d);
    return true;
}

static size_t doc_read(void *ctx, unsigned char *buf, size_t n) {
    DocText *d = ctx;
    size_t got = 0;
    while (got < n) {
        if (d->text_pos < d->text_len) {   // a header, or a record's text
            size_t k = d->text_len - d->text_pos < n - got ? d->text_len - d->text_pos : n - got;
            memcpy(buf + got, d->text + d->text_pos, k);
            d->text_pos += k;
            got += k;
            continue;
        }
        if (!d->in) break;
        size_t k = in_read(d->in, buf + got, n - got);
        got += k;
        d->p->in_bytes += k;
        if (got == n) break;
        in_close(d->in);   // the file ended: the document goes on with the next file when the plan joins it
        d->in = NULL;
        if (d->file < d->plan->n_files && d->plan->joins && d->plan->joins[d->file]) open_file(d);
    }
    return got;
}

// Text through a tokenizer.json: a document unless its text holds the EOS token's text (<|endoftext|>),
// which ends one document and starts the next, as in raw token files.
static void bpe_text_piece(void *ctx, const uint32_t *ids, size_t n, bool first, bool last) {
    (void)first;
    Prep *p = ctx;
    size_t run = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && ids[i] != p->eos) continue;
        if (i > run && !p->in_doc && p->bos >= 0) {   // a document's first tokens: BOS first
            uint32_t bos = (uint32_t)p->bos;
            prep_doc_tokens(p, &bos, NULL, 1);
        }
        prep_doc_tokens(p, ids + run, NULL, i - run);
        if (i < n) prep_doc_end(p, 1);
        run = i + 1;
    }
    if (last && p->in_doc) prep_doc_end(p, 1);
    prep_progress(p);
}

// The byte tokenizer: a byte is a token.
static void byte_docs(Prep *p, TextSource src) {
    unsigned char *chunk = xmalloc(PREP_CHUNK_BYTES, "a read buffer");
    while (src.next(src.ctx)) {
        size_t n;
        do {
            n = src.read(src.ctx, chunk, PREP_CHUNK_BYTES);
            for (size_t i = 0; i < n; i++) p->buf[i] = chunk[i];
            prep_doc_tokens(p, p->buf, NULL, n);
            prep_progress(p);
        } while (n == PREP_CHUNK_BYTES);
        if (p->in_doc) prep_doc_end(p, 1);
    }
    free(chunk);
}

void prep_read_text(Prep *p, const PreparePlan *plan) {
    DocText d = {.p = p, .plan = plan};
    d.rec = (Records){.paths = plan->files, .n_paths = plan->n_files, .in_bytes = &p->in_bytes, .shape = "{\"text\": ...}"};
    TextSource src = {doc_next, doc_read, &d};
    if (plan->tok.bpe) encode_text(src, &plan->tok, plan->spec.threads, (TextSink){bpe_text_piece, p});   // on several threads
    else byte_docs(p, src);
    cJSON_Delete(d.doc);
    records_close(&d.rec);
    free(d.head);
}

static void push_id(uint32_t **ids, size_t *n, size_t *cap, uint32_t id) {
    if (*n == *cap) *ids = xrealloc(*ids, (*cap = *cap ? 2 * *cap : 256) * sizeof **ids, "a JSONL record");
    (*ids)[(*n)++] = id;
}

// Appends the ids of a NUL-terminated string: the tokenizer's (BPE), or one per byte (byte260).
static void encode_string(TokEncoder *enc, const char *text, uint32_t **ids, size_t *n, size_t *cap) {
    size_t len = strlen(text);
    if (enc->tok->bpe) tokenizer_encode(enc, (const unsigned char *)text, len, ids, n, cap);
    else
        for (size_t i = 0; i < len; i++) push_id(ids, n, cap, (unsigned char)text[i]);
}

// One prompt/completion record: prompt and completion are encoded apart (the boundary is a token
// boundary), so the mask is exact: the prompt's tokens have loss weight 0, the completion's and the EOS 1.
static void jsonl_record(Prep *p, TokEncoder *enc, const char *prompt, const char *completion) {
    size_t np = 0, nc = 0, id_cap = 0;
    uint32_t *tok = NULL;   // (np + nc) the prompt's ids (BOS first where the tokenizer adds one), then the completion's
    if (p->bos >= 0) push_id(&tok, &np, &id_cap, (uint32_t)p->bos);
    encode_string(enc, prompt, &tok, &np, &id_cap);
    nc = np;
    encode_string(enc, completion, &tok, &nc, &id_cap);
    nc -= np;
    uint8_t *weight = xmalloc(np + nc + 1, "a JSONL record");
    memset(weight, 0, np);
    memset(weight + np, 1, nc);
    prep_doc_tokens(p, tok, weight, np + nc);
    prep_doc_end(p, 1);
    free(tok);
    free(weight);
}

void prep_read_jsonl(Prep *p, const PreparePlan *plan) {
    TokEncoder enc = tokenizer_encoder(&plan->tok);
    Records r = {.paths = plan->files, .n_paths = plan->n_files, .in_bytes = &p->in_bytes, .shape = "{\"prompt\": ..., \"completion\": ...}"};
    cJSON *rec;
    while ((rec = records_next(&r)) != NULL) {
        const char *prompt = string_field(rec, "prompt"), *completion = string_field(rec, "completion");
        if (!prompt || !completion)
            fail_usage("%s: line %zu: the record needs string fields \"prompt\" and \"completion\" (missing or not strings);"
                       " fix the line or remove it", r.path, r.line_no);
        jsonl_record(p, &enc, prompt, completion);
        cJSON_Delete(rec);
        prep_progress(p);
    }
    records_close(&r);
    tokenizer_encoder_free(&enc);
}

// data/prepare_mix.h — the mix of synthetic training documents (`prepare --mix FILE`): its keys, defaults and checks.
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "data/synthetic.h"

// What a synthetic dataset mixes in besides the plain task: how passkey documents vary (PasskeyMix), the
// recall documents' pairs and queries, the real text needles hide in, and text records between documents.
// A mix file is one JSON object of these keys (docs/data.md), read strictly; a key it leaves out keeps its default:
//   depth -1, edge-frac 0, edge-span 0.03, edge-far 0.5, long-frac 0, key-max 40, distractor-frac 0,
//   distractors 3, distractor-alike 0, ask 1, recall-frac 0, pairs 16, queries 4, haystack none, haystack-frac 0,
//   held-out none, text none, text-frac 0.
typedef struct {
    PasskeyMix passkey;     // depth, edges, long keys, distractors, questions, the shares of haystack and recall
                            // documents (its hay and recall_* fields are filled when the documents are made)
    int pairs, queries;     // recall documents (passkey's recall-frac ones, and every one of --synthetic recall)
    const char *haystack;   // the text the needles of passkey.hay_frac of the documents hide in, or NULL
    const char *held_out;   // the evaluation's haystack: haystack may share no passage with it; or NULL
    const char *text;       // a text file whose windows are mixed in as documents (loss on every token), or NULL
    double text_frac;       // text records per synthetic document, 0..1
    const char *path;       // the mix file, for messages (the caller's string, kept); NULL for the defaults
    char *owned[3];         // the file's paths, which haystack, held_out and text point at (prepare_mix_free frees them)
} PrepareMix;

// True when name ("edge-frac") is a key of a mix file.
bool prepare_mix_has_key(const char *name);
// The mix without a file: the plain task's documents.
PrepareMix prepare_mix_defaults(void);
// Reads a mix file: every key known, of its type and in its range, and the keys that need another present
// (ask > 1 needs distractor-frac, ...). Returns 0, or -1 with one line in err (size errn) naming the file,
// the key and the fix; *m is then the defaults.
int prepare_mix_load(const char *path, PrepareMix *m, char *err, size_t errn);
// The same on text (len bytes) that path names in messages.
int prepare_mix_parse(const char *text, size_t len, const char *path, PrepareMix *m, char *err, size_t errn);
void prepare_mix_free(PrepareMix *m);
// The mix for a task: passkey, or recall (whose documents take none of the passkey keys). Returns 0, or -1 with
// one line in err naming the key.
int prepare_mix_check_task(const PrepareMix *m, bool passkey, char *err, size_t errn);
// The shortest document (its EOS included) of the task under the mix.
uint64_t prepare_mix_min_doc_len(const PrepareMix *m, bool passkey);

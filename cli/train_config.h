// cli/train_config.h — train's flags from files: --config, the saved OUT/config.json of --resume and --init-from, and the architecture of an --init-from source.
#pragma once
#include <stdbool.h>

#include "core/args.h"
#include "model/config.h"

// Flags a run does not write to OUT/config.json: actions, not settings.
extern const char *const TRAIN_NOT_SAVED[];

// The shape flags the user gave (command line or --config), as opposed to those a saved config fills in.
typedef struct {
    bool model, layers, dim, heads, kv_heads, ffn, tie, rope, sp, rope_scaling;
} ShapeGiven;

// Sets the flags not given on the command line, in this order: --config FILE (every flag), then the saved
// config.json of the run that --resume continues (all but this machine's settings) or of the run that
// --init-from starts from (all but --out and this machine's settings). Returns which shape flags the user
// gave before the saved config filled in the rest. *saved_threads: the --threads of the run --resume continues
// (0 when not resuming or not recorded), for this run unless it gives its own. A resume notes each flag given that
// changes how the saved run's sums round (--threads, --loss-chunk, ...: it continues, but not bit for bit).
// The table must have the string flags --config, --resume, --out and --init-from.
ShapeGiven train_apply_config_files(const ArgCommand *cmd, ArgSpec *specs, int n, int *saved_threads);
// --init-from: the architecture is the source's (a ringgpt checkpoint or an HF directory). A shape flag the user
// gave that contradicts it is a usage error; rope-theta and rope-scaling may change (the source's when not given).
// Fills mc and *src (the source's config); returns the source's vocab.
int train_adopt_source_shape(const char *init_from, const char *preset_name, ModelConfig *mc, ShapeGiven g,
                             ModelConfig *src);

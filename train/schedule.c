// train/schedule.c — learning rate per step: linear warmup, cosine to min-lr, or constant.
#include "train/schedule.h"

#include <math.h>
#include <string.h>

int schedule_parse(const char *name, ScheduleKind *out) {
    if (strcmp(name, "cosine") == 0) *out = SCHED_COSINE;
    else if (strcmp(name, "constant") == 0) *out = SCHED_CONSTANT;
    else return 0;
    return 1;
}

float lr_at(const Schedule *s, long step) {
    if (step < s->warmup) return s->lr * (float)(step + 1) / (float)s->warmup;
    if (s->kind == SCHED_CONSTANT) return s->lr;
    long span = s->total - s->warmup;
    if (span <= 0) return s->lr;
    double progress = (double)(step - s->warmup) / (double)span;
    if (progress > 1) progress = 1;
    double cosine = 0.5 * (1.0 + cos(M_PI * progress));
    return (float)(s->min_lr + (s->lr - s->min_lr) * cosine);
}

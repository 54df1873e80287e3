// train/schedule.h — learning-rate schedules: linear warmup, then cosine decay to min-lr or constant.
#pragma once

typedef enum { SCHED_COSINE, SCHED_CONSTANT } ScheduleKind;

typedef struct {
    ScheduleKind kind;
    float lr, min_lr;
    int warmup, total;   // steps
} Schedule;

// Parses "cosine" or "constant"; returns 0 on an unknown name.
int schedule_parse(const char *name, ScheduleKind *out);
// The learning rate of step (0-based): lr·(step+1)/warmup during warmup, then the schedule.
float lr_at(const Schedule *s, long step);

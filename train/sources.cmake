# train/sources.cmake — a training run (layout, data, model, the loop), the LR schedule, metrics.
set(RINGGPT_train_SOURCES train/train.c train/stop.c train/schedule.c train/metrics.c train/rank_times.c)

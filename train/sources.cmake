# train/sources.cmake — the commands (main.c is the executable's own), training loop, schedule, metrics.
list(APPEND RINGGPT_SOURCES train/train.c train/train_config.c train/schedule.c train/metrics.c train/passkey.c)

# eval/sources.cmake — evaluation as a library: the passkey grid and its result files, loss evaluation, sampling, RULER's tasks as text, through a model and as a suite.
set(RINGGPT_eval_SOURCES eval/passkey.c eval/passkey_files.c eval/loss.c eval/sample.c eval/ruler.c eval/ruler_run.c eval/ruler_suite.c)

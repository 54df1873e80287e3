# eval/sources.cmake — evaluation as a library: an inference command's model opened and closed, the needle harness with its passkey grid and RULER's tasks (as text, through a model, as a suite), loss evaluation, sampling.
set(RINGGPT_eval_SOURCES eval/infer.c eval/needle.c eval/passkey.c eval/loss.c eval/sample.c eval/ruler.c eval/ruler_words.c
    eval/ruler_suite.c)

# cli/sources.cmake — the subcommands (cli/main.c is the executable's own): flags, checks and output of each.
set(RINGGPT_cli_SOURCES cli/train.c cli/train_config.c cli/prepare.c cli/inspect.c cli/tokenizer.c cli/eval.c
    cli/sample.c cli/passkey.c cli/ruler.c cli/export.c cli/plan.c)

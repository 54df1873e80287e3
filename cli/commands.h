// cli/commands.h — the subcommands of the ringgpt binary; each takes (argc, argv) from its own name on.
#pragma once

int cmd_train(int argc, char **argv);     // cli/train.c (the run itself: train/train.c)
int cmd_prepare(int argc, char **argv);   // cli/prepare.c
int cmd_inspect(int argc, char **argv);   // cli/inspect.c
int cmd_eval(int argc, char **argv);      // cli/eval.c (the evaluation: eval/loss.c)
int cmd_sample(int argc, char **argv);    // cli/sample.c (generation: eval/sample.c)
int cmd_export(int argc, char **argv);    // cli/export.c
int cmd_import(int argc, char **argv);    // cli/export.c
int cmd_tokenizer(int argc, char **argv);   // cli/tokenizer.c
int cmd_passkey(int argc, char **argv);   // cli/passkey.c (the grid: eval/passkey.c)
int cmd_ruler(int argc, char **argv);     // cli/ruler.c (the tasks: eval/ruler.c)
int cmd_plan(int argc, char **argv);      // cli/plan.c

// cli/commands.h — the subcommands of the ringgpt binary; each takes (argc, argv) from its own name on.
#pragma once

int cmd_train(int argc, char **argv);
int cmd_prepare(int argc, char **argv);   // data/prepare.c
int cmd_inspect(int argc, char **argv);   // data/inspect.c
int cmd_eval(int argc, char **argv);      // checkpoints/commands.c
int cmd_sample(int argc, char **argv);    // checkpoints/commands.c
int cmd_export(int argc, char **argv);    // checkpoints/commands.c
int cmd_import(int argc, char **argv);    // checkpoints/commands.c
int cmd_tokenizer(int argc, char **argv);   // data/tokenizer_cmd.c
int cmd_passkey(int argc, char **argv);   // train/passkey.c
int cmd_plan(int argc, char **argv);      // cli/plan.c

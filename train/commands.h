// train/commands.h — the subcommands of the ringgpt binary; each takes (argc, argv) from its own name on.
#pragma once

int cmd_train(int argc, char **argv);

/* train_sharpness.h: `trainbench train --sharpness-every`: the measurements as they come (a
 * line on stderr each), kept for the summary and the JSON output. */
#ifndef TRAINBENCH_CLI_TRAIN_SHARPNESS_H
#define TRAINBENCH_CLI_TRAIN_SHARPNESS_H

#include <stdbool.h>
#include <stdint.h>

#include "trainbench/trainbench.h"

typedef struct tb_cli_sharpness_log {
    bool print; /* a line on stderr per measurement */
    bool tty;   /* stderr is a terminal: clear the progress line first */
    tb_sharpness *items; /* every measurement, in order (malloc'ed) */
    int64_t n, cap;
    bool out_of_memory; /* some could not be kept (the JSON output says so) */
} tb_cli_sharpness_log;

/* The tb_train_sharpness_fn of the command (user: a tb_cli_sharpness_log). */
void tb_cli_sharpness_record(void *user, const tb_sharpness *s);
void tb_cli_sharpness_free(tb_cli_sharpness_log *log);
/* The result's lines for a run with measurements. */
void tb_cli_sharpness_summary(const tb_run_config *c, const tb_train_result *r);
/* "sharpness":{...}, (a comma after it) for the JSON result, with the fixed batch's size;
 * nothing without --sharpness-every. */
void tb_cli_sharpness_json(const tb_run_config *c, const tb_train_result *r, int64_t batch,
                           const tb_cli_sharpness_log *log);

#endif

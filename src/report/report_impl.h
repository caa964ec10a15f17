/* report_impl.h: internals shared by the report's files (not public). */
#ifndef TRAINBENCH_REPORT_IMPL_H
#define TRAINBENCH_REPORT_IMPL_H

#include "trainbench/report.h"
#include "trainbench/score.h"

#include <cjson/cJSON.h>

/* v as a number, or null where it is not finite (a miss, no value). */
void tb_report_num(cJSON *o, const char *key, double v);
/* An array item: v, or null where it is not finite. */
cJSON *tb_report_num_item(double v);

/* One benchmark: its score table, profiles and times to target (data_bench.c), then its
 * training curves and its search (data_trials.c), as one object. */
tb_status tb_report_bench_json(tb_store *store, const char *benchmark, cJSON **out,
                               tb_error *err);
tb_status tb_report_trials_json(tb_store *store, const tb_score_table *table, cJSON *bench,
                                tb_error *err);
/* The hardware runs ("hardware") and the study runs ("studies") into root, each only when
 * the store has some; *found is how many rows of either there are (data_side.c). */
tb_status tb_report_side_json(tb_store *store, cJSON *root, int *found, tb_error *err);

#endif

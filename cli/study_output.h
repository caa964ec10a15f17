/* study_output.h: printing a study's figure (study_output.c) for `trainbench study`. */
#ifndef TRAINBENCH_CLI_STUDY_OUTPUT_H
#define TRAINBENCH_CLI_STUDY_OUTPUT_H

#include "cli.h"
#include "trainbench/study_plan.h"

/* The table of cells, the comparisons with their checks, and the claim's outcome. */
void tb_cli_study_print(const tb_study_plan *plan, const tb_study_values *values,
                        const tb_study_figure *figure);
/* The same as one JSON object on stdout. */
void tb_cli_study_print_json(const tb_study_plan *plan, const tb_study_values *values,
                             const tb_study_figure *figure);

#endif

/* study_output.h: printing a study's figure (study_output.c) for `trainbench study`. */
#ifndef TRAINBENCH_CLI_STUDY_OUTPUT_H
#define TRAINBENCH_CLI_STUDY_OUTPUT_H

#include "cli.h"
#include "trainbench/study_plan.h"

/* The table of cells, the comparisons with their checks, and the claim's outcome. */
void tb_cli_study_print(const tb_study_plan *plan, const tb_study_values *values,
                        const tb_study_figure *figure, const tb_study_figures *figures);
/* The same as one JSON object on stdout. */
void tb_cli_study_print_json(const tb_study_plan *plan, const tb_study_values *values,
                             const tb_study_figure *figure, const tb_study_figures *figures);

/* The figures beyond the table (study_figures.c): as text, as the JSON object's "figures"
 * member, and as files DIR/<study>.<figure>.csv and .json (false, with the message printed,
 * if one cannot be written). */
void tb_cli_study_print_figures(const tb_study_plan *plan, const tb_study_values *values,
                                const tb_study_figures *figures);
void tb_cli_study_json_figures(const tb_study_plan *plan, const tb_study_values *values,
                               const tb_study_figures *figures);
bool tb_cli_study_write_figures(const tb_study_plan *plan, const tb_study_values *values,
                                const tb_study_figures *figures, const char *dir);

#endif

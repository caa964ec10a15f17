/* hw.h: `trainbench hw`'s printers (hw_output.c); cmd_hw.c parses the options and runs the
 * suite through the library (trainbench/hardware.h). */
#ifndef TRAINBENCH_CLI_HW_H
#define TRAINBENCH_CLI_HW_H

#include "trainbench/trainbench.h"

/* The terminal table and the scores, on stdout. */
void tb_cli_hw_print_table(const tb_hw_run *run);
/* The whole run as one JSON object on stdout. */
void tb_cli_hw_print_json(const tb_hw_run *run);

#endif

/* hw.h: the parts of `trainbench hw`: cmd_hw.c parses and runs, hw_output.c prints. */
#ifndef TRAINBENCH_CLI_HW_H
#define TRAINBENCH_CLI_HW_H

#include "trainbench/trainbench.h"

#define HW_MAX_WORKLOADS 32
#define HW_MAX_CONFIGS 8

/* One workload in one configuration. */
typedef struct hw_row {
    const char *workload, *algorithm;
    int config;                /* index into hw_run.configs */
    int batch_size;            /* the workload's default */
    tb_throughput_result res;
    bool failed;
    char reason[512];          /* why it failed (a tb_error message fits) */
    double ratio;              /* examples/s over the reference's; NaN: no reference figure */
    double reference_examples_per_s;
    double weight;             /* the reference file's */
    char note[256];            /* why there is no ratio */
    /* --dist: the one-process examples/s at the same threads per rank, where from, and the
       scaling efficiency examples_per_s / (ranks x it) (NaN: no one-process figure) */
    double single_examples_per_s, efficiency;
    char single_source[160];
} hw_row;

/* A device and thread count, and its score. */
typedef struct hw_config {
    tb_device device;
    int threads;
    char label[48];            /* "cpu, 2 threads", "cpu, 2 ranks x 1 thread", "cuda" */
    bool scored;               /* some workload of it has a reference figure */
    tb_hw_score score;
} hw_config;

typedef struct hw_run {
    tb_throughput_config settings; /* warm-up, windows, time limit, seed, data */
    const tb_hw_reference *ref;
    double level;              /* of the score's interval */
    int cores;                 /* of this machine */
    tb_dist *dist;             /* --dist: this rank of the MPI job (NULL: one process) */
    int ranks;                 /* the job's ranks (1: one process) */
    int job_cores;             /* the cores of the job's machines (cores with one process) */
    hw_config configs[HW_MAX_CONFIGS];
    int n_configs;
    hw_row *rows;
    int n_rows;
    char machine[1024];        /* tb_machine_facts */
} hw_run;

/* hw_results.c: the ratios to the reference file and each configuration's score. */
void tb_cli_hw_score(hw_run *run);
/* The one-minute load average (NaN where unknown). */
double tb_cli_hw_load_average(void);
/* Writes the runs that passed as a reference file at path; an exit code. */
int tb_cli_hw_save_reference(const hw_run *run, const char *path, const char *command,
                             double load_start, double load_end);
/* Opens the results store db with its hardware tables checked (*out NULL on failure, with
 * the error printed); an exit code. */
int tb_cli_hw_open_store(const char *db, tb_store **out);
/* Records the run in the results store db; an exit code. */
int tb_cli_hw_record(const hw_run *run, const char *db);

/* hw_scaling.c: --dist: each row's one-process figure (the store's, else the reference file's
 * when it was measured on this machine) and its scaling efficiency; db may be NULL. */
void tb_cli_hw_scaling(hw_run *run, const char *db);

/* hw_output.c: the terminal table and the scores, on stdout. */
void tb_cli_hw_print_table(const hw_run *run);
/* The whole run as one JSON object on stdout. */
void tb_cli_hw_print_json(const hw_run *run);

#endif

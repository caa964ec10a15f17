/* machine.h: what a measurement records of where it was made: the code version and the
 * machine's facts. */
#ifndef TRAINBENCH_MACHINE_H
#define TRAINBENCH_MACHINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trainbench/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The code version compiled in (git describe at configure time, or the package version). */
const char *tb_code_version(void);
/* Machine facts as one JSON object (cpu model, cores, threads, blas: backend_description,
 * NULL for none, and the host name): written to buf. */
void tb_machine_facts(const char *backend_description, int threads, char *buf, size_t cap);
/* The CPUs this process may run on: its affinity mask's count (taskset, a cgroup's cpuset,
 * Slurm's --cpus-per-task, mpirun's binding), or the online CPUs where that cannot be read;
 * at least 1. What "all cores" means for a thread count. */
int tb_machine_cpus(void);

/* ---- the machine's state while something runs (Linux /proc; src/core/machine_state.c) ------
 * A field that /proc does not give (another kernel, a container without it) is unknown: NaN,
 * or -1 for counts; never an error. */
typedef struct tb_machine_sample {
    double wall_s;        /* CLOCK_MONOTONIC seconds */
    double load1;         /* the 1-minute load average (/proc/loadavg) */
    double cpu_jiffies;   /* the machine's CPU time: the sum of /proc/stat's cpu line */
    double steal_jiffies; /* of which stolen by the hypervisor (its 8th field) */
    double cpu_s;         /* this process's user + system time, all its threads (getrusage) */
    int64_t nivcsw;       /* this process's involuntary context switches (getrusage) */
} tb_machine_sample;

/* The conditions over an interval between two samples. */
typedef struct tb_machine_conditions {
    double wall_s;    /* wall seconds */
    double cpu_s;     /* the process's CPU seconds (user + system) */
    double cpu_share; /* cpu_s / (wall_s x threads): 1 when every thread ran all along */
    double load1;     /* the largest 1-minute load average sampled over the interval */
    double steal;     /* the share of the machine's CPU time stolen, in [0, 1] */
    int64_t nivcsw;   /* involuntary context switches of the process */
} tb_machine_conditions;

/* The contention rule (docs/TIME_TO_RESULT.md, "Timing rules"): a run on `threads` threads of
 * a machine of `cores` was contended when its CPU share is below TB_CONTENDED_CPU_SHARE, the
 * steal at or above TB_CONTENDED_STEAL, or the 1-minute load average above the cores by more
 * than TB_CONTENDED_LOAD_SLACK (the load beyond our own threads exceeds the cores they leave
 * free). Unknown fields do not count. */
#define TB_CONTENDED_CPU_SHARE 0.5
#define TB_CONTENDED_STEAL 0.05
#define TB_CONTENDED_LOAD_SLACK 0.5

/* Samples the machine and this process now. TB_ERR_INVALID only for out NULL. */
tb_status tb_machine_sample_now(tb_machine_sample *out, tb_error *err);
/* Parsers of /proc's texts, for the sampler and the tests: TB_ERR_FORMAT naming the file and
 * the cause for a text that is not one. /proc/stat without a steal field (kernels before
 * 2.6.11) gives *steal = NaN and TB_OK. */
tb_status tb_machine_parse_loadavg(const char *text, double *load1, tb_error *err);
tb_status tb_machine_parse_stat(const char *text, double *total, double *steal, tb_error *err);
/* The conditions between samples a and b (b later) of a run on `threads` threads; load1 is
 * the largest of the samples' load averages the caller saw (NaN: b's). */
void tb_machine_conditions_between(const tb_machine_sample *a, const tb_machine_sample *b,
                                   int threads, double load1, tb_machine_conditions *out);
/* Whether conditions c of a run on `threads` threads of a machine of `cores` were contended
 * (the rule above); if so, and why is not NULL, why says which measure broke the rule
 * ("cpu share 0.31 < 0.5"), else why is "". */
bool tb_machine_contended(const tb_machine_conditions *c, int threads, int cores, char *why,
                          size_t cap);
/* Whether the machine is busy before a run on `threads` threads (0: all cores) starts: the
 * 1-minute load average exceeds the cores the run leaves free by more than
 * TB_CONTENDED_LOAD_SLACK. If so writes one line saying so to msg. False when the load is
 * unknown. */
bool tb_machine_busy(int threads, char *msg, size_t cap);

#ifdef __cplusplus
}
#endif
#endif

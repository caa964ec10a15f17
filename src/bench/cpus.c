/* cpus.c: CPU lists ("0-3,8"): parsed and checked against the CPUs this process may run on,
 * shared out among a benchmark's jobs, and a trial's process pinned to its share. */
#define _GNU_SOURCE /* sched_setaffinity, CPU_SET */
#include "bench/isolate.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One number of a CPU list at *p (advanced past it), or -1. */
static long cpu_number(const char **p)
{
    if (**p < '0' || **p > '9') return -1;
    char *end;
    errno = 0;
    long v = strtol(*p, &end, 10);
    if (errno || v >= TB_BENCH_CPUS_MAX) return -1;
    *p = end;
    return v;
}

tb_status tb_bench_cpus_parse(const char *text, int *cpus, int *n, tb_error *err)
{
    *n = 0;
    if (!text || !text[0])
        return tb_fail(err, TB_ERR_INVALID, "the CPU list is empty (give e.g. 0-3 or 0,2)");
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0)
        return tb_fail(err, TB_ERR_IO, "cannot read the CPUs this process may run on: %s",
                       strerror(errno));
    char mark[TB_BENCH_CPUS_MAX] = {0};
    const char *p = text;
    for (;;) {
        long lo = cpu_number(&p), hi = lo;
        if (lo >= 0 && *p == '-') {
            p++;
            hi = cpu_number(&p);
        }
        if (lo < 0 || hi < lo || (*p && *p != ','))
            return tb_fail(err, TB_ERR_INVALID,
                           "CPU list '%s': '%s' is not a CPU number or a range lo-hi (below %d)",
                           text, p, TB_BENCH_CPUS_MAX);
        for (long c = lo; c <= hi; c++) {
            if (mark[c])
                return tb_fail(err, TB_ERR_INVALID, "CPU list '%s': CPU %ld is given twice",
                               text, c);
            if (!CPU_ISSET((int)c, &allowed))
                return tb_fail(err, TB_ERR_INVALID,
                               "CPU list '%s': this process may not run on CPU %ld (see "
                               "`taskset -p $$` or nproc)", text, c);
            mark[c] = 1;
        }
        if (!*p) break;
        p++;
    }
    for (int c = 0; c < TB_BENCH_CPUS_MAX; c++)
        if (mark[c]) cpus[(*n)++] = c;
    return TB_OK;
}

void tb_bench_cpus_share(const int *cpus, int n, int groups, int k, char *buf, size_t cap)
{
    const int per = groups > 0 ? n / groups : 0;
    size_t used = 0;
    buf[0] = 0;
    for (int i = k * per; i < (k + 1) * per && used < cap; i++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%d", used ? "," : "", cpus[i]);
}

tb_status tb_bench_cpus_pin(const char *text, tb_error *err)
{
    if (!text || !text[0]) return TB_OK;
    int *cpus = malloc(TB_BENCH_CPUS_MAX * sizeof *cpus);
    if (!cpus) return tb_fail(err, TB_ERR_NOMEM, "out of memory");
    int n;
    tb_status st = tb_bench_cpus_parse(text, cpus, &n, err);
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int i = 0; st == TB_OK && i < n; i++) CPU_SET(cpus[i], &set);
    free(cpus);
    if (st == TB_OK && sched_setaffinity(0, sizeof set, &set) != 0)
        st = tb_fail(err, TB_ERR_IO, "cannot pin the trial's process to CPUs %s: %s", text,
                     strerror(errno));
    return st;
}

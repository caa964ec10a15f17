/* machine_state.c: the machine's state while something runs (load average and steal time from
 * /proc, this process's CPU time and involuntary context switches from getrusage), the
 * conditions over an interval, and the contention rule (see trainbench/machine.h). A field
 * /proc does not give is unknown, never an error. */
#define _GNU_SOURCE /* RUSAGE_SELF's ru_nivcsw */
#include "trainbench/machine.h"

#include "core/clock.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* Reads up to cap - 1 bytes of a /proc file into buf (NUL-terminated); false if unreadable. */
static bool read_proc(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "r");
    if (!f) return false;
    size_t n = fread(buf, 1, cap - 1, f);
    fclose(f);
    buf[n] = '\0';
    return n > 0;
}

tb_status tb_machine_parse_loadavg(const char *text, double *load1, tb_error *err)
{
    if (!text || !load1)
        return tb_fail(err, TB_ERR_INVALID, "machine_parse_loadavg: %s is NULL",
                       text ? "load1" : "text");
    char *end;
    double v = strtod(text, &end);
    if (end == text || !(v >= 0) || !isfinite(v))
        return tb_fail(err, TB_ERR_FORMAT, "/proc/loadavg: its first field is not a load "
                       "average (it reads \"%.40s\")", text);
    *load1 = v;
    return TB_OK;
}

tb_status tb_machine_parse_stat(const char *text, double *total, double *steal, tb_error *err)
{
    if (!text || !total || !steal)
        return tb_fail(err, TB_ERR_INVALID, "machine_parse_stat: an argument is NULL");
    const char *p = text;
    while (*p == ' ' || *p == '\n') p++;
    if (strncmp(p, "cpu ", 4) != 0)
        return tb_fail(err, TB_ERR_FORMAT, "/proc/stat: it does not start with the cpu line "
                       "(it reads \"%.40s\")", text);
    p += 4;
    /* user nice system idle iowait irq softirq steal guest guest_nice: guest time is already
     * in user and nice, so the machine's time is the first eight */
    double f[8];
    int n = 0;
    while (n < 8) {
        char *end;
        double v = strtod(p, &end);
        if (end == p || *p == '\n') break;
        if (!(v >= 0) || !isfinite(v))
            return tb_fail(err, TB_ERR_FORMAT, "/proc/stat: field %d of the cpu line is not a "
                           "count", n + 1);
        f[n++] = v;
        p = end;
    }
    if (n < 4)
        return tb_fail(err, TB_ERR_FORMAT, "/proc/stat: the cpu line has %d fields, fewer than "
                       "the 4 of every kernel", n);
    double sum = 0;
    for (int i = 0; i < n; i++) sum += f[i];
    *total = sum;
    *steal = n >= 8 ? f[7] : NAN;
    return TB_OK;
}

tb_status tb_machine_sample_now(tb_machine_sample *out, tb_error *err)
{
    if (!out) return tb_fail(err, TB_ERR_INVALID, "machine_sample_now: out is NULL");
    out->wall_s = tb_monotonic_s();
    out->load1 = out->cpu_jiffies = out->steal_jiffies = NAN;
    out->cpu_s = NAN;
    out->nivcsw = -1;
    char buf[512];
    if (!read_proc("/proc/loadavg", buf, sizeof buf) ||
        tb_machine_parse_loadavg(buf, &out->load1, NULL) != TB_OK)
        out->load1 = NAN;
    /* the aggregate cpu line comes first and fits in the buffer */
    if (!read_proc("/proc/stat", buf, sizeof buf) ||
        tb_machine_parse_stat(buf, &out->cpu_jiffies, &out->steal_jiffies, NULL) != TB_OK)
        out->cpu_jiffies = out->steal_jiffies = NAN;
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0) {
        out->cpu_s = (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
                     (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
        out->nivcsw = (int64_t)ru.ru_nivcsw;
    }
    return TB_OK;
}

void tb_machine_conditions_between(const tb_machine_sample *a, const tb_machine_sample *b,
                                   int threads, double load1, tb_machine_conditions *out)
{
    if (!a || !b || !out) return;
    out->wall_s = b->wall_s - a->wall_s;
    out->cpu_s = b->cpu_s - a->cpu_s;
    out->cpu_share = threads > 0 && out->wall_s > 0 ? out->cpu_s / (out->wall_s * threads)
                                                    : NAN;
    out->load1 = isnan(load1) ? b->load1 : load1;
    double dt = b->cpu_jiffies - a->cpu_jiffies;
    out->steal = dt > 0 ? (b->steal_jiffies - a->steal_jiffies) / dt : NAN;
    out->nivcsw = a->nivcsw >= 0 && b->nivcsw >= a->nivcsw ? b->nivcsw - a->nivcsw : -1;
}

bool tb_machine_contended(const tb_machine_conditions *c, int threads, int cores, char *why,
                          size_t cap)
{
    if (why && cap) why[0] = '\0';
    if (!c) return false;
    char buf[160] = "";
    if (c->cpu_share < TB_CONTENDED_CPU_SHARE) /* false for NaN */
        snprintf(buf, sizeof buf, "cpu share %.2f < %g (%.1f cpu s over %.1f s x %d threads)",
                 c->cpu_share, TB_CONTENDED_CPU_SHARE, c->cpu_s, c->wall_s, threads);
    else if (c->steal >= TB_CONTENDED_STEAL)
        snprintf(buf, sizeof buf, "steal %.0f%% >= %.0f%%", 100 * c->steal,
                 100 * TB_CONTENDED_STEAL);
    else if (cores > 0 && c->load1 > cores + TB_CONTENDED_LOAD_SLACK)
        snprintf(buf, sizeof buf, "load average %.2f > %d cores + %g", c->load1, cores,
                 TB_CONTENDED_LOAD_SLACK);
    if (why && cap) snprintf(why, cap, "%s", buf);
    return buf[0] != '\0';
}

bool tb_machine_busy(int threads, char *msg, size_t cap)
{
    tb_machine_sample s;
    tb_machine_sample_now(&s, NULL);
    const long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cores < 1 || isnan(s.load1)) return false;
    const int ours = threads > 0 && threads < cores ? threads : (int)cores;
    const double free_cores = (double)(cores - ours);
    if (!(s.load1 > free_cores + TB_CONTENDED_LOAD_SLACK)) return false;
    if (msg && cap)
        snprintf(msg, cap, "the machine is busy: its 1-minute load average is %.2f, above the "
                 "%d of its %ld cores that %d thread%s of this run leave%s free", s.load1,
                 (int)free_cores, cores, ours, ours == 1 ? "" : "s", ours == 1 ? "s" : "");
    return true;
}

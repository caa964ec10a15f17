/* machine.c: the facts of this machine that every record of a measurement carries (see
 * trainbench/machine.h). */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "trainbench/machine.h"

#include <cjson/cJSON.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int tb_machine_cpus(void)
{
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    const int n = sched_getaffinity(0, sizeof allowed, &allowed) == 0 ? CPU_COUNT(&allowed) : 0;
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    if (n > 0) return n;
    return online > 0 ? (int)online : 1;
}

void tb_machine_facts(const char *blas, int threads, char *buf, size_t cap)
{
    if (!buf || cap == 0) return;
    char model[256] = "unknown";
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    while (f && fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) == 0) {
            char *colon = strchr(line, ':');
            if (colon) {
                colon++;
                while (*colon == ' ' || *colon == '\t') colon++;
                snprintf(model, sizeof model, "%s", colon);
                model[strcspn(model, "\n")] = 0;
            }
            break;
        }
    }
    if (f) fclose(f);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "cpu", model);
    cJSON_AddNumberToObject(o, "cores", (double)sysconf(_SC_NPROCESSORS_ONLN));
    cJSON_AddNumberToObject(o, "threads", threads);
    cJSON_AddStringToObject(o, "blas", blas ? blas : "");
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    cJSON_AddStringToObject(o, "host", host);
    char *text = cJSON_PrintUnformatted(o);
    snprintf(buf, cap, "%s", text ? text : "{}");
    free(text);
    cJSON_Delete(o);
}

/* machine.h: what a measurement records of where it was made: the code version and the
 * machine's facts. */
#ifndef TRAINBENCH_MACHINE_H
#define TRAINBENCH_MACHINE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The code version compiled in (git describe at configure time, or the package version). */
const char *tb_code_version(void);
/* Machine facts as one JSON object (cpu model, cores, threads, blas: backend_description,
 * NULL for none, and the host name): written to buf. */
void tb_machine_facts(const char *backend_description, int threads, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif
#endif

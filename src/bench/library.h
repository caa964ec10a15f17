/* library.h: opening an external submission's shared library (internal to the benchmark). */
#ifndef TRAINBENCH_BENCH_LIBRARY_H
#define TRAINBENCH_BENCH_LIBRARY_H

#include "trainbench/submission.h"

/* Opens the library at `path` (spec: as the user named it, for messages) and checks its table:
 * first in a probe child process (fork: dlopen, which runs its ELF constructors, the entry
 * point, the ABI version, the required fields), then, when that went well, in this process,
 * with this process's stdout sent to stderr meanwhile (a constructor's print must not land in
 * the caller's output). A library that crashes, exits or hangs in the probe fails with
 * TB_ERR_CRASHED naming it and the signal (or status); one that is refused (not a library, no
 * entry point, another ABI, a required field missing, named) fails with TB_ERR_INVALID. On
 * success *handle is the dlopen handle (for dlclose) and *sub the library's table; on failure
 * *handle may still be set and must be closed. */
tb_status tb_library_open(const char *path, const char *spec, void **handle,
                          const tb_submission **sub, tb_error *err);

#endif

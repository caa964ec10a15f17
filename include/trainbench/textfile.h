/* textfile.h: reading a small text file (JSON: search spaces, studies, the hardware
 * reference) whole, with limits.
 *
 * Every JSON reader of the suite goes through tb_text_file_read, so each refuses the same bad
 * inputs with the same message: "<what> <path>: <cause>". */
#ifndef TRAINBENCH_TEXTFILE_H
#define TRAINBENCH_TEXTFILE_H

#include "trainbench/status.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The most a JSON file of the suite may hold. */
#define TB_TEXT_FILE_MAX ((size_t)1 << 20)

/* Reads the regular file at path whole into *out (NUL-terminated, malloc'ed; the caller
 * frees), at most max_bytes. `what` names the file in messages ("search space", "study").
 * Fails with TB_ERR_IO for a file that cannot be opened (errno ENOENT: *missing is set true
 * when missing is not NULL) or read, and TB_ERR_INVALID for a directory, a FIFO, a device or
 * socket (never opened for reading, so a FIFO cannot block), an empty file, one over
 * max_bytes, one holding a NUL byte, or one that is not valid UTF-8 (byte offset named). */
tb_status tb_text_file_read(const char *path, const char *what, size_t max_bytes, char **out,
                            bool *missing, tb_error *err);

/* The offset of the first byte of text[0..n) that is not part of valid UTF-8 (overlong
 * forms, surrogates and code points past U+10FFFF are invalid), or -1 when all are valid. */
long tb_utf8_invalid_at(const char *text, size_t n);

/* What a file of this mode that is not a regular one is, for messages: "a FIFO", "a
 * directory", "a socket", "a device" (readers check it before reading: opening a FIFO to read
 * blocks until a writer comes). */
const char *tb_file_kind(mode_t mode);

#ifdef __cplusplus
}
#endif

#endif

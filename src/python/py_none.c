/* py_none.c: Python submissions in a build without the embedded interpreter (TB_WITH_PYTHON
 * off: CMake found no Python 3 development files or no numpy): every call says so. */
#include "bench/pysub.h"

#include <string.h>

#define NO_PYTHON                                                                              \
    "this trainbench was built without Python (install libpython3-dev and python3-numpy, "  \
    "then configure again: see docs/SUBMISSIONS.md)"

bool tb_py_is_spec(const char *spec)
{
    size_t n = spec ? strlen(spec) : 0;
    return n > 3 && strcmp(spec + n - 3, ".py") == 0;
}

tb_status tb_py_probe(const char *path, const char *spec, char *name, size_t cap,
                      char **space, tb_error *err)
{
    (void)path;
    (void)name;
    (void)cap;
    *space = NULL;
    return tb_fail(err, TB_ERR_UNSUPPORTED, "Python submission %s: %s", spec, NO_PYTHON);
}

void tb_py_table(tb_submission *t) { (void)t; }

tb_status tb_py_session_open(const char *path, tb_py_session **out, tb_error *err)
{
    *out = NULL;
    return tb_fail(err, TB_ERR_UNSUPPORTED, "Python submission %s: %s", path, NO_PYTHON);
}

void tb_py_session_close(tb_py_session *s) { (void)s; }
const char *tb_py_session_error(const tb_py_session *s)
{
    (void)s;
    return "";
}

/* score_basis.c: the names of the time bases a trial's time to target is scored in (wall,
 * reference, steps; docs/TIME_TO_RESULT.md "Time bases"). */
#include "trainbench/score.h"

#include <string.h>

static const char *const basis_names[] = {"wall", "reference", "steps"};

const char *tb_time_basis_name(tb_time_basis basis)
{
    return basis >= TB_TIME_WALL && basis <= TB_TIME_STEPS ? basis_names[basis] : "unknown";
}

tb_status tb_time_basis_parse(const char *name, tb_time_basis *out, tb_error *err)
{
    for (int b = TB_TIME_WALL; name && b <= TB_TIME_STEPS; b++)
        if (strcmp(name, basis_names[b]) == 0) {
            *out = (tb_time_basis)b;
            return TB_OK;
        }
    return tb_fail(err, TB_ERR_INVALID, "unknown time basis '%s' (wall, reference or steps)",
                   name ? name : "(null)");
}

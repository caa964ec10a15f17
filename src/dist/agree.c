/* agree.c: every rank leaving a step of a job with the same verdict (see trainbench/dist.h). */
#include "trainbench/dist.h"

#include <stdio.h>

tb_status tb_dist_agree_code(tb_dist *d, tb_status st, int *code, tb_error *err)
{
    if (tb_dist_size(d) == 1) return st;
    /* the maximum over the ranks of: FAILED + status for a failure, else rank 0's code */
    int verdict = st != TB_OK ? TB_DIST_AGREE_FAILED + (int)st
                  : tb_dist_rank(d) == 0 && code ? *code
                                                 : 0;
    tb_error own = {0};
    tb_status mst = tb_dist_max(d, &verdict, &own);
    if (st != TB_OK) return st;
    if (mst != TB_OK) {
        if (err) *err = own;
        return mst;
    }
    if (verdict >= TB_DIST_AGREE_FAILED)
        return tb_fail(err, (tb_status)(verdict - TB_DIST_AGREE_FAILED),
                       "another rank failed (%s; it reports why)",
                       tb_status_name((tb_status)(verdict - TB_DIST_AGREE_FAILED)));
    if (code) *code = verdict;
    return TB_OK;
}

tb_status tb_dist_agree(tb_dist *d, tb_status st, bool *stop, tb_error *err)
{
    int code = stop && *stop;
    st = tb_dist_agree_code(d, st, stop ? &code : NULL, err);
    if (st == TB_OK && stop) *stop = code != 0;
    return st;
}

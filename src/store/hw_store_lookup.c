/* hw_store_lookup.c: reading the hardware tables back: the one-process run that a data-parallel
 * run's scaling efficiency is measured against (`trainbench hw --dist --db`). */
#include "store/store_impl.h"

#include "trainbench/hardware.h"

#include <math.h>

tb_status tb_store_hw_single_rank(tb_store *s, const tb_hw_single_query *qy,
                                  double *examples_per_s, int64_t *run_id, tb_error *err)
{
    *examples_per_s = NAN;
    *run_id = 0;
    tb_status st = tb_store_hw_tables(s, err); /* an older hw_runs gets its world_size */
    if (st != TB_OK) return st;
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(
            s->db,
            "SELECT r.examples_per_s, u.id FROM hw_results r JOIN hw_runs u ON u.id = r.run_id"
            " WHERE u.world_size = 1 AND r.status = 'ok' AND r.device = 'cpu'"
            " AND r.workload = ?1 AND r.algorithm = ?2 AND r.batch_size = ?3 AND r.threads = ?4"
            " AND json_extract(u.machine, '$.cpu') = json_extract(?5, '$.cpu')"
            " AND json_extract(u.machine, '$.threads') = json_extract(?5, '$.threads')"
            " AND u.warmup_steps = ?6 AND u.windows = ?7 AND u.window_steps = ?8"
            " AND u.window_s = ?9 AND u.max_time_s = ?10 AND u.seed = ?11"
            " AND r.examples_per_s > 0 ORDER BY u.id DESC LIMIT 1",
            -1, &q, NULL))
        return tb_store_sql_fail(s, err, "looking up a one-process hardware run");
    sqlite3_bind_text(q, 1, qy->workload, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(q, 2, qy->algorithm, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(q, 3, qy->batch_size);
    sqlite3_bind_int(q, 4, qy->threads);
    sqlite3_bind_text(q, 5, qy->machine, -1, SQLITE_TRANSIENT);
    tb_store_hw_bind_settings(q, 6, qy->settings);
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW) {
        *examples_per_s = sqlite3_column_double(q, 0);
        *run_id = sqlite3_column_int64(q, 1);
    }
    st = rc == SQLITE_ROW || rc == SQLITE_DONE
                       ? TB_OK
                       : tb_store_sql_fail(s, err, "looking up a one-process hardware run");
    sqlite3_finalize(q);
    return st;
}

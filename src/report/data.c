/* data.c: the report's data, one JSON document: every benchmark's part (data_bench.c), the
 * hardware and study runs (data_side.c), and what the page says about where it came from. */
#include "report/report_impl.h"

#include "trainbench/machine.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The benchmarks to report: the one asked for (checked) or every one in the store. */
static tb_status benchmarks(tb_store *store, const tb_report_options *o, cJSON *root,
                            int *n_found, tb_error *err)
{
    char **names = NULL;
    int n = 0;
    tb_status st = TB_OK;
    if (!o->benchmark) st = tb_store_benchmarks(store, &names, &n, err);
    cJSON *list = cJSON_AddArrayToObject(root, "benchmarks");
    *n_found = 0;
    for (int i = 0; st == TB_OK && i < (o->benchmark ? 1 : n); i++) {
        const char *name = o->benchmark ? o->benchmark : names[i];
        tb_trial_record *tr;
        int n_tr = 0;
        st = tb_store_trials(store, name, &tr, &n_tr, err);
        free(tr);
        if (st != TB_OK) break;
        if (n_tr == 0 && !o->benchmark) continue; /* planned as a name only */
        cJSON *b;
        st = tb_report_bench_json(store, name, &b, err);
        if (st == TB_OK) {
            cJSON_AddItemToArray(list, b);
            (*n_found)++;
        }
    }
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
    return st;
}

tb_status tb_report_data(tb_store *store, const tb_report_options *options, char **json,
                         tb_error *err)
{
    if (!store || !json)
        return tb_fail(err, TB_ERR_INVALID, "report_data: %s is NULL", store ? "json" : "store");
    *json = NULL;
    tb_report_options none = {0};
    const tb_report_options *o = options ? options : &none;
    cJSON *root = cJSON_CreateObject();
    if (!root) return tb_fail(err, TB_ERR_NOMEM, "report: out of memory");
    cJSON_AddStringToObject(root, "store", o->store_name ? o->store_name : "results store");
    char when[32];
    time_t now = time(NULL);
    struct tm utc;
    strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", gmtime_r(&now, &utc));
    cJSON_AddStringToObject(root, "generated", when);
    cJSON_AddStringToObject(root, "code_version", tb_code_version());
    int n_bench = 0, n_side = 0;
    tb_status st = benchmarks(store, o, root, &n_bench, err);
    if (st == TB_OK && !o->benchmark) st = tb_report_side_json(store, root, &n_side, err);
    if (st == TB_OK && n_bench == 0 && n_side == 0)
        st = tb_fail(err, TB_ERR_INVALID, "the results store holds nothing to report: no "
                     "trials, hardware runs or study runs (fill it with `trainbench bench`, "
                     "`trainbench hw --db` or `trainbench study --db`)");
    if (st == TB_OK) {
        *json = cJSON_PrintUnformatted(root);
        if (!*json) st = tb_fail(err, TB_ERR_NOMEM, "report: out of memory");
    }
    cJSON_Delete(root);
    return st;
}

tb_status tb_report_build(tb_store *store, const tb_report_options *options, const char *path,
                          tb_error *err)
{
    char *json;
    tb_status st = tb_report_data(store, options, &json, err);
    if (st != TB_OK) return st;
    st = tb_report_write_html(json, options, path, err);
    free(json);
    return st;
}

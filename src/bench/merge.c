/* merge.c: joining the stores of a benchmark's shards (`bench --shard I/N`, each run by an
 * independent process such as a job array's task) into one store: tb_store_merge_benchmark
 * under the target's lock of the benchmark, so that a merge never meets a run of it. */
#include "bench/bench_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The benchmark to merge: name, or the only one src holds. */
static tb_status pick_name(tb_store *src, const char *src_path, const char *name, char *out,
                           size_t cap, tb_error *err)
{
    if (name) {
        if (!name[0] || strlen(name) >= cap)
            return tb_fail(err, TB_ERR_INVALID, "benchmark name '%s': a benchmark's name is 1 "
                           "to %zu characters", name, cap - 1);
        snprintf(out, cap, "%s", name);
        return TB_OK;
    }
    char **names = NULL;
    int n = 0;
    tb_status st = tb_store_benchmarks(src, &names, &n, err);
    if (st == TB_OK && n == 1) snprintf(out, cap, "%s", names[0]);
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
    if (st != TB_OK || n == 1) return st;
    char list[512];
    tb_store_benchmark_list(src, list, sizeof list);
    return n == 0 ? tb_fail(err, TB_ERR_INVALID, "results store %s holds no benchmark: nothing "
                            "to merge", src_path)
                  : tb_fail(err, TB_ERR_INVALID, "results store %s holds %d benchmarks (%s): "
                            "name the one to merge", src_path, n, list);
}

static bool same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

tb_status tb_bench_merge(const char *dst_path, const char *src_path, const char *name,
                         char *merged_name, size_t cap, tb_store_merge_counts *counts,
                         tb_error *err)
{
    if (!dst_path || !src_path || !counts)
        return tb_fail(err, TB_ERR_INVALID, "bench_merge: %s is NULL",
                       !dst_path ? "the target's path" : !src_path ? "the source's path"
                                                                   : "counts");
    memset(counts, 0, sizeof *counts);
    if (merged_name && cap) merged_name[0] = 0;
    if (same_file(dst_path, src_path))
        return tb_fail(err, TB_ERR_INVALID, "%s and %s are one file: merge a shard's store into "
                       "another store", src_path, dst_path);
    tb_store *src = NULL, *dst = NULL;
    char bench[64] = "";
    tb_status st = tb_store_open_readonly(src_path, &src, err);
    if (st == TB_OK) st = pick_name(src, src_path, name, bench, sizeof bench, err);
    if (st == TB_OK) st = tb_store_open(dst_path, &dst, err);
    int lock_fd = -1;
    if (st == TB_OK) st = tb_bench_lock(dst_path, bench, &lock_fd, err);
    if (st == TB_OK) st = tb_store_merge_benchmark(dst, src, bench, counts, err);
    if (lock_fd >= 0) close(lock_fd);
    tb_store_close(dst);
    tb_store_close(src);
    if (st == TB_OK && merged_name && cap) snprintf(merged_name, cap, "%s", bench);
    return st;
}

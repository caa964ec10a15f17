/* workload.c: the registry of workloads and variants, creating and destroying a workload, its
 * layers for curvature methods, and `prepare` of its data cache. */
#include "workloads/workload_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const tb_workload_vtable *const registry[] = {
    &tb_workload_fmnist_mlp,          &tb_workload_fmnist_mlp_tanh,
    &tb_workload_fmnist_mlp_narrow,     &tb_workload_fmnist_cnn,
    &tb_workload_fmnist_cnn_silu,     &tb_workload_fmnist_cnn_nonorm,
    &tb_workload_fmnist_autoencoder,  &tb_workload_fmnist_autoencoder_relu,
    &tb_workload_fmnist_autoencoder_mse, &tb_workload_kjv_transformer,
    &tb_workload_kjv_transformer_relu, &tb_workload_kjv_transformer_deep,
    &tb_workload_wordnet_sparse,      &tb_workload_wordnet_sparse_wide,
    &tb_workload_wordnet_sparse_tanh,  &tb_workload_fmnist_mlp_dropout,
    &tb_workload_fmnist_mlp_dropout_random, &tb_workload_fmnist_mlp_projected,
    &tb_workload_fmnist_cnn_dropout,
    &tb_workload_wordnet_sparse_sq_naive, &tb_workload_wordnet_sparse_sq_exact,
    &tb_workload_wordnet_sparse_sph_naive, &tb_workload_wordnet_sparse_sph_exact,
    &tb_workload_wordnet_sparse_sq_naive_54k, &tb_workload_wordnet_sparse_sq_exact_54k,
    &tb_workload_wordnet_sparse_sph_naive_54k, &tb_workload_wordnet_sparse_sph_exact_54k,
    &tb_workload_wordnet_sparse_sq_naive_lemma, &tb_workload_wordnet_sparse_sq_exact_lemma,
    &tb_workload_wordnet_sparse_sph_naive_lemma, &tb_workload_wordnet_sparse_sph_exact_lemma,
};
#define N_REGISTRY ((int)(sizeof registry / sizeof *registry))

const char *tb_split_name(tb_split split)
{
    switch (split) {
    case TB_SPLIT_TRAIN: return "train";
    case TB_SPLIT_VALIDATION: return "validation";
    case TB_SPLIT_TEST: return "test";
    }
    return "unknown";
}

const char *tb_split_kind_name(tb_split_kind kind)
{
    return kind == TB_SPLITS_BOOTSTRAP ? "bootstrap" : "official";
}

tb_status tb_split_kind_parse(const char *name, tb_split_kind *out, tb_error *err)
{
    if (!name || !out)
        return tb_fail(err, TB_ERR_INVALID, "split_kind_parse: %s is NULL", name ? "out" : "name");
    if (strcmp(name, "official") == 0) *out = TB_SPLITS_OFFICIAL;
    else if (strcmp(name, "bootstrap") == 0) *out = TB_SPLITS_BOOTSTRAP;
    else
        return tb_fail(err, TB_ERR_INVALID,
                       "unknown split kind '%s' (known: official, bootstrap)", name);
    return TB_OK;
}

int tb_workload_count(void) { return N_REGISTRY; }

const tb_workload_info *tb_workload_info_at(int i)
{
    return i >= 0 && i < N_REGISTRY ? &registry[i]->info : NULL;
}

static const tb_workload_vtable *find(const char *id, tb_error *err)
{
    if (!id) {
        tb_fail(err, TB_ERR_INVALID, "workload: the id is NULL");
        return NULL;
    }
    for (int i = 0; i < N_REGISTRY; i++)
        if (strcmp(registry[i]->info.id, id) == 0) return registry[i];
    char known[512] = "";
    for (int i = 0; i < N_REGISTRY; i++) {
        strncat(known, i ? ", " : "", sizeof known - strlen(known) - 1);
        strncat(known, registry[i]->info.id, sizeof known - strlen(known) - 1);
    }
    tb_fail(err, TB_ERR_INVALID, "unknown workload '%s' (known: %s)", id, known);
    return NULL;
}

const tb_workload_info *tb_workload_find_info(const char *id)
{
    const tb_workload_vtable *vt = find(id, NULL);
    return vt ? &vt->info : NULL;
}

bool tb_workload_has_dropout(const char *id)
{
    const tb_workload_vtable *vt = find(id, NULL);
    return vt && vt->dropout_rate > 0;
}

bool tb_workload_vt_smooths(const tb_workload_vtable *vt)
{
    return vt && (!vt->loss || vt->xent_loss);
}

bool tb_workload_has_label_smoothing(const char *id)
{
    return tb_workload_vt_smooths(find(id, NULL));
}

/* Sets wl->label_smoothing from the config, refusing a value outside [0, 1) and one for a
 * workload whose loss is not softmax cross-entropy against labels. */
static tb_status set_label_smoothing(tb_workload *wl, double s, tb_error *err)
{
    const tb_workload_vtable *vt = wl->vt;
    if (!(s >= 0.0 && s < 1.0))
        return tb_fail(err, TB_ERR_INVALID, "%s: label_smoothing = %g is outside [0, 1)",
                       vt->info.id, s);
    if (s > 0.0 && !tb_workload_vt_smooths(vt))
        return tb_fail(err, TB_ERR_UNSUPPORTED,
                       "%s has no label smoothing (label_smoothing = %g): its loss is not "
                       "softmax cross-entropy against class labels",
                       vt->info.id, s);
    wl->label_smoothing = (float)s;
    return TB_OK;
}

const char *tb_workload_variant_of(const tb_workload_info *w)
{
    return w && w->variant && w->variant[0] ? w->base : NULL;
}

tb_status tb_workload_create(const char *id, tb_backend *be, const tb_workload_config *config,
                             tb_workload **out, tb_error *err)
{
    const tb_workload_vtable *vt = find(id, err);
    if (!vt) return TB_ERR_INVALID;
    if (!be || !out)
        return tb_fail(err, TB_ERR_INVALID, "workload_create: %s is NULL",
                       be ? "out" : "the backend");
    tb_workload_config cfg = {0};
    if (config) cfg = *config;
    tb_workload *wl = calloc(1, sizeof *wl);
    if (!wl) return tb_fail(err, TB_ERR_NOMEM, "cannot allocate workload %s", id);
    wl->vt = vt;
    wl->be = be;
    wl->width_scale = cfg.width_scale > 1 ? cfg.width_scale : 1;
    wl->depth_scale = cfg.depth_scale > 1 ? cfg.depth_scale : 1;
    tb_status st = TB_OK;
    if (cfg.width_scale < 0 || cfg.depth_scale < 0)
        st = tb_fail(err, TB_ERR_INVALID, "%s: width and depth scales must be >= 1 (got %d, %d)",
                     id, cfg.width_scale, cfg.depth_scale);
    else if ((wl->width_scale > 1 || wl->depth_scale > 1) && !vt->scalable)
        st = tb_fail(err, TB_ERR_UNSUPPORTED,
                     "%s has no scaled model (width and depth scales are for kjv_transformer and "
                     "its variants)", id);
    if (st == TB_OK) st = tb_workload_set_dropout(wl, (float)cfg.dropout_rate, err);
    if (st == TB_OK) st = set_label_smoothing(wl, cfg.label_smoothing, err);
    if (st == TB_OK) st = vt->load_data(wl, &cfg, err);
    if (st == TB_OK) st = tb_workload_draw_splits(wl, &cfg, err);
    if (st == TB_OK) st = tb_params_create(be, &wl->params, err);
    if (st == TB_OK) st = vt->create_model(wl, err);
    if (st == TB_OK) st = tb_params_finalize(wl->params, err);
    if (st != TB_OK) {
        tb_workload_destroy(wl);
        return st;
    }
    *out = wl;
    return TB_OK;
}

void tb_workload_destroy(tb_workload *wl)
{
    if (!wl) return;
    if (wl->model && wl->vt->destroy_model) wl->vt->destroy_model(wl);
    tb_params_destroy(wl->params);
    tb_example_source_free(&wl->src);
    for (int i = 0; i < 3; i++) free(wl->split_ids[i]);
    free(wl->stage_x);
    free(wl->stage_y);
    free(wl);
}

const tb_workload_info *tb_workload_get_info(const tb_workload *wl)
{
    return wl ? &wl->vt->info : NULL;
}
tb_params *tb_workload_params(tb_workload *wl) { return wl ? wl->params : NULL; }

int64_t tb_workload_size(const tb_workload *wl, tb_split split)
{
    return wl && split >= 0 && split <= 2 ? wl->split_n[split] : 0;
}

tb_status tb_workload_init(tb_workload *wl, tb_rng *rng, tb_error *err)
{
    if (!wl || !rng)
        return tb_fail(err, TB_ERR_INVALID, "workload_init: %s is NULL",
                       wl ? "rng" : "the workload");
    return wl->vt->init_model(wl, rng, err);
}

tb_example_layout tb_workload_layout(const tb_workload *wl)
{
    return wl ? wl->src.layout : (tb_example_layout){0};
}

tb_status tb_workload_add_layer(tb_workload *wl, tb_layer_kind kind, const char *name,
                                void *layer, tb_error *err)
{
    if (wl->n_layers == TB_WORKLOAD_MAX_LAYERS)
        return tb_fail(err, TB_ERR_INTERNAL, "more than %d layers in %s",
                       TB_WORKLOAD_MAX_LAYERS, wl->vt->info.id);
    int i = wl->n_layers++;
    snprintf(wl->layer_names[i], sizeof wl->layer_names[i], "%s", name);
    wl->layers[i] = (tb_layer_ref){kind, wl->layer_names[i],
                                   kind == TB_LAYER_LINEAR ? layer : NULL,
                                   kind == TB_LAYER_CONV ? layer : NULL};
    return TB_OK;
}

int tb_workload_layers(tb_workload *wl, tb_layer_ref *out, int max)
{
    if (!wl) return 0;
    for (int i = 0; out && i < wl->n_layers && i < max; i++) out[i] = wl->layers[i];
    return wl->n_layers;
}

tb_status tb_workload_prepare(const char *id, const tb_workload_config *config, bool force,
                              tb_prepare_report *report, tb_error *err)
{
    const tb_workload_vtable *vt = find(id, err);
    if (!vt) return TB_ERR_INVALID;
    tb_workload_config cfg = {0};
    if (config) cfg = *config;
    tb_prepare_report r;
    memset(&r, 0, sizeof r);
    tb_status st = vt->prepare(cfg.data_dir, cfg.cache_dir, force, &r, err);
    if (report) *report = r;
    return st;
}

tb_status tb_init_linear_default(tb_linear_layer *l, tb_rng *rng, tb_error *err)
{
    int64_t fan_in = l->w->value.shape[1];
    tb_status st = tb_init_fan_in_uniform(l->w, fan_in, rng, err);
    if (st == TB_OK && l->b) st = tb_init_fan_in_uniform(l->b, fan_in, rng, err);
    return st;
}

tb_status tb_init_conv_default(tb_conv_layer *l, tb_rng *rng, tb_error *err)
{
    const int64_t *s = l->w->value.shape;
    int64_t fan_in = s[1] * s[2] * s[3];
    tb_status st = tb_init_fan_in_uniform(l->w, fan_in, rng, err);
    if (st == TB_OK && l->b) st = tb_init_fan_in_uniform(l->b, fan_in, rng, err);
    return st;
}

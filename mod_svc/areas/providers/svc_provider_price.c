/*
 * svc_provider_price.c: what models cost (svc_providers.h): the operator's
 * SvcModelPrice entries and the table shipped with the service, for the
 * pipeline's estimates and the billing area's usage and budgets.
 */
#include "svc_providers.h"

#include <stdlib.h>
#include <string.h>

/*
 * Prices in US dollars per million tokens (input, output), as the
 * providers published them for their standard APIs in 2025. They change:
 * operators check them and set SvcModelPrice for what differs, or for
 * models not here (docs/api/pipeline.md).
 */
static const struct {
    const char *model;
    double in, out;
} shipped[] = {
    { "gpt-4o", 2.50, 10.00 },
    { "gpt-4o-mini", 0.15, 0.60 },
    { "gpt-4.1", 2.00, 8.00 },
    { "gpt-4.1-mini", 0.40, 1.60 },
    { "gpt-4.1-nano", 0.10, 0.40 },
    { "gpt-4-turbo", 10.00, 30.00 },
    { "o1", 15.00, 60.00 },
    { "o1-mini", 1.10, 4.40 },
    { "o3", 2.00, 8.00 },
    { "o3-mini", 1.10, 4.40 },
    { "o4-mini", 1.10, 4.40 },
    { "claude-3-haiku", 0.25, 1.25 },
    { "claude-3-opus", 15.00, 75.00 },
    { "claude-3-5-haiku", 0.80, 4.00 },
    { "claude-3-5-sonnet", 3.00, 15.00 },
    { "claude-3-7-sonnet", 3.00, 15.00 },
    { "claude-sonnet-4", 3.00, 15.00 },
    { "claude-opus-4", 15.00, 75.00 },
    { NULL, 0, 0 }
};

/* How well `entry` names `model`: 0 not at all, else the better the higher. */
static apr_size_t match(const char *entry, const char *model)
{
    apr_size_t n = strlen(entry);

    if (strcmp(entry, model) == 0) {
        return (apr_size_t)-1;
    }
    return strncmp(entry, model, n) == 0 && model[n] == '-' ? n : 0;
}

int svc_price_of(const svc_config_t *conf, const char *model, svc_price_t *pp)
{
    apr_size_t best = 0, m;
    int i;

    if (!model) {
        return 0;
    }
    for (i = 0; conf->model_prices && i < conf->model_prices->nelts; i++) {
        const svc_model_price_t *e = &APR_ARRAY_IDX(conf->model_prices, i, svc_model_price_t);
        if ((m = match(e->model, model)) > best) {
            best = m;
            pp->entry = e->model;
            pp->input_per_mtok = e->input_per_mtok;
            pp->output_per_mtok = e->output_per_mtok;
            pp->source = "SvcModelPrice";
        }
    }
    /* The table's entry only where it names the model better: an operator's
     * price for gpt-4o is not gpt-4o-mini's. */
    for (i = 0; shipped[i].model; i++) {
        if ((m = match(shipped[i].model, model)) > best) {
            best = m;
            pp->entry = shipped[i].model;
            pp->input_per_mtok = shipped[i].in;
            pp->output_per_mtok = shipped[i].out;
            pp->source = "the shipped table";
        }
    }
    return best != 0;
}

const char *svc_price_table_json(apr_pool_t *p, const svc_config_t *conf)
{
    json_t *all = json_array();
    const char *text;
    char *dumped;
    int i;

    for (i = 0; conf->model_prices && i < conf->model_prices->nelts; i++) {
        const svc_model_price_t *e = &APR_ARRAY_IDX(conf->model_prices, i, svc_model_price_t);
        json_array_append_new(all, json_pack("{s:s,s:f,s:f,s:i}", "entry", e->model, "input",
                                             e->input_per_mtok, "output", e->output_per_mtok,
                                             "rank", 0));
    }
    for (i = 0; shipped[i].model; i++) {
        json_array_append_new(all, json_pack("{s:s,s:f,s:f,s:i}", "entry", shipped[i].model,
                                             "input", shipped[i].in, "output", shipped[i].out,
                                             "rank", 1));
    }
    /* Twelve significant digits: a price of 0.15 reaches SQL as 0.15, not
     * as the nearest double written out in full. */
    dumped = json_dumps(all, JSON_COMPACT | JSON_REAL_PRECISION(12));
    json_decref(all);
    text = apr_pstrdup(p, dumped ? dumped : "[]");
    free(dumped);
    return text;
}

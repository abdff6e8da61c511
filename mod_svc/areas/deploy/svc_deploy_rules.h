/*
 * svc_deploy_rules.h: the deploy area's rules, without I/O: statuses and
 * which action each allows, the enrollment key's shape, and the plan: from
 * a Procfile, or from a model's reply, checked.
 */
#ifndef SVC_DEPLOY_RULES_H
#define SVC_DEPLOY_RULES_H

#include "svc_deploy.h"

/* An enrollment key: svc_dek_ + 43 base62 + a 6-character checksum. */
#define SVC_DEK_PREFIX "svc_dek_"
/* What is kept to show a key: its first characters. */
#define SVC_DEK_HINT_LEN 12

/* A deployment's statuses (docs/api/deployments.md has the diagram). */
#define DS_PLANNING     "planning"
#define DS_PLANNED      "planned"
#define DS_PLAN_FAILED  "plan_failed"
#define DS_DEPLOYING    "deploying"
#define DS_RUNNING      "running"
#define DS_FAILED       "failed"
#define DS_STOPPING     "stopping"
#define DS_STOPPED      "stopped"
#define DS_TEARING_DOWN "tearing_down"
#define DS_TORN_DOWN    "torn_down"
#define DS_SEPARATING   "separating"
#define DS_SEPARATED    "separated"

/* The actions a user takes on a deployment. */
typedef enum {
    DA_APPROVE, DA_REPLAN, DA_STOP, DA_START, DA_SCALE, DA_TEARDOWN, DA_SEPARATE
} svc_deploy_action_e;

const char *svc_deploy_action_name(svc_deploy_action_e a);

/* Whether the action may be taken in `status`. */
int svc_deploy_action_allowed(svc_deploy_action_e a, const char *status);

/* The statuses the action may be taken in, for a refusal ("planned"). */
const char *svc_deploy_action_from(apr_pool_t *p, svc_deploy_action_e a);

/* A plan's bounds. */
#define PLAN_COMMAND_MAX    1000
#define PLAN_HEALTH_MAX     200
#define PLAN_NOTES_MAX      2000
#define PLAN_REPLICAS_MAX   10
#define PLAN_MEMORY_MIN     64
#define PLAN_MEMORY_MAX     65536
#define PLAN_MEMORY_DEFAULT 512

/*
 * The command of a Procfile's web process: the line "web: <command>"
 * (leading blanks allowed, comments and other processes ignored). NULL
 * when there is none, or its command is empty, too long, or holds a
 * control character.
 */
const char *svc_deploy_procfile_web(apr_pool_t *p, const char *procfile);

/* A plan for that command: one replica, health checked at "/". */
json_t *svc_deploy_plan_procfile(const char *command);

/*
 * The plan in a model's reply (a JSON object of command, health_path,
 * replicas, memory_mb, notes; port_env may only be PORT): NULL when it is
 * not that, with *pwhy saying what is wrong.
 */
json_t *svc_deploy_plan_reply(apr_pool_t *p, const char *reply, const char **pwhy);

/* The files a plan is made from, besides the list of every file. */
extern const char *const svc_deploy_build_files[];
/* Largest build file passed to the model, and most paths listed. */
#define PLAN_FILE_MAX   (32 * 1024)
#define PLAN_LIST_MAX   500

/* What the model is told, and asked (the artifact's files and contents). */
extern const char svc_deploy_plan_system[];
const char *svc_deploy_plan_prompt(apr_pool_t *p, const apr_array_header_t *files,
                                   apr_hash_t *contents);

#endif /* SVC_DEPLOY_RULES_H */

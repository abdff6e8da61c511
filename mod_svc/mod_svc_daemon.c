/*
 * mod_svc_daemon.c: the run supervisor as a process of httpd (its
 * SvcRun* directives are mod_svc_config.c's).
 *
 * As mod_cgid does with its daemon, httpd's parent forks the supervisor
 * once the configuration is read (not on the pre-config pass), registers it
 * as an "other child" so the MPM tells us when it dies (we start it again,
 * unless httpd is stopping), and lets pconf's cleanup end it on restart and
 * stop (SIGTERM, then SIGKILL three seconds later). The child closes the
 * listeners, makes its work directory while it may still be root, drops to
 * httpd's User and Group, and runs the supervisor of the runs area
 * (svc_supervisor_run), which needs nothing of httpd.
 */
#include "mod_svc_glue.h"
#include "svc_deploy.h"

#include <http_core.h>
#include <http_log.h>
#include <ap_listen.h>
#include <ap_mpm.h>
#include <mpm_common.h>
#include <unixd.h>
#include <apr_signal.h>
#include <apr_strings.h>
#include <apr_thread_proc.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

APLOG_USE_MODULE(svc);

/* Exit status of a supervisor that cannot work at all (bad work directory):
 * not started again until httpd restarts. Never 3 or 15, which mean
 * something to the MPM (APEXIT_CHILDSICK, APEXIT_CHILDFATAL), and above
 * the signal numbers, since the MPM reports an exit status and a signal in
 * the same int (EX_CONFIG). */
#define SUP_EXIT_SETUP 78

#define SUP_PIDFILE "svc-supervisor.pid"

static volatile sig_atomic_t sup_stop;

/* The generation's configuration, for restarts from the MPM's callback. */
static server_rec *sup_server;
static apr_pool_t *sup_pconf;
static apr_time_t sup_started;
static int sup_quick_deaths;

static void sup_log(void *baton, int level, const char *msg)
{
    ap_log_error(APLOG_MARK, level, 0, baton, "%s", msg);
}

static void sup_signal(int sig)
{
    (void)sig;
    sup_stop = 1;
}

/* The deploy area's planner, on a thread beside the supervisor's. */
static void *APR_THREAD_FUNC planner_main(apr_thread_t *thd, void *data)
{
    const svc_supervisor_conf_t *sup = data;
    apr_pool_t *p;

    apr_pool_create(&p, NULL);
    svc_deploy_planner_run(sup, &sup_stop, p);
    apr_pool_destroy(p);
    return NULL;
}

/*
 * The work directory must belong to the user the supervisor runs as: made
 * (and handed over) here, while the process may still be root. Parents it
 * makes are 0755 (root's, like /var/lib's other directories), or httpd's
 * user could not reach the directory handed to it; the directory itself is
 * 0700 (usable_work_dir in the runs area insists).
 */
static int make_work_dir(const char *dir, server_rec *s, apr_pool_t *p)
{
    apr_status_t rv = apr_dir_make_recursive(dir, APR_FPROT_UREAD | APR_FPROT_UWRITE
                                             | APR_FPROT_UEXECUTE | APR_FPROT_GREAD
                                             | APR_FPROT_GEXECUTE | APR_FPROT_WREAD
                                             | APR_FPROT_WEXECUTE, p);
    struct stat st;

    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, rv, s, "SVC0060: run supervisor: cannot create "
                     "SvcRunWorkDir %s", dir);
        return -1;
    }
    if (geteuid() == 0 && chown(dir, ap_unixd_config.user_id, ap_unixd_config.group_id) < 0) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, errno, s, "SVC0300: run supervisor: cannot hand "
                     "SvcRunWorkDir %s to httpd's user", dir);
        return -1;
    }
    if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, errno, s, "SVC0301: run supervisor: SvcRunWorkDir "
                     "%s is not a directory", dir);
        return -1;
    }
    if ((st.st_mode & (S_IRWXG | S_IRWXO)) && chmod(dir, S_IRWXU) < 0) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, errno, s, "SVC0302: run supervisor: cannot make "
                     "SvcRunWorkDir %s private (0700)", dir);
        return -1;
    }
    return 0;
}

static void write_pidfile(apr_pool_t *p)
{
    const char *path = ap_runtime_dir_relative(p, SUP_PIDFILE);
    FILE *f;

    if (path && (f = fopen(path, "w")) != NULL) {
        fprintf(f, "%ld\n", (long)getpid());
        fclose(f);
    }
}

/* The child: becomes the supervisor and never returns. */
static void supervisor_main(server_rec *s, apr_pool_t *pconf, int backoff)
{
    svc_server_conf *sc = ap_get_module_config(s->module_config, &svc_module);
    svc_supervisor_conf_t sup = sc->sup;
    apr_thread_t *planner = NULL;
    apr_status_t trv;
    apr_pool_t *p;
    sigset_t none;
    int rc, i;

    apr_pool_create(&p, pconf);
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    apr_signal(SIGTERM, sup_signal);
    apr_signal(SIGINT, sup_signal);
    apr_signal(SIGHUP, sup_signal);
    apr_signal(AP_SIG_GRACEFUL, sup_signal);
    apr_signal(SIGCHLD, SIG_DFL);
    apr_signal(SIGPIPE, SIG_IGN);
    /* `pgrep svc-supervisor` finds it; its argv is httpd's. */
    prctl(PR_SET_NAME, "svc-supervisor", 0, 0, 0);
    ap_close_listeners();

    if (make_work_dir(sup.work_dir, s, p) < 0) {
        exit(SUP_EXIT_SETUP);
    }
    write_pidfile(p);
    if (ap_run_drop_privileges(p, s) != 0) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, 0, s, "SVC0061: run supervisor: cannot switch "
                     "to httpd's user");
        exit(SUP_EXIT_SETUP);
    }
    /* A supervisor that keeps dying young waits before it tries again. */
    for (i = 0; i < backoff * 10 && !sup_stop; i++) {
        apr_sleep(apr_time_from_msec(100));
    }
    sup.conninfo = sc->db_conninfo;
    sup.statement_timeout_ms = sc->core.statement_timeout_ms;
    sup.conf = &sc->core;
    sup.log = sup_log;
    sup.log_baton = s;
    /* Deployments are planned in this process too: it has the sandbox
     * that reads an artifact, and the providers' configuration. */
    if (!sup_stop && apr_thread_create(&planner, NULL, planner_main, &sup, p) != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, s, "SVC0606: the deployment planner cannot "
                     "start; deployments stay in planning until the supervisor restarts");
        planner = NULL;
    }
    rc = sup_stop ? 0 : svc_supervisor_run(&sup, &sup_stop, p);
    if (planner) {
        /* The supervisor returns once stopped (or unable to work): so does the planner. */
        sup_stop = 1;
        apr_thread_join(&trv, planner);
    }
    exit(rc ? SUP_EXIT_SETUP : 0);
}

static void spawn(apr_proc_t *proc);

static void maint(int reason, void *data, apr_wait_t status)
{
    apr_proc_t *proc = data;
    int state = AP_MPMQ_STOPPING;

    switch (reason) {
    case APR_OC_REASON_DEATH:
        apr_proc_other_child_unregister(data);
        if (ap_mpm_query(AP_MPMQ_MPM_STATE, &state) != APR_SUCCESS
            || state == AP_MPMQ_STOPPING) {
            break;
        }
        if (status == SUP_EXIT_SETUP) {
            ap_log_error(APLOG_MARK, APLOG_CRIT, 0, sup_server, "SVC0062: the run supervisor "
                         "could not start (see above); runs stay queued until httpd "
                         "restarts");
            break;
        }
        sup_quick_deaths = apr_time_now() - sup_started < apr_time_from_sec(30)
                           ? sup_quick_deaths + 1 : 0;
        /* The MPM passes the exit status, or the signal's number. */
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, sup_server, "SVC0063: the run supervisor "
                     "(pid %ld) ended (exit status or signal %d); starting it again",
                     (long)proc->pid, (int)status);
        spawn(proc);
        break;
    case APR_OC_REASON_LOST:
        apr_proc_other_child_unregister(data);
        spawn(proc);
        break;
    case APR_OC_REASON_RESTART:
        /* httpd restarts: pconf's cleanup ends the supervisor. */
        apr_proc_other_child_unregister(data);
        break;
    case APR_OC_REASON_UNREGISTER:
        /* pconf is being cleared: make sure it stops (the cleanup that
         * apr_pool_note_subprocess registered waits for it). */
        kill(proc->pid, SIGTERM);
        break;
    default:
        break;
    }
}

static void spawn(apr_proc_t *proc)
{
    int backoff = sup_quick_deaths > 6 ? 60 : (sup_quick_deaths ? 1 << sup_quick_deaths : 0);
    pid_t pid;

    sup_started = apr_time_now();
    pid = fork();
    if (pid < 0) {
        ap_log_error(APLOG_MARK, APLOG_ERR, errno, sup_server, "SVC0064: cannot fork the run "
                     "supervisor; runs stay queued until httpd restarts");
        return;
    }
    if (pid == 0) {
        supervisor_main(sup_server, sup_pconf, backoff);
    }
    proc->pid = pid;
    proc->in = proc->out = proc->err = NULL;
    apr_pool_note_subprocess(sup_pconf, proc, APR_KILL_AFTER_TIMEOUT);
    apr_proc_other_child_register(proc, maint, proc, NULL, sup_pconf);
    ap_log_error(APLOG_MARK, APLOG_INFO, 0, sup_server, "SVC0065: run supervisor started "
                 "(pid %ld)", (long)pid);
}

void svc_supervisor_start(apr_pool_t *pconf, server_rec *s)
{
    svc_server_conf *sc = ap_get_module_config(s->module_config, &svc_module);
    apr_proc_t *proc;

    if (ap_state_query(AP_SQ_MAIN_STATE) == AP_SQ_MS_CREATE_PRE_CONFIG) {
        return;
    }
    if (sc->sup_off) {
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, s, "SVC0066: SvcRunSupervisor Off: this "
                     "server starts no runs; other nodes carry out the queued ones");
        return;
    }
    if (!sc->db_conninfo) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s, "SVC0067: no DBDParams in the main "
                     "server: the run supervisor does not start");
        return;
    }
    if (sc->core.shared) {
        /* Readiness expects a heartbeat from here on (svc_shared.h). */
        apr_atomic_set32(&sc->core.shared->sup_lease, (apr_uint32_t)sc->sup.lease_seconds);
        apr_atomic_set32(&sc->core.shared->sup_expected, 1);
    }
    sup_server = s;
    sup_pconf = pconf;
    sup_quick_deaths = 0;
    proc = apr_pcalloc(pconf, sizeof(*proc));
    spawn(proc);
}

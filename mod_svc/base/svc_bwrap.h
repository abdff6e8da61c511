/*
 * svc_bwrap.h: the start of a bubblewrap command line, the same for every
 * sandbox the service makes: a run's (areas/runs/svc_sandbox.c) and a
 * deployment's on a deploy target (agent/svc_agent_work.c). Plain C with
 * libc only, so the deploy agent, a program that carries nothing of the
 * service, compiles this one file too (agent/agent.mk).
 */
#ifndef SVC_BWRAP_H
#define SVC_BWRAP_H

/* Appends one argument to the caller's argv; `arg` may be a temporary, so
 * an argv that keeps it copies it. */
typedef void svc_bwrap_push_fn(void *argv, const char *arg);

/*
 * `bwrap` and its first options: new namespaces of every kind but the
 * network's where share_net is set, gone with its parent, a session of its
 * own; /usr and the system's top-level directories read-only (as the
 * symlinks they are on merged-/usr systems, else bound); each of etc_files
 * (NULL-terminated, may be NULL) read-only where it exists; a fresh /proc,
 * /dev and /tmp. The caller goes on with what it binds and its environment.
 */
void svc_bwrap_system(svc_bwrap_push_fn *push, void *argv, const char *bwrap, int share_net,
                      const char *const *etc_files);

/* A cleared environment but for PATH, HOME (`home`) and LANG C.UTF-8. */
void svc_bwrap_env(svc_bwrap_push_fn *push, void *argv, const char *home);

#endif /* SVC_BWRAP_H */

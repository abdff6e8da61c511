-- 012_run_repository: the existing repository a run works on (issue 12,
-- docs/api/runs.md). Taken from the project's link (vcs_project_repos) when
-- the run is queued and kept on the run, so the init step clones what the
-- run was started on even if the link changes or goes meanwhile; an
-- installation unlinked or suspended by then fails the run with
-- installation_suspended rather than turning it into a greenfield run.
-- NULL for a greenfield run. No foreign key to vcs_installations: a run
-- outlives what happens to the installation record.
-- (011 is the pipeline's: the numbers are taken in the order the branches
-- were started, and are applied in order.)

ALTER TABLE runs
    ADD COLUMN repository text
        CHECK (repository ~ '^[A-Za-z0-9-]{1,100}/[A-Za-z0-9._-]{1,100}$'),
    ADD COLUMN repo_installation_id bigint CHECK (repo_installation_id > 0),
    ADD CONSTRAINT runs_repository_pair
        CHECK ((repository IS NULL) = (repo_installation_id IS NULL));

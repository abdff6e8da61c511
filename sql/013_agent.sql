-- 013_agent: the factory as an agent (issue 19, docs/api/runs.md).
--
-- A provider's `tools` setting: whether runs let its model work with tools
-- (the agent loop) or ask it for one answer with every file (single mode,
-- for servers that cannot call tools). 'auto' follows what the provider
-- test found (tools_detected; NULL until a test tried).
--
-- A run keeps the limits of the server it was started through, as it keeps
-- its SvcRunTimeout: SvcRunMaxSteps, SvcRunMaxTokens, SvcRunCommandTimeout.
--
-- A run stopped at its step limit or its token budget has its work so far
-- committed: such a failed run has a result (and an artifact) too.

ALTER TABLE llm_providers
    ADD COLUMN tools text NOT NULL DEFAULT 'auto' CHECK (tools IN ('auto', 'on', 'off')),
    ADD COLUMN tools_detected boolean;

ALTER TABLE runs
    ADD COLUMN max_steps integer NOT NULL DEFAULT 50 CHECK (max_steps BETWEEN 1 AND 10000),
    ADD COLUMN max_tokens bigint NOT NULL DEFAULT 2000000
        CHECK (max_tokens BETWEEN 1000 AND 1000000000),
    ADD COLUMN command_timeout integer NOT NULL DEFAULT 120
        CHECK (command_timeout BETWEEN 1 AND 86400),
    DROP CONSTRAINT runs_result_iff_succeeded,
    ADD CONSTRAINT runs_result_when_done CHECK (
        (status <> 'succeeded' OR result IS NOT NULL)
        AND (result IS NULL OR status = 'succeeded'
             OR (status = 'failed' AND error_code IN ('step_limit', 'token_limit'))));

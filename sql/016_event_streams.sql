-- 016_event_streams: the event streams each user holds open, so that no one
-- caller can hold enough of them to exhaust a node (issue 17; SvcStreamLimit,
-- docs/api/events.md). One row per open stream, counted per principal across
-- every node (as the rate limits are, in the database).
--
-- Rows are claimed when a stream opens (svc_stream_claim, which counts and
-- inserts under a per-principal advisory lock, so two opens at once cannot
-- both take the last place) and deleted when it ends, by the httpd child
-- that holds it (`holder`: node, pid and start time). A child refreshes
-- seen_at of its rows every 30 s; rows not refreshed for 90 s (a child that
-- died, a node that was cut off) are not counted, and a later sweep removes
-- them. UNLOGGED, like rate_limits: after a crash of PostgreSQL every stream
-- was cut anyway, and an empty table is the truth.
-- (013-015 are taken by branches of the same session.)

CREATE UNLOGGED TABLE event_streams (
    id bigserial PRIMARY KEY,
    principal text NOT NULL CHECK (length(principal) BETWEEN 1 AND 200),
    holder text NOT NULL CHECK (length(holder) BETWEEN 1 AND 300),
    opened_at timestamptz NOT NULL DEFAULT now(),
    seen_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX event_streams_principal ON event_streams (principal, seen_at);
CREATE INDEX event_streams_holder ON event_streams (holder);

-- The new stream's id, or NULL when the principal holds p_limit fresh
-- streams already (p_limit 0: no limit).
CREATE FUNCTION svc_stream_claim(p_principal text, p_holder text, p_limit int)
    RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    held int;
    new_id bigint;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended('svc_stream:' || p_principal, 0));
    IF p_limit > 0 THEN
        SELECT count(*) INTO held FROM event_streams
         WHERE principal = p_principal AND seen_at > now() - interval '90 seconds';
        IF held >= p_limit THEN
            RETURN NULL;
        END IF;
    END IF;
    INSERT INTO event_streams (principal, holder) VALUES (p_principal, p_holder)
        RETURNING id INTO new_id;
    RETURN new_id;
END $$;

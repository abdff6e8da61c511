-- 025: the payment provider's events whose processing failed are kept, and
-- redelivered (issue 24), as the code-hosting deliveries are since 024.
--
-- An event whose processing failed used to leave no trace (its transaction
-- rolled back whole), so only the provider's retry could bring it again,
-- on its own schedule (Stripe retries for up to three days). It is now
-- kept, as failed, with its attempts and the last error: an operator
-- redelivers it (POST /api/admin/billing/events/:eventId/redeliver), and the
-- provider's own retry of the same event id is processed again too. Events
-- recorded before this migration were processed.
ALTER TABLE billing_webhook_events ADD COLUMN IF NOT EXISTS status text NOT NULL
    DEFAULT 'processed' CHECK (status IN ('processed', 'failed'));
ALTER TABLE billing_webhook_events ADD COLUMN IF NOT EXISTS attempts integer NOT NULL
    DEFAULT 1 CHECK (attempts >= 1);
ALTER TABLE billing_webhook_events ADD COLUMN IF NOT EXISTS last_error text
    CHECK (char_length(last_error) <= 1000);
ALTER TABLE billing_webhook_events ADD COLUMN IF NOT EXISTS last_attempt_at timestamptz;

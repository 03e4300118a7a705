-- The holder of an in-flight idempotency key: a random token per claim. The holder renews its claim while it
-- runs (created_at moves on) and completes or releases it only while it still holds it, so a request slower
-- than the abandon time is neither taken over while alive nor able to drop the claim of one that took over.
-- Null for claims made before this migration (completed ones need none).
alter table idempotency_keys add column claim_token text;

-- +goose Up
-- Stored replays were sealed with a key derived from the Idempotency-Key
-- alone, so the database and a guessable key opened them. Replays are now
-- sealed under IDENTITY_MASTER_KEY and the key, and found by a keyed
-- digest: the old rows can be neither found nor opened, so they go. A
-- retry of a request made before the upgrade runs again, as one made a
-- day earlier would.
DELETE FROM idempotency_keys;

-- +goose Down
-- Nothing to restore: the rows dropped could not have been replayed.
SELECT 1;

-- +goose Up
-- Capabilities are found by their token's selector, a time-ordered UUID
-- (box/capability.go), instead of by its digest: a new row then goes to
-- the end of the key's index rather than to a random page of it. The
-- digest stays, without an index, as the proof a redemption must match.
-- Rows issued before keep their tokens, which carry no selector: theirs
-- is the first 16 bytes of the digest, where box looks them up.
ALTER TABLE capabilities ADD COLUMN selector uuid;
UPDATE capabilities SET selector = substr(token_digest, 1, 32)::uuid;
ALTER TABLE capabilities ALTER COLUMN selector SET NOT NULL;
ALTER TABLE capabilities DROP COLUMN id;
ALTER TABLE capabilities ADD PRIMARY KEY (selector);
ALTER TABLE capabilities DROP CONSTRAINT capabilities_token_digest_key;

-- +goose Down
ALTER TABLE capabilities ADD CONSTRAINT capabilities_token_digest_key UNIQUE (token_digest);
ALTER TABLE capabilities DROP CONSTRAINT capabilities_pkey;
ALTER TABLE capabilities ADD COLUMN id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY;
ALTER TABLE capabilities DROP COLUMN selector;

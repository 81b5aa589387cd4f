-- +goose Up
-- Capabilities are found by their token's selector, a time-ordered UUID
-- (box/capability.go), instead of by its digest: a new row then goes to
-- the end of the key's index rather than to a random page of it. The
-- digest stays, without an index, as the proof a redemption must match.
-- The table is keyed by the selector alone (WITHOUT ROWID), so issuing
-- writes one B-tree, not a table and an index.
-- Rows issued before keep their tokens, which carry no selector: theirs
-- is the first 16 bytes of the digest, where box looks them up.
CREATE TABLE capabilities_rebuilt (
    selector       TEXT NOT NULL PRIMARY KEY,
    token_digest   TEXT NOT NULL,
    entitlement_id INTEGER NOT NULL REFERENCES entitlements (id) ON DELETE RESTRICT,
    account_id     TEXT NOT NULL,
    artifact       TEXT NOT NULL CHECK (artifact IN ('kit', 'platform', 'identity', 'courier')),
    version_range  TEXT CHECK (version_range <> ''),
    created_at     TIMESTAMP NOT NULL,
    expires_at     TIMESTAMP NOT NULL CHECK (expires_at > created_at),
    redeemed_at    TIMESTAMP
) WITHOUT ROWID;
INSERT INTO capabilities_rebuilt
SELECT substr(token_digest, 1, 8) || '-' || substr(token_digest, 9, 4) || '-' || substr(token_digest, 13, 4) || '-' ||
       substr(token_digest, 17, 4) || '-' || substr(token_digest, 21, 12),
       token_digest, entitlement_id, account_id, artifact, version_range, created_at, expires_at, redeemed_at
FROM capabilities;
DROP TABLE capabilities;
ALTER TABLE capabilities_rebuilt RENAME TO capabilities;

-- +goose Down
CREATE TABLE capabilities_rebuilt (
    id             INTEGER PRIMARY KEY,
    token_digest   TEXT NOT NULL UNIQUE,
    entitlement_id INTEGER NOT NULL REFERENCES entitlements (id) ON DELETE RESTRICT,
    account_id     TEXT NOT NULL,
    artifact       TEXT NOT NULL CHECK (artifact IN ('kit', 'platform', 'identity', 'courier')),
    version_range  TEXT CHECK (version_range <> ''),
    created_at     TIMESTAMP NOT NULL,
    expires_at     TIMESTAMP NOT NULL CHECK (expires_at > created_at),
    redeemed_at    TIMESTAMP
);
INSERT INTO capabilities_rebuilt (token_digest, entitlement_id, account_id, artifact, version_range, created_at, expires_at, redeemed_at)
SELECT token_digest, entitlement_id, account_id, artifact, version_range, created_at, expires_at, redeemed_at
FROM capabilities ORDER BY created_at;
DROP TABLE capabilities;
ALTER TABLE capabilities_rebuilt RENAME TO capabilities;

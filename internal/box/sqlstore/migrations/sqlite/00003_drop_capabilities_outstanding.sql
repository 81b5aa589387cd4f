-- +goose Up
-- No query looks capabilities up by entitlement (revoking touches only its
-- row; redeeming re-checks the entitlement by the capability's own key),
-- so capabilities_outstanding only cost every issue and every redemption a
-- write. The table is also rebuilt without AUTOINCREMENT, which wrote
-- sqlite_sequence on every issue: capabilities are never deleted and their
-- id is never shown, so the plain rowid (max + 1) serves.
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
INSERT INTO capabilities_rebuilt SELECT id, token_digest, entitlement_id, account_id, artifact, version_range, created_at, expires_at, redeemed_at FROM capabilities;
DROP TABLE capabilities;
ALTER TABLE capabilities_rebuilt RENAME TO capabilities;

-- +goose Down
CREATE TABLE capabilities_rebuilt (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    token_digest   TEXT NOT NULL UNIQUE,
    entitlement_id INTEGER NOT NULL REFERENCES entitlements (id) ON DELETE RESTRICT,
    account_id     TEXT NOT NULL,
    artifact       TEXT NOT NULL CHECK (artifact IN ('kit', 'platform', 'identity', 'courier')),
    version_range  TEXT CHECK (version_range <> ''),
    created_at     TIMESTAMP NOT NULL,
    expires_at     TIMESTAMP NOT NULL CHECK (expires_at > created_at),
    redeemed_at    TIMESTAMP
);
INSERT INTO capabilities_rebuilt SELECT id, token_digest, entitlement_id, account_id, artifact, version_range, created_at, expires_at, redeemed_at FROM capabilities;
DROP TABLE capabilities;
ALTER TABLE capabilities_rebuilt RENAME TO capabilities;
CREATE INDEX capabilities_outstanding ON capabilities (entitlement_id) WHERE redeemed_at IS NULL;

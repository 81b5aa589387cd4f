-- +goose Up
-- The SQLite twin of the PostgreSQL schema: TEXT ids for identity's UUIDs,
-- INTEGER PRIMARY KEY AUTOINCREMENT so ids are never reused, TIMESTAMP
-- columns written as UTC text (so they order correctly), and RAISE(ABORT)
-- triggers in place of plpgsql.
CREATE TABLE entitlements (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id    TEXT NOT NULL CHECK (length(account_id) = 36),
    product       TEXT NOT NULL CHECK (product IN ('kit', 'platform', 'identity', 'courier')),
    status        TEXT NOT NULL CHECK (status IN ('active', 'revoked')),
    version_range TEXT CHECK (version_range <> ''),
    source        TEXT CHECK (source <> ''),
    reference     TEXT CHECK (reference <> ''),
    granted_by    TEXT NOT NULL CHECK (granted_by <> ''),
    revoked_by    TEXT CHECK (revoked_by <> ''),
    granted_at    TIMESTAMP NOT NULL,
    revoked_at    TIMESTAMP,
    CHECK ((status = 'active') = (revoked_at IS NULL)),
    CHECK ((revoked_at IS NULL) = (revoked_by IS NULL))
);
CREATE UNIQUE INDEX entitlements_one_active ON entitlements (account_id, product) WHERE status = 'active';
CREATE INDEX entitlements_account ON entitlements (account_id, id);

-- +goose StatementBegin
CREATE TRIGGER entitlements_guard_update BEFORE UPDATE ON entitlements
WHEN OLD.status <> 'active' OR NEW.status <> 'revoked'
  OR NEW.id <> OLD.id OR NEW.account_id <> OLD.account_id OR NEW.product <> OLD.product
  OR NEW.version_range IS NOT OLD.version_range
  OR NEW.source IS NOT OLD.source
  OR NEW.reference IS NOT OLD.reference
  OR NEW.granted_by <> OLD.granted_by OR NEW.granted_at <> OLD.granted_at
BEGIN
    SELECT RAISE(ABORT, 'entitlements: the only permitted change is revoking an active row');
END;
-- +goose StatementEnd

CREATE TABLE entitlement_events (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    entitlement_id INTEGER NOT NULL REFERENCES entitlements (id) ON DELETE RESTRICT,
    action         TEXT NOT NULL CHECK (action IN ('grant', 'revoke')),
    actor_user_id  TEXT NOT NULL CHECK (actor_user_id <> ''),
    created_at     TIMESTAMP NOT NULL,
    updated_at     TIMESTAMP NOT NULL
);
CREATE UNIQUE INDEX entitlement_events_once ON entitlement_events (entitlement_id, action);

-- +goose StatementBegin
CREATE TRIGGER entitlement_events_no_update BEFORE UPDATE ON entitlement_events
BEGIN
    SELECT RAISE(ABORT, 'entitlement_events: audit rows are append-only (UPDATE refused)');
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER entitlement_events_no_delete BEFORE DELETE ON entitlement_events
BEGIN
    SELECT RAISE(ABORT, 'entitlement_events: audit rows are append-only (DELETE refused)');
END;
-- +goose StatementEnd

CREATE TABLE capabilities (
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
CREATE INDEX capabilities_outstanding ON capabilities (entitlement_id) WHERE redeemed_at IS NULL;

CREATE TABLE releases (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    product      TEXT NOT NULL CHECK (product IN ('kit', 'platform', 'identity', 'courier')),
    version      TEXT NOT NULL CHECK (version <> ''),
    notes        TEXT,
    published_by TEXT NOT NULL CHECK (published_by <> ''),
    published_at TIMESTAMP NOT NULL,
    UNIQUE (product, version)
);
CREATE INDEX releases_product ON releases (product, id);

CREATE TABLE approvals (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id  TEXT NOT NULL,
    release_id  INTEGER NOT NULL REFERENCES releases (id) ON DELETE RESTRICT,
    approved_by TEXT NOT NULL CHECK (approved_by <> ''),
    created_at  TIMESTAMP NOT NULL,
    UNIQUE (account_id, release_id)
);

CREATE TABLE claims (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id     TEXT NOT NULL,
    product        TEXT NOT NULL CHECK (product = 'kit'),
    claimed_by     TEXT NOT NULL CHECK (claimed_by <> ''),
    entitlement_id INTEGER NOT NULL UNIQUE REFERENCES entitlements (id) ON DELETE RESTRICT,
    created_at     TIMESTAMP NOT NULL
);
CREATE INDEX claims_account ON claims (account_id);

-- +goose Down
DROP TABLE claims;
DROP TABLE approvals;
DROP TABLE releases;
DROP TABLE capabilities;
DROP TABLE entitlement_events;
DROP TABLE entitlements;

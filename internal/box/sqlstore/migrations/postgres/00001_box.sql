-- +goose Up
-- Entitlements. account_id is identity's account UUID held as data (no
-- foreign key across services). A row moves from active to revoked once and
-- never back; the CHECKs tie revoked_at and revoked_by to the status.
CREATE TABLE entitlements (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account_id    uuid NOT NULL,
    product       text NOT NULL CHECK (product IN ('kit', 'platform', 'identity', 'courier')),
    status        text NOT NULL CHECK (status IN ('active', 'revoked')),
    version_range text CHECK (version_range <> ''),
    source        text CHECK (source <> ''),
    reference     text CHECK (reference <> ''),
    granted_by    text NOT NULL CHECK (granted_by <> ''),
    revoked_by    text CHECK (revoked_by <> ''),
    granted_at    timestamptz NOT NULL,
    revoked_at    timestamptz,
    CHECK ((status = 'active') = (revoked_at IS NULL)),
    CHECK ((revoked_at IS NULL) = (revoked_by IS NULL))
);
-- At most one active entitlement per (account, product), however requests
-- interleave: grants insert with ON CONFLICT against this index.
CREATE UNIQUE INDEX entitlements_one_active ON entitlements (account_id, product) WHERE status = 'active';
CREATE INDEX entitlements_account ON entitlements (account_id, id);

-- The only change an entitlement ever takes is active -> revoked; everything
-- else about a grant is fixed when it is written.
-- +goose StatementBegin
CREATE FUNCTION entitlements_guard_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.status <> 'active' OR NEW.status <> 'revoked'
       OR NEW.id <> OLD.id OR NEW.account_id <> OLD.account_id OR NEW.product <> OLD.product
       OR NEW.version_range IS DISTINCT FROM OLD.version_range
       OR NEW.source IS DISTINCT FROM OLD.source
       OR NEW.reference IS DISTINCT FROM OLD.reference
       OR NEW.granted_by <> OLD.granted_by OR NEW.granted_at <> OLD.granted_at THEN
        RAISE EXCEPTION 'entitlements: the only permitted change is revoking an active row';
    END IF;
    RETURN NEW;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER entitlements_guard_update BEFORE UPDATE ON entitlements
    FOR EACH ROW EXECUTE FUNCTION entitlements_guard_update();

-- The audit trail: one grant and at most one revoke event per entitlement,
-- append-only. ON DELETE RESTRICT keeps an entitlement with events.
CREATE TABLE entitlement_events (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    entitlement_id bigint NOT NULL REFERENCES entitlements (id) ON DELETE RESTRICT,
    action         text NOT NULL CHECK (action IN ('grant', 'revoke')),
    actor_user_id  text NOT NULL CHECK (actor_user_id <> ''),
    created_at     timestamptz NOT NULL,
    updated_at     timestamptz NOT NULL
);
CREATE UNIQUE INDEX entitlement_events_once ON entitlement_events (entitlement_id, action);

-- +goose StatementBegin
CREATE FUNCTION entitlement_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'entitlement_events: audit rows are append-only (% refused)', TG_OP;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER entitlement_events_no_update BEFORE UPDATE ON entitlement_events
    FOR EACH ROW EXECUTE FUNCTION entitlement_events_append_only();
CREATE TRIGGER entitlement_events_no_delete BEFORE DELETE ON entitlement_events
    FOR EACH ROW EXECUTE FUNCTION entitlement_events_append_only();
CREATE TRIGGER entitlement_events_no_truncate BEFORE TRUNCATE ON entitlement_events
    FOR EACH STATEMENT EXECUTE FUNCTION entitlement_events_append_only();

-- Capabilities: only the SHA-256 of the token is kept. entitlement_id is
-- the grant that authorized the capability; redeeming re-checks that it is
-- still active in the same conditional UPDATE.
CREATE TABLE capabilities (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    token_digest   text NOT NULL UNIQUE,
    entitlement_id bigint NOT NULL REFERENCES entitlements (id) ON DELETE RESTRICT,
    account_id     uuid NOT NULL,
    artifact       text NOT NULL CHECK (artifact IN ('kit', 'platform', 'identity', 'courier')),
    version_range  text CHECK (version_range <> ''),
    created_at     timestamptz NOT NULL,
    expires_at     timestamptz NOT NULL CHECK (expires_at > created_at),
    redeemed_at    timestamptz
);
CREATE INDEX capabilities_outstanding ON capabilities (entitlement_id) WHERE redeemed_at IS NULL;

CREATE TABLE releases (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    product      text NOT NULL CHECK (product IN ('kit', 'platform', 'identity', 'courier')),
    version      text NOT NULL CHECK (version <> ''),
    notes        text,
    published_by text NOT NULL CHECK (published_by <> ''),
    published_at timestamptz NOT NULL,
    UNIQUE (product, version)
);
CREATE INDEX releases_product ON releases (product, id);

CREATE TABLE approvals (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account_id  uuid NOT NULL,
    release_id  bigint NOT NULL REFERENCES releases (id) ON DELETE RESTRICT,
    approved_by text NOT NULL CHECK (approved_by <> ''),
    created_at  timestamptz NOT NULL,
    UNIQUE (account_id, release_id)
);

CREATE TABLE claims (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account_id     uuid NOT NULL,
    product        text NOT NULL CHECK (product = 'kit'),
    claimed_by     text NOT NULL CHECK (claimed_by <> ''),
    entitlement_id bigint NOT NULL UNIQUE REFERENCES entitlements (id) ON DELETE RESTRICT,
    created_at     timestamptz NOT NULL
);
CREATE INDEX claims_account ON claims (account_id);

-- +goose Down
DROP TABLE claims;
DROP TABLE approvals;
DROP TABLE releases;
DROP TABLE capabilities;
DROP TABLE entitlement_events;
DROP FUNCTION entitlement_events_append_only;
DROP TABLE entitlements;
DROP FUNCTION entitlements_guard_update;

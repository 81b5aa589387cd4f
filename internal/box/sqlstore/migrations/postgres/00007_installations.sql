-- +goose Up
-- Installations (licensing.md §2): one running copy of a unit at a
-- customer, under the entitlement that allowed it. A grant may cap its
-- installations (max_installations; null is unlimited), fixed like the
-- rest of the grant.
ALTER TABLE entitlements ADD COLUMN max_installations integer
    CHECK (max_installations IS NULL OR max_installations BETWEEN 1 AND 1000000);

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION entitlements_guard_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.status <> 'active' OR NEW.status <> 'revoked'
       OR NEW.id <> OLD.id OR NEW.account_id <> OLD.account_id OR NEW.product <> OLD.product
       OR NEW.version_range IS DISTINCT FROM OLD.version_range
       OR NEW.source IS DISTINCT FROM OLD.source
       OR NEW.reference IS DISTINCT FROM OLD.reference
       OR NEW.max_installations IS DISTINCT FROM OLD.max_installations
       OR NEW.granted_by <> OLD.granted_by OR NEW.granted_at <> OLD.granted_at THEN
        RAISE EXCEPTION 'entitlements: the only permitted change is revoking an active row';
    END IF;
    RETURN NEW;
END;
$$;
-- +goose StatementEnd

-- status: active until deactivated by the customer or revoked with its
-- entitlement, never back. An active row counts toward the limit until
-- lapses_at (its last heartbeat plus BOX_INSTALLATION_TTL); past it the
-- installation reads as inactive until its next heartbeat.
CREATE TABLE installations (
    id             uuid PRIMARY KEY,
    account_id     uuid NOT NULL,
    entitlement_id bigint NOT NULL REFERENCES entitlements (id) ON DELETE RESTRICT,
    product        text NOT NULL CHECK (product IN ('kit', 'platform', 'identity', 'courier')),
    fingerprint    text NOT NULL CHECK (length(fingerprint) BETWEEN 1 AND 128 AND fingerprint ~ '^[\x20-\x7e]+$'),
    name           text NOT NULL CHECK (name <> ''),
    version        text CHECK (version <> ''),
    status         text NOT NULL CHECK (status IN ('active', 'deactivated', 'revoked')),
    last_seen_at   timestamptz NOT NULL,
    lapses_at      timestamptz NOT NULL CHECK (lapses_at > last_seen_at),
    created_at     timestamptz NOT NULL,
    ended_at       timestamptz,
    CHECK ((status = 'active') = (ended_at IS NULL))
);
-- One active installation per fingerprint and unit of an account: the same
-- fingerprint activating again finds its row (ON CONFLICT).
CREATE UNIQUE INDEX installations_one_fingerprint ON installations (account_id, product, fingerprint) WHERE status = 'active';
CREATE INDEX installations_entitlement ON installations (entitlement_id) WHERE status = 'active';
CREATE INDEX installations_account ON installations (account_id, created_at);

-- The limit holds however activations interleave: every installation that
-- starts to count (a new one, or a lapsed one seen again) first locks its
-- entitlement's row, so activations under one entitlement run one at a
-- time from here to their commit, then counts the others still counting.
-- An ended installation never changes again, and only status, ended_at,
-- name, version and the times move.
-- +goose StatementBegin
CREATE FUNCTION installations_guard() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    ent entitlements%ROWTYPE;
    counting integer;
BEGIN
    IF TG_OP = 'UPDATE' THEN
        IF OLD.status <> 'active' THEN
            RAISE EXCEPTION 'installations: an ended installation never changes';
        END IF;
        IF NEW.id <> OLD.id OR NEW.account_id <> OLD.account_id OR NEW.entitlement_id <> OLD.entitlement_id
           OR NEW.product <> OLD.product OR NEW.fingerprint <> OLD.fingerprint OR NEW.created_at <> OLD.created_at THEN
            RAISE EXCEPTION 'installations: only the status, name, version and times of an installation change';
        END IF;
        IF NEW.status <> 'active' OR OLD.lapses_at > NEW.last_seen_at THEN
            RETURN NEW;
        END IF;
    ELSIF NEW.status <> 'active' THEN
        RAISE EXCEPTION 'installations: a new installation is active';
    END IF;
    SELECT * INTO ent FROM entitlements WHERE id = NEW.entitlement_id FOR NO KEY UPDATE;
    IF NOT FOUND OR ent.status <> 'active' OR ent.account_id <> NEW.account_id OR ent.product <> NEW.product THEN
        RAISE EXCEPTION 'installation_entitlement: no active entitlement of the account for the product';
    END IF;
    IF ent.max_installations IS NOT NULL THEN
        SELECT count(*) INTO counting FROM installations
        WHERE entitlement_id = NEW.entitlement_id AND status = 'active' AND lapses_at > NEW.last_seen_at AND id <> NEW.id;
        IF counting >= ent.max_installations THEN
            RAISE EXCEPTION 'installation_limit: the entitlement allows % installations', ent.max_installations;
        END IF;
    END IF;
    RETURN NEW;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER installations_guard BEFORE INSERT OR UPDATE ON installations
    FOR EACH ROW EXECUTE FUNCTION installations_guard();

-- +goose Down
DROP TABLE installations;
DROP FUNCTION installations_guard;
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION entitlements_guard_update() RETURNS trigger LANGUAGE plpgsql AS $$
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
ALTER TABLE entitlements DROP COLUMN max_installations;

-- +goose Up
-- credentials keep a digest of each password, never the password; a
-- credential's grant (account, repository, range, lifetime) never changes
-- once issued, and the only permitted change is revoking it once.
CREATE TABLE credentials (
    id              UUID PRIMARY KEY,
    password_digest TEXT NOT NULL UNIQUE CHECK (length(password_digest) = 64),
    account_id      UUID NOT NULL,
    repository      TEXT NOT NULL CHECK (repository IN ('kit', 'platform', 'identity', 'courier')),
    version_range   TEXT CHECK (version_range <> ''),
    created_at      TIMESTAMPTZ NOT NULL,
    expires_at      TIMESTAMPTZ NOT NULL CHECK (expires_at > created_at),
    revoked_at      TIMESTAMPTZ CHECK (revoked_at >= created_at)
);

-- +goose StatementBegin
CREATE FUNCTION credentials_guard_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.revoked_at IS NOT NULL OR NEW.revoked_at IS NULL
       OR NEW.id <> OLD.id OR NEW.password_digest <> OLD.password_digest
       OR NEW.account_id <> OLD.account_id OR NEW.repository <> OLD.repository
       OR NEW.version_range IS DISTINCT FROM OLD.version_range
       OR NEW.created_at <> OLD.created_at OR NEW.expires_at <> OLD.expires_at THEN
        RAISE EXCEPTION 'credentials: the only permitted change is revoking a live row';
    END IF;
    RETURN NEW;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER credentials_guard_update BEFORE UPDATE ON credentials
    FOR EACH ROW EXECUTE FUNCTION credentials_guard_update();

-- pulls is the delivery record: append-only, each row tied to the
-- credential that pulled (which therefore cannot be deleted).
CREATE TABLE pulls (
    id            BIGSERIAL PRIMARY KEY,
    credential_id UUID NOT NULL REFERENCES credentials (id) ON DELETE RESTRICT,
    account_id    UUID NOT NULL,
    repository    TEXT NOT NULL,
    tag           TEXT NOT NULL CHECK (tag <> ''),
    digest        TEXT NOT NULL CHECK (digest LIKE 'sha256:%'),
    pulled_at     TIMESTAMPTZ NOT NULL
);
CREATE INDEX pulls_account ON pulls (account_id, id DESC);

-- +goose StatementBegin
CREATE FUNCTION pulls_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'pulls: rows are append-only (% refused)', TG_OP;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER pulls_append_only BEFORE UPDATE OR DELETE ON pulls
    FOR EACH ROW EXECUTE FUNCTION pulls_append_only();

-- +goose Down
DROP TABLE pulls;
DROP FUNCTION pulls_append_only();
DROP TABLE credentials;
DROP FUNCTION credentials_guard_update();

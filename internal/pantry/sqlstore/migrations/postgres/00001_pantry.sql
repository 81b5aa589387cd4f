-- +goose Up
-- Projects (pantry.md section 2). The database holds the rules every
-- connection must keep: lengths, https URLs, the visibility set, stars
-- equal to the star rows (kept by the triggers below), slugs unique among
-- current and former ones (project_slugs).
CREATE TABLE projects (
    id               uuid PRIMARY KEY,
    slug             text NOT NULL UNIQUE CHECK (char_length(slug) BETWEEN 3 AND 40),
    name             text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 80),
    sort_name        text COLLATE "C" NOT NULL,
    summary          text NOT NULL DEFAULT '' CHECK (char_length(summary) <= 200),
    description      text NOT NULL DEFAULT '' CHECK (octet_length(description) <= 20480),
    description_html text NOT NULL DEFAULT '',
    homepage_url     text NOT NULL DEFAULT '' CHECK (homepage_url = '' OR homepage_url ILIKE 'https://%'),
    repository_url   text NOT NULL DEFAULT '' CHECK (repository_url = '' OR repository_url ILIKE 'https://%'),
    tags             text NOT NULL DEFAULT '',
    uses             text NOT NULL DEFAULT '',
    logo_media_id    uuid,
    account_id       uuid NOT NULL,
    created_by       uuid,
    visibility       text NOT NULL CHECK (visibility IN ('public', 'unlisted')),
    stars            bigint NOT NULL DEFAULT 0 CHECK (stars >= 0),
    version          bigint NOT NULL DEFAULT 1,
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL,
    -- The name weighs A, the summary B, the description C: a name match
    -- ranks above the others (the list also orders by it first).
    search           tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('english', name), 'A') ||
        setweight(to_tsvector('english', summary), 'B') ||
        setweight(to_tsvector('english', description), 'C')) STORED
);
CREATE INDEX projects_search ON projects USING gin (search);
CREATE INDEX projects_recent ON projects (id DESC) WHERE visibility = 'public';
CREATE INDEX projects_stars ON projects (stars DESC, id DESC) WHERE visibility = 'public';
CREATE INDEX projects_name ON projects (sort_name, id) WHERE visibility = 'public';
CREATE INDEX projects_account ON projects (account_id);

-- Every slug a project has had: the current one and the former ones that
-- answer 301. A slug belongs to one project for as long as it exists.
CREATE TABLE project_slugs (
    slug       text PRIMARY KEY,
    project_id uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE
);
CREATE INDEX project_slugs_project ON project_slugs (project_id);

CREATE TABLE project_tags (
    project_id uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    tag        text NOT NULL CHECK (char_length(tag) BETWEEN 1 AND 32),
    PRIMARY KEY (tag, project_id)
);
CREATE INDEX project_tags_project ON project_tags (project_id);

CREATE TABLE stars (
    project_id uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    user_id    uuid NOT NULL,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (project_id, user_id)
);
CREATE INDEX stars_user ON stars (user_id, created_at DESC);

-- projects.stars is the number of star rows, for every connection: each
-- row added or removed moves it by one under the project row's lock.
-- +goose StatementBegin
CREATE FUNCTION stars_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        UPDATE projects SET stars = stars + 1 WHERE id = NEW.project_id;
        RETURN NEW;
    END IF;
    UPDATE projects SET stars = stars - 1 WHERE id = OLD.project_id;
    RETURN OLD;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER stars_count AFTER INSERT OR DELETE ON stars
    FOR EACH ROW EXECUTE FUNCTION stars_count();

-- The transactional outbox, as identity's and courier's.
CREATE TABLE outbox (
    seq             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id              uuid NOT NULL UNIQUE,
    type            text NOT NULL,
    source          text NOT NULL,
    subject         text NOT NULL,
    time            timestamptz NOT NULL,
    data            jsonb NOT NULL,
    created_at      timestamptz NOT NULL,
    published_at    timestamptz,
    attempts        integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL,
    last_error      text,
    parked_at       timestamptz,
    traceparent     text
) WITH (fillfactor = 50);
CREATE INDEX outbox_pending ON outbox (seq) WHERE published_at IS NULL AND parked_at IS NULL;
CREATE INDEX outbox_parked ON outbox (seq) WHERE parked_at IS NOT NULL AND published_at IS NULL;

-- +goose StatementBegin
CREATE FUNCTION outbox_keep_unpublished() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.published_at IS NULL THEN
        RAISE EXCEPTION 'outbox: an unpublished row is never deleted';
    END IF;
    RETURN OLD;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER outbox_keep_unpublished BEFORE DELETE ON outbox
    FOR EACH ROW EXECUTE FUNCTION outbox_keep_unpublished();

-- +goose Down
DROP TABLE outbox;
DROP FUNCTION outbox_keep_unpublished;
DROP TABLE stars;
DROP FUNCTION stars_count;
DROP TABLE project_tags;
DROP TABLE project_slugs;
DROP TABLE projects;

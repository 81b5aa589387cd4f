-- +goose Up
-- Projects (pantry.md section 2), as on PostgreSQL; the search index is
-- an FTS5 table over the rows, kept by triggers.
CREATE TABLE projects (
    seq              INTEGER PRIMARY KEY AUTOINCREMENT,
    id               TEXT NOT NULL UNIQUE,
    slug             TEXT NOT NULL UNIQUE CHECK (length(slug) BETWEEN 3 AND 40),
    name             TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 80),
    sort_name        TEXT NOT NULL,
    summary          TEXT NOT NULL DEFAULT '' CHECK (length(summary) <= 200),
    description      TEXT NOT NULL DEFAULT '' CHECK (length(CAST(description AS BLOB)) <= 20480),
    description_html TEXT NOT NULL DEFAULT '',
    homepage_url     TEXT NOT NULL DEFAULT '' CHECK (homepage_url = '' OR lower(substr(homepage_url, 1, 8)) = 'https://'),
    repository_url   TEXT NOT NULL DEFAULT '' CHECK (repository_url = '' OR lower(substr(repository_url, 1, 8)) = 'https://'),
    tags             TEXT NOT NULL DEFAULT '',
    uses             TEXT NOT NULL DEFAULT '',
    logo_media_id    TEXT,
    account_id       TEXT NOT NULL,
    created_by       TEXT,
    visibility       TEXT NOT NULL CHECK (visibility IN ('public', 'unlisted')),
    stars            INTEGER NOT NULL DEFAULT 0 CHECK (stars >= 0),
    version          INTEGER NOT NULL DEFAULT 1,
    created_at       TIMESTAMP NOT NULL,
    updated_at       TIMESTAMP NOT NULL
);
CREATE INDEX projects_recent ON projects (id DESC) WHERE visibility = 'public';
CREATE INDEX projects_stars ON projects (stars DESC, id DESC) WHERE visibility = 'public';
CREATE INDEX projects_name ON projects (sort_name, id) WHERE visibility = 'public';
CREATE INDEX projects_account ON projects (account_id);

-- The name, summary and description, indexed with the Porter stemmer as
-- PostgreSQL's english configuration stems; bm25 weighs the name most.
CREATE VIRTUAL TABLE projects_fts USING fts5(
    name, summary, description,
    content = 'projects', content_rowid = 'seq',
    tokenize = 'porter unicode61 remove_diacritics 2'
);

-- +goose StatementBegin
CREATE TRIGGER projects_fts_insert AFTER INSERT ON projects BEGIN
    INSERT INTO projects_fts (rowid, name, summary, description) VALUES (NEW.seq, NEW.name, NEW.summary, NEW.description);
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER projects_fts_delete AFTER DELETE ON projects BEGIN
    INSERT INTO projects_fts (projects_fts, rowid, name, summary, description) VALUES ('delete', OLD.seq, OLD.name, OLD.summary, OLD.description);
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER projects_fts_update AFTER UPDATE OF name, summary, description ON projects BEGIN
    INSERT INTO projects_fts (projects_fts, rowid, name, summary, description) VALUES ('delete', OLD.seq, OLD.name, OLD.summary, OLD.description);
    INSERT INTO projects_fts (rowid, name, summary, description) VALUES (NEW.seq, NEW.name, NEW.summary, NEW.description);
END;
-- +goose StatementEnd

CREATE TABLE project_slugs (
    slug       TEXT PRIMARY KEY,
    project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE
);
CREATE INDEX project_slugs_project ON project_slugs (project_id);

CREATE TABLE project_tags (
    project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    tag        TEXT NOT NULL CHECK (length(tag) BETWEEN 1 AND 32),
    PRIMARY KEY (tag, project_id)
);
CREATE INDEX project_tags_project ON project_tags (project_id);

CREATE TABLE stars (
    project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    user_id    TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL,
    PRIMARY KEY (project_id, user_id)
);
CREATE INDEX stars_user ON stars (user_id, created_at DESC);

-- projects.stars is the number of star rows, for every connection.
-- +goose StatementBegin
CREATE TRIGGER stars_count_insert AFTER INSERT ON stars BEGIN
    UPDATE projects SET stars = stars + 1 WHERE id = NEW.project_id;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER stars_count_delete AFTER DELETE ON stars BEGIN
    UPDATE projects SET stars = stars - 1 WHERE id = OLD.project_id;
END;
-- +goose StatementEnd

-- The same rules on a connection with foreign keys off (the sqlite3
-- shell's): a star names a project, and a project leaves nothing behind.
-- +goose StatementBegin
CREATE TRIGGER stars_project_exists BEFORE INSERT ON stars
WHEN NOT EXISTS (SELECT 1 FROM projects WHERE id = NEW.project_id)
BEGIN
    SELECT RAISE(ABORT, 'FOREIGN KEY constraint failed');
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER projects_delete_children BEFORE DELETE ON projects BEGIN
    DELETE FROM stars WHERE project_id = OLD.id;
    DELETE FROM project_tags WHERE project_id = OLD.id;
    DELETE FROM project_slugs WHERE project_id = OLD.id;
END;
-- +goose StatementEnd

-- The transactional outbox, as identity's and courier's.
CREATE TABLE outbox (
    seq             INTEGER PRIMARY KEY AUTOINCREMENT,
    id              TEXT NOT NULL UNIQUE,
    type            TEXT NOT NULL,
    source          TEXT NOT NULL,
    subject         TEXT NOT NULL,
    time            TIMESTAMP NOT NULL,
    data            TEXT NOT NULL,
    created_at      TIMESTAMP NOT NULL,
    published_at    TIMESTAMP,
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TIMESTAMP NOT NULL,
    last_error      TEXT,
    parked_at       TIMESTAMP,
    traceparent     TEXT
);
CREATE INDEX outbox_pending ON outbox (seq) WHERE published_at IS NULL AND parked_at IS NULL;
CREATE INDEX outbox_parked ON outbox (seq) WHERE parked_at IS NOT NULL AND published_at IS NULL;

-- +goose StatementBegin
CREATE TRIGGER outbox_keep_unpublished BEFORE DELETE ON outbox
WHEN OLD.published_at IS NULL
BEGIN
    SELECT RAISE(ABORT, 'outbox: an unpublished row is never deleted');
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER outbox_keep_unpublished;
DROP TABLE outbox;
DROP TRIGGER projects_delete_children;
DROP TRIGGER stars_project_exists;
DROP TRIGGER stars_count_delete;
DROP TRIGGER stars_count_insert;
DROP TABLE stars;
DROP TABLE project_tags;
DROP TABLE project_slugs;
DROP TRIGGER projects_fts_update;
DROP TRIGGER projects_fts_delete;
DROP TRIGGER projects_fts_insert;
DROP TABLE projects_fts;
DROP TABLE projects;

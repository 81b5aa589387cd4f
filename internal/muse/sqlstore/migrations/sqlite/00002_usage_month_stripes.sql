-- +goose Up
-- The month's total in stripes per account and month, as on PostgreSQL,
-- where each usage row adds to the stripe its id names so that concurrent
-- completions seldom wait on one row lock. SQLite has one writer at a
-- time and no row locks, so stripes buy nothing here: the trigger keeps
-- stripe 0, and the store reads the sum of the stripes on both engines.
DROP TRIGGER usage_month_add;
CREATE TABLE usage_month_stripes (
    account_id TEXT NOT NULL,
    month      TEXT NOT NULL,
    stripe     INTEGER NOT NULL CHECK (stripe BETWEEN 0 AND 15),
    tokens     INTEGER NOT NULL CHECK (tokens >= 0),
    PRIMARY KEY (account_id, month, stripe)
);
INSERT INTO usage_month_stripes (account_id, month, stripe, tokens) SELECT account_id, month, 0, tokens FROM usage_months;
DROP TABLE usage_months;
ALTER TABLE usage_month_stripes RENAME TO usage_months;

-- +goose StatementBegin
CREATE TRIGGER usage_month_add AFTER INSERT ON usage
BEGIN
    INSERT INTO usage_months (account_id, month, stripe, tokens)
    VALUES (NEW.account_id, substr(NEW.day, 1, 7), 0, NEW.prompt_tokens + NEW.completion_tokens)
    ON CONFLICT (account_id, month, stripe) DO UPDATE SET tokens = tokens + excluded.tokens;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER usage_month_add;
CREATE TABLE usage_month_totals (
    account_id TEXT NOT NULL,
    month      TEXT NOT NULL,
    tokens     INTEGER NOT NULL CHECK (tokens >= 0),
    PRIMARY KEY (account_id, month)
);
INSERT INTO usage_month_totals (account_id, month, tokens)
    SELECT account_id, month, sum(tokens) FROM usage_months GROUP BY account_id, month;
DROP TABLE usage_months;
ALTER TABLE usage_month_totals RENAME TO usage_months;

-- +goose StatementBegin
CREATE TRIGGER usage_month_add AFTER INSERT ON usage
BEGIN
    INSERT INTO usage_months (account_id, month, tokens)
    VALUES (NEW.account_id, substr(NEW.day, 1, 7), NEW.prompt_tokens + NEW.completion_tokens)
    ON CONFLICT (account_id, month) DO UPDATE SET tokens = tokens + excluded.tokens;
END;
-- +goose StatementEnd

-- Issue 27, item 1: the frontier learns which query arguments matter (docs/design.md#yacobot-qargfilter)
-- and URLs leave it with a DELETE item downstream (docs/design.md#yacobot-withdrawal).

-- A URL to withdraw: the crawl worker, which owns the archive, appends a DELETE item for it and
-- then removes the row. Marked rows carry no hits (the marking moves them away), so the
-- scheduler never claims them; a queue file that brings hits for one clears the mark.
ALTER TABLE url
    ADD COLUMN withdraw TINYINT UNSIGNED NULL COMMENT 'to be withdrawn downstream (a DELETE item), then removed: 1 merged into its canonical URL, 2 expired; NULL: live';
-- The crawl worker's look for marked rows (few among millions).
CREATE INDEX ix_url_withdraw ON url (withdraw);
-- qargfilter reads the frontier a path at a time (its pages, then their variants to merge).
CREATE INDEX ix_url_path ON url (path_hash);

-- Where each crawler began appending the DELETE items of its withdrawal batch in hand: after a
-- kill -9, the rows it had claimed for withdrawal are looked up in its archive from here, so
-- that an item already durable is not appended twice and a missing one is appended.
CREATE TABLE withdraw_position (
    node       VARCHAR(64) NOT NULL COMMENT 'the yacobot node (its node key)',
    store      VARCHAR(512) NOT NULL COMMENT 'the archive the DELETE items go to (Archive.Dir, resolved)',
    file_id    BIGINT UNSIGNED NOT NULL COMMENT 'segment file id of the first item the batch may have appended',
    item_idx   INT UNSIGNED NOT NULL COMMENT 'its item index (from 1)',
    updated_at DATETIME NOT NULL COMMENT 'when the batch was taken (UTC)',
    PRIMARY KEY (node, store)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin COMMENT='where each crawler''s withdrawal batch began in its archive';

-- The evidence behind each score.
ALTER TABLE query_args
    ADD COLUMN pairs INT UNSIGNED NOT NULL DEFAULT 0 COMMENT 'pairs of analysed pages of the path that differ only in this argument',
    ADD COLUMN equal_pairs INT UNSIGNED NOT NULL DEFAULT 0 COMMENT 'of those, pairs whose main texts are equal or near-equal';

-- Probe URLs qargfilter asks the scheduler to fetch: a page of the path with one argument
-- dropped, for arguments with too little evidence. At most Qargfilter.ProbesPerArg per
-- argument and path; a crawler takes them into url within Qargfilter.ProbeShare of its fetches.
CREATE TABLE query_arg_probe (
    path_hash BIGINT UNSIGNED NOT NULL COMMENT 'the path (url.path_hash)',
    name      VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'the query argument the probe drops (percent-encoded)',
    id        BIGINT UNSIGNED NOT NULL COMMENT 'the probe URL''s id (url.id once taken)',
    url       VARCHAR(2048) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'the probe URL: a page of the path without the argument',
    domain    VARCHAR(253) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'routing domain (url.domain)',
    queued_at DATETIME NOT NULL COMMENT 'when qargfilter asked for it (UTC)',
    taken_at  DATETIME NULL COMMENT 'when a crawler took it into url to fetch it (UTC); NULL: waiting',
    PRIMARY KEY (path_hash, name, id),
    KEY ix_query_arg_probe_waiting (taken_at, queued_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin COMMENT='probe URLs for query arguments with too little evidence';

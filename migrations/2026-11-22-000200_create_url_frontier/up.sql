-- The page frontier of a yacobot node and its query-argument knowledge (docs/design.md#yacobot).
-- URLs are stored in their WHATWG serialisation, which is always ASCII.

CREATE TABLE url (
    id              BIGINT UNSIGNED   NOT NULL COMMENT '64-bit URL id: first 8 bytes of MD5 of the normalised URL, big-endian',
    url             VARCHAR(2048) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'normalised URL with insignificant query arguments removed',
    domain          VARCHAR(253)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'routing domain (see partner_domain.domain)',
    path_hash       BIGINT UNSIGNED   NOT NULL COMMENT 'hash of host + path without query; key into path_arg_name',
    hits            INT UNSIGNED      NOT NULL DEFAULT 0 COMMENT 'hits received since the URL was last indexed',
    download_prio   BIGINT UNSIGNED   NOT NULL DEFAULT 0 COMMENT 'scheduling priority: hits, x3 (NEW_URL_BOOST) while never downloaded; 0 after indexing',
    updatetag       VARCHAR(64)       NOT NULL DEFAULT '' COMMENT 'last non-empty updatetag from the reflog; a change makes the URL due now',
    first_seen      DATETIME          NOT NULL COMMENT 'when a queue file first brought the URL (UTC)',
    last_hit        DATETIME          NOT NULL COMMENT 'latest reflog timestamp of a hit (UTC)',
    last_downloaded DATETIME          NULL COMMENT 'last successful download (UTC); NULL: never downloaded',
    last_indexed    DATETIME          NULL COMMENT 'last time the URL was indexed, downloaded or from the archive (UTC)',
    next_indexed    DATETIME          NOT NULL COMMENT 'not re-indexed before this time (UTC)',
    steady_level    DOUBLE            NOT NULL DEFAULT 1 COMMENT 'days the content is expected to stay unchanged; adapts to content_md5 changes',
    http_status     SMALLINT UNSIGNED NULL COMMENT 'HTTP status of the last fetch; NULL: never fetched',
    content_md5     CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NULL COMMENT 'hex MD5 of the last downloaded body',
    doc_id          VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NULL COMMENT 'doc id in the item/index segments (hex of id)',
    fetch_state     TINYINT UNSIGNED  NOT NULL DEFAULT 0 COMMENT '0 idle, 1 claimed, 2 fetched, 3 failed, 4 gone (404/410)',
    claimed_by      VARCHAR(64)       NULL COMMENT 'worker holding the claim (node/pid); NULL: not claimed',
    claim_expires   DATETIME          NULL COMMENT 'the claim lapses after this time and the URL may be taken again (UTC)',
    errors          SMALLINT UNSIGNED NOT NULL DEFAULT 0 COMMENT 'consecutive failed fetches',
    fetch_ms        INT UNSIGNED      NULL COMMENT 'duration of the last fetch in milliseconds',
    PRIMARY KEY (id),
    -- The scheduler: hits > 0 AND next_indexed <= now ORDER BY download_prio DESC. Indexed rows
    -- have prio 0, so the scan walks down from the top and filters next_indexed in the index.
    KEY ix_url_due (download_prio, next_indexed),
    -- Expired claims to take back, and the operator's "stuck in a claim" query.
    KEY ix_url_claim (claim_expires),
    KEY ix_url_domain (domain)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin COMMENT='page frontier of a crawler node';

CREATE TABLE path_arg_name (
    path_hash   BIGINT UNSIGNED NOT NULL COMMENT 'hash of host + path without query (as url.path_hash)',
    name        VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'query argument name as it appears in the URL (percent-encoded)',
    significant TINYINT(1)      NOT NULL COMMENT '1: keep the argument in the URL; 0: drop it',
    updated_at  DATETIME        NOT NULL DEFAULT CURRENT_TIMESTAMP COMMENT 'when the rule was written (UTC)',
    PRIMARY KEY (path_hash, name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin COMMENT='significance of each query argument per path';

CREATE TABLE query_args (
    path_hash   BIGINT UNSIGNED NOT NULL COMMENT 'hash of host + path without query',
    name        VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'query argument name (percent-encoded)',
    score       DOUBLE          NOT NULL COMMENT 'probability that the argument does not change the page; >= 0.95 makes it insignificant',
    computed_at DATETIME        NOT NULL DEFAULT CURRENT_TIMESTAMP COMMENT 'when qargfilter computed the score (UTC)',
    PRIMARY KEY (path_hash, name),
    -- The import copies what changed since its last run.
    KEY ix_query_args_computed (computed_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin COMMENT='output of the query-argument analysis (qargfilter)';

-- `rows` is a reserved word in MySQL 8, so the row count is `row_count`.
CREATE TABLE queue_applied (
    source     VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'the inbox (master name) the queue file came from',
    file_name  VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'queue file name, e.g. master1-000042.q',
    applied_at DATETIME     NOT NULL DEFAULT CURRENT_TIMESTAMP COMMENT 'when the loader committed it (UTC)',
    row_count  INT UNSIGNED NOT NULL COMMENT 'URL records the file held',
    PRIMARY KEY (source, file_name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin COMMENT='queue files already loaded: makes loading exactly-once';

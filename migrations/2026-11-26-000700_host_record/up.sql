-- A record per host (the source's srv.db; docs/operations.md "yacobot: the record per host";
-- docs/formats.md "Host table"): what the crawl worker learnt of each host it fetched from —
-- documents, speed, server software, errors, the politeness in force and its robots.txt, so
-- that a restart does not fetch every robots.txt again. Written by the crawl worker with each
-- booking batch (one multi-row upsert that adds to the counters); read when a host's first
-- URL of a run is claimed, for its robots.txt.

CREATE TABLE host (
    name              VARCHAR(260) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'the host and its port, always written: a.example:80, [::1]:8443 (a normalised URL''s host: ASCII)',
    documents         BIGINT UNSIGNED NOT NULL DEFAULT 0 COMMENT 'pages fetched from it (2xx of an allowed type), in all',
    bytes             BIGINT UNSIGNED NOT NULL DEFAULT 0 COMMENT 'body bytes of its answers to page requests, in all',
    bps               DOUBLE NULL COMMENT 'bytes per second of its last answers: a moving average giving each booking batch''s figure (its answers'' bytes over their transfer time) a weight of 1/4; NULL before its first answer',
    server            VARCHAR(255) NULL COMMENT 'the Server header of its last answer that had one',
    errors            INT UNSIGNED NOT NULL DEFAULT 0 COMMENT 'requests that failed (network, timeout, 5xx, 429, robots.txt unavailable, address refused …), in all',
    errors_in_row     INT UNSIGNED NOT NULL DEFAULT 0 COMMENT 'requests that failed since it last answered one',
    last_error        VARCHAR(255) NULL COMMENT 'the last failure: kind and reason',
    last_error_at     DATETIME NULL COMMENT 'when (UTC)',
    last_answer_at    DATETIME NULL COMMENT 'when it last answered a request (UTC): fetched, gone, too large or of a wrong type',
    delay_ms          INT UNSIGNED NULL COMMENT 'the politeness in force: least time between two request starts, ms',
    delay_source      TINYINT UNSIGNED NULL COMMENT 'where delay_ms comes from: 1 Fetch.HostDelay, 2 the robots.txt Crawl-delay',
    robots_fetched_at DATETIME NULL COMMENT 'when robots.txt was last fetched (UTC)',
    robots_expires    DATETIME NULL COMMENT 'trusted until then (UTC): Fetch.RobotsTtl after it, Fetch.RobotsRetry after a 5xx or no answer',
    robots_status     SMALLINT UNSIGNED NULL COMMENT 'the HTTP status of its answer; NULL: no answer (unreachable, address refused)',
    robots_md5        CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NULL COMMENT 'hex MD5 of the file (a 2xx answer, up to 512 KiB read)',
    robots_bytes      INT UNSIGNED NULL COMMENT 'the file''s length in bytes',
    robots_txt        MEDIUMBLOB NULL COMMENT 'the file itself when at most Hosts.RobotsBytes: a restart takes it instead of fetching it; NULL: longer, or not a 2xx',
    updated_at        DATETIME NOT NULL COMMENT 'when the row was last written (UTC)',
    PRIMARY KEY (name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin COMMENT='the crawl''s record per host (srv.db)';

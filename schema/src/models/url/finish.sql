-- The crawler's bookings (docs/design.md#yacobot-bookkeeping): what became of each claimed
-- URL, many URLs a statement.
-- Bound per row: the URL's id, a mask of the columns to write, then the 16 values below in
-- their order (bit 0 hits … bit 15 fetch_error; NULL where the mask leaves a column alone);
-- then the owner, once. The empty first SELECT only names and types the derived table's
-- columns: integers as BIGINT UNSIGNED (~0 is 20 digits wide; MariaDB sizes a union's
-- columns by its members, and a narrower first member would cut ids), the integer
-- parameters cast to match. A row is written only while the owner still holds its claim,
-- which is released.
-- STRAIGHT_JOIN: the bound rows drive, each finds its url row by primary key (no scan of url,
-- so no lock on rows that are not booked).
UPDATE (
    SELECT ~0 AS id, ~0 AS mask, ~0 AS hits, ~0 AS download_prio,
           CAST(NULL AS DATETIME) AS last_downloaded, CAST(NULL AS DATETIME) AS last_indexed,
           CAST(NULL AS DATETIME) AS next_indexed, CAST(NULL AS DOUBLE) AS steady_level,
           ~0 AS http_status, CAST(NULL AS CHAR(255) CHARACTER SET utf8mb4) AS content_md5,
           CAST(NULL AS CHAR(255) CHARACTER SET utf8mb4) AS doc_id, ~0 AS fetch_state,
           ~0 AS errors, ~0 AS fetch_ms, ~0 AS archive_file, ~0 AS archive_item,
           CAST(NULL AS DATETIME) AS last_fetch,
           CAST(NULL AS CHAR(255) CHARACTER SET utf8mb4) AS fetch_error
    FROM DUAL WHERE FALSE
    UNION ALL
    VALUES (CAST(? AS UNSIGNED), CAST(? AS UNSIGNED), CAST(? AS UNSIGNED), CAST(? AS UNSIGNED),
            ?, ?, ?, ?, CAST(? AS UNSIGNED), ?, ?, CAST(? AS UNSIGNED),
            CAST(? AS UNSIGNED), CAST(? AS UNSIGNED), CAST(? AS UNSIGNED), CAST(? AS UNSIGNED),
            ?, ?) /*repeat*/
) AS v STRAIGHT_JOIN url AS u ON u.id = v.id
SET u.hits = IF(v.mask & 1, v.hits, u.hits),
    u.download_prio = IF(v.mask & 2, v.download_prio, u.download_prio),
    u.last_downloaded = IF(v.mask & 4, v.last_downloaded, u.last_downloaded),
    u.last_indexed = IF(v.mask & 8, v.last_indexed, u.last_indexed),
    u.next_indexed = IF(v.mask & 16, v.next_indexed, u.next_indexed),
    u.steady_level = IF(v.mask & 32, v.steady_level, u.steady_level),
    u.http_status = IF(v.mask & 64, v.http_status, u.http_status),
    u.content_md5 = IF(v.mask & 128, v.content_md5, u.content_md5),
    u.doc_id = IF(v.mask & 256, v.doc_id, u.doc_id),
    u.fetch_state = IF(v.mask & 512, v.fetch_state, u.fetch_state),
    u.errors = IF(v.mask & 1024, v.errors, u.errors),
    u.fetch_ms = IF(v.mask & 2048, v.fetch_ms, u.fetch_ms),
    u.archive_file = IF(v.mask & 4096, v.archive_file, u.archive_file),
    u.archive_item = IF(v.mask & 8192, v.archive_item, u.archive_item),
    u.last_fetch = IF(v.mask & 16384, v.last_fetch, u.last_fetch),
    u.fetch_error = IF(v.mask & 32768, v.fetch_error, u.fetch_error),
    u.claimed_by = NULL,
    u.claim_expires = NULL
WHERE u.claimed_by = ?

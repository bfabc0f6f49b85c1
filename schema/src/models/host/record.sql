-- The crawl worker's record per host, one booking batch's news a statement
-- (docs/operations.md "yacobot: the record per host").
-- Bound per row: name, documents, bytes, bps (the batch's figure, NULL without an answer),
-- server, errors, errors_in_row, last_error, last_error_at, last_answer_at, delay_ms,
-- delay_source, robots_fetched_at, robots_expires, robots_status, robots_md5, robots_bytes,
-- robots_txt, updated_at. A NULL leaves the row's value alone, but for robots_* where
-- robots_fetched_at says whether robots.txt was fetched (its other columns may be NULL).
-- A new host is inserted as bound. A known one adds the counters; errors_in_row starts again
-- from the bound value when the host answered in the batch (last_answer_at), else it adds;
-- bps is a moving average, 1/4 to the batch's figure.
-- MySQL applies the assignments left to right, each seeing those before it: robots_fetched_at
-- comes after the robots_* it decides, and every test reads VALUES(), never a column set here.
INSERT INTO host (name, documents, bytes, bps, server, errors, errors_in_row, last_error,
                  last_error_at, last_answer_at, delay_ms, delay_source, robots_fetched_at,
                  robots_expires, robots_status, robots_md5, robots_bytes, robots_txt, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) /*repeat*/
ON DUPLICATE KEY UPDATE
    documents = documents + VALUES(documents),
    bytes = bytes + VALUES(bytes),
    bps = CASE WHEN VALUES(bps) IS NULL THEN bps
               WHEN bps IS NULL THEN VALUES(bps)
               ELSE 0.75 * bps + 0.25 * VALUES(bps) END,
    server = COALESCE(VALUES(server), server),
    errors = LEAST(errors + VALUES(errors), 4294967295),
    errors_in_row = IF(VALUES(last_answer_at) IS NULL,
                       LEAST(errors_in_row + VALUES(errors_in_row), 4294967295),
                       VALUES(errors_in_row)),
    last_error = IF(VALUES(last_error_at) IS NULL, last_error, VALUES(last_error)),
    last_error_at = COALESCE(VALUES(last_error_at), last_error_at),
    last_answer_at = COALESCE(VALUES(last_answer_at), last_answer_at),
    delay_ms = COALESCE(VALUES(delay_ms), delay_ms),
    delay_source = COALESCE(VALUES(delay_source), delay_source),
    robots_expires = IF(VALUES(robots_fetched_at) IS NULL, robots_expires, VALUES(robots_expires)),
    robots_status = IF(VALUES(robots_fetched_at) IS NULL, robots_status, VALUES(robots_status)),
    robots_md5 = IF(VALUES(robots_fetched_at) IS NULL, robots_md5, VALUES(robots_md5)),
    robots_bytes = IF(VALUES(robots_fetched_at) IS NULL, robots_bytes, VALUES(robots_bytes)),
    robots_txt = IF(VALUES(robots_fetched_at) IS NULL, robots_txt, VALUES(robots_txt)),
    robots_fetched_at = COALESCE(VALUES(robots_fetched_at), robots_fetched_at),
    updated_at = VALUES(updated_at)

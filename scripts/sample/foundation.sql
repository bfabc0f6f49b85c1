-- A small sample for the README's run command and the admin.sql tests: two nodes, a few
-- partner domains and URLs, one resource. Times are relative to now (UTC) so that "due" and
-- "stuck" mean the same thing whenever it is loaded. Loading it twice changes nothing.

INSERT INTO yacobot_node (id, name, host, enabled) VALUES
    (1, 'yb01', '127.0.0.1:7301', 1),
    (2, 'yb02', '127.0.0.1:7302', 1),
    (3, 'yb03', '127.0.0.1:7303', 0)
ON DUPLICATE KEY UPDATE host = VALUES(host), enabled = VALUES(enabled);

INSERT INTO partner_domain (domain, yacobot_id, assigned_by, created_at, updated_at) VALUES
    ('astroma.net',       1, 'sample', UTC_TIMESTAMP() - INTERVAL 3 DAY, UTC_TIMESTAMP() - INTERVAL 3 DAY),
    ('fatalenergy.com.ru',1, 'sample', UTC_TIMESTAMP() - INTERVAL 2 HOUR, UTC_TIMESTAMP() - INTERVAL 2 HOUR),
    ('3dnews.ru',         2, 'sample', UTC_TIMESTAMP() - INTERVAL 3 DAY, UTC_TIMESTAMP() - INTERVAL 3 DAY),
    ('example.org',       3, 'sample', UTC_TIMESTAMP() - INTERVAL 3 DAY, UTC_TIMESTAMP() - INTERVAL 3 DAY)
ON DUPLICATE KEY UPDATE yacobot_id = VALUES(yacobot_id);

INSERT INTO url (id, url, domain, path_hash, hits, download_prio, updatetag, first_seen, last_hit,
                 last_downloaded, next_indexed, claimed_by, claim_expires) VALUES
    (1001, 'http://astroma.net/week/02.htm', 'astroma.net', 11, 4, 12, '',
        UTC_TIMESTAMP() - INTERVAL 1 DAY, UTC_TIMESTAMP() - INTERVAL 1 HOUR, NULL,
        UTC_TIMESTAMP() - INTERVAL 1 HOUR, NULL, NULL),
    (1002, 'http://fatalenergy.com.ru/power/index.php?newsid=1185458796', 'fatalenergy.com.ru', 12, 1, 3, '0',
        UTC_TIMESTAMP() - INTERVAL 1 DAY, UTC_TIMESTAMP() - INTERVAL 1 HOUR, NULL,
        UTC_TIMESTAMP() - INTERVAL 1 HOUR, NULL, NULL),
    (1003, 'http://3dnews.ru/search/index.php?query=canon%20600d', '3dnews.ru', 13, 7, 7, '',
        UTC_TIMESTAMP() - INTERVAL 9 DAY, UTC_TIMESTAMP() - INTERVAL 1 HOUR, UTC_TIMESTAMP() - INTERVAL 8 DAY,
        UTC_TIMESTAMP() - INTERVAL 1 DAY, 'yb02/4242', UTC_TIMESTAMP() - INTERVAL 30 MINUTE),
    (1004, 'http://3dnews.ru/', '3dnews.ru', 14, 0, 0, '',
        UTC_TIMESTAMP() - INTERVAL 9 DAY, UTC_TIMESTAMP() - INTERVAL 2 DAY, UTC_TIMESTAMP() - INTERVAL 2 DAY,
        UTC_TIMESTAMP() + INTERVAL 5 DAY, NULL, NULL)
ON DUPLICATE KEY UPDATE hits = VALUES(hits);

INSERT INTO vr_resource (id, class_id, res_name, data_group, frequency, is_manual, manual_update,
                         res_status, fetch_status, fetch_detail, fetch_time, last_fetch_time) VALUES
    (1, 70000001, 'weather-feed', 'weather', 3600, 0, 0, 1, 4,
        'source "main": sitemap line 3 does not start with http; 0 of 2 URLs fetched',
        UTC_TIMESTAMP() - INTERVAL 2 HOUR, UTC_TIMESTAMP() - INTERVAL 2 HOUR)
ON DUPLICATE KEY UPDATE fetch_status = VALUES(fetch_status);

INSERT INTO vr_open_datasource (id, res_id, name, priority, sitemap_url) VALUES
    (1, 1, 'main', 10, 'http://feeds.example.org/weather/sitemap.txt')
ON DUPLICATE KEY UPDATE sitemap_url = VALUES(sitemap_url);

INSERT INTO vr_data (id, res_id, keyword, md5_sum, doc_id, data_status, status, update_type) VALUES
    (1, 1, 'moscow',   '0123456789abcdef0123456789abcdef', 'vr-1-moscow', 1, 1, 1),
    (2, 1, 'beijing',  '1123456789abcdef0123456789abcdef', 'vr-1-beijing', 1, 0, 2),
    (3, 1, 'atlantis', '2123456789abcdef0123456789abcdef', 'vr-1-atlantis', 0, 1, 3)
ON DUPLICATE KEY UPDATE md5_sum = VALUES(md5_sum);

INSERT INTO process_timestamp (id, res_id, status, fetch_start, fetch_end, write_start, write_end, items, inserted, updated, deleted, failed_keys) VALUES
    (1, 1, 4, UTC_TIMESTAMP() - INTERVAL 2 HOUR, UTC_TIMESTAMP() - INTERVAL 2 HOUR, NULL, NULL, 0, 0, 0, 0, 0)
ON DUPLICATE KEY UPDATE status = VALUES(status);

INSERT INTO queue_applied (source, file_name, applied_at, row_count, skipped) VALUES
    ('master1', 'master1-000001.q', UTC_TIMESTAMP() - INTERVAL 2 HOUR, 120, 0),
    ('master1', 'master1-000002.q', UTC_TIMESTAMP() - INTERVAL 1 HOUR, 80, 0),
    ('master2', 'master2-000002.q', UTC_TIMESTAMP() - INTERVAL 1 HOUR, 80, 1)
ON DUPLICATE KEY UPDATE row_count = VALUES(row_count);

INSERT INTO loader_watermark (master, covered, handled_at) VALUES
    ('master1', UTC_TIMESTAMP() - INTERVAL 1 HOUR, UTC_TIMESTAMP() - INTERVAL 1 HOUR),
    ('master2', UTC_TIMESTAMP() - INTERVAL 2 HOUR, UTC_TIMESTAMP() - INTERVAL 1 HOUR)
ON DUPLICATE KEY UPDATE covered = VALUES(covered);

INSERT INTO host (name, documents, bytes, bps, server, errors, errors_in_row, last_error,
                  last_error_at, last_answer_at, delay_ms, delay_source, updated_at) VALUES
    ('astroma.net:80', 120, 6000000, 250000, 'nginx', 0, 0, NULL, NULL,
        UTC_TIMESTAMP() - INTERVAL 1 HOUR, 1000, 1, UTC_TIMESTAMP()),
    ('3dnews.ru:443', 40, 2000000, 8000, 'Apache', 3, 0, 'timeout: slow', UTC_TIMESTAMP() - INTERVAL 1 DAY,
        UTC_TIMESTAMP() - INTERVAL 1 HOUR, 5000, 2, UTC_TIMESTAMP()),
    ('fatalenergy.com.ru:80', 2, 30000, 1200, NULL, 7, 5, 'connect: Connection refused',
        UTC_TIMESTAMP() - INTERVAL 10 MINUTE, UTC_TIMESTAMP() - INTERVAL 3 DAY, 1000, 1, UTC_TIMESTAMP()),
    ('example.org:80', 0, 0, NULL, NULL, 1, 1, 'dns: Could not resolve host',
        UTC_TIMESTAMP() - INTERVAL 1 HOUR, NULL, 1000, 1, UTC_TIMESTAMP())
ON DUPLICATE KEY UPDATE documents = VALUES(documents);

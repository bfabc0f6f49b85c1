-- Everyday operator queries for focuser. Run them with the mariadb/mysql client, e.g.
--   mariadb --defaults-extra-file=my.cnf focuser < conf/admin.sql
-- or paste one. Each query is introduced by `-- [label] what it answers`; times are UTC.

-- [node_load] Crawler nodes: enabled or not, domains owned, URLs in the frontier, URLs due now.
SELECT node_id, name, host, enabled, domains, urls, due_urls
FROM v_node_load
ORDER BY node_id;

-- [domains_per_node] How many domains each node owns, and how many the masters assigned in the last day.
SELECT n.id AS node_id, n.name,
       COUNT(d.domain) AS domains,
       COALESCE(SUM(CASE WHEN d.updated_at >= UTC_TIMESTAMP() - INTERVAL 1 DAY THEN 1 ELSE 0 END), 0) AS assigned_last_day
FROM yacobot_node n
LEFT JOIN partner_domain d ON d.yacobot_id = n.id
GROUP BY n.id, n.name
ORDER BY n.id;

-- [orphan_domains] Domains mapped to a node that is disabled or gone (the master re-assigns them next cycle).
SELECT d.domain, d.yacobot_id, d.assigned_by, d.updated_at
FROM partner_domain d
LEFT JOIN yacobot_node n ON n.id = d.yacobot_id
WHERE n.id IS NULL OR n.enabled = 0
ORDER BY d.domain
LIMIT 100;

-- [top_due_urls] The next URLs the scheduler will fetch: due, unclaimed, highest download_prio first.
SELECT id, url, hits, download_prio, next_indexed
FROM url
WHERE hits > 0 AND next_indexed <= UTC_TIMESTAMP()
  AND (claim_expires IS NULL OR claim_expires < UTC_TIMESTAMP())
ORDER BY download_prio DESC, id
LIMIT 20;

-- [stuck_claims] URLs whose claim has expired without being released (a crawler died mid-fetch).
SELECT id, url, claimed_by, claim_expires,
       TIMESTAMPDIFF(MINUTE, claim_expires, UTC_TIMESTAMP()) AS minutes_overdue
FROM url
WHERE claimed_by IS NOT NULL AND claim_expires < UTC_TIMESTAMP()
ORDER BY claim_expires
LIMIT 50;

-- [resources_in_error] Partner feeds whose last run failed, with the report of what went wrong.
SELECT res_id, res_name, last_fetch_time, live_items, fetch_detail
FROM v_resource_health
WHERE fetch_status = 4
ORDER BY last_fetch_time DESC, res_id;

-- [resource_feeds_in_error] Feed URLs of partner feeds whose last fetch or parse failed, with the reason (the resource's fetch_detail sums them up).
SELECT s.res_id, r.res_name, d.name AS source, s.url, s.http_status, s.last_fetch, s.error
FROM resource_status s
JOIN vr_resource r ON r.id = s.res_id
LEFT JOIN vr_open_datasource d ON d.id = s.data_source_id
WHERE s.res_status = 1 AND s.error IS NOT NULL
ORDER BY s.res_id, s.url;

-- [resources_due] Partner feeds that the next scan will start: manual ones asked for, automatic ones past their frequency.
SELECT res_id, res_name, is_manual, manual_update, last_fetch_time, next_due
FROM v_resource_health
WHERE res_status = 1 AND fetch_state <> 'running'
  AND (manual_update = 1 OR (is_manual = 0 AND next_due <= UTC_TIMESTAMP()))
ORDER BY res_id;

-- [resources_withdrawing] Partner feeds whose withdrawal (resource disable: res_status 2) or removal (resource remove: 3) waits for the next scan or is under way: live items still to get their DELETE item.
SELECT res_id, res_name, CASE res_status WHEN 2 THEN 'withdrawing' ELSE 'removing' END AS asked,
       live_items, fetch_state, fetch_time
FROM v_resource_health
WHERE res_status IN (2, 3)
ORDER BY res_id;

-- [vr_data_per_resource] Items per partner feed: live, deleted, and changes not yet emitted to the segments.
SELECT r.id AS res_id, r.res_name,
       COALESCE(SUM(CASE WHEN v.data_status = 1 THEN 1 ELSE 0 END), 0) AS live_items,
       COALESCE(SUM(CASE WHEN v.data_status = 0 THEN 1 ELSE 0 END), 0) AS deleted_items,
       COALESCE(SUM(CASE WHEN v.status = 0 AND v.id IS NOT NULL THEN 1 ELSE 0 END), 0) AS unemitted
FROM vr_resource r
LEFT JOIN vr_data v ON v.res_id = r.id
GROUP BY r.id, r.res_name
ORDER BY r.id;

-- [recent_runs] The last 20 resource runs: when each stage ran and what it changed.
SELECT p.id AS run_id, p.res_id, r.res_name, p.status, p.fetch_start, p.write_end,
       p.items, p.inserted, p.updated, p.deleted, p.failed_keys
FROM process_timestamp p
LEFT JOIN vr_resource r ON r.id = p.res_id
ORDER BY p.id DESC
LIMIT 20;

-- [queue_files_applied] Queue files loaded per master inbox: how many, how many URLs, the latest; skipped: files not applied because another master's files had counted their period (Loader.Mode = duplicate).
SELECT source, COUNT(*) AS files, SUM(row_count) AS urls, SUM(skipped) AS skipped, MAX(file_name) AS last_file, MAX(applied_at) AS last_applied
FROM queue_applied
GROUP BY source
ORDER BY source;

-- [loader_watermarks] Two masters that duplicate each other (Loader.Mode = duplicate): how far each master's queue files have been handled, and when last.
SELECT master, covered, handled_at
FROM loader_watermark
ORDER BY master;

-- [slowest_hosts] The slowest hosts: bytes per second of their last answers (a moving average), slowest first.
SELECT name, ROUND(bps) AS bps, documents, server, delay_ms, last_answer_at
FROM host
WHERE bps IS NOT NULL
ORDER BY bps, name
LIMIT 20;

-- [hosts_in_error] Hosts failing since their last answer, the longest run of failures first, with the last error.
SELECT name, errors_in_row, errors, last_error, last_error_at, last_answer_at
FROM host
WHERE errors_in_row > 0
ORDER BY errors_in_row DESC, name
LIMIT 50;

-- [hosts_most_documents] The hosts with the most pages fetched, with their bytes, speed and server.
SELECT name, documents, ROUND(bytes / 1048576, 1) AS mib, ROUND(bps) AS bps, server
FROM host
ORDER BY documents DESC, name
LIMIT 20;

-- [duplicate_groups] The largest duplicate groups (docs/multidoc.md "Duplicate groups"): pages of one domain whose main text is the same or near, and the page whose categories and binding they share.
SELECT g.id AS group_id, d.domain, COUNT(*) AS pages, g.rep, u.url AS rep_url, g.created_at
FROM multidoc_group g
JOIN multidoc_page p ON p.dup_group = g.id
LEFT JOIN multidoc_domain d ON d.domain_key = g.domain_key
LEFT JOIN url u ON u.id = g.rep
GROUP BY g.id, d.domain, g.rep, u.url, g.created_at
HAVING COUNT(*) > 1
ORDER BY pages DESC, g.id
LIMIT 20;

-- [duplicates_per_domain] Per domain: pages in a duplicate group, of them duplicates (sharing another page's analysis and binding), and groups with a duplicate.
SELECT d.domain, COUNT(*) AS pages,
       SUM(CASE WHEN p.id <> g.rep THEN 1 ELSE 0 END) AS duplicates,
       COUNT(DISTINCT CASE WHEN p.id <> g.rep THEN g.id END) AS groups_with_duplicates
FROM multidoc_page p
JOIN multidoc_group g ON g.id = p.dup_group
LEFT JOIN multidoc_domain d ON d.domain_key = g.domain_key
GROUP BY d.domain
ORDER BY duplicates DESC, d.domain
LIMIT 20;

-- [expiring_urls] The frontier's expiry (Url.ExpireDays; 90 here, change it to the node's): URLs it marks next (not hit for that long, not due, not marked yet), and the oldest last hit among them.
SELECT COUNT(*) AS expiring, MIN(last_hit) AS oldest_hit
FROM url
WHERE last_hit < UTC_TIMESTAMP() - INTERVAL 90 DAY
  AND withdraw IS NULL
  AND (hits = 0 OR next_indexed > UTC_TIMESTAMP());

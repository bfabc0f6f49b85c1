-- Views for the operator's everyday questions (conf/admin.sql uses them). Times are UTC.

-- Each node with its domains, its URLs and how many of them are due now.
CREATE VIEW v_node_load AS
SELECT n.id                     AS node_id,
       n.name                   AS name,
       n.host                   AS host,
       n.enabled                AS enabled,
       COALESCE(d.domains, 0)   AS domains,
       COALESCE(u.urls, 0)      AS urls,
       COALESCE(u.due_urls, 0)  AS due_urls
FROM yacobot_node n
LEFT JOIN (SELECT yacobot_id, COUNT(*) AS domains
           FROM partner_domain GROUP BY yacobot_id) d ON d.yacobot_id = n.id
LEFT JOIN (SELECT p.yacobot_id,
                  COUNT(*) AS urls,
                  SUM(CASE WHEN u.hits > 0 AND u.next_indexed <= UTC_TIMESTAMP() THEN 1 ELSE 0 END) AS due_urls
           FROM url u JOIN partner_domain p ON p.domain = u.domain
           GROUP BY p.yacobot_id) u ON u.yacobot_id = n.id;

-- Each resource with the state of its last run, when it is due, and its live items.
CREATE VIEW v_resource_health AS
SELECT r.id               AS res_id,
       r.res_name         AS res_name,
       r.res_status       AS res_status,
       r.is_manual        AS is_manual,
       r.manual_update    AS manual_update,
       r.fetch_status     AS fetch_status,
       CASE r.fetch_status WHEN 0 THEN 'never' WHEN 1 THEN 'ok' WHEN 2 THEN 'running'
                           WHEN 4 THEN 'error' ELSE 'unknown' END AS fetch_state,
       r.fetch_time       AS fetch_time,
       r.last_fetch_time  AS last_fetch_time,
       CASE WHEN r.is_manual = 1 THEN NULL
            WHEN r.last_fetch_time IS NULL THEN r.created_at
            ELSE DATE_ADD(r.last_fetch_time, INTERVAL r.frequency SECOND) END AS next_due,
       COALESCE(v.live_items, 0)    AS live_items,
       COALESCE(v.deleted_items, 0) AS deleted_items,
       r.fetch_detail     AS fetch_detail
FROM vr_resource r
LEFT JOIN (SELECT res_id,
                  SUM(CASE WHEN data_status = 1 THEN 1 ELSE 0 END) AS live_items,
                  SUM(CASE WHEN data_status = 0 THEN 1 ELSE 0 END) AS deleted_items
           FROM vr_data GROUP BY res_id) v ON v.res_id = r.id;

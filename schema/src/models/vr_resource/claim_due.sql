-- The resources a scan starts (docs/design.md#yacobot-resources): enabled, not held by a live
-- claim, and either asked for (manual_update = 1, automatic or manual) or automatic and due
-- (last_fetch_time + frequency <= now; never run: due at once). Rows another scanner holds
-- are skipped, so two scanners never take the same resource.
-- Binds: now, now, limit.
SELECT id, manual_update
FROM vr_resource
WHERE res_status = 1
  AND (claim_expires IS NULL OR claim_expires < ?)
  AND (manual_update = 1
       OR (is_manual = 0
           AND (last_fetch_time IS NULL
                OR DATE_ADD(last_fetch_time, INTERVAL frequency SECOND) <= ?)))
ORDER BY manual_update DESC, priority DESC, id
LIMIT ?
FOR UPDATE SKIP LOCKED

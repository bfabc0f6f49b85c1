-- The resources a scan starts (docs/design.md#yacobot-resources), not held by a live claim:
-- those whose withdrawal or removal is asked for (res_status 2 or 3), first; and the enabled
-- ones either asked for (manual_update = 1, automatic or manual) or automatic and due
-- (last_fetch_time + frequency <= now; never run: due at once). Rows another scanner holds
-- are skipped, so two scanners never take the same resource.
-- Binds: now, now, limit.
SELECT id, manual_update, res_status
FROM vr_resource
WHERE (claim_expires IS NULL OR claim_expires < ?)
  AND (res_status IN (2, 3)
       OR (res_status = 1
           AND (manual_update = 1
                OR (is_manual = 0
                    AND (last_fetch_time IS NULL
                         OR DATE_ADD(last_fetch_time, INTERVAL frequency SECOND) <= ?)))))
ORDER BY res_status > 1 DESC, manual_update DESC, priority DESC, id
LIMIT ?
FOR UPDATE SKIP LOCKED
